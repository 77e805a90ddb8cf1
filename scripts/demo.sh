#!/usr/bin/env bash
# The main job: installs what is missing, builds, and measures a real training
# iteration of ResNet-50 (batch 8, 224x224) under the autograd baseline.
# (Becomes plan-and-run once the planner lands.)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${MONET_BUILD_DIR:-$root/build}"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
"$build/src/monet" baseline --model resnet50 --batch 8 --image 224 --iters 3 "$@"
