#!/usr/bin/env python3
"""Runs CUDA-L1's own evaluation harness (its eval_pipeline, at the defaults
its eval() uses: 10 correctness trials, 7 x 10 timed trials, "vanilla"
setup) over rows of a CUDA-L1 JSON-lines file, one after the other as their
harness does, and prints each row's wall time and outcome and the rows per
hour: the side-by-side baseline for `crl bench --cuda-l1` on the same rows
(docs/benchmarks.md). The harness is imported from where it lies
(../shared/data/cuda-l1/eval_cuda.py by default), never copied.

  python3 tools/bench/cuda_l1_loop.py --jsonl ../shared/data/cuda-l1/h100.jsonl --rows 8 [--harness PATH]
  python3 tools/bench/cuda_l1_loop.py --jsonl ... --sample 16 --seed 11 --write_rows rows.jsonl [--dry]

--sample N picks a fixed random subset of N rows that carry custom code (the
same N and seed give the same rows); --write_rows writes the chosen rows, so
`crl bench --cuda-l1` can run on exactly them; --dry stops there.

  ... --ext_root DIR [--prewarm 12] [--from 1 --to 20] [--results out.jsonl]

--ext_root gives each row its own TORCH_EXTENSIONS_DIR (DIR/rowI), so rows whose
extensions share a name do not rebuild each other's and a second pass is warm;
--prewarm N only builds them, N rows at a time, each in a fresh process that
executes the row's code, constructs ModelNew on the GPU and calls it once, as
their harness's first steps do (a cache fill, not a measurement: most rows build
in their constructor, some at import or their first call); --from/--to evaluate a slice of the chosen rows (1-based, the
numbers printed), so one pass can be split over several device calls;
--results writes one JSON line per evaluated row; --skip 1/50 leaves out a row
(their harness ran row 1/50 for over 570 s without an answer, on an H100).
"""
import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import time


