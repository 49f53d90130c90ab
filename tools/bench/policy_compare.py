#!/usr/bin/env python3
"""crl against eager PyTorch from scripts/gpu-policy.sh's policy-bench.jsonl
(ROUNDS=N: each implementation measured N times, alternating): per preset
and mode, each round's train and log-probability tokens/s, each round's
ratio (crl's round k over eager's round k), and the medians.

  policy_compare.py policy-bench.jsonl
"""
import json
import statistics
import sys
from collections import defaultdict


def kind(impl):
    if impl.startswith("crl"):
        return "crl"
    return "compile" if "compile" in impl else "eager"


def main():
    runs = defaultdict(list)  # (preset, mode, kind) -> results in order
    with open(sys.argv[1]) as f:
        for line in f:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "train_tokens_per_second" not in r:
                continue
            runs[(r["preset"], r["mode"], kind(r["implementation"]))].append(r)
    for preset, mode in sorted({(p, m) for p, m, _ in runs}):
        crl, eager = runs.get((preset, mode, "crl"), []), runs.get((preset, mode, "eager"), [])
        print(f"{preset} {mode}: {len(crl)} crl and {len(eager)} eager runs")
        for key, what in [("train_tokens_per_second", "train"), ("logprob_tokens_per_second", "logprob")]:
            c = [r[key] for r in crl]
            e = [r[key] for r in eager]
            ratios = [a / b for a, b in zip(c, e)]
            print(f"  {what:8} crl   " + " ".join(f"{v:9.0f}" for v in c))
            print(f"  {what:8} eager " + " ".join(f"{v:9.0f}" for v in e))
            if ratios:
                print(f"  {what:8} crl / eager per round " + " ".join(f"{v:.3f}" for v in ratios) +
                      f"; median {statistics.median(ratios):.3f}, min {min(ratios):.3f}; "
                      f"median tokens/s {statistics.median(c):.0f} / {statistics.median(e):.0f} = "
                      f"{statistics.median(c) / statistics.median(e):.3f}")
        peaks = [(r["train_peak_gib"]) for r in crl], [(r["train_peak_gib"]) for r in eager]
        if peaks[0] and peaks[1]:
            print(f"  train peak GiB: crl {max(peaks[0]):.1f}, eager {max(peaks[1]):.1f}")


if __name__ == "__main__":
    main()
