#!/usr/bin/env bash
# KernelBench-format checks and benchmarks on the GPU machine, with the
# binaries of .gpu-bundle (scripts/gpu-bundle.sh) and the machine's PyTorch.
#   scripts/gpu-kb.sh smoke    one CUDA candidate: precompiled header, cold and cached build, timing
#   scripts/gpu-kb.sh suite    build latency (cold, header warm; SUITE_ARGS: worker flags) and generations_cuda through
#                              crl bench (fast_p table, results JSON); KB_PHASES=1 adds phases
#   scripts/gpu-kb.sh hacks    every hack of expect.yaml on the GPU, timed where it passes
#   scripts/gpu-kb.sh phases   where a cold CUDA load_inline build spends its time
#   scripts/gpu-kb.sh compare  evaluations per hour: crl bench against a one-process loop (tools/bench/kb_compare.sh)
#   scripts/gpu-kb.sh throughput  evaluations per hour on a fixed random subset of CUDA-L1 rows
#                              (ROWS, SEED): WHO=crl runs crl bench (PASSES: cold build cache, build:
#                              cold and verify only (the builds for the passes after it), warm,
#                              nowarm: no warm pool, nobatch: no batched timing, nocache: no
#                              reference cache, held: verifications and kept pairs hold their
#                              lane (no stepping aside for timing), rounds / rounds_nocache: the rows ROUNDS times over
#                              in one batch, as an RL run evaluates a task once per round, with and
#                              without the reference cache; BENCH_ARGS: more crl bench flags; GPUS: the
#                              worker's GPUs, default 0; TAG: a suffix for the pass's files); WHO=theirs
#                              runs CUDA-L1's own harness on the same rows, cold then warm
#                              (THEIRS_PASSES: cold, prewarm (their builds, 8 rows at once, no
#                              measurement), warm; THEIRS_ARGS: tools/bench/cuda_l1_loop.py flags)
#   scripts/gpu-kb.sh all      suite (with phases) and hacks: about 10 minutes on an H100 machine
# Results go to $OUT (default /tmp/kb-out).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/kb-out}
mkdir -p "$OUT"
PY=${PYTHON:-$(command -v python3)}
RUN=.gpu-bundle/run.sh
CACHE=${KB_CACHE:-/tmp/kb-cache}
COMMON=(--python "$PY" --cache_dir "$CACHE" --work_dir /tmp/kb-work --host_lanes 0)
# SUITE_ARGS: more worker flags for suite and smoke (e.g. --kb_split_cuda=false)
read -r -a suite_more <<< "${SUITE_ARGS:-}"
COMMON+=("${suite_more[@]}")
KB=tasks/kernelbench
now() { date +%s%N; }
secs() { echo "$(( ($(now) - $1) / 1000000 )) ms"; }

if [ "${1:-}" = all ]; then
  for m in suite hacks; do echo "== $m"; KB_PHASES=1 bash "$0" "$m"; done
  exit 0
fi

case "${1:-smoke}" in
smoke)
  nvidia-smi -L; command -v ninja; ls $(dirname "$PY") | head -30
  "$PY" -c 'import torch, sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())'
  for i in 1 2; do
    t0=$(now)
    $RUN crl eval --task $KB/level1/1_ScaledGelu.py \
      --candidate $KB/generations_cuda/level_1_problem_1_sample_0_kernel.py \
      --json --time --budget_seconds 10 "${COMMON[@]}" > "$OUT/smoke$i.json" 2> "$OUT/smoke$i.log"
    echo "smoke run $i: rc=$? wall $(secs $t0)"
    "$PY" -c "import json,sys; j=json.load(open(sys.argv[1])); print({k: j.get(k) for k in ('status','compile_seconds','compile_cache_hit','speedup','speedup_ci','flags','custom_kernel')}); print(j['messages'][-1:], j.get('compile_log', '')[-1500:])" "$OUT/smoke$i.json"
    tail -3 "$OUT/smoke$i.log"
  done
  ;;
