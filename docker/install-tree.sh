#!/bin/sh
# Lays out an image's installation tree from a build: what the image stages
# of docker/Dockerfile.services and docker/Dockerfile.worker copy into their
# runtime stage, written once for both and for the prebuilt-install path of
# the image test (tests/image/services_image_test.sh).
#
#   docker/install-tree.sh services|worker SOURCE_DIR BUILD_DIR DEST [DEBUG_DEST]
#
# services: every BUILD_DIR/bin/crl and crl-* binary but crl-worker and
#   crl-runner, with include/, prompts/, tasks/{native,kernelbench} and
#   models/ beside them (FindShippedDir looks next to bin/'s parent).
# worker: crl-worker, crl-runner and crl, the entrypoint, include/, the task
#   suites and runner/python (the KernelBench harness); world-readable, as
#   the sandbox runs the runner and the compilers as uid 65534.
# Binaries are stripped; their debug info goes to DEBUG_DEST (default
#   DEST-debug), linked by .gnu_debuglink, so crash backtraces stay
#   symbolisable without shipping it. DEST/runtime-packages.txt lists the
#   packages that own the libraries they load (docker/runtime-deps.sh).
set -eu

if [ "$#" -lt 4 ]; then
  echo "usage: $0 services|worker SOURCE_DIR BUILD_DIR DEST [DEBUG_DEST]" >&2
  exit 2
fi
role=$1 src=$2 build=$3 dest=$4
debug=${5:-$dest-debug}
here=$(dirname "$0")

case "$role" in
  services)
    bins=""
    for f in "$build"/bin/crl "$build"/bin/crl-*; do
      name=$(basename "$f")
      case "$name" in
        crl-worker|crl-runner|crl-bench-*) continue ;;
      esac
      bins="$bins $name"
    done ;;
  worker) bins="crl-worker crl-runner crl" ;;
  *) echo "install-tree: role '$role' is neither services nor worker" >&2; exit 2 ;;
esac

mkdir -p "$dest/bin" "$dest/tasks" "$debug"
for name in $bins; do
  if [ ! -f "$build/bin/$name" ]; then
    echo "install-tree: $build/bin/$name is missing (build it first)" >&2
    exit 1
  fi
  objcopy --only-keep-debug "$build/bin/$name" "$debug/$name.debug"
  objcopy --strip-debug --add-gnu-debuglink="$debug/$name.debug" "$build/bin/$name" "$dest/bin/$name"
done
cp -r "$src/include" "$dest/include"
cp -r "$src/tasks/native" "$dest/tasks/native"
cp -r "$src/tasks/kernelbench" "$dest/tasks/kernelbench"
if [ "$role" = services ]; then
  cp -r "$src/prompts" "$dest/prompts"
  cp -r "$src/models" "$dest/models"
else
  install -m 0755 "$src/docker/worker-entrypoint.sh" "$dest/bin/crl-worker-entrypoint"
  mkdir -p "$dest/runner"
  cp -r "$src/runner/python" "$dest/runner/python"
  chmod -R a+rX "$dest"
fi
set --
for name in $bins; do set -- "$@" "$dest/bin/$name"; done
"$here/runtime-deps.sh" "$@" > "$dest/runtime-packages.txt"
cat "$dest/runtime-packages.txt"
