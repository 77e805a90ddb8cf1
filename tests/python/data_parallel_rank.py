"""One rank of a two-process comparison (test_data_parallel.py): trains a small CNN with
monet.data_parallel and, beside it in the same process, a copy with PyTorch's
DistributedDataParallel (with ZeroRedundancyOptimizer where monet shards), float64,
from different initial weights on every rank (both take rank 0's), each rank on its own
batches. Writes the worst relative parameter difference, the least change of a parameter
from this rank's initial weights and both runs' losses as JSON. Sharded, it then gathers
monet's optimizer state on rank 0 (consolidate_optimizer_state) beside
ZeroRedundancyOptimizer's (consolidate_state_dict), takes one more step, and on rank 0
resumes that checkpoint in plain PyTorch (one process, both ranks' batches) for the same
step: it writes the state's and the resumed weights' worst relative differences.

    data_parallel_rank.py OUT RANK WORLD MONET_PORT TORCH_PORT SHARD OPTIMIZER UPDATE CACHE

With RANK_1_EXITS_AT_STEP=S, rank 1 exits before step S and the other writes the error
its backward raised.
"""
import copy
import faulthandler
import gc
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel

import monet

faulthandler.enable()  # a rank that aborts prints where each thread was
STEPS = 5
out, rank, world, monet_port, torch_port, shard, optimizer, update, cache = sys.argv[1:]
rank, world = int(rank), int(world)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(4))
        self.head = torch.nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


OPTIMIZERS = {"sgd-momentum": (torch.optim.SGD, dict(lr=0.05, momentum=0.9)),
              "adam": (torch.optim.Adam, dict(lr=1e-3))}
kind, options = OPTIMIZERS[optimizer]


def thread_count():
    return len(os.listdir("/proc/self/task"))


torch.manual_seed(rank)  # different weights: both runs start from rank 0's
model = Net().double()
reference = copy.deepcopy(model)
g = torch.Generator().manual_seed(1)
batches = [[(torch.randn(8, 3, 32, 32, generator=g, dtype=torch.float64),
             torch.randint(0, 10, (8,), generator=g)) for _ in range(world)]
           for _ in range(STEPS + 1)]  # the last: the step after the checkpoint

start = [p.detach().clone() for p in reference.parameters()]
opt = kind(model.parameters(), **options)
fast = monet.data_parallel(model, batches[0][rank][0], budget="0.8x", shard=shard, rank=rank,
                           world_size=world, master_addr="127.0.0.1", master_port=int(monet_port),
                           timeout=60, optimizer=opt, optimizer_update=update, cache_dir=cache,
                           time_limit=10, search_limit="work")
assert (fast.rank, fast.world_size, fast.shard) == (rank, world, shard)
losses = []
for step in range(STEPS):
    if rank == 1 and step == int(os.environ.get("RANK_1_EXITS_AT_STEP", "-1")):
        os._exit(3)  # a rank that dies: the other's backward stops naming it
    x, y = batches[step][rank]
    loss = torch.nn.functional.cross_entropy(fast(x), y)
    try:
        loss.backward()
    except RuntimeError as e:
        with open(out, "w") as f:
            json.dump({"stopped": str(e)}, f)
        sys.exit(0)
    opt.step()  # sharded or fused: the backward made the updates, this finds no gradient
    opt.zero_grad(set_to_none=True)
    losses.append(loss.item())

threads_before = thread_count()
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{torch_port}", rank=rank,
                        world_size=world)
ddp = DistributedDataParallel(reference)
if shard == "none":
    ropt = kind(ddp.parameters(), **options)
else:
    ropt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=kind, **options)
want = []
for step in range(STEPS):
    x, y = batches[step][rank]
    loss = torch.nn.functional.cross_entropy(ddp(x), y)
    loss.backward()
    ropt.step()
    ropt.zero_grad(set_to_none=True)
    want.append(loss.item())
zero_state = None
if shard != "none":
    ropt.consolidate_state_dict(to=0)
    zero_state = ropt.state_dict() if rank == 0 else None
dist.barrier()
# PyTorch's group goes, its threads joined, before the interpreter does: a Gloo thread
# freeing a ZeroRedundancyOptimizer temporary at exit aborts the process (docs/PYTHON.md,
# "Data-parallel training").
del ropt, ddp
gc.collect()
dist.destroy_process_group()
threads_after = thread_count()
assert threads_after == threads_before, \
    f"PyTorch's process group left {threads_after - threads_before} threads running"


def worst_difference(got, want):
    """The largest entry difference over the largest magnitude of each tensor pair."""
    return max(((a - b).abs().max() / max(b.abs().max(), 1e-300)).item()
               for a, b in zip(got, want))


def resumed_in_plain_pytorch():
    """Rank 0 resumes monet's consolidated checkpoint without monet: the next step on both
    ranks' batches in one process (their mean loss: DDP's averaged gradient)."""
    fast.consolidate_optimizer_state(opt)
    result = {}
    if rank == 0:
        whole = copy.deepcopy(opt.state_dict())
        assert whole["state"].keys() == zero_state["state"].keys()
        result["state_error"] = worst_difference(
            [t for i in whole["state"] for t in whole["state"][i].values()],
            [t for i in whole["state"] for t in zero_state["state"][i].values()])
        checkpoint = copy.deepcopy(model.state_dict()), whole
    fast.shard_optimizer_state(opt)
    result["state_kept"] = [p in opt.state for p in model.parameters()]
    x, y = batches[STEPS][rank]  # the uninterrupted run's next step
    torch.nn.functional.cross_entropy(fast(x), y).backward()
    if rank == 0:
        plain = Net().double()
        plain.load_state_dict(checkpoint[0])
        plain_opt = kind(plain.parameters(), **options)
        plain_opt.load_state_dict(checkpoint[1])
        xs = torch.cat([b[0] for b in batches[STEPS]])
        ys = torch.cat([b[1] for b in batches[STEPS]])
        torch.nn.functional.cross_entropy(plain(xs), ys).backward()
        plain_opt.step()
        result["resume_error"] = worst_difference(list(model.parameters()),
                                                  list(plain.parameters()))
    return result


moved = min((a - b).abs().max().item() for a, b in zip(model.parameters(), start))
error = worst_difference(list(model.parameters()), list(reference.parameters()))
checkpoint = resumed_in_plain_pytorch() if shard != "none" else {}
with open(out, "w") as f:
    json.dump({"error": error, "moved": moved, "losses": losses, "reference_losses": want,
               "owned": [fast.owns(p) for p in model.parameters()], **checkpoint}, f)
