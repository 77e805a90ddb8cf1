#!/usr/bin/env bash
# Fused optimizer updates against updates after the backward, through `monet train`: the
# smallest whole-step budget with a plan in each mode (as a fraction of autograd's step
# peak, measured in the same run), then training steps in fused mode at a budget just
# above its smallest, every step's measured peak against that budget.
#
# Usage: bench/fused_updates.sh [model] [batch] [image] [optimizer] [steps]
#   (default resnet18 32 96 adam 5)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
monet="${MONET_BUILD_DIR:-$root/build}/src/monet"
[ -x "$monet" ] || { echo "build first: scripts/build.sh" >&2; exit 2; }
model="${1:-resnet18}" batch="${2:-32}" image="${3:-96}" optimizer="${4:-adam}" steps="${5:-5}"
cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT
common=(--model "$model" --batch "$batch" --image "$image" --synthetic --optimizer "$optimizer"
        --time-limit 20 --cache-dir "$cache")

# The smallest budget (MiB) a mode has a plan for: asked for far too little, monet train
# names it. Also prints autograd's step peak (MiB) on the first call.
smallest() {
  local out
  out=$("$monet" train "${common[@]}" --optimizer-update "$1" --budget 0.6x --steps 1 2>&1 || true)
  sed -n 's/.*the smallest budget with a plan is \([0-9.]*\) MiB.*/\1/p' <<< "$out"
}
after=$(smallest after-backward)
fused=$(smallest fused)
[ -n "$after" ] && [ -n "$fused" ] || { echo "no smallest budget reported (a plan fit 0.6x?)" >&2; exit 1; }
# Autograd's step peak (MiB), measured by a run whose budget is a ratio of it; then the
# fused run at 1% above its smallest budget, as a ratio too.
autograd=$("$monet" train "${common[@]}" --budget 0.99x --steps 1 --json |
  /usr/bin/python3 -c "import json, sys; print([json.loads(l) for l in sys.stdin if l.strip()][-1]['autograd_step_peak_bytes'] / 2**20)")
budget=$(/usr/bin/python3 -c "print(f'{$fused * 1.01 / $autograd:.4f}x')")
"$monet" train "${common[@]}" --budget "$budget" --steps "$steps" --json > "$cache/steps.json"
/usr/bin/python3 - "$cache/steps.json" "$after" "$fused" "$model" "$batch" "$image" "$optimizer" <<'PY'
import json, sys
path, after, fused, model, batch, image, optimizer = sys.argv[1:8]
lines = [json.loads(l) for l in open(path) if l.strip()]
steps = [l for l in lines if "step" in l]
summary = next(l for l in lines if "max_step_peak_bytes" in l)
autograd = summary["autograd_step_peak_bytes"] / 2**20
budget = summary["budget_bytes"]
assert all(s["peak_bytes"] <= budget for s in steps), "a step exceeded its budget"
print(f"{model} b{batch} {image}², {optimizer}: autograd's step peak {autograd:.1f} MiB")
print("| update mode | smallest whole-step budget with a plan | of autograd's step |")
print("| --- | --- | --- |")
print(f"| after the backward | {float(after):.1f} MiB | {float(after) / autograd:.3f}x |")
print(f"| fused | {float(fused):.1f} MiB | {float(fused) / autograd:.3f}x |")
print(f"fused at {budget / 2**20:.1f} MiB ({budget / 2**20 / autograd:.3f}x): "
      f"{len(steps)} steps, largest measured peak {summary['max_step_peak_bytes'] / 2**20:.1f} MiB "
      f"({summary['max_step_peak_bytes'] / 2**20 / autograd:.3f}x), every step within the budget")
PY
