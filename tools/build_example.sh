#!/usr/bin/env bash
# Installs monet from the build tree BUILD into a fresh prefix, builds examples/ against
# it as a separate CMake project (find_package(monet)), runs the examples and the installed
# CLI, and imports the installed Python package (when it was built).
# Usage: tools/build_example.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
src="$1" build="$2" work="$3"
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/examples" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" -j "${MONET_JOBS:-$(nproc)}" >/dev/null
out="$(MONET_CACHE_DIR="$work/cache" LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" \
  "$work/build/train_resnet")"
echo "$out"
grep -q "step 4 loss" <<<"$out"
module="$(cd "$work" && MONET_CACHE_DIR="$work/cache" \
  LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/build/train_module")"
echo "$module"
grep -q "module step 4 loss" <<<"$module"
plans="$(cd "$work" && MONET_CACHE_DIR="$work/cache" \
  LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/build/plan_files")"
echo "$plans"
grep -q "recomputations; gradients within" <<<"$plans"
# The installed CLI finds its libmonet.so by its run path (no LD_LIBRARY_PATH).
"$work/prefix/bin/monet" models | grep -q resnet50
echo "installed CLI: ok"
site="$work/prefix/lib/$(/usr/bin/python3 -c 'import sys; print("python%d.%d" % sys.version_info[:2])')/dist-packages"
if [ -d "$site/monet" ]; then
  (cd "$work" && PYTHONPATH="$site" /usr/bin/python3 -c \
    'import monet; print("installed python package:", monet.__file__, monet.planner_names()[0])')
fi
