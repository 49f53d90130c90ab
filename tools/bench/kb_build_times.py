#!/usr/bin/env python3
"""Cold load_inline build times of CUDA-L1 rows through crl's KernelBench
build step (runner/python/crl_kb_harness.py build), each row alone in a fresh
build directory, with the CUDA source built split (crl_cu_split.py) and whole
(as load_inline builds it). The precompiled headers are built first if the
folder given has none (it is built once per machine, like the worker's
cache). Prints one line per row and mode, then the median and p90 build time
per mode over the rows that built a CUDA extension in that mode
(docs/benchmarks.md).

  python3 tools/bench/kb_build_times.py --jsonl ../shared/data/cuda-l1/h100.jsonl \\
      --pch /tmp/pch --arch 9.0 [--sample 40 --seed 11] [--modes split,whole] \\
      [--budget 500] [--from 1] [--results out.jsonl]

A row's build time is the sum of its CUDA extensions' load_inline times as
the build step's manifest records them (a split build's includes reading
torch's build.ninja and the split itself); its wall also counts python and
torch starting. --budget stops starting rows after that many seconds;
--from continues at a row (1-based, as printed).
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "..", "..", "runner", "python", "crl_kb_harness.py")


def pick_rows(path, sample, seed):
    with open(path) as f:
        lines = [line for line in f if json.loads(line).get("custom_code")]
    if sample > 0:
        picked = sorted(random.Random(seed).sample(range(len(lines)), min(sample, len(lines))))
        lines = [lines[i] for i in picked]
    rows = [json.loads(line) for line in lines]
    return [r for r in rows if "load_inline" in r["custom_code"]]


def build_one(code, mode, pch, arch):
    with tempfile.TemporaryDirectory() as d:
        cand = os.path.join(d, "candidate.py")
        with open(cand, "w") as f:
            f.write(code)
        out = os.path.join(d, "out")
        os.makedirs(out)
        start = time.perf_counter()
        p = subprocess.run([sys.executable, "-B", HARNESS, "build", cand, out, pch, arch, mode],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace", timeout=900)
        wall = time.perf_counter() - start
        manifest = {}
        if os.path.exists(os.path.join(out, "manifest.json")):
            with open(os.path.join(out, "manifest.json")) as f:
                manifest = json.load(f)
        exts = [e for e in manifest.get("extensions", []) if e.get("cuda") and e.get("seconds", 0) > 0]
        return {"mode": mode, "exit": p.returncode, "wall": round(wall, 2),
                "build": round(sum(e["seconds"] for e in exts), 2) if exts else None,
                "extensions": len(exts), "split": [e.get("split") for e in exts],
                "log": p.stdout[-1500:]}


def ensure_pch(pch):
    if any(f.endswith(".gch") for f in os.listdir(pch)):
        return
    start = time.perf_counter()
    subprocess.run([sys.executable, "-B", HARNESS, "pch", pch], check=True)
    print("precompiled header: %.1f s" % (time.perf_counter() - start), flush=True)


def discover(rows, mode, args):
    """Builds every row, N at once: which rows build a CUDA extension."""
    from concurrent.futures import ThreadPoolExecutor
    print("building %d rows %d at once (%s): times are not alone" % (len(rows), args.parallel, mode))

    def one(item):
        i, row = item
        r = build_one(row["custom_code"], mode, args.pch, args.arch)
        r.update(row=i, task="%s/%s" % (row["level_id"], row["task_id"]))
        return r
    with ThreadPoolExecutor(args.parallel) as pool:
        results = list(pool.map(one, enumerate(rows, 1)))
    built = []
    for r in results:
        print("%3d %-7s exit %d extensions %d build %s s wall %.1f s" % (
            r["row"], r["task"], r["exit"], r["extensions"], r["build"], r["wall"]))
        if r["extensions"]:
            built.append(r["task"])
        if args.results:
            with open(args.results, "a") as f:
                f.write(json.dumps(r) + "\n")
    print("built: %d of %d rows: %s" % (len(built), len(results), ",".join(built)))
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--jsonl", required=True)
    p.add_argument("--pch", required=True, help="folder of the precompiled header (made if empty)")
    p.add_argument("--arch", default="9.0", help="TORCH_CUDA_ARCH_LIST")
    p.add_argument("--sample", type=int, default=0)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--modes", default="split,whole")
    p.add_argument("--budget", type=float, default=0, help="start no row after this many seconds")
    p.add_argument("--from", dest="first", type=int, default=1)
    p.add_argument("--results", default="")
    p.add_argument("--only", default="", help="rows to build, as level/task,... (e.g. those that build)")
    p.add_argument("--parallel", type=int, default=1,
                   help="build N rows at once: finds which rows build; the times are not alone")
    args = p.parse_args()
    os.makedirs(args.pch, exist_ok=True)
    ensure_pch(args.pch)
    rows = pick_rows(args.jsonl, args.sample, args.seed)
    modes = args.modes.split(",")
    print("%d rows call load_inline" % len(rows), flush=True)
    if args.only:
        only = set(args.only.split(","))
        rows = [r for r in rows if "%s/%s" % (r["level_id"], r["task_id"]) in only]
        print("%d of them chosen with --only" % len(rows), flush=True)
    if args.parallel > 1:
        return discover(rows, modes[0], args)
    start = time.perf_counter()
    results = []
    for i, row in enumerate(rows, 1):
        if i < args.first:
            continue
        if args.budget and time.perf_counter() - start > args.budget:
            print("budget spent: stopped before row %d" % i, flush=True)
            break
        order = modes if i % 2 else list(reversed(modes))
        for mode in order:
            r = build_one(row["custom_code"], mode, args.pch, args.arch)
            r.update(row=i, task="%s/%s" % (row["level_id"], row["task_id"]))
            results.append(r)
            note = ""
            if mode == "split":
                note = "; ".join(
                    "split: host %s s (%s), main.cpp %s s (%s), device %s s, link %s s" % tuple(
                        s["phases"].get(k, "?") for k in ("host", "host_header", "main", "main_header",
                                                          "device", "link"))
                    if s and s.get("split") else
                    "whole: " + (s or {}).get("refused", (s or {}).get("failed", "?"))[:120]
                    for s in r["split"])
            print("%3d %-7s %-6s exit %d build %s s wall %.1f s %s" % (
                i, r["task"], mode, r["exit"], r["build"], r["wall"], note), flush=True)
            if args.results:
                with open(args.results, "a") as f:
                    f.write(json.dumps(r) + "\n")
    for mode in modes:
        times = sorted(r["build"] for r in results if r["mode"] == mode and r["build"] is not None)
        if not times:
            continue
        p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
        print("%-6s %d rows built: median %.1f s, p90 %.1f s, min %.1f s, max %.1f s" % (
            mode, len(times), statistics.median(times), p90, times[0], times[-1]))
    split_rows = [r for r in results if r["mode"] == "split" and r["split"]]
    done = sum(1 for r in split_rows if all(s and s.get("split") for s in r["split"]))
    print("split: %d of %d rows built split" % (done, len(split_rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
