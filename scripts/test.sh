#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test with CTest.
# With --sanitize: the sanitizer subset instead (scripts/sanitize.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${1:-}" = "--sanitize" ]; then
  exec "$root/scripts/sanitize.sh"
fi
build="${MONET_BUILD_DIR:-$root/build}"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j "${MONET_JOBS:-$(nproc)}" --timeout 1200
