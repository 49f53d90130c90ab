#!/bin/sh
# Prints, one per line, the Debian/Ubuntu packages that own the shared
# libraries the given ELF binaries load (ldd). Used by the image builds so the
# runtime stage installs exactly the runtime libraries of the -dev packages the
# build stage used, whatever the distribution's package names are (bookworm:
# libgrpc++1.51, noble: libgrpc++1.51t64, ...).
#
#   docker/runtime-deps.sh build/bin/crl-worker build/bin/crl-runner > packages.txt
#
# Fails when a library is missing ("not found") or owned by no package (a
# library built into /usr/local would silently be absent from the runtime
# image otherwise). Libraries of the NVIDIA driver (libcuda, libnvidia-*) are
# skipped: the container runtime injects them on GPU nodes.
set -eu

if [ "$#" -eq 0 ]; then
  echo "usage: $0 ELF..." >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for bin in "$@"; do
  if [ ! -f "$bin" ]; then
    echo "runtime-deps: no such file: $bin" >&2
    exit 1
  fi
  ldd "$bin" > "$tmp/ldd" 2>&1 || true
  if grep -q 'not a dynamic executable' "$tmp/ldd"; then continue; fi
  if grep -q 'not found' "$tmp/ldd"; then
    echo "runtime-deps: $bin: unresolved libraries:" >&2
    grep 'not found' "$tmp/ldd" >&2
    exit 1
  fi
  awk '$2 == "=>" && $3 ~ /^\// { print $3 }' "$tmp/ldd" >> "$tmp/libs"
done
[ -f "$tmp/libs" ] || exit 0

sort -u "$tmp/libs" > "$tmp/unique"
: > "$tmp/pkgs"
# (a redirect, not a pipe: an `exit 1` in the loop must end the script)
while read -r lib; do
  case "$(basename "$lib")" in
    libcuda.so*|libnvidia-*) continue ;;
  esac
  # dpkg records a path as its package shipped it; with merged /usr the
  # loader may report /lib/... for a file shipped as /usr/lib/... (or the
  # reverse), and the name may be a symlink: try each spelling.
  real=$(readlink -f "$lib")
  owner=""
  for p in "$lib" "$real" "/usr$lib" "/usr$real" "${lib#/usr}" "${real#/usr}"; do
    case "$p" in /*) ;; *) continue ;; esac
    owner=$(dpkg-query -S "$p" 2>/dev/null | grep -v '^diversion by' | head -n1 | sed 's/: \/.*//') || true
    [ -n "$owner" ] && break
  done
  if [ -z "$owner" ]; then
    echo "runtime-deps: no package owns $lib" >&2
    exit 1
  fi
  # "pkg:amd64" -> "pkg"; "a, b" (a path shared by several packages) -> both
  echo "$owner" | tr ',' '\n' | sed 's/^ *//; s/:[a-z0-9]*$//' >> "$tmp/pkgs"
done < "$tmp/unique"
sort -u "$tmp/pkgs"
