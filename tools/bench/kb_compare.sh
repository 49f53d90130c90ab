#!/usr/bin/env bash
# Evaluations per hour of `crl bench` against tools/bench/kb_sequential.py (one
# process evaluates everything in turn, as KernelBench's original harness does)
# on the same generations, one after the other in one run, both with cold
# build caches (crl keeps its precompiled header: it is built once per
# installation, not per batch).
#   tools/bench/kb_compare.sh GENERATIONS_DIR [crl bench flags...]
# Environment: CRL (default build/bin/crl; .gpu-bundle/run.sh crl on the GPU
# machine), PYTHON (default /usr/bin/python3, the one crl uses), CACHE (default /tmp/kb-compare-cache).
set -euo pipefail
cd "$(dirname "$0")/../.."
GEN=$1; shift
CRL=${CRL:-build/bin/crl}
PY=${PYTHON:-/usr/bin/python3}
CACHE=${CACHE:-/tmp/kb-compare-cache}
now() { date +%s%N; }
rm -rf "$CACHE/objects" /tmp/kb-compare-work
t0=$(now)
"$PY" tools/bench/kb_sequential.py --tasks tasks/kernelbench --generations "$GEN" \
  --out /tmp/kb-compare-sequential.json > /tmp/kb-compare-sequential.log 2>&1
t1=$(now)
$CRL bench --tasks tasks/kernelbench --generations "$GEN" --out /tmp/kb-compare-crl.json \
  --python "$PY" --cache_dir "$CACHE" --work_dir /tmp/kb-compare-work "$@" \
  2> /tmp/kb-compare-crl.log
t2=$(now)
n=$(ls "$GEN" | grep -c '^level_.*_kernel\.py$')
"$PY" - "$n" "$t0" "$t1" "$t2" <<'PYEOF'
import json, sys
n, t0, t1, t2 = int(sys.argv[1]), *map(int, sys.argv[2:])
seq = json.load(open("/tmp/kb-compare-sequential.json"))
crl = json.load(open("/tmp/kb-compare-crl.json"))
for name, ns in (("sequential", t1 - t0), ("crl bench", t2 - t1)):
    s = ns / 1e9
    print("%-10s %d candidates in %.1f s: %.0f evaluations/hour" % (name, n, s, 3600 * n / s))
builds = [r["build_seconds"] for r in seq["rows"] if "build_seconds" in r]
print("sequential: builds %.1f s in all, %d correct" % (sum(builds), sum(bool(r.get("correct")) for r in seq["rows"])))
print("crl bench builds:", json.dumps(crl["builds"]))
for L in crl["summary"]:
    print(L, {k: crl["summary"][L][k] for k in ("attempted", "correct", "flagged", "infra_errors")})
PYEOF
