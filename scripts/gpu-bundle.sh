#!/usr/bin/env bash
# Packs what the GPU machine needs to run the cluster and the GPU tests into
# .gpu-bundle/ (git-ignored; carry it with the device tool). The device
# machine has CUDA, a compiler and CMake but no gRPC/protobuf/Abseil, so the
# binaries built here travel with the shared libraries they link, minus the
# C/C++ runtime (the device machine's glibc and libstdc++ are newer). The
# LibTorch services (crl-sampler, crl-trainer) are built THERE against
# PyTorch's LibTorch (tools/gpu, scripts/gpu-run.sh): for them the bundle
# also carries the headers (sdk/include/), the generated protobuf/gRPC
# sources (sdk/gen/, from this protoc) and every library they link here except
# LibTorch's own.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
OUT=.gpu-bundle
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
bins=(crl crl-worker crl-runner crl-timing crl-orchestrator crl-prompt)
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
deps_of() {  # copies what $1 loads into lib/, under the names it asks for
  ldd "$1" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    if ! [[ "$name" =~ $skip ]] && [ ! -e "$OUT/lib/$name" ]; then cp -L "$path" "$OUT/lib/$name"; fi
  done
}
for b in "$OUT"/bin/*; do deps_of "$b"; done
# What crl-sampler and crl-trainer link here, LibTorch's libraries and what
# only they need left out (the device machine's LibTorch replaces them),
# each under its soname.
torch_only='/lib(torch|c10|gflags|glog|shm|caffe2)'
for b in crl-sampler crl-trainer; do
  [ -x "$BUILD/bin/$b" ] || { echo "not built here: $b (the GPU machine cannot build it from this bundle)" >&2; continue; }
  ninja -C "$BUILD" -t commands "bin/$b" | tail -1 | tr ' ' '\n' | sed 's/^-Wl,--no-as-needed,//; s/"//g' |
    grep -E '^/usr/lib/.*\.so' | grep -vE "$torch_only" | sort -u | while read -r path; do
      real=$(readlink -f "$path")
      name=$(objdump -p "$real" | awk '/SONAME/ {print $2}')
      name=${name:-$(basename "$real")}
      [ -e "$OUT/lib/$name" ] || cp "$real" "$OUT/lib/$name"
      deps_of "$real"
    done
done
# Under sdk/ (tools/gpu's CRL_DEPS: include/, gen/, lib/): the worker takes
# an include/ beside bin/ for crl's own headers.
mkdir -p "$OUT/sdk/include" "$OUT/sdk/gen"
ln -s ../lib "$OUT/sdk/lib"
for h in absl grpcpp grpc grpc++ google prometheus openssl unicode yaml-cpp nlohmann brotli httplib.h pcre2.h zlib.h \
    zconf.h; do
  cp -r "/usr/include/$h" "$OUT/sdk/include/"
done
cp -r /usr/include/x86_64-linux-gnu/curl "$OUT/sdk/include/"
cp /usr/include/x86_64-linux-gnu/openssl/*.h "$OUT/sdk/include/openssl/"
cp -r "$BUILD/protos/gen/." "$OUT/sdk/gen/"  # protoc's output only: *.pb.{h,cc}, *.grpc.pb.{h,cc}
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
# carry the archive and unpack it there: tar xf .gpu-bundle.tar.xz (xz: 26 MiB
# where gzip made 38, which left no room for a policy beside it)
tar cf - "$OUT" | xz -T0 -6 > .gpu-bundle.tar.xz
du -sh .gpu-bundle.tar.xz
