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
"""
import argparse
import importlib.util
import json
import os
import random
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
    harness = load_harness(os.path.abspath(args.harness))
    logs = tempfile.mkdtemp(prefix="cuda-l1-loop-")
    start = time.monotonic()
    evaluated = 0
    for i, row in enumerate(rows, 1):
        name = "level%s_task%s" % (row.get("level_id"), row.get("task_id"))
        if not row.get("custom_code"):
            print("row %d %s: no custom_code (skipped, as their eval() does)" % (i, name), flush=True)
            continue
        log_path = os.path.join(logs, "%d.jsonl" % i)
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
    total = time.monotonic() - start
    print("cuda-l1 harness: %d rows evaluated in %.1f s: %.0f per hour" %
          (evaluated, total, 3600.0 * evaluated / total if total > 0 else 0), flush=True)


if __name__ == "__main__":
    sys.exit(main())
