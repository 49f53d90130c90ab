#!/usr/bin/env bash
# Renders a Helm chart like `helm template`, without helm (not in Debian):
#   deploy/render/render.sh CHART [--namespace NS] [--release NAME]
#       [--set k=v ...] [--set-string k=v ...] [-f values.yaml ...]
#       [--kube-version v1.30.0] [--api-versions g/v ...] [--skip-tests] > out.yaml
# Builds main.go offline (GOPATH mode against Debian's /usr/share/gocode:
# golang-go, golang-github-masterminds-sprig-dev, golang-k8s-sigs-yaml-dev)
# into ${XDG_CACHE_HOME:-$HOME/.cache}/crl-render, again whenever the source
# or the Go toolchain changes, then runs it.
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
cache="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/crl-render"
gocode=/usr/share/gocode

if ! command -v go >/dev/null; then
  echo "render.sh: go not found (apt-get install golang-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev)" >&2
  exit 2
fi
key=$( { cat "$src"/*.go "$src/go.mod"; go version; } | sha256sum | cut -c1-16)
bin="$cache/render-$key"
if [ ! -x "$bin" ]; then
  mkdir -p "$cache"
  for dep in github.com/Masterminds/sprig sigs.k8s.io/yaml; do
    if [ ! -d "$gocode/src/$dep" ]; then
      echo "render.sh: $gocode/src/$dep missing (apt-get install golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev)" >&2
      exit 2
    fi
  done
  tmp=$(mktemp -d "$cache/build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  # GOPATH mode: Debian installs Go sources without their /vN module suffix;
  # "minimal module compatibility" resolves github.com/Masterminds/sprig/v3
  # to $GOPATH/src/github.com/Masterminds/sprig, but only for importing code
  # that lies inside a GOPATH root under a go.mod: hence the copy. Nothing
  # is downloaded.
  pkg="$tmp/gopath/src/crl/deploy/render"
  mkdir -p "$pkg"
  cp "$src"/*.go "$src/go.mod" "$pkg/"
  rm -f "$pkg"/*_test.go
  (cd "$pkg" && GO111MODULE=off GOPATH="$tmp/gopath:$gocode" GOFLAGS='' GOPROXY=off \
     GOCACHE="$cache/go-build" CGO_ENABLED=0 go build -o "$tmp/render" .) >&2
  mv "$tmp/render" "$bin"
  rm -rf "$tmp"
  trap - EXIT
  # Builds of other sources (other checkouts may share the cache) unused
  # for a week are stale.
  find "$cache" -maxdepth 1 -name 'render-*' ! -name "render-$key" -mtime +7 -delete
fi
exec "$bin" "$@"
