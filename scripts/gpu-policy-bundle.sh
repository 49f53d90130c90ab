#!/usr/bin/env bash
# Packs what tools/gpu/CMakeLists.txt needs from this machine into
# .gpu-policy/ (git-ignored; carry it with the device tool): Abseil's,
# yaml-cpp's and nlohmann-json's headers and Abseil's and yaml-cpp's shared
# libraries (the GPU machine has a newer glibc/libstdc++, which run them).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=.gpu-policy
rm -rf "$OUT"
mkdir -p "$OUT/include" "$OUT/lib"
cp -r /usr/include/absl /usr/include/yaml-cpp /usr/include/nlohmann "$OUT/include/"
# Each library under its soname only, as a plain file (the device tool
# carries no symbolic links); tools/gpu links these files by path.
for f in /usr/lib/x86_64-linux-gnu/libabsl_*.so /usr/lib/x86_64-linux-gnu/libyaml-cpp.so; do
  real=$(readlink -f "$f")
  soname=$(objdump -p "$real" | awk '/SONAME/ {print $2}')
  cp "$real" "$OUT/lib/${soname:-$(basename "$real")}"
done
du -sh "$OUT"
