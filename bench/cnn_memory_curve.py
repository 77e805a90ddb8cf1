#!/usr/bin/python3
"""A CNN of the paper's experiments (the torchvision models resnet50, mobilenet_v2,
googlenet, vgg16, and unet, the zoo's UNet in bench/zoo_unet.py): monet's training-step
memory and time at several budgets against plain PyTorch and against
torch.utils.checkpoint applied per block and, on the chains, as checkpoint_sequential
with 2, 4 and 8 segments (those no more than the blocks), in one process with monet's
tracking allocator, interleaved (bench/interleaved_steps.py). A step is zero_grad,
forward, the loss (cross-entropy over 1000 classes; UNet: binary cross-entropy on logits
against a random 0-1 mask), backward and the optimizer's step (SGD with momentum, or
--optimizer adam; --whole-step: the loss and the updates inside monet's plans); its peak
is the tracked peak above what was alive before the model was built.

Usage: PYTHONPATH=build/python bench/cnn_memory_curve.py [--model resnet50] [--batch 32]
           [--image 224 | HxW] [--budgets 0.3,0.4,0.5,0.7] [--iters 2] [--time-limit 60]
           [--json FILE] [--optimizer sgd-momentum|adam] [--whole-step]
"""
import argparse

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
import torchvision

import monet
import zoo_unet
from interleaved_steps import budget_curve, parse_curve_arguments


def stages(model, name):
    """(stem, blocks, head): forward(x) = head(blocks[-1](...blocks[0](stem(x)))), where
    the blocks are what a user checkpoints one by one (bottlenecks, inverted residuals,
    inception modules, VGG's stages between poolings)."""
    if name.startswith("resnet"):
        stem = torch.nn.Sequential(model.conv1, model.bn1, model.relu, model.maxpool)
        blocks = [b for layer in (model.layer1, model.layer2, model.layer3, model.layer4)
                  for b in layer]
        return stem, blocks, lambda x: model.fc(torch.flatten(model.avgpool(x), 1))
    if name.startswith("mobilenet"):
        features = list(model.features)
        return (features[0], features[1:],
                lambda x: model.classifier(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)))
    if name == "googlenet":
        stem = torch.nn.Sequential(model.conv1, model.maxpool1, model.conv2, model.conv3,
                                   model.maxpool2)
        blocks = [model.inception3a, model.inception3b, model.maxpool3, model.inception4a,
                  model.inception4b, model.inception4c, model.inception4d, model.inception4e,
                  model.maxpool4, model.inception5a, model.inception5b]
        return (lambda x: stem(model._transform_input(x)), blocks,
                lambda x: model.fc(model.dropout(torch.flatten(model.avgpool(x), 1))))
    if name.startswith("vgg"):
        blocks, current = [], []
        for m in model.features:
            current.append(m)
            if isinstance(m, torch.nn.MaxPool2d):
                blocks.append(torch.nn.Sequential(*current))
                current = []
        return (lambda x: x), blocks, lambda x: model.classifier(
            torch.flatten(model.avgpool(x), 1))
    raise SystemExit(f"cnn_memory_curve.py: no block structure for '{name}'")


def per_block(stem, blocks, head):
    """forward with torch.utils.checkpoint around every block."""
    def forward(x):
        x = stem(x)
        for block in blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        return head(x)
    return forward


def sequential(stem, blocks, head, segments):
    """forward as checkpoint_sequential over the blocks in `segments` segments (each of
    len(blocks) // segments blocks, the last one taking the rest and run without a
    checkpoint), with the non-reentrant checkpoint. Debian's PyTorch 1.13 has only the
    reentrant checkpoint_sequential, under which a segment whose input needs no gradient
    (VGG's first: its stem is the identity) gives its parameters no gradient at all."""
    size = len(blocks) // segments
    groups = [torch.nn.Sequential(*blocks[i * size:(i + 1) * size]) for i in range(segments - 1)]
    last = torch.nn.Sequential(*blocks[(segments - 1) * size:])
    return per_block(stem, groups, lambda x: head(last(x)))


def image_size(text):
    """(height, width) from "224" or "416x608"."""
    try:
        sizes = [int(v) for v in text.lower().split("x")]
    except ValueError:
        sizes = []
    if len(sizes) not in (1, 2) or min(sizes) <= 0:
        raise argparse.ArgumentTypeError(f"expected N or HxW, got '{text}'")
    return (sizes[0], sizes[-1])


def model_and_peers(name):
    """The model in training mode and its torch.utils.checkpoint variants (name -> forward)."""
    if name == "unet":
        model = zoo_unet.UNet().train()
        return model, {"checkpoint per block": lambda x: model.run(x, checkpointed=True)}
    kwargs = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    model = getattr(torchvision.models, name)(**kwargs).train()
    stem, blocks, head = stages(model, name)
    peers = {"checkpoint per block": per_block(stem, blocks, head)}
    for segments in (2, 4, 8):
        if segments <= len(blocks):  # VGG has 5 stages
            peers[f"checkpoint_sequential({segments})"] = sequential(stem, blocks, head, segments)
    return model, peers


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--image", type=image_size, default=(224, 224))
    for name, default in (("batch", 32), ("iters", 2)):
        ap.add_argument("--" + name, type=int, default=default)
    a = parse_curve_arguments(ap, "0.3,0.4,0.5,0.7")
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(a.batch, 3, *a.image, generator=gen)
    if a.model == "unet":
        y = torch.randint(0, 2, (a.batch, 1, *a.image), generator=gen).float()
        criterion = F.binary_cross_entropy_with_logits
    else:
        y = torch.randint(0, 1000, (a.batch,), generator=gen)
        criterion = F.cross_entropy
    before = monet.current_memory()
    torch.manual_seed(0)
    model, peers = model_and_peers(a.model)
    image = a.image[0] if a.image[0] == a.image[1] else f"{a.image[0]}x{a.image[1]}"
    budget_curve(model, x, y, criterion, peers, a, before,
                 {"model": a.model, "batch": a.batch, "image": image})


if __name__ == "__main__":
    main()