suite)
  show='import json,sys; j=json.load(open(sys.argv[1])); print("builds", json.dumps(j["builds"])); [print(L, p, s, r["verdict"], r["speedup"], r["flags"], "build %.1f s" % r["metadata"]["compile_seconds"], "cached" if r["metadata"]["compile_cache_hit"] else "cold") for L in ("level1","level2") for p, ss in j[L].items() for s, r in ss.items()]'
  # Build latency first: verify only, on a fresh cache (includes the one-off
  # precompiled header), then again with the header warm and the objects gone.
  for run in first cold; do
    [ $run = cold ] && rm -rf "$CACHE/objects"
    t0=$(now)
    $RUN crl bench --tasks $KB --generations $KB/generations_cuda --out "$OUT/builds_$run.json" \
      --jobs 4 --no_time "${COMMON[@]}" 2> "$OUT/builds_$run.log" > /dev/null
    echo "verify-only, $run builds: rc=$? wall $(secs $t0)"
    grep 'precompiled' "$OUT/builds_$run.log" | cut -c1-160
    "$PY" -c "$show" "$OUT/builds_$run.json"
  done
  [ -n "${KB_PHASES:-}" ] && bash "$0" phases
  # The timed batch, on cached builds.
  t0=$(now)
  $RUN crl bench --tasks $KB --generations $KB/generations_cuda --out "$OUT/bench_cuda.json" \
    --jobs 4 --budget_seconds 10 "${COMMON[@]}" 2> "$OUT/bench_cuda.log"
  echo "timed bench rc=$? wall $(secs $t0)"
  tail -6 "$OUT/bench_cuda.log"
  "$PY" -c "$show" "$OUT/bench_cuda.json"
  ;;
hacks)
  # Every hack of expect.yaml (the host ones are device-agnostic Python).
  # Those expected to fail verification run 6 at a time; those expected to
  # pass are timed, one at a time, so their timings see an idle GPU.
  "$PY" - "$OUT" "$PY" <<'PYEOF'
import concurrent.futures as cf, json, subprocess, sys, yaml
out, py = sys.argv[1], sys.argv[2]
expect = [c for c in yaml.safe_load(open("tasks/kernelbench/expect.yaml"))["candidates"]
          if c["file"].startswith("hacks/")]
def run(c):
    cmd = [".gpu-bundle/run.sh", "crl", "eval", "--task", "tasks/kernelbench/" + c["task"],
           "--candidate", "tasks/kernelbench/" + c["file"], "--json", "--budget_seconds", "5",
           "--python", py, "--cache_dir", "/tmp/kb-cache", "--work_dir", "/tmp/kb-work",
           "--host_lanes", "0"]
    if c["verdict"] == "OK":
        cmd.append("--time")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
        return c, json.loads(r.stdout), ""
    except Exception as e:
        return c, None, str(e)[-300:]
with cf.ThreadPoolExecutor(6) as pool:
    results = list(pool.map(run, [c for c in expect if c["verdict"] != "OK"]))
results += [run(c) for c in expect if c["verdict"] == "OK"]
ok = 0
for c, j, err in results:
    if j is None:
        print("BAD %-36s no JSON: %s" % (c["file"], err))
        continue
    flags = set(j.get("flags", []))
    want = set(c.get("flags", [])) | set(c.get("timing_flags", []))
    good = j["status"] == c["verdict"] and (c["verdict"] != "OK" or want <= flags)
    ok += good
    print("%s %-36s %-18s want %-18s flags=%s speedup=%s" % (
        "ok " if good else "BAD", c["file"], j["status"], c["verdict"], sorted(flags),
        j.get("speedup")))
    if not good or j["status"] != "OK":
        print("      ", (j.get("messages") or [""])[-1][-240:].replace("\n", " | "))
    for e in j.get("flag_evidence", []):
        print("      ", e[:240])
print("hacks as expected on the GPU: %d/%d" % (ok, len(results)))
PYEOF
  ;;
phases)
  # Where a cold CUDA load_inline build spends its time: re-run the commands
  # ninja ran for one cached build, each timed, nvcc with --time per phase.
  d=$(ls -d "$CACHE"/objects/*/ext/*/ 2>/dev/null | while read -r x; do [ -f "$x/cuda.cu" ] && echo "$x"; done | head -1)
  [ -n "$d" ] || { echo "no cached CUDA build"; exit 0; }
  rm -rf /tmp/phase && cp -r "$d" /tmp/phase && cd /tmp/phase && rm -f ./*.o ./*.so .ninja_*
  # The build ran in a temporary directory that was then moved into the cache.
  sed -i -E 's#[^ ]*/tmp/build-[^/ ]*/ext/[^/ ]*/#/tmp/phase/#g' build.ninja
  export PATH="$(dirname "$PY"):$PATH" NVCC_APPEND_FLAGS="--time /tmp/nvcc-phases.csv"
  for target in cuda.cuda.o main.o; do
    t0=$(now); ninja -j1 $target > /tmp/phase.log 2>&1; echo "$target: rc=$? $(secs $t0)"
  done
  t0=$(now); ninja -j1 > /tmp/phase-link.log 2>&1; echo "link: rc=$? $(secs $t0)"
  tail -3 /tmp/phase.log
  sed -E 's#/tmp/tmpxft_[^ ,]*##g; s#/tmp/phase/##g' /tmp/nvcc-phases.csv 2>/dev/null | head -30
  head -5 cuda.cu
  ;;
