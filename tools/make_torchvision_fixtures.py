#!/usr/bin/python3
"""Writes the torchvision reference fixtures the C++ tests compare against.

For each model: <name>.pt, the torchvision model as TorchScript (its parameters and
buffers are the weights the C++ zoo graph loads by name), and <name>_io.pt, a
TorchScript container of tensors: the input, the eval-mode logits, and the train-mode
features before the classifier (dropout makes train-mode logits random).

Uses Debian's python3-torch and python3-torchvision; downloads nothing.
Usage: make_torchvision_fixtures.py OUTDIR
"""
import copy
import os
import sys

import torch
import torch.nn.functional as F
import torchvision

from fixture_tensors import Tensors, randomize_batch_norm


GRADIENTS_CHECKED = ["conv1.weight", "bn1.weight", "layer1.0.conv2.weight",
                     "layer3.2.bn2.bias", "layer4.2.conv3.weight", "fc.weight", "fc.bias"]


def features(name, model, x):
    if name.startswith("resnet"):
        m = model
        y = m.maxpool(m.relu(m.bn1(m.conv1(x))))
        y = m.layer4(m.layer3(m.layer2(m.layer1(y))))
        return torch.flatten(m.avgpool(y), 1)
    if name == "mobilenet_v2":
        return torch.flatten(F.adaptive_avg_pool2d(model.features(x), (1, 1)), 1)
    raise ValueError(name)


def write(outdir, name, batch, image):
    gen = torch.Generator().manual_seed(1234)
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)()
    randomize_batch_norm(model, gen)
    x = torch.randn(batch, 3, image, image, generator=gen)
    model.eval()
    with torch.no_grad():
        traced = torch.jit.trace(model, x)
        traced.save(os.path.join(outdir, name + ".pt"))
        logits_eval = model(x)
        # Train-mode features in float64: in float32 the batch statistics' rounding moves
        # them by ~1e-4 relative, differently on different CPUs.
        feats_train64 = features(name, copy.deepcopy(model).double().train(), x.double())
        model.train()
    tensors = {"input": x, "logits_eval": logits_eval, "features_train64": feats_train64}
    if name.startswith("resnet"):
        # A training iteration's loss and gradients, in float64: ResNet-50's float32
        # gradients at this size differ from float64 ones by ~1e-2 (relative), so only a
        # double-precision comparison can tell an error from rounding. No dropout in
        # ResNets, so this is deterministic. Keys use "__" for "." (buffer names cannot
        # contain dots).
        model64 = model.double()
        target = torch.randint(0, 1000, (batch,), generator=gen)
        loss = F.cross_entropy(model64(x.double()), target)
        loss.backward()
        tensors["target"] = target
        tensors["loss64"] = loss.detach()
        for pname in GRADIENTS_CHECKED:
            grad = model64.get_parameter(pname).grad
            tensors["grad64__" + pname.replace(".", "__")] = grad
    io = torch.jit.script(Tensors(tensors))
    io.save(os.path.join(outdir, name + "_io.pt"))
    print(f"{name}: {sum(p.numel() for p in model.parameters())} parameters, "
          f"input {tuple(x.shape)}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(2)
    write(outdir, "resnet50", 2, 64)
    write(outdir, "mobilenet_v2", 2, 64)


if __name__ == "__main__":
    main()
