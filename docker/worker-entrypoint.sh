#!/bin/sh
# Container entrypoint of crl-worker (installed as /opt/crl/bin/crl-worker-entrypoint).
#
# CRL_GPUS=devices (set by the Helm chart): serve exactly the GPUs whose device
# nodes this container was given, by appending `--gpus N[,M...]` (flags win
# over --config), N being the device node's number. Why not the worker's own
# `--gpus auto`: it counts /dev/nvidia0, /dev/nvidia1, ... and stops at the
# first gap, but the NVIDIA container runtime keeps the HOST's minor numbers,
# so the pod given the node's third GPU sees only /dev/nvidia2 and `auto`
# finds nothing.
# Known limitation (docs/deploy.md, "GPU numbering"): the worker also uses N
# as the runner's CUDA_VISIBLE_DEVICES, but inside the sandbox only
# /dev/nvidiaN is reachable, so CUDA numbers that GPU 0; until the worker
# sets CUDA_VISIBLE_DEVICES=0 for a lane, only pods given minor 0 work.
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