throughput)
  JSONL=${CUDA_L1_JSONL:-.gpu-data/h100.jsonl}
  HARNESS=${CUDA_L1_HARNESS:-.gpu-data/eval_cuda.py}
  N=${ROWS:-16}
  "$PY" tools/bench/cuda_l1_loop.py --jsonl "$JSONL" --sample "$N" --seed "${SEED:-11}" \
    --write_rows "$OUT/rows.jsonl" --dry
  if [ "${WHO:-crl}" = crl ]; then
    # cold: empty build cache; nowarm: no warm pool; nobatch: one call per timed sample
    for r in $(seq "${ROUNDS:-3}"); do cat "$OUT/rows.jsonl"; done > "$OUT/rows-rounds.jsonl"
    for pass in ${PASSES:-cold warm nowarm nobatch}; do
      extra=()
      rows="$OUT/rows.jsonl"
      [ "$pass" = cold ] && rm -rf "$CACHE.tp"
      [ "$pass" = build ] && rm -rf "$CACHE.tp" && extra=(--no_time)
      [ "$pass" = nowarm ] && extra=(--kb_warm_per_gpu 0)
      [ "$pass" = nobatch ] && extra=(--min_sample_seconds -1)
      [ "$pass" = nocache ] && extra=(--reference_cache_bytes 0)
      [ "$pass" = held ] && extra=(--step_aside_for_timing=false)
      case "$pass" in rounds*) rows="$OUT/rows-rounds.jsonl" ;; esac
      [ "$pass" = rounds_nocache ] && extra=(--reference_cache_bytes 0)
      # BENCH_ARGS: more crl bench flags for every pass (e.g. --budget_seconds 10)
      read -r -a more <<< "${BENCH_ARGS:-}"
      extra+=("${more[@]}")
      t0=$(now)
      # GPUS: the worker's GPUs (default 0; 0,1 for one worker over two);
      # TAG: a suffix for this pass's files (passes repeated on other GPUs).
      name="$pass${TAG:-}"
      $RUN crl bench --cuda-l1 "$rows" --jobs "${JOBS:-8}" --gpus "${GPUS:-0}" --host_lanes 0 --python "$PY" \
        --cache_dir "$CACHE.tp" --work_dir /tmp/kb-work --out "$OUT/results-$name.json" \
        "${extra[@]}" > "$OUT/bench-$name.log" 2>&1
      echo "crl $name (gpus ${GPUS:-0}): rc=$? wall $(secs $t0)"
      grep -E "^crl bench:" "$OUT/bench-$name.log"
    done
  else
    # Each row gets its own extension folder (rows whose extensions share a
    # name would rebuild each other's), so the warm pass is warm: most rows
    # build at construction, not import, and only an evaluation fills it.
    # THEIRS_PASSES (default "cold warm"), THEIRS_ARGS: more flags, e.g.
    # "--skip 1/50" or "--from 11".
    read -r -a theirs <<< "${THEIRS_ARGS:-}"
    # prewarm: their extension folders filled by building the rows 8 at a time
    # (ModelNew constructed and called once), instead of a cold pass.
    for pass in ${THEIRS_PASSES:-cold warm}; do
      fill=()
      case "$pass" in cold) rm -rf /tmp/cuda-l1-ext ;; prewarm) rm -rf /tmp/cuda-l1-ext; fill=(--prewarm 8) ;; esac
      t0=$(now)
      "$PY" tools/bench/cuda_l1_loop.py --jsonl "$OUT/rows.jsonl" --rows "$N" --harness "$HARNESS" \
        --ext_root /tmp/cuda-l1-ext --results "$OUT/theirs-$pass.jsonl" "${theirs[@]}" "${fill[@]}" \
        > "$OUT/theirs-$pass.log" 2>&1
      echo "theirs $pass: rc=$? wall $(secs $t0)"
      tail -1 "$OUT/theirs-$pass.log"
    done
  fi
  ;;
compare)
  mkdir -p "$CACHE.compare" && cp -r "$CACHE/kb-pch" "$CACHE.compare/" 2>/dev/null
  CRL="$RUN crl" PYTHON="$PY" CACHE="$CACHE.compare" tools/bench/kb_compare.sh \
    $KB/generations_cuda --jobs 4 --budget_seconds 10 --host_lanes 0
  ;;
esac
