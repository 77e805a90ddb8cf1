#!/usr/bin/env python3
"""Checks that a TorchScript file saved by monet gives the logits monet computed.

Usage: check_saved_logits.py MODEL.pt TENSORS.pt
TENSORS.pt (torch.save format, written by the C++ test with torch::pickle_save) holds a
dict with "input" and "logits". The model runs in eval mode; exit 0 when the largest
relative difference is at most 1e-5, else 1. Prints the difference.
"""
import sys

import torch


def main():
    model = torch.jit.load(sys.argv[1])
    model.eval()
    t = torch.load(sys.argv[2])
    with torch.no_grad():
        got = model(t["input"])
    want = t["logits"]
    err = float((got - want).abs().max() / want.abs().max())
    print(f"saved model's logits against monet's: largest relative difference {err:.3g}")
    sys.exit(0 if err <= 1e-5 else 1)


if __name__ == "__main__":
    main()
