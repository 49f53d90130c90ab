#!/usr/bin/env bash
# Runs on the GPU machine (device tool) over a tree that carries .gpu-policy/
# (scripts/gpu-policy-bundle.sh): builds tools/gpu against PyTorch's
# LibTorch, then runs the policy benchmarks of docs/benchmarks.md side by
# side with tools/bench/policy_torch_bench.py (eager and torch.compile).
#   scripts/gpu-policy.sh build                 configure and build build-gpu/
#   scripts/gpu-policy.sh train PRESET [MODES]  GRPO step + logprobs (full, lora)
#   scripts/gpu-policy.sh generate [BATCHES]    generation tokens/s (1 8 64)
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
  *) echo "usage: $0 build | train PRESET [MODES] | generate [BATCHES]"; exit 2 ;;
esac
