#!/usr/bin/env bash
# Runs on the GPU machine (device tool), carrying .gpu-policy/ and, for the
# gdb stage, .gdb/ (git-ignored through .git/info/exclude): Debian's
# gdb-minimal and the libraries it needs, as plain files (the device tool
# carries no links), made here with
#   mkdir -p .gdb/x .gdb/lib .gdb/bin && cd .gdb && apt-get download gdb-minimal \
#     libdebuginfod1 libipt2 libxxhash0 libreadline8 && for f in *.deb; do dpkg -x $f x; done
#   cp x/usr/bin/gdb bin/ && LD_LIBRARY_PATH=x/usr/lib/x86_64-linux-gnu:x/lib/x86_64-linux-gnu \
#     ldd bin/gdb  # then cp -L each library but libc/libm/libstdc++/libgcc_s/libpthread/libresolv/ld-linux into lib/
# Finds out where crl-bench-trainer crashes:
#   tools/gpu/diagnose.sh build         build-gpu/ with -g, build-asan/ with ASan
#   tools/gpu/diagnose.sh run [ARGS]    the small reproduction, plain (full, lora)
#   tools/gpu/diagnose.sh gdb [ARGS]    under gdb: every thread's stack at the signal
#   tools/gpu/diagnose.sh asan [ARGS]   the AddressSanitizer build
#   tools/gpu/diagnose.sh fscheck       std::filesystem::remove_all in a program that
#                                       needs LibTorch before libstdc++, and after it
#   tools/gpu/diagnose.sh linkcheck     crl-bench-trainer's link line and needed libraries
# ARGS replace the default reproduction's flags. Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/crl-gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/.gpu-policy/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
stage=${1:-build}
shift || true
args=("$@")
if [ ${#args[@]} -eq 0 ]; then
  args=(--preset embedded --device cuda --sequences 2 --prompt_len 64 --completion_len 64 --steps 1 --warmup 1)
fi

case "$stage" in
  build)
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cxx11abi", torch.compiled_with_cxx11_abi())'
    prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
    gen=""; command -v ninja >/dev/null && gen="-G Ninja"
    common=(-DCRL_DEPS="$PWD/.gpu-policy" -DCMAKE_PREFIX_PATH="$prefix" -DTORCH_CUDA_ARCH_LIST=9.0)
    cmake -S tools/gpu -B build-gpu $gen "${common[@]}" -DCMAKE_CXX_FLAGS="-g -fno-omit-frame-pointer" \
      > "$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
    cmake -S tools/gpu -B build-asan $gen "${common[@]}" \
      -DCMAKE_CXX_FLAGS="-g -fno-omit-frame-pointer -fsanitize=address" \
      -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address" >> "$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
    (cmake --build build-gpu -j 10 --target crl-bench-trainer > "$OUT/build.log" 2>&1; echo "build-gpu rc=$?") &
    (cmake --build build-asan -j 6 --target crl-bench-trainer > "$OUT/build-asan.log" 2>&1; echo "build-asan rc=$?") &
    wait
    grep -E "error" -A4 "$OUT/build.log" "$OUT/build-asan.log" | head -40
    ls -la build-gpu/crl-bench-trainer build-asan/crl-bench-trainer
    ;;
  run)
    for mode in full lora; do
      echo "== plain $mode: ${args[*]}"
      timeout 300 build-gpu/crl-bench-trainer "${args[@]}" --mode "$mode" 2>&1
      echo "rc=$?"
    done
    ;;
  gdb)
    gdb=(/lib64/ld-linux-x86-64.so.2 --library-path "$PWD/.gdb/lib" "$PWD/.gdb/bin/gdb")
    echo "== gdb: ${args[*]}"
    timeout 400 "${gdb[@]}" -nx -batch -ex 'set startup-with-shell off' -ex 'set pagination off' \
      -ex 'handle SIGPIPE nostop noprint' -ex run -ex 'info registers rip rsp' -ex 'x/6i $pc' \
      -ex 'info threads' -ex 'bt 40' -ex 'thread apply all bt 30' \
      --args build-gpu/crl-bench-trainer "${args[@]}" > "$OUT/gdb.log" 2>&1
    echo "gdb rc=$?"
    grep -v "^\[New Thread\|^\[Thread .* exited\]" "$OUT/gdb.log" | tail -150
    ;;
  asan)
    echo "== asan: ${args[*]}"
    ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=0:detect_odr_violation=0:allow_user_segv_handler=0:halt_on_error=1 \
      timeout 400 build-asan/crl-bench-trainer "${args[@]}" > "$OUT/asan.log" 2>&1
    echo "asan rc=$?"
    tail -80 "$OUT/asan.log"
    ;;
  fscheck)
    # pytorch/pytorch#133437 without crl: which library remove_all binds to,
    # and whether calling it survives, by link order.
    lib=$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__) + "/lib")')
    src=$(mktemp -d)/fscheck.cc
    cat > "$src" <<'EOF'
#include <dlfcn.h>
#include <cstdio>
#include <filesystem>
namespace fs = std::filesystem;
int main() {
  std::uintmax_t (*remove_all)(const fs::path&, std::error_code&) = &fs::remove_all;
  Dl_info di{};
  dladdr(reinterpret_cast<void*>(remove_all), &di);
  std::printf("remove_all from %s\n", di.dli_fname);
  std::fflush(stdout);
  const fs::path dir = fs::temp_directory_path() / "crl-fscheck";
  fs::create_directories(dir / "a");
  std::error_code ec;
  std::printf("removed %ju entries\n", static_cast<std::uintmax_t>(fs::remove_all(dir, ec)));
}
EOF
    for order in torch-first stdcxx-first; do
      if [ $order = torch-first ]; then first="$lib/libtorch.so"; else first="-lstdc++"; fi
      g++ -std=c++17 -O1 "$src" -o "${src%.cc}-$order" -Wl,--no-as-needed $first "$lib/libtorch.so" \
        -Wl,-rpath,"$lib" || exit 1
      echo "== $order: $(readelf -d "${src%.cc}-$order" | awk '/NEEDED/ {printf "%s ", $NF}')"
      "${src%.cc}-$order"; echo "rc=$?"
    done
    ;;
  linkcheck)
    # How CMake orders crl-bench-trainer's link line, and the libraries it needs.
    cmake --version | head -1; ld --version | head -1
    prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
    cmake -S tools/gpu -B build-gpu -G Ninja -DCRL_DEPS="$PWD/.gpu-policy" -DCMAKE_PREFIX_PATH="$prefix" \
      -DTORCH_CUDA_ARCH_LIST=9.0 > "$OUT/gpu-cmake.log" 2>&1 || { tail -30 "$OUT/gpu-cmake.log"; exit 1; }
    ninja -C build-gpu -t commands crl-bench-trainer | tail -1 > "$OUT/link-command.txt"
    tr ' ' '\n' < "$OUT/link-command.txt" | grep -n -E "stdc|torch|c10|needed|state|\.a$|^-o$" | head -30
    ninja -C build-gpu crl-bench-trainer > "$OUT/gpu-build.log" 2>&1 || { tail -30 "$OUT/gpu-build.log"; exit 1; }
    readelf -d build-gpu/crl-bench-trainer | awk '/NEEDED/ {printf "%s ", $NF} END {print ""}'
    ;;
  *) echo "usage: $0 build | run [ARGS] | gdb [ARGS] | asan [ARGS] | fscheck | linkcheck"; exit 2 ;;
esac
