#!/usr/bin/env bash
# Configures and builds monet under build/ (or $MONET_BUILD_DIR), Release unless a
# -DCMAKE_BUILD_TYPE=... says otherwise.
# Usage: build.sh [-DNAME=VALUE ...] [--target TARGET ...]
#   -D...     CMake cache entries (e.g. -DMONET_SANITIZE=ON)
#   --target  build only these targets (default: everything)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${MONET_BUILD_DIR:-$root/build}"
jobs="${MONET_JOBS:-$(nproc)}"
defines=(-DCMAKE_BUILD_TYPE=Release)
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    -D*) defines+=("$1") ;;
    --target) targets+=(--target "$2"); shift ;;
    *) echo "build.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
# ccache caches translation units that include the precompiled header only with these,
# and a clone in another directory hits what this one cached with the base directory
# (and, for builds with debug information such as the sanitizer's, without hashing the
# working directory: their line tables then name the directory that compiled first).
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
export CCACHE_BASEDIR="$root"
export CCACHE_NOHASHDIR=1
cmake -S "$root" -B "$build" "${defines[@]}" >/dev/null
cmake --build "$build" -j "$jobs" "${targets[@]}"
