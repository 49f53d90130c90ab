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
# Which package ships each path, from dpkg's file lists read once (one
# dpkg-query -S per library took minutes: each call reads every list).
awk 'FNR == 1 { pkg = FILENAME; sub(/.*\//, "", pkg); sub(/\.list$/, "", pkg) } { print $0 "\t" pkg }' \
  /var/lib/dpkg/info/*.list > "$tmp/index"
# dpkg records a path as its package shipped it; with merged /usr the
# loader may report /lib/... for a file shipped as /usr/lib/... (or the
# reverse), and the name may be a symlink: each library's spellings, in
# order of preference.
: > "$tmp/wanted"
while read -r lib; do
  case "$(basename "$lib")" in
    libcuda.so*|libnvidia-*) continue ;;
  esac
  real=$(readlink -f "$lib")
  for p in "$lib" "$real" "/usr$lib" "/usr$real" "${lib#/usr}" "${real#/usr}"; do
    case "$p" in /*) printf '%s\t%s\n' "$lib" "$p" >> "$tmp/wanted" ;; esac
  done
done < "$tmp/unique"
awk -F '\t' -v missing="$tmp/missing" '
  NR == FNR { owner[$1] = ($1 in owner) ? owner[$1] ", " $2 : $2; next }
  { libs[$1] = 1; if (!($1 in found) && ($2 in owner)) found[$1] = owner[$2] }
  END {
    for (l in libs) if (!(l in found)) print l > missing
    for (l in found) print found[l]
  }' "$tmp/index" "$tmp/wanted" > "$tmp/owners"
if [ -s "$tmp/missing" ]; then
  while read -r lib; do echo "runtime-deps: no package owns $lib" >&2; done < "$tmp/missing"
  exit 1
fi
# "pkg:amd64" -> "pkg"; "a, b" (a path shared by several packages) -> both
tr ',' '\n' < "$tmp/owners" | sed 's/^ *//; s/:[a-z0-9]*$//; /^$/d' | sort -u
