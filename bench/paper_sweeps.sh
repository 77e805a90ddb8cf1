#!/usr/bin/env bash
# Issue 5: the paper's trade-off curves (Figure 3) and "memory at <=10% overhead"
# (Table 1) on this machine's CPU. For each model, `monet sweep` profiles once (cached),
# plans every budget with every planner (MONeT, MONeT without operator optimisations,
# Checkmate-D, Checkmate-O, Chen, Gist, store-all), runs every plan interleaved with the
# autograd baseline and writes results/sweeps/MODEL/{sweep.csv,sweep.json,tradeoff.png}.
# Then prints, per model and planner, the smallest measured memory ratio whose measured
# overhead is at most 10%, the Gist table, the solver-time table and Checkmate's predicted
# against measured peak (bench/sweep_tables.sh, which also runs on any sweep directories).
#
# Usage: bench/paper_sweeps.sh
# Environment: CASES ("model batch image [budgets]" lines), PLANNERS, BUDGETS (default
# 0.4x..0.9x), TIME_LIMIT (s per plan, default 60), ITERS (measured iterations per plan,
# default 2).
set -euo pipefail
source "$(dirname "$0")/locate_monet.sh"
cases="${CASES:-resnet50 32 224
googlenet 32 224
unet 2 416x608
vgg16 16 224
mobilenet_v2 32 224}"
planners="${PLANNERS:-monet,monet-noop,checkmate,checkmate-o,chen,gist,storeall}"
budgets="${BUDGETS:-0.4x,0.5x,0.6x,0.7x,0.8x,0.9x}"
time_limit="${TIME_LIMIT:-60}"
iters="${ITERS:-2}"
stamp="$(date +%Y%m%d-%H%M%S)"
dirs=()
while read -r model batch image case_budgets; do
  [ -n "$model" ] || continue
  out="$root/results/sweeps/$model-b$batch-$image-$stamp"
  "$monet" sweep --model "$model" --batch "$batch" --image "$image" --planners "$planners" \
    --budgets "${case_budgets:-$budgets}" --time-limit "$time_limit" --iters "$iters" -o "$out" >&2
  dirs+=("$out")
done <<< "$cases"
"$root/bench/sweep_tables.sh" "${dirs[@]}"
