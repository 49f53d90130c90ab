#!/usr/bin/env python3
"""Where a profiled training step's GPU time goes, for several Chrome traces
side by side (crl-bench-trainer --profile, policy_torch_bench.py --profile:
both Kineto's format, two steps each).

  trace_summary.py crl=crl-lora.json eager=eager-lora.json [--steps 2] [--top 25]

Per trace: kernels and their summed device time, the span from the first
kernel's start to the last one's end, how much of the span no kernel ran
(the GPU waiting for the host), and the device time by kind of kernel, all
per step; then the largest kernels by summed time.
"""
import argparse
import json
import re
from collections import defaultdict

KINDS = [
    ("gemm", r"gemm|cutlass|nvjet|xmma|sm90_|cublas|Kernel2|splitK"),
    ("attention", r"flash|fmha|attention|sdpa|efficient"),
    ("foreach/optimizer", r"multi_tensor|foreach|adam"),
    ("softmax", r"softmax"),
    ("reduce", r"reduce|norm"),
    ("copy/cast", r"copy|cast|to_copy"),
    ("elementwise", r"elementwise|vectorized|unrolled|pointwise"),
    ("index/scatter", r"index|scatter|gather|embedding"),
]


def kind_of(name):
    for kind, pattern in KINDS:
        if re.search(pattern, name, re.IGNORECASE):
            return kind
    return "other"


def load(path):
    with open(path) as f:
        data = json.load(f)
    return data["traceEvents"] if isinstance(data, dict) else data


def summarise(events, steps):
    kernels = [e for e in events if e.get("cat") in ("kernel", "Kernel") and "dur" in e]
    gpu_other = [e for e in events if e.get("cat") in ("gpu_memcpy", "gpu_memset") and "dur" in e]
    launches = sum(1 for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver") and "Launch" in e.get("name", ""))
    syncs = sum(1 for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver") and "Synchronize" in e.get("name", ""))
    device = sorted(((e["ts"], e["ts"] + e["dur"]) for e in kernels + gpu_other))
    busy, end = 0.0, None
    for a, b in device:
        if end is None or a > end:
            busy += b - a
            end = b
        elif b > end:
            busy += b - end
            end = b
    span = (device[-1][1] - device[0][0]) if device else 0.0
    by_kind = defaultdict(float)
    by_name = defaultdict(lambda: [0, 0.0])
    for e in kernels:
        by_kind[kind_of(e["name"])] += e["dur"]
        by_name[e["name"]][0] += 1
        by_name[e["name"]][1] += e["dur"]
    for e in gpu_other:
        by_kind[e["cat"]] += e["dur"]
    return {
        "kernels": len(kernels) / steps,
        "kernel_ms": sum(e["dur"] for e in kernels) / steps / 1e3,
        "span_ms": span / steps / 1e3,
        "idle_ms": (span - busy) / steps / 1e3,
        "launches": launches / steps,
        "syncs": syncs / steps,
        "by_kind": {k: v / steps / 1e3 for k, v in by_kind.items()},
        "by_name": {k: (c / steps, t / steps / 1e3) for k, (c, t) in by_name.items()},
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="+", help="label=path")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    labels, sums = [], []
    for t in args.traces:
        label, _, path = t.partition("=")
        labels.append(label)
        sums.append(summarise(load(path or label), args.steps))
    w = max(12, *(len(label) for label in labels))
    row = lambda name, vals: print(f"{name:<34}" + "".join(f"{v:>{w + 2}}" for v in vals))
    print("per step")
    row("", labels)
    for key, fmt in [("span_ms", "{:.1f}"), ("kernel_ms", "{:.1f}"), ("idle_ms", "{:.1f}"),
                     ("kernels", "{:.0f}"), ("launches", "{:.0f}"), ("syncs", "{:.0f}")]:
        row(key, [fmt.format(s[key]) for s in sums])
    kinds = sorted({k for s in sums for k in s["by_kind"]}, key=lambda k: -max(s["by_kind"].get(k, 0) for s in sums))
    print("device ms per step, by kind")
    for k in kinds:
        row(k, [f"{s['by_kind'].get(k, 0):.2f}" for s in sums])
    for label, s in zip(labels, sums):
        print(f"largest kernels, {label} (calls per step, ms per step)")
        top = sorted(s["by_name"].items(), key=lambda kv: -kv[1][1])[: args.top]
        for name, (calls, ms) in top:
            print(f"  {ms:8.2f} ms {calls:6.0f}x  {name[:110]}")


if __name__ == "__main__":
    main()
