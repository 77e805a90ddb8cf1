#!/usr/bin/env bash
# Whole training steps (forward, backward, SGD-momentum update) under a plan: every
# step's measured peak against the step budget and autograd's step peak, and forward +
# backward time against autograd's (interleaved, medians). Writes
# results/train_steps.csv and prints a markdown table.
#
# Usage: bench/train_steps.sh [model] [batch] [steps] [runs]
#   (default resnet50 32 20 "monet:0.4x:STEPS storeall:none:5"; a budget of "none" plans
#   without one, which needs no profile)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
monet="${MONET_BUILD_DIR:-$root/build}/src/monet"
[ -x "$monet" ] || { echo "build first: scripts/build.sh" >&2; exit 2; }
model="${1:-resnet50}" batch="${2:-32}" steps="${3:-20}"
runs="${4:-monet:0.4x:$steps storeall:none:5}"
mkdir -p "$root/results"
csv="$root/results/train_steps.csv"
echo "model,batch,planner,budget,steps,max_step_peak_bytes,budget_bytes,autograd_step_peak_bytes,fb_peak_bytes,autograd_fb_peak_bytes,seconds,autograd_seconds,overhead" > "$csv.tmp"
echo "| model | batch | planner | budget | steps | largest step peak (B) | budget (B) | of autograd's step | forward+backward peak / autograd's | overhead |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for c in $runs; do
  IFS=: read -r planner budget n <<< "$c"
  budget_flag=()
  [ "$budget" = none ] || budget_flag=(--budget "$budget")
  "$monet" train --model "$model" --batch "$batch" --image 224 --synthetic \
          --planner "$planner" "${budget_flag[@]}" --optimizer sgd --momentum 0.9 \
          --steps "$n" --compare-autograd 3 --json > "$csv.out"
  /usr/bin/python3 - "$model" "$batch" "$planner" "$budget" "$n" "$csv.tmp" "$csv.out" <<'PY'
import json, sys
model, batch, planner, budget, n, csv, out = sys.argv[1:8]
lines = [json.loads(l) for l in open(out) if l.strip()]
steps = [l for l in lines if "step" in l]
summary = next(l for l in lines if "max_step_peak_bytes" in l)
timing = next(l for l in lines if "autograd_seconds" in l)
peak = summary["max_step_peak_bytes"]
b, a = summary.get("budget_bytes"), summary.get("autograd_step_peak_bytes")
assert b is None or all(s["peak_bytes"] <= b for s in steps), "a step exceeded its budget"
# Forward + backward, interleaved with autograd in one process (same batch, same weights).
fb, fb_autograd = timing["peak_bytes"], timing["autograd_peak_bytes"]
with open(csv, "a") as f:
    f.write(f'{model},{batch},{planner},{budget},{n},{peak},{b or ""},{a or ""},{fb},{fb_autograd},'
            f'{timing["seconds"]:.4f},{timing["autograd_seconds"]:.4f},{timing["overhead"]:.4f}\n')
step_ratio = f"{peak / a:.3f}" if a else "not measured"
budget_text = f"{b:,}" if b else "none"
print(f'| {model} | {batch} | {planner} | {budget} | {n} | {peak:,} | {budget_text} | {step_ratio} | '
      f'{fb / fb_autograd:.3f} | {100 * timing["overhead"]:+.1f}% |')
PY
done
rm -f "$csv.out"
mv "$csv.tmp" "$csv"
