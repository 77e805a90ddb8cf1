#!/usr/bin/python3
"""Trains a torchvision model under a memory budget with monet.optimize, on a small
generated dataset (coloured squares to classify by colour), and reports the training
step's measured peak against the budget and against plain PyTorch's.

    PYTHONPATH=build/python python3 examples/train_torchvision.py \\
        --model mobilenet_v2 --batch 16 --image 96 --budget 0.5x --epochs 2
"""
import argparse
import logging
import time

import torch
import torchvision

import monet

MIB = 1 << 20


def colour_squares(n, image, classes, seed):
    """n images with a square of one of `classes` colours on noise; the label is the
    colour."""
    g = torch.Generator().manual_seed(seed)
    colours = torch.rand(classes, 3, generator=g)
    labels = torch.randint(0, classes, (n,), generator=g)
    x = 0.2 * torch.randn(n, 3, image, image, generator=g)
    side = image // 2
    for i in range(n):
        r, c = torch.randint(0, image - side + 1, (2,), generator=g).tolist()
        x[i, :, r:r + side, c:c + side] += colours[labels[i]].view(3, 1, 1)
    return torch.utils.data.TensorDataset(x, labels)


def plain_pytorch_peak(args, x, y):
    """Plain PyTorch's tracked peak for the same step, in this process."""
    before = monet.current_memory()
    model = getattr(torchvision.models, args.model)(num_classes=args.classes)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for _ in range(2):
        opt.zero_grad(set_to_none=True)
        with monet.track_memory() as m:
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    return m.peak_bytes - before


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="mobilenet_v2", help="a torchvision classifier")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--image", type=int, default=96)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--samples", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--budget", default="0.5x",
                    help="bytes, '800MiB', or a ratio of autograd's peak ('0.5x')")
    ap.add_argument("--time-limit", type=float, default=60, help="planner limit (s)")
    ap.add_argument("--search-limit", choices=("wall-clock", "work"), default="wall-clock",
                    help="what ends the planner's searches (work: the same plan on every "
                         "machine for the same costs)")
    ap.add_argument("--cache-dir", default=None)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")

    monet.install_memory_tracker()  # before the model: count everything
    data = colour_squares(args.samples, args.image, args.classes, seed=1)
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch, shuffle=True,
                                         drop_last=True)  # the plan is for one batch shape
    before = monet.current_memory()  # the dataset is not the step's
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(num_classes=args.classes)
    fast = monet.optimize(model, data.tensors[0][:args.batch], budget=args.budget,
                          optimizer="sgd-momentum", time_limit=args.time_limit,
                          search_limit=args.search_limit,
                          cache_dir=args.cache_dir)
    print(fast.plan)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    peak = 0
    for epoch in range(args.epochs):
        t0, total, correct, seen = time.perf_counter(), 0.0, 0, 0
        for x, y in loader:
            with monet.track_memory() as m:
                out = fast(x)
                loss = torch.nn.functional.cross_entropy(out, y)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
            peak = max(peak, m.peak_bytes - before)
            total += loss.item() * len(y)
            correct += (out.argmax(1) == y).sum().item()
            seen += len(y)
        print(f"epoch {epoch}: loss {total / seen:.4f}  accuracy {correct / seen:.3f}  "
              f"{seen / (time.perf_counter() - t0):.1f} samples/s  "
              f"step peak {peak / MIB:.1f} MiB (budget {fast.plan.budget / MIB:.1f} MiB)")

    model.eval()
    with torch.no_grad():
        x, y = data.tensors
        accuracy = (model(x).argmax(1) == y).float().mean().item()
    print(f"eval accuracy {accuracy:.3f}")
    del fast, opt, model
    pytorch = plain_pytorch_peak(args, x[:args.batch].clone(), y[:args.batch])
    print(f"step peak: monet {peak / MIB:.1f} MiB, plain PyTorch {pytorch / MIB:.1f} MiB")


if __name__ == "__main__":
    main()
