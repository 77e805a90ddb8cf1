#!/usr/bin/python3
"""A Python training step through monet.optimize against plain PyTorch and against
torch.utils.checkpoint on every bottleneck block, on one torchvision ResNet in one
process with monet's tracking allocator: the three share the model's parameters and one
SGD-momentum optimizer, and run interleaved (monet, PyTorch, checkpoint, monet, ...).
Each step is zero_grad, forward, cross-entropy, backward and the optimizer step; its peak
is the tracked peak above what was alive before the model was built (so: parameters,
gradients, momentum, the batch and the step's own tensors); times are medians.

Usage: PYTHONPATH=build/python bench/python_step.py [--model resnet50] [--batch 32]
           [--image 224] [--budget 0.4x] [--iters 3] [--time-limit 120] [--json FILE]
"""
import argparse
import json
import logging
import statistics

import torch
import torch.utils.checkpoint
import torchvision

import monet
from interleaved_steps import measure_interleaved

MIB = 1 << 20


def checkpointed(model):
    """model's forward with torch.utils.checkpoint around every residual block."""
    def forward(x):
        x = model.maxpool(model.relu(model.bn1(model.conv1(x))))
        for layer in (model.layer1, model.layer2, model.layer3, model.layer4):
            for block in layer:
                x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        return model.fc(torch.flatten(model.avgpool(x), 1))
    return forward


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--image", type=int, default=224)
    ap.add_argument("--budget", default="0.4x")
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=120)
    ap.add_argument("--json", default=None, help="also write the figures here")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")

    monet.install_memory_tracker()
    x = torch.randn(a.batch, 3, a.image, a.image)
    y = torch.randint(0, 1000, (a.batch,))
    before = monet.current_memory()
    torch.manual_seed(0)
    model = getattr(torchvision.models, a.model)().train()
    fast = monet.optimize(model, x, budget=a.budget, optimizer="sgd-momentum",
                          time_limit=a.time_limit)
    print(fast.plan, flush=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    methods = {"monet": fast, "pytorch": model, "checkpoint": checkpointed(model)}
    peaks, seconds = measure_interleaved(
        {name: (lambda f=f: torch.nn.functional.cross_entropy(f(x), y))
         for name, f in methods.items()}, opt, a.iters, before)
    result = {"model": a.model, "batch": a.batch, "image": a.image, "budget": a.budget,
              "budget_bytes": fast.plan.budget, "threads": torch.get_num_threads()}
    for name in methods:
        result[name] = {"peak_bytes": peaks[name],
                        "median_seconds": statistics.median(seconds[name])}
    base = result["pytorch"]
    print(f"{'':12s} {'step peak':>12s} {'vs PyTorch':>10s} {'s/step':>8s} {'overhead':>9s}")
    for name in methods:
        r = result[name]
        print(f"{name:12s} {r['peak_bytes'] / MIB:9.1f} MiB {r['peak_bytes'] / base['peak_bytes']:9.3f}x "
              f"{r['median_seconds']:8.2f} {r['median_seconds'] / base['median_seconds'] - 1:+8.1%}")
    print(f"budget {fast.plan.budget / MIB:.1f} MiB; monet within it: "
          f"{result['monet']['peak_bytes'] <= fast.plan.budget}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
