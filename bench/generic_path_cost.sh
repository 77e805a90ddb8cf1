#!/usr/bin/env bash
# What the specialised implementations of activations and batch norms save: a traced
# ResNet-50 planned and run with them (--operator-path specialised) and with those
# operators on the generic ATen path (--operator-path generic), at the same budget ratio;
# each plan runs interleaved with autograd. Prints a markdown row per path and keeps the
# plans and JSON under results/generic_path_cost/.
#
# Usage: bench/generic_path_cost.sh [batch] [budget] [time limit s]   (default 16 0.5x 60)
set -euo pipefail
source "$(dirname "$0")/locate_monet.sh"
batch="${1:-16}" budget="${2:-0.5x}" limit="${3:-60}"
out="$root/results/generic_path_cost"
mkdir -p "$out"
/usr/bin/python3 - "$batch" "$out/resnet50.pt" <<'PY'
import sys, torch, torchvision
torch.manual_seed(0)
model = torchvision.models.resnet50().train()
with torch.no_grad():
    torch.jit.trace(model, torch.randn(int(sys.argv[1]), 3, 224, 224), check_trace=False).save(sys.argv[2])
PY
row="$root/bench/plan_run_row.py"
/usr/bin/python3 "$row" --header "operator path"
for path in specialised generic; do
  "$monet" plan --model "$out/resnet50.pt" --input-shape "$batch,3,224,224" --operator-path "$path" \
           --budget "$budget" --time-limit "$limit" --json -o "$out/$path.plan.json" > "$out/$path.plan.out"
  "$monet" run --plan "$out/$path.plan.json" --iters 3 --warmup 1 --json > "$out/$path.run.json"
  /usr/bin/python3 "$row" "$path" "$out/$path.plan.out" "$out/$path.run.json"
done
