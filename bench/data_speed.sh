#!/usr/bin/env bash
# Training throughput on JPEG files against synthetic batches: `monet train --data` (an
# ImageFolder of JPEGs decoded, resized and normalised in the background loader) and
# `--synthetic`, same model, plan and steps, runs alternated (synthetic, data, synthetic,
# data, ...). Prints samples/s of each run, the medians, and the data runs' slowdown.
#
# Usage: bench/data_speed.sh [model] [batch] [steps] [rounds]   (default resnet18 32 8 2)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
monet="${MONET_BUILD_DIR:-$root/build}/src/monet"
[ -x "$monet" ] || { echo "build first: scripts/build.sh" >&2; exit 2; }
model="${1:-resnet18}" batch="${2:-32}" steps="${3:-8}" rounds="${4:-2}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# 4 classes of 256x256 JPEGs (camera-like size: decoded, then resized to 224x224).
/usr/bin/python3 - "$work/jpegs" "$((batch * (steps + 2)))" <<'PY'
import os, sys
import torch
from torchvision.io import write_jpeg
out, n = sys.argv[1], int(sys.argv[2])
gen = torch.Generator().manual_seed(0)
for i in range(n):
    d = os.path.join(out, f"class{i % 4}")
    os.makedirs(d, exist_ok=True)
    img = (torch.rand(3, 256, 256, generator=gen) * 255).to(torch.uint8)
    write_jpeg(img, os.path.join(d, f"{i}.jpg"), quality=90)
PY

common=(--model "$model" --batch "$batch" --image 224 --classes 4 --planner storeall --steps "$steps"
        --optimizer sgd --momentum 0.9 --seed 1 --json)
rate() { /usr/bin/python3 -c 'import json,sys; print([json.loads(l) for l in sys.stdin if "samples_per_second" in l][-1]["samples_per_second"])'; }
synthetic=() data=()
for ((r = 0; r < rounds; ++r)); do
  synthetic+=("$("$monet" train "${common[@]}" --synthetic 2>/dev/null | rate)")
  data+=("$("$monet" train "${common[@]}" --data "$work/jpegs" 2>/dev/null | rate)")
  echo "round $((r + 1)): synthetic ${synthetic[-1]} samples/s, JPEG ${data[-1]} samples/s" >&2
done
/usr/bin/python3 - "${synthetic[*]}" "${data[*]}" "$model" "$batch" "$steps" <<'PY'
import statistics, sys
s = statistics.median(float(v) for v in sys.argv[1].split())
d = statistics.median(float(v) for v in sys.argv[2].split())
print(f"| {sys.argv[3]} | {sys.argv[4]} | {sys.argv[5]} | {s:.2f} | {d:.2f} | {100 * (s - d) / s:+.1f}% |")
PY
