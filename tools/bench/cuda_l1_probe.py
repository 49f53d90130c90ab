#!/usr/bin/env python3
"""Times a CUDA-L1 row's reference and optimised model three ways in one
process, to explain a gap between crl's speedup and another harness's:

  per call   CUDA events around each call, synchronised after each (launch
             overhead included; close to how CUDA-L1's harness times)
  batched    N calls back to back between two events (launch overhead
             hidden where the GPU is the bottleneck)
  graph      one CUDA graph of N calls replayed (device time only; how crl
             times on a GPU)

Both models are built as KernelBench does (the same seed before each, on the
CPU, then moved) and called on the same inputs. Diagnostic only: no
isolation, no checks of the outputs.

  python3 tools/bench/cuda_l1_probe.py --jsonl rows.jsonl --rows 1/61,2/55 [--calls 6] [--reps 20]
"""
import argparse
import json
import statistics
import sys

import torch


def build(src, name):
    ns = {}
    exec(compile(src, "<%s>" % name, "exec"), ns)
    return ns


def construct(ns, cls_name, init_inputs, seed):
    torch.manual_seed(seed)
    model = ns[cls_name](*init_inputs)
    return model.cuda().eval()


def per_call(fn, inputs, reps):
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*inputs)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def batched(fn, inputs, calls, reps):
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn(*inputs)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return statistics.median(times)


def graph(fn, inputs, calls, reps):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn(*inputs)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn(*inputs)
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        g.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return statistics.median(times)


def probe(row, calls, reps):
    ref = build(row["ref_code"], "ref")
    cand = build(row["custom_code"], "custom")
    init = ref["get_init_inputs"]()
    torch.manual_seed(1)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref["get_inputs"]()]
    models = {"reference": construct(ref, "Model", init, 42),
              "candidate": construct(cand, "ModelNew", init, 42)}
    result = {}
    with torch.no_grad():
        for side, model in models.items():
            for _ in range(5):
                model(*inputs)
            torch.cuda.synchronize()
            result[side] = {"per_call": per_call(model, inputs, reps),
                            "batched": batched(model, inputs, calls, reps)}
            try:
                result[side]["graph"] = graph(model, inputs, calls, reps)
            except Exception as e:  # noqa: BLE001 — a side that cannot be captured
                result[side]["graph"] = None
                result[side]["graph_error"] = repr(e)[:120]
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jsonl", required=True)
    p.add_argument("--rows", required=True, help="level/task,... e.g. 1/61,2/55")
    p.add_argument("--calls", type=int, default=6, help="calls per batch and per graph")
    p.add_argument("--reps", type=int, default=20)
    args = p.parse_args()
    wanted = [tuple(int(x) for x in r.split("/")) for r in args.rows.split(",")]
    rows = {}
    with open(args.jsonl) as f:
        for line in f:
            row = json.loads(line)
            rows[(row["level_id"], row["task_id"])] = row
    for key in wanted:
        if key not in rows:
            print("%d/%d: not in %s" % (key[0], key[1], args.jsonl))
            continue
        try:
            r = probe(rows[key], args.calls, args.reps)
        except Exception as e:  # noqa: BLE001 — report and go on to the next row
            print("%d/%d: failed: %r" % (key[0], key[1], e), flush=True)
            continue
        parts = []
        for way in ("per_call", "batched", "graph"):
            ref, cand = r["reference"].get(way), r["candidate"].get(way)
            if ref and cand:
                parts.append("%s ref %.4f ms cand %.4f ms speedup %.2fx" % (way, ref, cand, ref / cand))
            else:
                parts.append("%s: %s" % (way, r["candidate"].get("graph_error") or r["reference"].get("graph_error")))
        print("%d/%d: %s" % (key[0], key[1], "; ".join(parts)), flush=True)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
