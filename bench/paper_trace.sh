#!/usr/bin/env bash
# Issue 5, the paper's Figure 5: memory along one training iteration for the autograd
# baseline, MONeT without operator optimisations (monet-noop) and MONeT, at one budget,
# from the executor's per-instruction trace (baseline: per operator, and per gradient in
# its backward pass). Writes DIR/{baseline,monet-noop,monet}.csv, the plans, trace.gp and
# trace.png (gnuplot), and prints each run's peak and overhead.
#
# Usage: bench/paper_trace.sh [DIR]   (default results/trace-MODEL-bBATCH-STAMP)
# Environment: MODEL (resnet50), BATCH (4), IMAGE (224), BUDGET (0.6x), TIME_LIMIT (60).
set -euo pipefail
source "$(dirname "$0")/locate_monet.sh"
model="${MODEL:-resnet50}" batch="${BATCH:-4}" image="${IMAGE:-224}"
budget="${BUDGET:-0.6x}" time_limit="${TIME_LIMIT:-60}"
out="${1:-$root/results/trace-$model-b$batch-$(date +%Y%m%d-%H%M%S)}"
if [ -e "$out" ] && [ -n "$(ls -A "$out")" ]; then
  echo "$out exists and is not empty; nothing is overwritten" >&2; exit 2
fi
mkdir -p "$out"
m=(--model "$model" --batch "$batch" --image "$image")
"$monet" baseline "${m[@]}" --iters 1 --warmup 1 --trace-csv "$out/baseline.csv"
for p in monet-noop monet; do
  "$monet" plan "${m[@]}" --planner "$p" --budget "$budget" --time-limit "$time_limit" \
    -o "$out/$p.json"
  "$monet" run --plan "$out/$p.json" --iters 1 --warmup 1 --trace-csv "$out/$p.csv"
done
cat > "$out/trace.gp" <<GP
# Memory along one iteration; x is the position in the iteration (0: start, 1: end).
set terminal pngcairo size 1000,500
set output 'trace.png'
set datafile separator ','
set key top right
set grid
set title '$model, batch $batch, $image: memory along one iteration (budget $budget)'
set xlabel 'position in the iteration (operators / instructions)'
set ylabel 'allocated (MiB)'
n(f) = system(sprintf("tail -n +2 %s | wc -l", f)) + 0
nb = n('baseline.csv'); nn = n('monet-noop.csv'); nm = n('monet.csv')
plot 'baseline.csv' every ::1 using (\$0/(nb-1)):(\$2/1048576) with lines lw 2 title 'autograd', \\
     'monet-noop.csv' every ::1 using (\$0/(nn-1)):(\$2/1048576) with lines lw 2 title 'monet-noop', \\
     'monet.csv' every ::1 using (\$0/(nm-1)):(\$2/1048576) with lines lw 2 title 'monet'
GP
if command -v gnuplot >/dev/null; then
  (cd "$out" && gnuplot trace.gp) && echo "wrote $out/trace.png"
else
  echo "gnuplot is not installed: $out/trace.gp not plotted" >&2
fi
