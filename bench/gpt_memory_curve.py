#!/usr/bin/python3
"""A GPT-2-style decoder (tools/make_import_fixtures.py, TinyGPT, at a given size):
monet's training-step memory and time at several budgets against plain PyTorch and
against torch.utils.checkpoint on every block, in one process with monet's tracking
allocator. All share the model's parameters and one optimizer (SGD with momentum, or --optimizer adam) and run
interleaved (PyTorch, checkpoint, monet at each budget, PyTorch, ...). A step is
zero_grad, forward, cross-entropy over the [N, T, V] logits, backward and the optimizer
step; its peak is the tracked peak above what was alive before the model was built;
times are medians over the measured rounds (one warm-up round first).

Usage: PYTHONPATH=build/python bench/gpt_memory_curve.py [--layers 6] [--width 512]
           [--heads 8] [--seq 256] [--batch 4] [--vocab 8192]
           [--budgets 0.3,0.5,0.7,0.9] [--iters 2] [--time-limit 60] [--json FILE]
           [--optimizer sgd-momentum|adam] [--whole-step]
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

import monet
from interleaved_steps import budget_curve, parse_curve_arguments

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
    a = parse_curve_arguments(ap, "0.3,0.5,0.7,0.9")
    gen = torch.Generator().manual_seed(1)
    x = torch.randint(0, a.vocab, (a.batch, a.seq), generator=gen)
    y = torch.randint(0, a.vocab, (a.batch, a.seq), generator=gen)
    before = monet.current_memory()
    torch.manual_seed(0)
    model = TinyGPT(a.vocab, a.width, a.heads, a.layers, a.seq).train()
    budget_curve(model, x, y, lambda out, t: F.cross_entropy(out.transpose(1, 2), t),
                 {"checkpoint": checkpointed(model)}, a, before,
                 {k: getattr(a, k) for k in ("layers", "width", "heads", "seq", "batch", "vocab")})


if __name__ == "__main__":
    main()
