#!/usr/bin/env bash
# Installs monet from the build tree BUILD into a fresh prefix, builds examples/ against
# it as a separate CMake project (find_package(monet)), and runs the example.
# Usage: tools/build_example.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
src="$1" build="$2" work="$3"
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/examples" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" -j "${MONET_JOBS:-$(nproc)}" >/dev/null
MONET_CACHE_DIR="$work/cache" LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" \
  "$work/build/train_resnet"
