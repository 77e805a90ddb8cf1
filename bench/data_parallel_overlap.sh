#!/usr/bin/env bash
# Data-parallel training (Gloo over loopback): 2 ranks on this host, each training
# MODEL at BATCH per rank under a MONeT plan at BUDGET of autograd's step peak. The
# gradient all-reduce runs during the planned backward (buckets launched as their
# gradients complete) and after it, alternating step by step in one run; prints the
# median step time (forward, backward and waiting for the all-reduce) of each, and rank
# 0's largest step peak against the budget (every rank checks its own and exits 1 above
# it). Each rank runs one intra-op thread.
#
# Usage: bench/data_parallel_overlap.sh [model] [batch] [budget] [steps]
#   (default resnet50 16 0.5x 12; the first two steps are left out of the medians)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
monet="${MONET_BUILD_DIR:-$root/build}/src/monet"
[ -x "$monet" ] || { echo "build first: scripts/build.sh" >&2; exit 2; }
model="${1:-resnet50}" batch="${2:-16}" budget="${3:-0.5x}" steps="${4:-12}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
OMP_NUM_THREADS=1 "$monet" train --model "$model" --batch "$batch" --image 224 --synthetic \
  --nproc 2 --budget "$budget" --optimizer sgd --momentum 0.9 --steps "$steps" \
  --gradient-sync alternate --json > "$out"
/usr/bin/python3 - "$out" "$model" "$batch" "$budget" <<'PY'
import json, statistics, sys
path, model, batch, budget = sys.argv[1:5]
rows = [json.loads(l) for l in open(path) if l.strip()]
steps = [r for r in rows if "gradient_sync" in r][2:]
summary = rows[-1]
t = {m: statistics.median(r["step_seconds"] for r in steps if r["gradient_sync"] == m)
     for m in ("during-backward", "after-backward")}
peak, cap = summary["max_step_peak_bytes"], summary["budget_bytes"]
print(f"| {model} | {batch} per rank | 2 ranks | {budget} = {cap} B | "
      f"{t['during-backward']:.3f} s | {t['after-backward']:.3f} s | "
      f"{t['during-backward'] / t['after-backward'] - 1:+.1%} | {peak} B ({peak / cap:.3f} of budget) |")
PY
