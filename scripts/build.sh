#!/usr/bin/env bash
# Configures and builds monet in Release under build/ (or $MONET_BUILD_DIR).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${MONET_BUILD_DIR:-$root/build}"
jobs="${MONET_JOBS:-$(nproc)}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$jobs"
