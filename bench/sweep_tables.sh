#!/usr/bin/env bash
# Markdown tables from one or more `monet sweep` directories (their sweep.json):
#   1. memory ratio at <=10% overhead per model and planner (the paper's Table 1),
#   2. Gist against MONeT (the paper's Gist table),
#   3. solver behaviour per program-based plan (the paper's solver-time table): solve
#      time, first incumbent, first incumbent within 5% of the final bound, final gap,
#      program size,
#   4. Checkmate's predicted peak (its own memory model, no workspace) against the peak
#      the simulator predicts with workspace and the measured peak.
# Usage: bench/sweep_tables.sh SWEEP_DIR...
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 SWEEP_DIR..." >&2; exit 2; }
command -v jq >/dev/null || { echo "$0: needs jq (scripts/install-deps.sh installs it)" >&2; exit 2; }
files=()
for d in "$@"; do
  [ -f "$d/sweep.json" ] || { echo "$0: $d/sweep.json not found" >&2; exit 2; }
  files+=("$d/sweep.json")
done
mib='(. / 1048576 * 10 | round / 10 | tostring) + " MiB"'
pct='(. * 1000 | round / 10 | tostring) + "%"'
r3='(. * 1000 | round / 1000)'
case_name='"\(.model) b\(.config.batch) \(.config.image | if type == "array" then map(tostring) | join("x") else tostring end)"'

echo "### Memory ratio at <=10% overhead (measured, interleaved with autograd)"
echo
echo "The last column is the same plan's overhead as the profiler predicts it, against the"
echo "store-all plan's prediction (when the sweep has store-all): a check on timing noise."
echo
echo "| model | planner | memory ratio | overhead | budget | predicted overhead |"
echo "| --- | --- | --- | --- | --- | --- |"
jq -r "$case_name as \$m
  | ([.rows[] | select(.planner == \"storeall\" and .status == \"ok\")] | first | .predicted_seconds) as \$sa
  | .rows | group_by(.planner)[]
  | (map(select(.status == \"ok\" and .overhead <= 0.10)) | min_by(.memory_ratio)) as \$best
  | if \$best then \"| \(\$m) | \(\$best.planner) | \(\$best.memory_ratio | $r3) | \(\$best.overhead | $pct) | \(\$best.budget) | \(if \$sa then (\$best.predicted_seconds / \$sa - 1 | $pct) else \"-\" end) |\"
    else \"| \(\$m) | \(.[0].planner) | none within 10% | | | |\" end" "${files[@]}"
echo
echo "### Gist against MONeT (MONeT: least memory at <=10% overhead)"
echo
echo "| model | Gist memory | Gist overhead | MONeT memory | MONeT overhead |"
echo "| --- | --- | --- | --- | --- |"
jq -r "$case_name as \$m
  | (.rows | map(select(.planner == \"gist\" and .status == \"ok\")) | first) as \$g
  | (.rows | map(select(.planner == \"monet\" and .status == \"ok\" and .overhead <= 0.10)) | min_by(.memory_ratio)) as \$b
  | select(\$g != null)
  | \"| \(\$m) | \(\$g.memory_ratio | $r3) | \(\$g.overhead | $pct) | \(if \$b then (\$b.memory_ratio | $r3) else \"-\" end) | \(if \$b then (\$b.overhead | $pct) else \"-\" end) |\"" "${files[@]}"
echo
echo "### Solver: time to the first plan and to within 5% of the final bound"
echo
echo "First fitting plan: the planner's first plan within the budget (a heuristic's or the"
echo "program's); first program solution: 0 when a warm start is one."
echo
echo "| model | planner | budget | columns | rows | first fitting plan (s) | first program solution (s) | within 5% (s) | stopped (s) | final gap |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
jq -r "$case_name as \$m | .rows[] | select(.solve != null)
  | \"| \(\$m) | \(.planner) | \(.budget) | \(.solve.columns) | \(.solve.rows) | \(if (.solve.first_fit_seconds // -1) >= 0 then (.solve.first_fit_seconds * 10 | round / 10) else \"-\" end) | \(if .solve.first_incumbent_seconds >= 0 then (.solve.first_incumbent_seconds * 10 | round / 10) else \"-\" end) | \(if .seconds_to_5pct >= 0 then (.seconds_to_5pct * 10 | round / 10) else \"not reached\" end) | \(.solve.planner_seconds * 10 | round / 10) | \(if .status != \"ok\" then .status elif .solve.bound_seconds == null then \"no bound (LP unsolved)\" else (.solve.gap | $pct) end) |\"" "${files[@]}"
echo
echo "### Checkmate: its predicted peak against the simulated and the measured peak"
echo
echo "| model | planner | budget | budget bytes | Checkmate's model | with workspace (simulated) | measured | measured / Checkmate's model |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
jq -r "$case_name as \$m | .rows[] | select(.checkmate_model_peak_bytes != null and .measured_peak_bytes != null)
  | \"| \(\$m) | \(.planner) | \(.budget) | \(.budget_bytes | $mib) | \(.checkmate_model_peak_bytes | $mib) | \(.predicted_peak_bytes | $mib) | \(.measured_peak_bytes | $mib) | \(.measured_peak_bytes / .checkmate_model_peak_bytes | $r3) |\"" "${files[@]}"
