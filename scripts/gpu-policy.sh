#!/usr/bin/env bash
# Runs on the GPU machine (device tool) over a tree that carries .gpu-policy/
# (scripts/gpu-policy-bundle.sh): builds tools/gpu against PyTorch's
# LibTorch, then runs the policy benchmarks of docs/benchmarks.md side by
# side with tools/bench/policy_torch_bench.py (eager and torch.compile).
#   scripts/gpu-policy.sh build                 configure and build build-gpu/
#   scripts/gpu-policy.sh train PRESET [MODES]  GRPO step + logprobs (full, lora)
#   scripts/gpu-policy.sh generate [BATCHES]    generation tokens/s (1 8 64)
#   scripts/gpu-policy.sh scale PRESET [MODES]  data parallel over N GPUs of the host (NGPUS): crl
#                                               (BUCKETS) and PyTorch DDP under torchrun, against one GPU each
#   scripts/gpu-policy.sh weights [PRESET]      weights after a few steps on NGPU ranks against one
#                                               process on the same global batch (float32, bfloat16)
#   scripts/gpu-policy.sh sync [PRESET]         weight sync: a published version from the trainer to a
#                                               serving sampler, apart (two GPUs) and colocated (one)
# One JSON line per measurement is appended to $OUT/policy-bench.jsonl.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/crl-gpu-out}
mkdir -p "$OUT"
R="$OUT/policy-bench.jsonl"
# IMPLS="crl eager compile" (default) chooses whose numbers to take.
IMPLS=${IMPLS:-"crl eager compile"}
has() { [[ " $IMPLS " == *" $1 "* ]]; }
export LD_LIBRARY_PATH="$PWD/.gpu-policy/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
stage=${1:-build}
shift || true

