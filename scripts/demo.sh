#!/usr/bin/env bash
# The main job: installs what is missing, builds, generates a small ImageFolder (4
# classes of coloured shapes, PNG and JPEG), plans ResNet-50 (batch 8, 224x224) for a
# whole Adam training step under 0.6x of autograd's peak (at batch 8 the weights,
# gradients and Adam's moments are over half of it), and trains it on those images,
# printing each step's loss and measured peak against the budget and autograd's peak,
# then forward+backward time against autograd's (interleaved).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${MONET_BUILD_DIR:-$root/build}"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" --target monet  # the library and the CLI only
data="$build/demo-data"
[ -d "$data/shapes" ] || /usr/bin/python3 "$root/tools/make_training_fixtures.py" "$data" >&2
"$build/src/monet" train --model resnet50 --batch 8 --image 224 --data "$data/shapes" \
  --budget 0.6x --optimizer adam --lr 0.0005 --steps 10 --log-every 1 --time-limit 20 \
  --compare-autograd 3 "$@"
