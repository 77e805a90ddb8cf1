#!/usr/bin/python3
"""A GPT-2-style decoder (tools/make_import_fixtures.py, TinyGPT, at a given size):
monet's training-step memory and time at several budgets against plain PyTorch and
against torch.utils.checkpoint on every block, in one process with monet's tracking
allocator. All share the model's parameters and one SGD-momentum optimizer and run
interleaved (PyTorch, checkpoint, monet at each budget, PyTorch, ...). A step is
zero_grad, forward, cross-entropy over the [N, T, V] logits, backward and the optimizer
step; its peak is the tracked peak above what was alive before the model was built;
times are medians over the measured rounds (one warm-up round first).

Usage: PYTHONPATH=build/python bench/gpt_memory_curve.py [--layers 6] [--width 512]
           [--heads 8] [--seq 256] [--batch 4] [--vocab 8192]
           [--budgets 0.3,0.5,0.7,0.9] [--iters 2] [--time-limit 60] [--json FILE]
"""
import argparse
import json
import logging
import os
import statistics
import sys

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

import monet
from interleaved_steps import measure_interleaved

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from make_import_fixtures import TinyGPT  # noqa: E402

MIB = 1 << 20


def checkpointed(model):
    """model's forward with torch.utils.checkpoint around every block."""
    def block_fn(b):
        def run(x):
            x = x + b.attn(b.ln1(x))
            return x + b.out(F.gelu(b.fc(b.ln2(x))))
        return run

    def forward(idx):
        x = model.wte(idx) + model.wpe(torch.arange(idx.shape[1]))
        for b in model.blocks:
            x = torch.utils.checkpoint.checkpoint(block_fn(b), x, use_reentrant=False)
        return model.head(model.ln(x))
    return forward


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in (("layers", 6), ("width", 512), ("heads", 8), ("seq", 256),
                          ("batch", 4), ("vocab", 8192), ("iters", 2)):
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--budgets", default="0.3,0.5,0.7,0.9")
    ap.add_argument("--time-limit", type=float, default=60)
    ap.add_argument("--json", default=None, help="also write the figures here")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")

    monet.install_memory_tracker()
    gen = torch.Generator().manual_seed(1)
    x = torch.randint(0, a.vocab, (a.batch, a.seq), generator=gen)
    y = torch.randint(0, a.vocab, (a.batch, a.seq), generator=gen)
    before = monet.current_memory()
    torch.manual_seed(0)
    model = TinyGPT(a.vocab, a.width, a.heads, a.layers, a.seq).train()
    methods = {"pytorch": model, "checkpoint": checkpointed(model)}
    plans = {}
    for ratio in a.budgets.split(","):
        try:
            fast = monet.optimize(model, x, budget=ratio + "x", optimizer="sgd-momentum",
                                  time_limit=a.time_limit)
        except monet.BudgetTooSmall as e:
            print(f"monet {ratio}x: no plan (smallest budget {e.smallest_budget} B)", flush=True)
            continue
        print(f"monet {ratio}x: {fast.plan}", flush=True)
        methods[f"monet {ratio}x"] = fast
        plans[f"monet {ratio}x"] = fast.plan
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    peaks, seconds = measure_interleaved(
        methods, lambda forward: F.cross_entropy(forward(x).transpose(1, 2), y), opt, a.iters,
        before, log=True)
    config = {k: getattr(a, k) for k in ("layers", "width", "heads", "seq", "batch", "vocab")}
    result = {"config": config, "threads": torch.get_num_threads(), "methods": {}}
    base_peak, base_s = peaks["pytorch"], statistics.median(seconds["pytorch"])
    print("| method | step peak (B) | of PyTorch's | s/step | overhead | within budget |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in methods:
        s = statistics.median(seconds[name])
        budget = plans[name].budget if name in plans else None
        result["methods"][name] = {"peak_bytes": peaks[name], "median_seconds": s,
                                   "budget_bytes": budget}
        within = "" if budget is None else ("yes" if peaks[name] <= budget else "NO")
        print(f"| {name} | {peaks[name]} | {peaks[name] / base_peak:.3f} | {s:.2f} | "
              f"{s / base_s - 1:+.1%} | {within} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
