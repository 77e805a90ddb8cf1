#!/usr/bin/env bash
# Issue 5, the paper's Figure 4: overhead of MONeT with no operator optimisation (none),
# with one family alone (conv, out, int, inplace) and with all of them, at one memory
# budget (the paper used a ratio of 0.53). As in the paper, the modes that do not choose
# convolution algorithms are post-optimised: each convolution then gets, greedily, the
# fastest algorithm that still fits (`monet sweep --post-optimise`). Every plan runs
# interleaved with the autograd baseline. Writes results/ablation/MODEL-... and prints a
# markdown table.
#
# Usage: bench/paper_ablation.sh
# Environment: CASES ("model batch image" lines), BUDGETS (default 0.53x), TIME_LIMIT
# (s per plan, default 60), ITERS (default 2).
set -euo pipefail
source "$(dirname "$0")/locate_monet.sh"
cases="${CASES:-resnet50 32 224
googlenet 32 224
vgg16 16 224}"
budgets="${BUDGETS:-0.53x}"
stamp="$(date +%Y%m%d-%H%M%S)"
echo "| model | budget | none | conv | out | int | inplace | all |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
while read -r model batch image; do
  [ -n "$model" ] || continue
  out="$root/results/ablation/$model-b$batch-$image-$stamp"
  "$monet" sweep --model "$model" --batch "$batch" --image "$image" --post-optimise \
    --planners monet-noop,monet-conv,monet-out,monet-int,monet-inplace,monet \
    --budgets "$budgets" --time-limit "${TIME_LIMIT:-60}" --iters "${ITERS:-2}" -o "$out" >&2
  jq -r --arg m "$model b$batch $image" '
    def cell(p; b): (.rows | map(select(.planner == p and .budget == b)) | first) as $r
      | if $r == null then "-" elif $r.status != "ok" then $r.status
        else "\($r.overhead * 1000 | round / 10)% (\($r.memory_ratio * 1000 | round / 1000))" end;
    . as $s | [.rows[].budget] | unique[] as $b | $s
    | "| \($m) | \($b) | \(cell("monet-noop"; $b)) | \(cell("monet-conv"; $b)) | \(cell("monet-out"; $b)) | \(cell("monet-int"; $b)) | \(cell("monet-inplace"; $b)) | \(cell("monet"; $b)) |"' \
    "$out/sweep.json"
done <<< "$cases"
