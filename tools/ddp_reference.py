#!/usr/bin/env python3
"""The peer for monet's data-parallel training: PyTorch's DistributedDataParallel over
Gloo, one rank of it, on the shard monet's loader gives that rank.

Usage: ddp_reference.py DIR RANK WORLD PORT STEPS BATCH SEED LR MOMENTUM
                        [CLIP ACCUMULATE OUT [OPTIMIZER ZERO]]
DIR holds init.pt (TinyResNet's initial state_dict; trained in float64) and
data/data_batch_1.bin (CIFAR-10 binary records). Writes OUT (default DIR) /ddp_rank{RANK}.pt:
the state_dict after STEPS steps of SGD with momentum, with this rank's batch-norm
statistics (broadcast_buffers=False), as a TorchScript module of buffers ('.' in names
as '__') that C++ reads with torch::jit::load. Each step averages the gradients of
ACCUMULATE micro-batches (default 1) and clips them to the global norm CLIP (default 0:
no clipping) with torch.nn.utils.clip_grad_norm_, as `monet train --accumulate
--clip-grad-norm` does. OPTIMIZER is sgd (default; MOMENTUM its momentum) or adam (LR
its learning rate, PyTorch's other defaults); ZERO 1 wraps it in
torch.distributed.optim.ZeroRedundancyOptimizer (each rank keeps its shard's state).
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from distributed_models import TinyResNet  # noqa: E402
from fixture_tensors import Tensors  # noqa: E402

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def load_cifar(path):
    raw = torch.frombuffer(bytearray(open(path, "rb").read()), dtype=torch.uint8)
    records = raw.view(-1, 1 + 3 * 32 * 32)
    images = records[:, 1:].reshape(-1, 3, 32, 32).float().div_(255.0).sub_(MEAN).div_(STD)
    return images.double(), records[:, 0].long()


def shard_batch(n, rank, world, step, batch, seed):
    """monet's loader: each epoch's permutation of the data, this rank's every world-th
    sample (DistributedSampler(shuffle=True, drop_last=True) with that permutation)."""
    shard = n // world
    per_epoch = shard // batch
    epoch, first = step // per_epoch, (step % per_epoch) * batch
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 1000003 + epoch))
    return perm[: shard * world][rank::world][first: first + batch]


def main():
    d, rank, world, port, steps, batch, seed = sys.argv[1], *map(int, sys.argv[2:8])
    lr, momentum = float(sys.argv[8]), float(sys.argv[9])
    clip = float(sys.argv[10]) if len(sys.argv) > 10 else 0.0
    accumulate = int(sys.argv[11]) if len(sys.argv) > 11 else 1
    out = sys.argv[12] if len(sys.argv) > 12 else d
    optimizer = sys.argv[13] if len(sys.argv) > 13 else "sgd"
    zero = len(sys.argv) > 14 and sys.argv[14] == "1"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    model = TinyResNet().double()
    model.load_state_dict(torch.load(os.path.join(d, "init.pt")))
    model.train()
    ddp = torch.nn.parallel.DistributedDataParallel(model, broadcast_buffers=False)
    kind, options = ((torch.optim.Adam, {"lr": lr}) if optimizer == "adam"
                     else (torch.optim.SGD, {"lr": lr, "momentum": momentum}))
    if zero:
        from torch.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=kind, **options)
    else:
        opt = kind(ddp.parameters(), **options)
    images, labels = load_cifar(os.path.join(d, "data", "data_batch_1.bin"))
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        for micro in range(step * accumulate, (step + 1) * accumulate):
            idx = shard_batch(images.size(0), rank, world, micro, batch, seed)
            (F.cross_entropy(ddp(images[idx]), labels[idx]) / accumulate).backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(ddp.parameters(), clip)
        opt.step()
    state = {k.replace(".", "__"): v for k, v in model.state_dict().items()}
    torch.jit.script(Tensors(state)).save(os.path.join(out, f"ddp_rank{rank}.pt"))
    # Both ranks done before the group goes: a rank that tears it down while the other's
    # ZeroRedundancyOptimizer broadcast is still being answered aborts in Gloo.
    dist.barrier()
    del opt, ddp
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
