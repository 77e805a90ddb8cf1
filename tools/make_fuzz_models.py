#!/usr/bin/python3
"""Writes randomly composed small models, traced with torch.jit.trace, for the importer's
fuzz test (tests/fuzz_import_test.cpp).

Each model stacks random operators from what monet imports: convolutions (grouped,
strided, dilated), batch and group norms, activations (ReLU, in-place ReLU, GELU, SiLU,
sigmoid, tanh, hardswish), max and average pooling, residual additions (also in place),
concatenations, views (flatten, reshape, transpose, permute, slicing, chunks), linear
layers, layer norms, softmax, a parameter used twice (one module applied at two places),
a parameter read through a view of it (`x @ w.t()`), elementwise products, means and
dropout with probability 0. Shapes are random and small. The models are deterministic
functions of their index and the seed.

Writes OUTDIR/fuzz_<i>.pt and OUTDIR/fuzz_<i>.json (the input shape and a description of
the operators drawn).
Usage: make_fuzz_models.py OUTDIR [COUNT] [SEED]
"""
import json
import os
import random
import sys
import warnings

import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    """One randomly drawn operator applied to a 4-D [N, C, H, W] tensor."""

    def __init__(self, kind, channels, rng):
        super().__init__()
        self.kind = kind
        self.out_channels = channels
        if kind == "conv":
            groups = rng.choice([g for g in (1, 2, channels) if channels % g == 0])
            out = rng.choice([channels, 2 * channels]) if groups == 1 else channels
            self.conv = torch.nn.Conv2d(channels, out, rng.choice([1, 3]),
                                        padding="same" if rng.random() < 0.2 else 1,
                                        dilation=rng.choice([1, 1, 2]), groups=groups,
                                        bias=rng.random() < 0.5)
            if self.conv.padding != "same":  # keep the size: padding = dilation for 3x3
                self.conv.padding = (0, 0) if self.conv.kernel_size[0] == 1 else self.conv.dilation
            self.out_channels = out
        elif kind == "strided_conv":
            self.conv = torch.nn.Conv2d(channels, channels, 3, stride=2, padding=1)
        elif kind == "batch_norm":
            self.norm = torch.nn.BatchNorm2d(channels)
        elif kind == "group_norm":
            self.norm = torch.nn.GroupNorm(1 if channels % 2 else 2, channels)
        elif kind in ("residual", "residual_inplace", "shared_twice"):
            self.conv = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        elif kind == "concat":
            self.conv = torch.nn.Conv2d(channels, channels, 1)
            self.out_channels = 2 * channels

    def forward(self, x):
        k = self.kind
        if k in ("conv", "strided_conv"):
            return self.conv(x)
        if k in ("batch_norm", "group_norm"):
            return self.norm(x)
        if k == "relu":
            return F.relu(x)
        if k == "relu_inplace":
            return F.relu(x + 0, inplace=True)
        if k == "gelu":
            return F.gelu(x)
        if k == "silu":
            return F.silu(x)
        if k == "sigmoid":
            return torch.sigmoid(x)
        if k == "tanh":
            return torch.tanh(x)
        if k == "hardswish":
            return F.hardswish(x)
        if k == "max_pool":
            return F.max_pool2d(x, 2, ceil_mode=True) if min(x.shape[2:]) > 1 else x
        if k == "avg_pool":
            return F.avg_pool2d(x, 2, ceil_mode=True) if min(x.shape[2:]) > 1 else x
        if k == "residual":
            return x + self.conv(F.relu(x))
        if k == "residual_inplace":
            y = self.conv(x)
            y += x
            return y
        if k == "shared_twice":
            return self.conv(F.relu(self.conv(x)))
        if k == "concat":
            return torch.cat([x, self.conv(x)], 1)
        if k == "transpose_back":
            return x.transpose(2, 3).contiguous().transpose(2, 3)
        if k == "permute_back":
            return x.permute(0, 2, 3, 1).permute(0, 3, 1, 2)
        if k == "product":
            return x * torch.sigmoid(x.mean((2, 3), keepdim=True))
        if k == "chunk_sum":
            a, b = x.chunk(2, dim=1) if x.shape[1] % 2 == 0 else (x, x)
            return torch.cat([a + b, a - b], 1) if x.shape[1] % 2 == 0 else a * b
        if k == "dropout":
            return F.dropout(x, 0.0, self.training)
        raise ValueError(k)


SPATIAL = ["conv", "strided_conv", "batch_norm", "group_norm", "relu", "relu_inplace", "gelu",
           "silu", "sigmoid", "tanh", "hardswish", "max_pool", "avg_pool", "residual",
           "residual_inplace", "shared_twice", "concat", "transpose_back", "permute_back",
           "product", "chunk_sum", "dropout"]


class Head(torch.nn.Module):
    """A flat head: linear layers, layer norm, softmax, a view of a weight."""

    def __init__(self, features, classes, rng):
        super().__init__()
        self.kinds = rng.sample(["linear", "layer_norm", "tied_view", "softmax_mix", "reshape"],
                                rng.randint(1, 3))
        self.hidden = torch.nn.Linear(features, 16)
        self.norm = torch.nn.LayerNorm(16)
        self.tied = torch.nn.Parameter(torch.randn(16, 16) * 0.1)
        self.out = torch.nn.Linear(16, classes)

    def forward(self, x):
        x = self.hidden(x.flatten(1))
        for k in self.kinds:
            if k == "linear":
                x = F.relu(self.hidden2(x)) if hasattr(self, "hidden2") else torch.tanh(x)
            elif k == "layer_norm":
                x = self.norm(x)
            elif k == "tied_view":
                x = x + x @ self.tied.t()
            elif k == "softmax_mix":
                x = x * torch.softmax(x, -1)
            elif k == "reshape":
                x = x.reshape(x.shape[0], 4, 4).transpose(1, 2).reshape(x.shape[0], 16)
        return self.out(x)


class FuzzModel(torch.nn.Module):
    def __init__(self, rng, channels, size, classes):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, channels, 3, padding=1)
        blocks, c = [], channels
        for _ in range(rng.randint(2, 7)):
            b = Block(rng.choice(SPATIAL), c, rng)
            blocks.append(b)
            c = b.out_channels
        self.blocks = torch.nn.ModuleList(blocks)
        with torch.no_grad():
            y = torch.zeros(2, 3, size, size)
            y = self.stem(y)
            for b in self.blocks:
                y = b(y)
        self.head = Head(y[0].numel(), classes, rng)

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    # Shapes are constants of each trace (every model is traced for one input shape).
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    for i in range(count):
        rng = random.Random(seed * 100003 + i)
        torch.manual_seed(seed * 100003 + i)
        size = rng.choice([4, 6, 8])
        model = FuzzModel(rng, rng.choice([2, 4]), size, rng.choice([3, 5])).train()
        x = torch.randn(2, 3, size, size)
        with torch.no_grad():
            traced = torch.jit.trace(model, x, check_trace=False)
        traced.save(os.path.join(outdir, f"fuzz_{i}.pt"))
        with open(os.path.join(outdir, f"fuzz_{i}.json"), "w") as f:
            json.dump({"input_shape": list(x.shape),
                       "blocks": [b.kind for b in model.blocks],
                       "head": model.head.kinds}, f)
    print(f"{count} fuzz models in {outdir}")


if __name__ == "__main__":
    main()
