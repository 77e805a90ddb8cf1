#!/usr/bin/env bash
# Measured peak memory and time of generated plans against the autograd baseline, run
# interleaved in one process by `monet run` (memory ratio = peak(plan) / peak(baseline),
# overhead = median time(plan) / median time(baseline) - 1). Writes
# results/plans_vs_autograd.csv and prints a markdown table.
#
# Usage: bench/plans_vs_autograd.sh [iters]   (default 5)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
monet="${MONET_BUILD_DIR:-$root/build}/src/monet"
[ -x "$monet" ] || { echo "build first: scripts/build.sh" >&2; exit 2; }
iters="${1:-5}"
cases=("resnet50 8 storeall" "resnet50 8 chen" "vgg16 4 storeall" "mobilenet_v2 8 storeall" "googlenet 8 storeall")
mkdir -p "$root/results"
csv="$root/results/plans_vs_autograd.csv"
tmp="$(mktemp -d)"
echo "model,batch,planner,peak_bytes,baseline_peak_bytes,memory_ratio,overhead" > "$csv.tmp"
echo "| model | batch | planner | peak (B) | baseline peak (B) | memory ratio | overhead |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for c in "${cases[@]}"; do
  read -r model batch planner <<< "$c"
  "$monet" plan --model "$model" --batch "$batch" --planner "$planner" -o "$tmp/plan.json" >/dev/null
  out=$("$monet" run --plan "$tmp/plan.json" --iters "$iters" --json 2>/dev/null)
  /usr/bin/python3 - "$model" "$batch" "$planner" "$out" "$csv.tmp" <<'PY'
import json, sys
model, batch, planner, r, csv = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5]
with open(csv, "a") as f:
    f.write(f'{model},{batch},{planner},{r["peak_bytes"]},{r["baseline_peak_bytes"]},'
            f'{r["memory_ratio"]:.4f},{r["overhead"]:.4f}\n')
print(f'| {model} | {batch} | {planner} | {r["peak_bytes"]:,} | {r["baseline_peak_bytes"]:,} | '
      f'{r["memory_ratio"]:.3f} | {100 * r["overhead"]:+.1f}% |')
PY
done
mv "$csv.tmp" "$csv"
rm -rf "$tmp"
