#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test with CTest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${MONET_BUILD_DIR:-$root/build}"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j "${MONET_JOBS:-$(nproc)}" --timeout 1200
