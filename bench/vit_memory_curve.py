#!/usr/bin/python3
"""torchvision's vit_b_16 (or another torchvision VisionTransformer): monet's training-step
memory and time at several budgets against plain PyTorch and against
torch.utils.checkpoint on every encoder block, in one process with monet's tracking
allocator, interleaved (bench/interleaved_steps.py). A step is zero_grad, forward,
cross-entropy over 1000 classes, backward and the optimizer's step (SGD with momentum,
or --optimizer adam; --whole-step: the loss and the updates inside monet's plans); its
peak is the tracked peak above what was alive before the model was built.

Usage: PYTHONPATH=build/python bench/vit_memory_curve.py [--model vit_b_16] [--batch 16]
           [--image 224] [--budgets 0.2,0.3,0.5,0.7,0.9] [--iters 2] [--time-limit 60]
           [--json FILE] [--optimizer sgd-momentum|adam] [--whole-step]
"""
import argparse

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
import torchvision

import monet
from interleaved_steps import budget_curve, parse_curve_arguments


def checkpointed(model):
    """model's forward with torch.utils.checkpoint around every encoder block."""
    def forward(x):
        x = model._process_input(x)
        x = torch.cat([model.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        enc = model.encoder
        x = enc.dropout(x + enc.pos_embedding)
        for block in enc.layers:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        return model.heads(enc.ln(x)[:, 0])
    return forward


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="vit_b_16")
    for name, default in (("batch", 16), ("image", 224), ("iters", 2)):
        ap.add_argument("--" + name, type=int, default=default)
    a = parse_curve_arguments(ap, "0.2,0.3,0.5,0.7,0.9")
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(a.batch, 3, a.image, a.image, generator=gen)
    y = torch.randint(0, 1000, (a.batch,), generator=gen)
    before = monet.current_memory()
    torch.manual_seed(0)
    model = getattr(torchvision.models, a.model)(image_size=a.image).train()
    budget_curve(model, x, y, F.cross_entropy, {"checkpoint": checkpointed(model)}, a, before,
                 {"model": a.model, "batch": a.batch, "image": a.image})


if __name__ == "__main__":
    main()
