#!/usr/bin/env bash
# Peak memory and time of one training iteration: `monet baseline` (LibTorch autograd on
# the zoo graph) against Python PyTorch on the torchvision model, both measured with
# monet's tracking allocator (tools/python_baseline_peak.py). Writes
# results/baseline_vs_pytorch.csv and prints a markdown table.
#
# Usage: bench/baseline_vs_pytorch.sh ["model:batch" ...]   (default: the five below)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${MONET_BUILD_DIR:-$root/build}"
monet="$build/src/monet"
lib="$build/src/libmonet.so"
[ -x "$monet" ] || { echo "build first: scripts/build.sh" >&2; exit 2; }
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(resnet50:8 resnet18:8 vgg16:4 mobilenet_v2:8 googlenet:8)
mkdir -p "$root/results"
csv="$root/results/baseline_vs_pytorch.csv"
echo "model,batch,image,monet_peak_bytes,pytorch_peak_bytes,peak_diff_percent,monet_seconds,pytorch_seconds" > "$csv.tmp"
echo "| model | batch | monet peak (B) | PyTorch peak (B) | difference | monet s/iter | PyTorch s/iter |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for c in "${cases[@]}"; do
  model="${c%%:*}"; batch="${c##*:}"
  m=$("$monet" baseline --model "$model" --batch "$batch" --image 224 --iters 3 --json 2>/dev/null)
  p=$(/usr/bin/python3 "$root/tools/python_baseline_peak.py" --lib "$lib" --model "$model" \
        --batch "$batch" --image 224 --iters 3 --json)
  /usr/bin/python3 - "$model" "$batch" "$m" "$p" "$csv.tmp" <<'PY'
import json, sys
model, batch, m, p, csv = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4]), sys.argv[5]
diff = 100.0 * (m["peak_bytes"] - p["peak_bytes"]) / p["peak_bytes"]
with open(csv, "a") as f:
    f.write(f'{model},{batch},224,{m["peak_bytes"]},{p["peak_bytes"]},{diff:.5f},'
            f'{m["median_seconds"]:.4f},{p["median_seconds"]:.4f}\n')
print(f'| {model} | {batch} | {m["peak_bytes"]:,} | {p["peak_bytes"]:,} | {diff:+.5f}% | '
      f'{m["median_seconds"]:.3f} | {p["median_seconds"]:.3f} |')
PY
done
mv "$csv.tmp" "$csv"
