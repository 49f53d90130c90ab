#!/usr/bin/env bash
# The learning experiment of issue 40 on one GPU machine: the whole cluster of
# separate services there (crl quickstart), the worker and crl-timing on the
# GPU, crl-sampler and crl-trainer built there against PyTorch's LibTorch and
# run on the GPU. docs/benchmarks.md, "Learning on a GPU", has the results.
#
# Here (this machine, with build/ and ../shared/data):
#   scripts/gpu-bundle.sh                   the binaries, libraries and headers (.gpu-bundle.tar.xz)
#   scripts/gpu-run.sh prepare              .gpu-run/: CUDA-L1's rows as SFT examples and KernelBench
#                                           tasks, split by a hash; the run specs; a fresh policy
#                                           (tokenizer trained on that text, random weights)
# On the GPU machine (device tool, carrying .gpu-bundle.tar.xz and .gpu-run):
#   scripts/gpu-run.sh build                unpack the bundle, build crl-sampler and crl-trainer (tools/gpu)
#   scripts/gpu-run.sh kb [SEEDS]           crl quickstart on .gpu-run's specs, with --control, in the
#                                           background; waits WAIT seconds (500) for it
#   scripts/gpu-run.sh wait                 waits WAIT seconds more; the results so far in $OUT/kb.tgz
# Results go to $OUT (default /tmp/crl-gpu-run).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/crl-gpu-run}
RUN_DIR=${RUN_DIR:-.gpu-run}
mkdir -p "$OUT"

case "${1:-}" in
  prepare)
    python3 tools/gpu/cuda_l1_run.py --data "${DATA:-../shared/data}" --out "$RUN_DIR" "${@:2}" || exit 1
    work="$RUN_DIR/policy.build"
    build/bin/crl-policy policy tokenizer-train --corpus "$RUN_DIR/corpus" --vocab 4096 \
      --out "$work/tokenizer.json" || exit 1
    build/bin/crl-policy policy init --config "$RUN_DIR/config.json" --out "$RUN_DIR/policy" \
      --tokenizer "$work/tokenizer.json" --seed 1 || exit 1
    rm -rf "$work" "$RUN_DIR/corpus"
    du -sh "$RUN_DIR"
    ;;
  build)
    [ -d .gpu-bundle ] || tar xf .gpu-bundle.tar.xz || exit 1
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$OUT/gpu.txt"
    prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
    gen=""; command -v ninja >/dev/null && gen="-G Ninja"
    t0=$(date +%s)
    if ! cmake -S tools/gpu -B build-gpu $gen -DCRL_DEPS="$PWD/.gpu-bundle/sdk" -DCMAKE_PREFIX_PATH="$prefix" \
        -DTORCH_CUDA_ARCH_LIST=9.0 > "$OUT/gpu-cmake.log" 2>&1; then
      tail -40 "$OUT/gpu-cmake.log"; exit 1
    fi
    if ! cmake --build build-gpu -j "$(nproc)" --target crl-sampler crl-trainer > "$OUT/gpu-build.log" 2>&1; then
      grep -E "error|undefined" -A3 "$OUT/gpu-build.log" | head -60; exit 1
    fi
    cp build-gpu/crl-sampler build-gpu/crl-trainer .gpu-bundle/bin/
    echo "built crl-sampler and crl-trainer in $(( $(date +%s) - t0 )) s"
    ;;
  kb)
    # In the background (a device command runs at most 10 minutes; the run
    # may take longer): `wait` follows it from a second command.
    seeds=${2:-1}
    rm -rf /tmp/crl-kb
    mkdir -p /tmp/crl-kb
    # The overlay, and the worker's line only this machine can write: its
    # interpreter for KernelBench tasks (this one's, with torch) and every GPU.
    gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)
    { cat "$RUN_DIR/overlay.yaml"; echo "worker: {python: '$(command -v python3)', gpus: '$gpus'}"; } \
      > /tmp/crl-kb/overlay.yaml
    setsid nohup .gpu-bundle/run.sh crl quickstart --sft_spec "$RUN_DIR/sft.yaml" --spec "$RUN_DIR/rl.yaml" \
      --heldout_spec "$RUN_DIR/heldout.yaml" --overlay /tmp/crl-kb/overlay.yaml --policy_dir "$PWD/$RUN_DIR/policy" \
      --seeds "$seeds" --control \
      --data_dir /tmp/crl-kb > /tmp/crl-kb/quickstart.log 2>&1 < /dev/null &
    echo $! > /tmp/crl-kb/pid
    bash "$0" wait
    ;;
  wait)
    # Until the run ends or WAIT seconds pass; then its results into $OUT/kb.tgz.
    end=$(( $(date +%s) + ${WAIT:-500} ))
    pid=$(cat /tmp/crl-kb/pid)
    while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
    if kill -0 "$pid" 2>/dev/null; then echo "kb: still running"; else echo "kb: finished"; fi
    tail -40 /tmp/crl-kb/quickstart.log
    nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
    # The orchestrator's content store stays (prompts, completions, sources:
    # a few MB), the weights and the worker's caches do not.
    (cd /tmp/crl-kb && tar czf "$OUT/kb.tgz" --exclude='*.safetensors' --exclude='./cluster-*/worker' \
      --exclude='cache' --exclude='work' . 2>/dev/null)
    ls -la "$OUT"
    ;;
  *)
    sed -n 2,16p "$0"; exit 2
    ;;
esac
