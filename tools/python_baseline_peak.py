#!/usr/bin/python3
"""Peak memory and time of one training iteration of a torchvision model in Python
PyTorch, measured with monet's own tracking allocator loaded into this process.

monet's libmonet.so and Debian's python3-torch link the same libc10, so loading the
library through ctypes and calling monet_tracker_install() puts exactly the allocator
`monet baseline` uses in front of Python PyTorch's CPU allocations.

Conditions match `monet baseline`: the allocator is installed before the model is
built, gradients are set to None before each iteration, one warm-up iteration, peak
taken over the measured iterations, cross-entropy loss on random labels.

Usage: python_baseline_peak.py --lib build/src/libmonet.so --model resnet50 --batch 8
                               [--image 224] [--iters 3] [--json]
"""
import argparse
import ctypes
import json
import statistics
import time

import torch
import torchvision


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--image", type=int, default=224)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    lib = ctypes.CDLL(a.lib, mode=ctypes.RTLD_GLOBAL)
    lib.monet_tracker_current.restype = ctypes.c_int64
    lib.monet_tracker_peak.restype = ctypes.c_int64
    lib.monet_tracker_install()

    torch.manual_seed(0)
    kwargs = {"aux_logits": False, "init_weights": True} if a.model == "googlenet" else {}
    model = getattr(torchvision.models, a.model)(**kwargs)
    model.train()
    x = torch.randn(a.batch, 3, a.image, a.image)
    target = torch.randint(0, 1000, (a.batch,))
    criterion = torch.nn.CrossEntropyLoss()

    peaks, seconds, start = [], [], 0
    for i in range(1 + a.iters):
        model.zero_grad(set_to_none=True)
        lib.monet_tracker_reset_peak()
        start = lib.monet_tracker_current()
        t0 = time.perf_counter()
        loss = criterion(model(x), target)
        loss.backward()
        elapsed = time.perf_counter() - t0
        del loss
        if i > 0:
            peaks.append(lib.monet_tracker_peak())
            seconds.append(elapsed)
    result = {"model": a.model, "batch": a.batch, "image": a.image,
              "peak_bytes": max(peaks), "start_bytes": start,
              "median_seconds": statistics.median(seconds),
              "threads": torch.get_num_threads()}
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        for k, v in result.items():
            print(f"{k:16s} {v}")


if __name__ == "__main__":
    main()
