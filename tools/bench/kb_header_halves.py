#!/usr/bin/env python3
"""Does compiling load_inline's main.cpp against torch/python.h (the Python
half of torch/extension.h, crl_cu_split.python_half) change any verdict or
any code? For every CUDA-L1 row that calls load_inline, crl's build step runs
(split), then each of its extensions' main.cpp is compiled again as it stands
(torch/extension.h, load_inline's own command from build.ninja) and the two
objects are compared: whether each compiled, and the symbols each defines
and needs (`nm`): a call that resolved to another overload, or a template
instantiated otherwise, shows there (docs/benchmarks.md).

  python3 tools/bench/kb_header_halves.py --jsonl ../shared/data/cuda-l1/h100.jsonl \\
      --pch /tmp/pch --arch 9.0 [--parallel 8] [--only 1/97,...]
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "..", "..", "runner", "python")
HARNESS = os.path.join(RUNNER, "crl_kb_harness.py")
sys.path.insert(0, RUNNER)
import crl_pch  # noqa: E402
import crl_split_build  # noqa: E402
import kb_build_times  # noqa: E402


def symbols(obj, cwd):
    """(functions defined, symbols needed, data defined) of an object file;
    the file's static-initializer function, named after the file, is left
    out."""
    out = subprocess.run(["nm", obj], cwd=cwd, stdout=subprocess.PIPE, text=True).stdout
    functions, undefined, data = set(), set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TtWw" and not parts[2].startswith("_GLOBAL__sub_I_"):
            functions.add(parts[2])
        elif len(parts) == 3 and parts[1] in "VvDdBbRru":
            data.add(parts[2])
    return functions, undefined, data


def compare(ext_dir, pch_dir):
    """What main.cpp gives each way in one extension folder, or None when
    the build step did not try torch/python.h there."""
    if not os.path.exists(os.path.join(ext_dir, "crl_main.cpp")):
        return None
    with open(os.path.join(ext_dir, "build.ninja")) as f:
        ninja = crl_split_build.Ninja(f.read())
    main_in = next(i for o, r, i in ninja.builds if r == "compile")
    # The build step's commands: load_inline's flags end with the candidate's,
    # after the precompiled torch/extension.h's "-include P -Winvalid-pch".
    cflags = shlex.split(ninja.vars["cflags"])
    at = cflags.index("-Winvalid-pch")
    with open(main_in[0]) as f:
        half, _, _ = crl_split_build.python_half_attempt(
            ninja, f.read(), os.path.join(ext_dir, "crl_main.cpp"), "crl_cmp_half.o", cflags[:at - 2],
            cflags[at + 1:], lambda flags, header: crl_pch.pch_for(pch_dir, flags, header))
    r = {"ext": os.path.basename(ext_dir)}
    for name, cmd in (("half", half), ("full", ninja.command("compile", main_in, "crl_cmp_full.o"))):
        p = subprocess.run(cmd, shell=True, cwd=ext_dir, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, errors="replace")
        r[name] = p.returncode == 0
        if p.returncode != 0:
            r[name + "_error"] = next((line for line in p.stdout.splitlines() if "error" in line), "")[:200]
    if r["half"] and r["full"]:
        hf, hu, hd = symbols("crl_cmp_half.o", ext_dir)
        ff, fu, fd = symbols("crl_cmp_full.o", ext_dir)
        r["same_functions"], r["same_undefined"] = hf == ff, hu == fu
        r["only_full"] = sorted((ff - hf) | (fu - hu))[:5]
        r["only_half"] = sorted((hf - ff) | (hu - fu))[:5]
        # Data a header defines (torch/all.h's statics) is not code.
        r["data_only_full"], r["data_only_half"] = len(fd - hd), len(hd - fd)
    return r


def one(row, args):
    with tempfile.TemporaryDirectory() as d:
        cand = os.path.join(d, "candidate.py")
        with open(cand, "w") as f:
            f.write(row["custom_code"])
        out = os.path.join(d, "out")
        os.makedirs(out)
        subprocess.run([sys.executable, "-B", HARNESS, "build", cand, out, args.pch, args.arch, "split"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
        ext = os.path.join(out, "ext")
        found = [compare(os.path.join(ext, e), args.pch) for e in sorted(os.listdir(ext))] \
            if os.path.isdir(ext) else []
        return "%s/%s" % (row["level_id"], row["task_id"]), [f for f in found if f]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--jsonl", required=True)
    p.add_argument("--pch", required=True)
    p.add_argument("--arch", default="9.0")
    p.add_argument("--parallel", type=int, default=8)
    p.add_argument("--only", default="")
    args = p.parse_args()
    os.makedirs(args.pch, exist_ok=True)
    kb_build_times.ensure_pch(args.pch)
    rows = kb_build_times.pick_rows(args.jsonl, 0, 0)
    if args.only:
        keep = set(args.only.split(","))
        rows = [r for r in rows if "%s/%s" % (r["level_id"], r["task_id"]) in keep]
    with ThreadPoolExecutor(args.parallel) as pool:
        results = list(pool.map(lambda r: one(r, args), rows))
    counts = {"rows": len(rows), "main.cpp": 0, "both": 0, "half only": 0, "full only": 0,
              "neither": 0, "same symbols": 0}  # same: functions defined and symbols needed
    for task, exts in results:
        for r in exts:
            counts["main.cpp"] += 1
            key = {(True, True): "both", (True, False): "half only", (False, True): "full only",
                   (False, False): "neither"}[(r["half"], r["full"])]
            counts[key] += 1
            same = r.get("same_functions") and r.get("same_undefined")
            counts["same symbols"] += bool(same)
            if same:
                said = "same functions and needs (data only in full %d, only in half %d)" % (
                    r["data_only_full"], r["data_only_half"])
            elif key == "both":
                said = "symbols differ: full %s half %s" % (r["only_full"], r["only_half"])
            else:
                said = " | " + (r.get("half_error") or r.get("full_error") or "")
            print("%-7s %-24s %-9s %s" % (task, r["ext"][:24], key, said), flush=True)
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
