#!/usr/bin/env bash
# Starting a solver process: monet-solver (posix_spawn, the request as bytes) against a
# fork of a process with 3 GiB resident (MONET_SOLVER set empty), on a program of the size
# of the largest imported ones (bench/solver_start.cpp). Usage: bench/solver_start.sh
set -euo pipefail
source "$(dirname "$0")/locate_monet.sh"
lib="${MONET_BUILD_DIR:-$root/build}/src"
exe="$(mktemp -d)/solver_start"
g++ -O2 -std=c++17 -I"$root/src" $(pkg-config --cflags cbc) "$root/bench/solver_start.cpp" \
  -o "$exe" -L"$lib" -lmonet -Wl,-rpath,"$lib"
echo "== solver executable, 3 GiB resident"
"$exe" 3
echo "== fork of this process, 3 GiB resident"
MONET_SOLVER= "$exe" 3
