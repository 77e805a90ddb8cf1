#!/usr/bin/env bash
# Traced models at full size under a budget: each model is traced by Debian's python3-torch
# (random weights, 1000 classes, stochastic depth off), planned with MONeT at the budget,
# and run interleaved with autograd; prints a markdown row per model (peaks in bytes,
# medians of the iterations) and keeps the plans and JSON under results/traced_full_size/.
#
# Usage: bench/traced_full_size.sh [models] [batch] [budget] [time limit s]
#   (default "swin_t convnext_tiny" 16 0.5x 60)
set -euo pipefail
source "$(dirname "$0")/locate_monet.sh"
models="${1:-swin_t convnext_tiny}" batch="${2:-16}" budget="${3:-0.5x}" limit="${4:-60}"
out="$root/results/traced_full_size"
mkdir -p "$out"
row="$root/bench/plan_run_row.py"
/usr/bin/python3 "$row" --header "model"
for m in $models; do
  /usr/bin/python3 - "$m" "$batch" "$out/$m.pt" <<'PY'
import sys, torch, torchvision
name, batch, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
torch.manual_seed(0)
model = getattr(torchvision.models, name)().train()
for mod in model.modules():
    if isinstance(mod, torchvision.ops.StochasticDepth):
        mod.p = 0.0
with torch.no_grad():
    torch.jit.trace(model, torch.randn(batch, 3, 224, 224), check_trace=False).save(path)
PY
  "$monet" plan --model "$out/$m.pt" --input-shape "$batch,3,224,224" --budget "$budget" \
           --time-limit "$limit" --json -o "$out/$m.plan.json" > "$out/$m.plan.out"
  "$monet" run --plan "$out/$m.plan.json" --iters 3 --warmup 1 --json > "$out/$m.run.json"
  /usr/bin/python3 "$row" "$m" "$out/$m.plan.out" "$out/$m.run.json"
done
