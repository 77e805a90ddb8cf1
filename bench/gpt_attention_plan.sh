#!/usr/bin/env bash
# The GPT-style decoder (tools/make_import_fixtures.py, TinyGPT) traced at a given size by
# Debian's python3-torch, planned by `monet plan` with the language-model loss inside the
# plan at each budget, run interleaved with autograd (`monet run`), and the plan's choice
# for every attention node printed (`monet show --plan`). Prints a markdown row per budget
# (bench/plan_run_row.py) and then each plan's attention rows; keeps the traced model,
# plans and JSON under results/gpt_attention_plan/.
#
# Usage: bench/gpt_attention_plan.sh [budgets] [time limit s]   (default "0.3x 0.5x" 60)
# Environment: LAYERS WIDTH HEADS SEQ BATCH VOCAB (default 6 512 8 512 8 8192), DROPOUT
# (attention and residual dropout, default 0.1).
set -euo pipefail
source "$(dirname "$0")/locate_monet.sh"
budgets="${1:-0.3x 0.5x}" limit="${2:-60}"
layers="${LAYERS:-6}" width="${WIDTH:-512}" heads="${HEADS:-8}" seq="${SEQ:-512}"
batch="${BATCH:-8}" vocab="${VOCAB:-8192}" dropout="${DROPOUT:-0.1}"
out="$root/results/gpt_attention_plan"
mkdir -p "$out"
model="$out/gpt-${layers}l-${width}w-s${seq}.pt"
/usr/bin/python3 - "$root/tools" "$model" "$layers" "$width" "$heads" "$seq" "$batch" "$vocab" \
  "$dropout" <<'PY'
import sys
import torch
sys.path.insert(0, sys.argv[1])
from make_import_fixtures import TinyGPT
path = sys.argv[2]
layers, width, heads, seq, batch, vocab = (int(v) for v in sys.argv[3:9])
torch.manual_seed(0)
model = TinyGPT(vocab, width, heads, layers, seq).train()
for m in model.modules():
    if isinstance(m, torch.nn.Dropout):
        m.p = float(sys.argv[9])
with torch.no_grad():
    torch.jit.trace(model, torch.randint(0, vocab, (batch, seq)), check_trace=False).save(path)
PY
row="$root/bench/plan_run_row.py"
/usr/bin/python3 "$row" --header "budget"
planned=()
for b in $budgets; do
  plan="$out/plan-$b.json"
  if ! "$monet" plan --model "$model" --input-shape "$batch,$seq" --loss sequence_cross_entropy \
           --budget "$b" --time-limit "$limit" --json -o "$plan" > "$out/plan-$b.out"; then
    echo "| $b | no plan within ${limit} s (see the planner's message above) |"
    continue
  fi
  "$monet" run --plan "$plan" --iters 3 --warmup 1 --json > "$out/run-$b.json"
  /usr/bin/python3 "$row" "$b" "$out/plan-$b.out" "$out/run-$b.json"
  planned+=("$b")
done
for b in "${planned[@]}"; do
  echo "plan at $b: attention nodes"
  "$monet" show --plan "$out/plan-$b.json" | grep -E "^#|attention  "
done
