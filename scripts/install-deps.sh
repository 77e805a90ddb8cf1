#!/usr/bin/env bash
# Installs the Debian 12 packages monet needs, only those missing. Safe to re-run.
set -euo pipefail

packages=(
  build-essential cmake ccache pkg-config
  libtorch-dev libopenblas-dev coinor-libcbc-dev
  nlohmann-json3-dev libcli11-dev libgtest-dev
  libpng-dev libjpeg62-turbo-dev     # image decoding for `monet train --data`
  python3-torch python3-torchvision  # the Python package, test fixtures, PyTorch peers
  pybind11-dev python3-pytest        # the Python package's extension and its tests
  libgloo-dev                        # c10d ProcessGroupGloo headers (data-parallel training)
  iproute2                           # network namespaces for the two-host data-parallel test
  gnuplot-nox                        # plots (optional at run time)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present" >&2
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
