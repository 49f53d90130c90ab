#!/usr/bin/env bash
# Equal work on the host: every KernelBench-format task timed against itself
# (the candidate is the reference's own code, its Model renamed ModelNew), so
# every speedup should be 1. Prints one line per round with each task's
# speedup, then per task the median over rounds and its spread.
#
#   scripts/bench-equal-work.sh [ROUNDS] [CRL...]
#
# ROUNDS (default 3) rounds of `crl bench --gpus=`; with several crl
# binaries (e.g. an old and a new build), the rounds alternate between them
# (A B A B ...), each round a fresh worker. GPUS (default none: host lanes)
# is crl bench's --gpus (e.g. 0, with BENCH_ARGS=--host_lanes=0, for the
# GPU). TASKS (default tasks/kernelbench)
# is the task directory; BENCH_ARGS adds crl bench flags; OUT (default
# /tmp/equal-work) keeps each round's results JSON; REPORT_ONLY=1 only
# prints what an earlier run there left.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
shift || true
BINS=("$@")
[ ${#BINS[@]} -eq 0 ] && BINS=(build/bin/crl)
TASKS=${TASKS:-tasks/kernelbench}
OUT=${OUT:-/tmp/equal-work}
read -r -a more <<< "${BENCH_ARGS:-}"
mkdir -p "$OUT/generations"
for f in "$TASKS"/level*/*.py; do
  level=$(basename "$(dirname "$f")" | tr -dc 0-9)
  problem=$(basename "$f" | cut -d_ -f1)
  sed -E 's/\bModel\b/ModelNew/g' "$f" > "$OUT/generations/level_${level}_problem_${problem}_sample_0_kernel.py"
done
for ((r = 0; r < ROUNDS; ++r)); do
  [ -n "${REPORT_ONLY:-}" ] && break
  for ((b = 0; b < ${#BINS[@]}; ++b)); do
    json="$OUT/round${r}_bin${b}.json"
    "${BINS[$b]}" bench --gpus="${GPUS:-}" --tasks "$TASKS" --generations "$OUT/generations" --jobs 1 \
      --cache_dir "$OUT/cache" --work_dir "$OUT/work" --out "$json" --journal none "${more[@]}" > "$OUT/round${r}_bin${b}.log" 2>&1 || true
  done
done
python3 - "$OUT" "$ROUNDS" "${#BINS[@]}" <<'PY'
import json, statistics, sys
out, rounds, bins = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for b in range(bins):
    per = {}
    for r in range(rounds):
        try:
            rows = json.load(open(f"{out}/round{r}_bin{b}.json"))
        except (OSError, ValueError) as e:
            print(f"bin {b} round {r}: no results ({e})")
            continue
        line = []
        for level in sorted(k for k in rows if k.startswith("level")):
            for problem, samples in sorted(rows[level].items(), key=lambda kv: int(kv[0])):
                row = samples.get("0", {})
                s = row.get("speedup") or 0
                name = "%s/%s" % (level[5:], problem)
                flags = [f for f in row.get("flags", []) if f != "NO_CUSTOM_KERNEL"]
                if s > 0:
                    per.setdefault(name, []).append(s)
                line.append("%s %s%s" % (name, ("%.3f" % s) if s > 0 else row.get("verdict", "?"),
                                         (" " + "+".join(flags)) if flags else ""))
        print(f"bin {b} round {r}: " + ", ".join(line))
    devs = []
    for name, v in sorted(per.items()):
        m = statistics.median(v)
        devs.append(abs(m - 1))
        print(f"bin {b} {name}: median {m:.3f} (min {min(v):.3f}, max {max(v):.3f}, {len(v)} rounds)")
    if devs:
        worst = max(abs(x - 1) for v in per.values() for x in v)
        print(f"bin {b}: median |speedup - 1| over tasks {statistics.median(devs):.3f}; "
              f"worst single round {worst:.3f}; tasks {len(per)}")
PY