def load_harness(path):
    spec = importlib.util.spec_from_file_location("cuda_l1_eval", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def last_record(log_path):
    record = {}
    try:
        with open(log_path) as f:
            for line in f:
                line = line.strip()
                if line:
                    record = json.loads(line)
    except (OSError, ValueError):
        pass
    return record


PREWARM_CHILD = """
import sys, json
import torch
row = json.loads(sys.stdin.read())
ref, custom = {}, {}
exec(compile(row["ref_code"], "<ref_code>", "exec"), ref)
exec(compile(row["custom_code"], "<custom_code>", "exec"), custom)
# Constructed and called once on the GPU, as their harness's first steps do,
# so extensions built in the constructor or at the first call are built too.
cuda = lambda xs: [x.cuda() if isinstance(x, torch.Tensor) else x for x in xs]
model = custom["ModelNew"](*cuda(ref["get_init_inputs"]())).cuda()
with torch.no_grad():
    model(*cuda(ref["get_inputs"]()))
torch.cuda.synchronize()
"""


def prewarm(rows, ext_root, jobs):
    """Fills each row's extension folder by executing its code in a fresh
    process, `jobs` rows at a time; prints each row's build wall."""
    if not ext_root:
        print("--prewarm needs --ext_root", file=sys.stderr)
        return 2
    start = time.monotonic()
    pending = [(i, row) for i, row in enumerate(rows, 1) if row.get("custom_code")]
    total = len(pending)
    running = []  # (row number, process, its log, start)
    while pending or running:
        while pending and len(running) < jobs:
            i, row = pending.pop(0)
            folder = os.path.join(ext_root, "row%d" % i)
            os.makedirs(folder, exist_ok=True)
            env = dict(os.environ, TORCH_EXTENSIONS_DIR=folder)
            log = open(os.path.join(folder, "prewarm.log"), "w+")
            proc = subprocess.Popen([sys.executable, "-c", PREWARM_CHILD], stdin=subprocess.PIPE,
                                    stdout=log, stderr=subprocess.STDOUT, env=env, text=True)
            proc.stdin.write(json.dumps(row))
            proc.stdin.close()
            running.append((i, proc, log, time.monotonic()))
        time.sleep(0.2)
        for entry in list(running):
            i, proc, log, t0 = entry
            if proc.poll() is None:
                continue
            running.remove(entry)
            log.seek(0)
            err = log.read().strip().splitlines()
            log.close()
            print("prewarm row %d: rc=%d %.1f s %s" % (i, proc.returncode, time.monotonic() - t0,
                                                      err[-1][:200] if err and proc.returncode else ""),
                  flush=True)
    print("prewarm: %d rows in %.1f s" % (total, time.monotonic() - start), flush=True)
    return 0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jsonl", required=True)
    p.add_argument("--rows", type=int, default=8, help="the first N rows of the file")
    p.add_argument("--harness", default=os.path.join(here, "../../../shared/data/cuda-l1/eval_cuda.py"))
    p.add_argument("--gpu", type=int, default=0)
    p.add_argument("--sample", type=int, default=0, help="a fixed random subset of N rows with custom code")
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--write_rows", default="", help="write the chosen rows here (JSON lines)")
    p.add_argument("--dry", action="store_true", help="choose (and write) the rows, evaluate none")
    p.add_argument("--ext_root", default="", help="a TORCH_EXTENSIONS_DIR per row under this folder")
    p.add_argument("--prewarm", type=int, default=0, help="build the rows' extensions, N at once, and stop")
    p.add_argument("--from", dest="first", type=int, default=1, help="first row to evaluate (1-based)")
    p.add_argument("--to", dest="last", type=int, default=0, help="last row to evaluate (0: the last)")
    p.add_argument("--results", default="", help="append one JSON line per evaluated row here")
    p.add_argument("--skip", default="", help="rows not to evaluate, as level/task,... (e.g. one that hangs)")
    args = p.parse_args()
    with open(args.jsonl) as f:
        if args.sample > 0:
            lines = [line for line in f if json.loads(line).get("custom_code")]
            picked = sorted(random.Random(args.seed).sample(range(len(lines)), min(args.sample, len(lines))))
            lines = [lines[i] for i in picked]
        else:
            lines = [line for _, line in zip(range(args.rows), f)]
    rows = [json.loads(line) for line in lines]
    if args.write_rows:
        with open(args.write_rows, "w") as out:
            out.writelines(line if line.endswith("\n") else line + "\n" for line in lines)
    if args.dry:
        print("%d rows chosen" % len(rows))
        return 0
    if args.prewarm > 0:
        return prewarm(rows, args.ext_root, args.prewarm)
    skip = set(filter(None, args.skip.split(",")))
    harness = load_harness(os.path.abspath(args.harness))
    logs = tempfile.mkdtemp(prefix="cuda-l1-loop-")
    start = time.monotonic()
    evaluated = 0
    for i, row in enumerate(rows, 1):
        if i < args.first or (args.last and i > args.last):
            continue
        name = "level%s_task%s" % (row.get("level_id"), row.get("task_id"))
        if "%s/%s" % (row.get("level_id"), row.get("task_id")) in skip:
            print("row %d %s: skipped (--skip)" % (i, name), flush=True)
            continue
        if not row.get("custom_code"):
            print("row %d %s: no custom_code (skipped, as their eval() does)" % (i, name), flush=True)
            continue
        log_path = os.path.join(logs, "%d.jsonl" % i)
        if args.ext_root:
            os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(args.ext_root, "row%d" % i)
        t0 = time.monotonic()
        try:
            harness.eval_pipeline(
                warmup_src=row["ref_code"], original_model_src=row["ref_code"],
                custom_model_src=row["custom_code"], num_correct_trials=10, num_perf_trials=10,
                global_n_trials=7, gpu_index=args.gpu, verbose=False, log_path=log_path,
                max_time=1800, original_eval_setup="vanilla")
            outcome = last_record(log_path)
        except Exception as e:  # their harness raising is an outcome too
            outcome = {"exception": repr(e)[:300]}
        wall = time.monotonic() - t0
        evaluated += 1
        keep = {k: outcome[k] for k in ("error", "error_msg", "info", "score", "speedup", "exception")
                if k in outcome}
        print("row %d %s: %.1f s %s" % (i, name, wall, json.dumps(keep)[:400]), flush=True)
        if args.results:
            with open(args.results, "a") as out:
                out.write(json.dumps({"row": i, "level": row.get("level_id"), "task": row.get("task_id"),
                                      "wall_seconds": round(wall, 2), **keep}) + "\n")
    total = time.monotonic() - start
    print("cuda-l1 harness: %d rows evaluated in %.1f s: %.0f per hour" %
          (evaluated, total, 3600.0 * evaluated / total if total > 0 else 0), flush=True)


if __name__ == "__main__":
    sys.exit(main())
