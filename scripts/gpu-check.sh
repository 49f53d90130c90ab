#!/usr/bin/env bash
# Runs on the GPU machine (device tool) over a tree that carries .gpu-bundle/
# (scripts/gpu-bundle.sh): the GPU test binary, then the GPU benchmarks of
# docs/benchmarks.md. Writes logs to $OUT when set.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/crl-gpu-out}
mkdir -p "$OUT"
export CRL_SOURCE_DIR=$PWD CRL_TEST_BIN_DIR=$PWD/.gpu-bundle/bin CRL_PYTHON=$(command -v python3)
B=.gpu-bundle/run.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"

echo "== crl_gpu_tests"
$B crl_gpu_tests --durations yes 2>&1 | grep -v "^\s*$" | tee "$OUT/gpu_tests.log" | \
  grep -E "as expected|kernelbench cuda|kernelbench timing|hostile|side stream|^[a-z_0-9]+ +[0-9.]+ms|passed|failed|FAILED|ratio" 

[ -x .gpu-bundle/bin/crl ] || { echo "no crl CLI in the bundle (it links LibTorch): skipping the CLI checks"; exit 0; }
echo "== the oracle on the side-stream hacks"
for t in conv1d diag_matmul; do
  $B crl eval --task tasks/native/$t --candidate tasks/native/$t/candidates/hack_side_stream.cu \
     --backend cuda --gpus 0 --host_lanes 0 --time --json --budget_seconds 10 2>/dev/null | \
     python3 -c 'import json,sys; j=json.load(sys.stdin); print(sys.argv[1], j["status"], "speedup", round(j["speedup"],3), "flags", j["flags"]); [print("  ", e) for e in j["flag_evidence"]]' $t
done | tee "$OUT/side_stream.txt"
[ "${1:-}" = quick ] && exit 0

echo "== timing reproducibility: softmax_rows fast_correct.cu, 10 runs"
for i in $(seq 1 10); do
  $B crl eval --task tasks/native/softmax_rows --candidate tasks/native/softmax_rows/candidates/fast_correct.cu \
     --backend cuda --gpus 0 --host_lanes 0 --time --json 2>/dev/null | \
     python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["speedup"], j["speedup_ci"][0], j["speedup_ci"][1], j["stop_reason"], len(j["samples"]["candidate"]), j["ref_seconds"], j["candidate_seconds"], j["candidate_stream_seconds"], ",".join(j["flags"]))'
done | tee "$OUT/repro.txt"

echo "== time to a 1% CI for a ~1 ms kernel (matmul 1024^3, naive reference vs fast)"
T=$(mktemp -d)/matmul_1ms
cp -r tasks/native/matmul "$T"
python3 - "$T/task.yaml" <<'PY'
import re, sys
p = sys.argv[1]; s = open(p).read()
s = re.sub(r"(?ms)^sizes:\n(  \w+: \d+\n)+", "sizes:\n  M: 1024\n  K: 1024\n  N: 1024\n", s)
open(p, "w").write(s)
PY
for i in 1 2 3; do
  /usr/bin/time -f "wall %e s" $B crl eval --task "$T" --candidate "$T/candidates/fast_correct.cu" --backend cuda \
     --gpus 0 --host_lanes 0 --time --json --target_rel_ci 0.01 --budget_seconds 60 2>&1 | \
     python3 -c 'import json,sys; t=sys.stdin.read(); j=json.loads(t[:t.rindex("}")+1]); print("speedup", j["speedup"], "ci", j["speedup_ci"], j["stop_reason"], "pairs", len(j["samples"]["candidate"]), "ref_ms", 1e3*j["ref_seconds"], "cand_ms", 1e3*j["candidate_seconds"]); print(t[t.rindex("}")+1:].strip())'
done | tee "$OUT/ci_1ms.txt"

if [ -x .gpu-bundle/bin/crl-bench-worker ]; then
  echo "== worker benchmarks, cuda backend"
  $B crl-bench-worker --backend cuda --gpus 0 --host_lanes 0 --evaluations 5 --seconds 15 2>&1 | tee "$OUT/bench_cuda.txt" | tail -40
fi
