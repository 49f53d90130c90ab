#!/usr/bin/env bash
# Packs what the GPU machine needs to run the worker and the GPU tests into
# .gpu-bundle/ (git-ignored; carry it with the device tool). The device
# machine has CUDA, a compiler and CMake but no gRPC/protobuf/Abseil, so the
# binaries built here travel with the shared libraries they link, minus the
# C/C++ runtime (the device machine's glibc and libstdc++ are newer).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
OUT=.gpu-bundle
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
bins=(crl crl-worker crl-runner crl-timing)
for extra in crl_gpu_tests crl-bench-worker; do
  [ -x "$BUILD/bin/$extra" ] && bins+=("$extra")
done
for b in "${bins[@]}"; do
  # LibTorch (the CLI's `crl policy` and in-process `crl sample`) does not
  # travel: it is hundreds of MiB, and the GPU machine has its own; the
  # policy runs there from tools/gpu (scripts/gpu-policy.sh).
  if ldd "$BUILD/bin/$b" | grep -q libtorch; then
    echo "not bundled: $b links LibTorch" >&2
    continue
  fi
  cp "$BUILD/bin/$b" "$OUT/bin/"
  strip --strip-debug "$OUT/bin/$b" 2>/dev/null || true
done
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libstdc\+\+|libgcc_s|libcuda\.so)'
for b in "$OUT"/bin/*; do
  ldd "$b" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    if ! [[ "$name" =~ $skip ]] && [ ! -e "$OUT/lib/$name" ]; then cp -L "$path" "$OUT/lib/$name"; fi
  done
done
cat > "$OUT/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs a bundled binary with the bundled libraries: run.sh crl_gpu_tests [args]
here="$(cd "$(dirname "$0")" && pwd)"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$here/bin/$1" "${@:2}"
RUN
chmod +x "$OUT/run.sh"
du -sh "$OUT"
# The device tool carries at most 64 MiB; ICU's data alone is 31 MiB, so
# carry the archive and unpack it there: tar xzf .gpu-bundle.tgz
tar czf .gpu-bundle.tgz "$OUT"
du -sh .gpu-bundle.tgz
