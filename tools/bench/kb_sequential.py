#!/usr/bin/env python3
"""The comparison point for `crl bench` throughput: one process evaluates
every candidate in turn, the way KernelBench's original harness does
(load_inline builds in-process, 5 correctness trials with allclose, then
timed trials with CUDA events, or perf_counter on a CPU). No sandbox, no second process, no
interleaving; the numbers say what crl's isolation and pipelining cost or
save on the same batch.

  kb_sequential.py --tasks DIR --generations DIR [--trials 100] [--out FILE.json]
"""
import argparse
import importlib.util
import json
import os
import re
import sys
import tempfile
import time

import torch


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", required=True)
    ap.add_argument("--generations", required=True)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    pattern = re.compile(r"level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$")
    rows, start_all = [], time.perf_counter()
    build_root = tempfile.mkdtemp(prefix="kb-seq-")
    for gen in sorted(os.listdir(args.generations)):
        m = pattern.match(gen)
        if not m:
            continue
        level, problem = int(m.group(1)), int(m.group(2))
        task_dir = os.path.join(args.tasks, "level%d" % level)
        task_file = next((f for f in os.listdir(task_dir) if f.startswith("%d_" % problem)), None)
        if task_file is None:
            continue
        row = {"generation": gen, "task": task_file}
        t0 = time.perf_counter()
        try:
            task = load(os.path.join(task_dir, task_file), "task_%d_%d" % (level, problem))
            # Each candidate builds into its own directory, as a fresh run would.
            os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(build_root, gen)
            tb = time.perf_counter()
            cand = load(os.path.join(args.generations, gen), "cand_" + gen[:-3])
            row["build_seconds"] = time.perf_counter() - tb
            torch.manual_seed(42)
            init = task.get_init_inputs()
            torch.manual_seed(42)
            ref = task.Model(*init).to(device).eval()
            torch.manual_seed(42)
            new = cand.ModelNew(*init).to(device).eval()
            correct = True
            with torch.no_grad():
                for trial in range(5):
                    torch.manual_seed(trial)
                    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x
                              for x in task.get_inputs()]
                    a, b = ref(*inputs), new(*inputs)
                    correct = correct and torch.allclose(a, b, atol=1e-4, rtol=1e-4)
                row["correct"] = bool(correct)
                if correct:
                    times = {}
                    for name, model in (("ref", ref), ("new", new)):
                        for _ in range(3):
                            model(*inputs)
                        ms = []
                        for _ in range(args.trials):
                            if device.type == "cuda":
                                s, e = torch.cuda.Event(True), torch.cuda.Event(True)
                                s.record()
                                model(*inputs)
                                e.record()
                                torch.cuda.synchronize()
                                ms.append(s.elapsed_time(e))
                            else:
                                t = time.perf_counter()
                                model(*inputs)
                                ms.append((time.perf_counter() - t) * 1e3)
                        times[name] = sum(ms) / len(ms)
                    row["speedup"] = times["ref"] / times["new"]
        except Exception as e:  # noqa: BLE001 — one bad candidate must not stop the batch
            row["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
        row["seconds"] = time.perf_counter() - t0
        rows.append(row)
        print(json.dumps(row), flush=True)
    total = time.perf_counter() - start_all
    summary = {"candidates": len(rows), "total_seconds": total,
               "evaluations_per_hour": 3600 * len(rows) / total if total else 0}
    print(json.dumps(summary))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rows": rows, "summary": summary}, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
