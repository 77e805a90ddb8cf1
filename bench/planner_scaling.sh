#!/usr/bin/env bash
# Issue 6's table: the MONeT planner on full-size models, fast (neighbourhood search
# beside the LP relaxation, the default) and exact (CBC's branch and cut over the whole
# program, --exact), each under the same wall-clock limit: planner wall time, objective
# (profiled s/iter), certified bound (LP relaxation), gap, predicted peak; the plans of
# both searches are then run interleaved with the autograd baseline for the measured peak
# and overhead.
# Budgets are ratios of the measured autograd peak. Profiles are cached (~/.cache/monet).
# Writes results/planner_scaling.csv and prints a markdown table.
#
# Usage: bench/planner_scaling.sh
# Environment: CASES ("model batch [image]" lines; default: the sizes of the paper
# benchmarks on this CPU, docs/HISTORY.md issue 5), RATIOS (default "0.3 0.5 0.7 0.9"),
# SEARCHES (default "fast exact"), TIME_LIMIT (s, default 60), RUN_ITERS (timed iterations
# of each plan and of autograd, interleaved; default 3; 0: no runs), RUN_WARMUP
# (untimed iterations of each first; default 1), OUT (CSV path, default
# results/planner_scaling.csv).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
monet="${MONET_BUILD_DIR:-$root/build}/src/monet"
[ -x "$monet" ] || { echo "build first: scripts/build.sh" >&2; exit 2; }
cases="${CASES:-resnet50 8
googlenet 8
mobilenet_v2 8
vgg16 4
unet 1 208x304}"
ratios="${RATIOS:-0.3 0.5 0.7 0.9}"
searches="${SEARCHES:-fast exact}"
time_limit="${TIME_LIMIT:-60}"
run_iters="${RUN_ITERS:-3}"
run_warmup="${RUN_WARMUP:-1}"
mkdir -p "$root/results"
csv="${OUT:-$root/results/planner_scaling.csv}"
mkdir -p "$(dirname "$csv")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "model,batch,ratio,budget_bytes,search,status,planner_seconds,lp_seconds,objective_seconds,bound_seconds,gap,neighbourhoods,plan_source,predicted_peak_bytes,measured_peak_bytes,memory_ratio,overhead" > "$csv.tmp"
echo "| model | batch | budget | search | planner wall | objective (s/iter) | LP bound | gap | predicted peak | measured peak | ratio | overhead |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
while read -r model batch image; do
  [ -n "$model" ] || continue
  size=(); [ -n "$image" ] && size=(--image "$image")
  base=$("$monet" baseline --model "$model" --batch "$batch" "${size[@]}" --warmup 0 --iters 1 \
         --json 2>/dev/null | jq -r .peak_bytes)
  "$monet" profile --model "$model" --batch "$batch" "${size[@]}" >/dev/null 2>&1
  for ratio in $ratios; do
    budget=$(jq -n "($base * $ratio) | floor")
    for search in $searches; do
      flag=""; [ "$search" = exact ] && flag="--exact"
      if "$monet" plan --model "$model" --batch "$batch" "${size[@]}" --planner monet --budget "$budget" \
           --time-limit "$time_limit" $flag -o "$tmp/plan.json" --json > "$tmp/plan.out" 2>"$tmp/plan.err"; then
        p=$(cat "$tmp/plan.out")
        measured=""; mratio=""; overhead=""
        if [ "$run_iters" -gt 0 ]; then
          r=$("$monet" run --plan "$tmp/plan.json" --warmup "$run_warmup" --iters "$run_iters" --json 2>/dev/null)
          measured=$(jq -r .peak_bytes <<< "$r")
          mratio=$(jq -r '.peak_bytes / .baseline_peak_bytes' <<< "$r")
          overhead=$(jq -r .overhead <<< "$r")
        fi
        jq -r --arg m "$model" --arg b "$batch" --arg r "$ratio" --arg s "$search" \
           --arg meas "$measured" --arg mr "$mratio" --arg ov "$overhead" \
          '[$m, $b, $r, .budget_bytes, $s, .solve.status, .solve.planner_seconds,
            .solve.lp_relaxation_seconds, .solve.objective_seconds, .solve.bound_seconds,
            .solve.gap, .solve.neighbourhoods, .solve.plan_source, .predicted_peak_bytes,
            $meas, $mr, $ov] | @csv' \
          <<< "$p" >> "$csv.tmp"
        jq -r --arg m "$model" --arg b "$batch" --arg r "$ratio" --arg s "$search" \
           --arg meas "$measured" --arg mr "$mratio" --arg ov "$overhead" \
          '"| \($m) | \($b) | \($r)x | \($s) | \(.solve.planner_seconds | floor) s | \(.solve.objective_seconds * 1000 | round / 1000) | \(.solve.bound_seconds | if . == null then "none (LP unsolved)" else (. * 1000 | round / 1000 | tostring) end) | \(.solve.gap | if . == null then "-" else (. * 1000 | round / 10 | tostring) + "%" end) | \(.predicted_peak_bytes) | \($meas) | \($mr | if . == "" then "" else (tonumber * 1000 | round / 1000 | tostring) end) | \($ov | if . == "" then "" else (tonumber * 1000 | round / 10 | tostring) + "%" end) |"' <<< "$p"
      else
        why=$(tail -1 "$tmp/plan.err" | tr ',' ';')
        echo "\"$model\",\"$batch\",\"$ratio\",$budget,\"$search\",\"no plan: $why\",,,,,,,,,,," >> "$csv.tmp"
        echo "| $model | $batch | ${ratio}x | $search | - | no plan: $why | | | | | | |"
      fi
    done
  done
done <<< "$cases"
mv "$csv.tmp" "$csv"
