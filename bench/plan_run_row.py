#!/usr/bin/python3
"""Prints one markdown row from a `monet plan --json` result and a `monet run --json` one:
label, autograd peak, budget, measured and predicted peak (bytes), ratio to autograd's peak,
autograd and plan seconds per iteration (medians), overhead, store-all's predicted peak and
time. The header: plan_run_row.py --header LABEL.

Usage: plan_run_row.py LABEL PLAN_JSON RUN_JSON
"""
import json
import sys

if sys.argv[1] == "--header":
    print(f"| {sys.argv[2]} | autograd peak (B) | budget (B) | measured peak (B) | predicted (B) "
          "| ratio | autograd s | plan s | overhead | store-all predicted (B, s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    sys.exit(0)
label, plan, run = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
print(f"| {label} | {run['baseline_peak_bytes']:,} | {plan['budget_bytes']:,} | "
      f"{run['peak_bytes']:,} | {plan['predicted_peak_bytes']:,} | {run['memory_ratio']:.4f} | "
      f"{run['baseline_median_seconds']:.2f} | {run['median_seconds']:.2f} | "
      f"{run['overhead']:+.1%} | {plan['storeall_predicted_peak_bytes']:,}, "
      f"{plan['storeall_predicted_seconds']:.2f} |")
