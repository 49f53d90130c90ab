#!/bin/sh
# Container entrypoint of crl-worker (installed as /opt/crl/bin/crl-worker-entrypoint).
#
# CRL_GPUS=devices (set by the Helm chart): serve exactly the GPUs whose device
# nodes this container was given, by appending `--gpus N[,M...]` (flags win
# over --config), N being the device node's number. The NVIDIA container
# runtime keeps the HOST's minor numbers (the pod given the node's third GPU
# sees only /dev/nvidia2); the worker binds only /dev/nvidiaN into a lane's
# sandbox with CUDA_VISIBLE_DEVICES=0, so any N works (docs/deploy.md, "GPU
# numbering"). The worker's own `--gpus auto` scans every /dev/nvidiaN and
# finds the same nodes: this mode only makes "no GPU node" a start-up error.
#
# Any other CRL_GPUS value (or none) runs crl-worker with the arguments as given.
set -eu

bin_dir=$(dirname "$(readlink -f "$0")")
worker="$bin_dir/crl-worker"

if [ "${CRL_GPUS:-}" = "devices" ]; then
  gpus=""
  for node in /dev/nvidia[0-9]*; do
    [ -c "$node" ] || continue
    n=${node#/dev/nvidia}
    case "$n" in *[!0-9]*) continue ;; esac
    gpus="${gpus:+$gpus,}$n"
  done
  if [ -z "$gpus" ]; then
    echo "crl-worker-entrypoint: CRL_GPUS=devices but no /dev/nvidiaN device node is present" \
         "(is the NVIDIA device plugin / container runtime configured, and nvidia.com/gpu requested?)" >&2
    exit 1
  fi
  echo "crl-worker-entrypoint: serving GPU device node(s) $gpus" >&2
  exec "$worker" "$@" --gpus "$gpus"
fi

exec "$worker" "$@"
