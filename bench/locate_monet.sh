# Sourced by the bench scripts: sets `root` (the repository) and `monet` (the built
# binary, under $MONET_BUILD_DIR or build/), or stops with a hint to build first.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
monet="${MONET_BUILD_DIR:-$root/build}/src/monet"
[ -x "$monet" ] || { echo "build first: scripts/build.sh" >&2; exit 2; }
