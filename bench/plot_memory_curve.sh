#!/usr/bin/env bash
# Plots a memory/overhead curve written by the Python curve benchmarks
# (bench/cnn_memory_curve.py, vit_memory_curve.py, gpt_memory_curve.py with --json):
# each method's step peak as a ratio of plain PyTorch's (y) against its time overhead over
# PyTorch's step in percent (x); monet's budgets joined by a line, the
# torch.utils.checkpoint variants as labelled points. Needs jq and gnuplot.
#
# Usage: bench/plot_memory_curve.sh CURVE.json OUT.png
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 CURVE.json OUT.png" >&2; exit 2; }
json="$1" png="$2"
[ -f "$json" ] || { echo "$0: $json not found" >&2; exit 2; }
for tool in jq gnuplot; do
  command -v "$tool" >/dev/null || { echo "$0: needs $tool (scripts/install-deps.sh)" >&2; exit 2; }
done
jq -e '.methods.pytorch.peak_bytes' "$json" >/dev/null ||
  { echo "$0: $json has no measured 'pytorch' method" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# One row per measured method: overhead (%), memory ratio, name.
points='.methods.pytorch as $p | .methods | to_entries[]
  | select(.value.peak_bytes != null and .value.median_seconds != null)
  | [(.value.median_seconds / $p.median_seconds - 1) * 100, .value.peak_bytes / $p.peak_bytes,
     .key] | @tsv'
jq -r "$points" "$json" | grep -P '\tmonet ' | sort -t$'\t' -k2,2g > "$work/monet.tsv" || true
jq -r "$points" "$json" | grep -vP '\tmonet ' > "$work/peers.tsv"
title="$(jq -r '.config | "\(.model), batch \(.batch)" + (if .image == null then "" elif (.image | type) == "string" then ", \(.image)" else ", \(.image)²" end)' "$json")"
cat > "$work/plot.gp" <<GP
set terminal pngcairo size 900,560 noenhanced
set output '$png'
set datafile separator '\t'
set title '$title: training step, peak memory against time'
set xlabel 'time overhead over PyTorch (%)'
set ylabel 'step peak / PyTorch step peak'
set yrange [0:1.1]
set grid
set key top right
plot '$work/monet.tsv' using 1:2 with linespoints lw 2 pt 7 title 'monet (budgets)', \\
     '' using 1:2:(substr(stringcolumn(3), 7, 99)) with labels offset 1.2,0.8 notitle, \\
     '$work/peers.tsv' using 1:2 with points pt 5 ps 1.3 title 'PyTorch / torch.utils.checkpoint', \\
     '' using 1:2:3 with labels offset 0,-1 font ',8' notitle
GP
gnuplot "$work/plot.gp"
echo "wrote $png"