case "$stage" in
  build)
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$OUT/gpu.txt"
    prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
    gen=""; command -v ninja >/dev/null && gen="-G Ninja"
    if ! cmake -S tools/gpu -B build-gpu $gen -DCRL_DEPS="$PWD/.gpu-policy" -DCMAKE_PREFIX_PATH="$prefix" \
        -DTORCH_CUDA_ARCH_LIST=9.0 > "$OUT/gpu-cmake.log" 2>&1; then
      tail -40 "$OUT/gpu-cmake.log"; exit 1
    fi
    if ! cmake --build build-gpu -j "$(nproc)" > "$OUT/gpu-build.log" 2>&1; then
      grep -E "error" -A4 "$OUT/gpu-build.log" | head -80; exit 1
    fi
    # LibTorch's wheels export private copies of libstdc++'s std::filesystem
    # (pytorch/pytorch#133437): libstdc++ must be needed before every LibTorch
    # library, or our calls bind to those copies (tools/gpu/CMakeLists.txt).
    for b in build-gpu/crl-bench-*; do
      needed=$(readelf -d "$b" | awk '/NEEDED/ {gsub(/[][]/, "", $NF); print $NF}')
      at_stdcxx=$(grep -n -m1 '^libstdc++' <<<"$needed" | cut -d: -f1)
      at_torch=$(grep -n -m1 -E '^lib(torch|c10)' <<<"$needed" | cut -d: -f1)
      if [[ -z "$at_stdcxx" || "$at_stdcxx" -gt "${at_torch:-9999}" ]]; then
        echo "$b: libstdc++.so.6 is not needed before LibTorch:" $needed; exit 1
      fi
    done
    echo "built: $(ls build-gpu/crl-bench-*)"
    ;;
  train)
    # ROUNDS=N repeats every measurement N times, the implementations
    # alternating within each round (a process's speed varies between
    # processes more than within one: compare medians over rounds).
    # STEPS and WARMUP set the timed and untimed steps of each process.
    preset=${1:-qwen2.5-0.5b}
    modes=${2:-"full lora"}
    steps=${STEPS:-5} warmup=${WARMUP:-2}
    for round in $(seq 1 "${ROUNDS:-1}"); do
      for mode in $modes; do
        has crl && build-gpu/crl-bench-trainer --preset "$preset" --mode "$mode" --sequences 8 --prompt_len 512 \
          --completion_len 512 --steps "$steps" --warmup "$warmup" 2>>"$OUT/errors.log" | tee -a "$R"
        has eager && python3 tools/bench/policy_torch_bench.py train --preset "$preset" --mode "$mode" --steps "$steps" \
          --warmup "$warmup" 2>>"$OUT/errors.log" | tee -a "$R"
        has compile && python3 tools/bench/policy_torch_bench.py train --preset "$preset" --mode "$mode" --steps "$steps" \
          --warmup $((warmup + 1)) --compile 2>>"$OUT/errors.log" | tee -a "$R"
      done
    done
    ;;
  generate)
    for b in ${1:-1 8 64}; do
      has crl && build-gpu/crl-bench-sampler --preset qwen2.5-0.5b --batch "$b" --prompt_len 512 --new_tokens 512 \
        2>>"$OUT/errors.log" | tee -a "$R"
      has eager && python3 tools/bench/policy_torch_bench.py generate --preset qwen2.5-0.5b --batch "$b" \
        --prompt_len 512 --new_tokens 512 2>>"$OUT/errors.log" | tee -a "$R"
    done
    ;;
  scale)
    # Weak scaling: one GPU with SEQ sequences, N GPUs with N x SEQ (the
    # same work per GPU) for each N of NGPUS (default NGPU, default every
    # GPU); crl's ranks and PyTorch's DDP both started by torchrun, which
    # serves the rendezvous store (crl's ranks join it). BUCKETS: crl's
    # --reduce_bucket_mb values to run on N GPUs (0: one exchange after the
    # backward). ROUNDS alternate them all within each round.
    preset=${1:-qwen2.5-0.5b}
    modes=${2:-"full lora"}
    ns=${NGPUS:-${NGPU:-$(nvidia-smi -L | wc -l)}} seq=${SEQ:-8}
    steps=${STEPS:-5} warmup=${WARMUP:-2}
    run() { python3 -m torch.distributed.run --nnodes 1 --nproc_per_node "$1" --master_addr 127.0.0.1 \
              --master_port 29511 --max_restarts 0 "${@:2}"; }
    common=(--preset "$preset" --prompt_len 512 --completion_len 512 --steps "$steps" --warmup "$warmup")
    for round in $(seq 1 "${ROUNDS:-1}"); do
      for mode in $modes; do
        has crl && build-gpu/crl-bench-trainer "${common[@]}" --mode "$mode" --sequences "$seq" \
          2>>"$OUT/errors.log" | tee -a "$R"
        has eager && python3 tools/bench/policy_torch_bench.py train "${common[@]}" --mode "$mode" \
          --sequences "$seq" 2>>"$OUT/errors.log" | tee -a "$R"
        for n in $ns; do
          for b in ${BUCKETS:-25}; do
            has crl && run "$n" --no_python build-gpu/crl-bench-trainer "${common[@]}" --mode "$mode" \
              --sequences $((seq * n)) --dist_backend nccl --reduce_bucket_mb "$b" 2>>"$OUT/errors.log" | tee -a "$R"
          done
          has eager && run "$n" tools/bench/policy_torch_bench.py train "${common[@]}" --mode "$mode" \
            --sequences $((seq * n)) 2>>"$OUT/errors.log" | tee -a "$R"
        done
      done
    done
    ;;
  weights)
    # The same global batch (8 sequences) on one process and on NGPU ranks:
    # how far apart the weights are after WSTEPS steps; then one process in
    # micro-batches of one rank's share, against the same reference.
    preset=${1:-embedded}
    n=${NGPU:-$(nvidia-smi -L | wc -l)}
    len=${WLEN:-128}
    for precision in ${PRECISIONS:-float32 bfloat16}; do
      for mode in ${MODES:-full lora}; do
        ref="/tmp/weights-$preset-$mode-$precision.pt"
        common=(--preset "$preset" --mode "$mode" --precision "$precision" --sequences 8 --prompt_len "$len"
                --completion_len "$len" --steps "${WSTEPS:-3}" --warmup 0)
        build-gpu/crl-bench-trainer "${common[@]}" --weights_out "$ref" 2>>"$OUT/errors.log" >/dev/null
        python3 -m torch.distributed.run --nnodes 1 --nproc_per_node "$n" --master_addr 127.0.0.1 \
          --master_port 29512 --max_restarts 0 --no_python build-gpu/crl-bench-trainer "${common[@]}" \
          --dist_backend nccl --weights_against "$ref" 2>>"$OUT/errors.log" | tee -a "$OUT/weights.jsonl"
        # The control: one process whose micro-batches hold one rank's share
        # (8 / NGPU sequences): how far the batch's shape alone moves them.
        build-gpu/crl-bench-trainer "${common[@]}" --micro_batch_tokens $((8 / n * 2 * len)) \
          --weights_against "$ref" 2>>"$OUT/errors.log" | tee -a "$OUT/weights.jsonl"
        rm -f "$ref"
      done
    done
    ;;
  sync)
    # ROUNDS alternate the placements within each round; apart needs two GPUs.
    preset=${1:-qwen2.5-0.5b}
    n=$(nvidia-smi -L | wc -l)
    for round in $(seq 1 "${ROUNDS:-1}"); do
      for mode in ${MODES:-full lora}; do
        for placement in ${PLACEMENTS:-apart colocated}; do
          t=cuda:0
          if [ "$placement" = apart ]; then
            [ "$n" -ge 2 ] || { echo "sync apart: this machine shows $n GPU(s)"; continue; }
            t=cuda:1
          fi
          build-gpu/crl-bench-sync --preset "$preset" --mode "$mode" --trainer_device "$t" --sampler_device cuda:0 \
            --versions "${VERSIONS:-3}" 2>>"$OUT/errors.log" | tee -a "$R"
        done
      done
    done
    ;;
  *) echo "usage: $0 build | train PRESET [MODES] | generate [BATCHES] | scale PRESET [MODES] | weights [PRESET] | sync [PRESET]"
     exit 2 ;;
esac
