#!/usr/bin/python3
"""Per-rank memory and time of a data-parallel training step with sharded state: PyTorch
DistributedDataParallel + ZeroRedundancyOptimizer + torch.utils.checkpoint on every block,
monet.data_parallel without sharding (the time reference) and monet.data_parallel with
sharded gradients (ZeRO stage 2) at several per-rank budgets, on a GPT-2-style decoder
(tools/make_import_fixtures.py, TinyGPT), Adam, 2 ranks on this machine.

Each rank runs every method in one process, interleaved (a warm-up round, then --iters
rounds); monet's methods plan the whole step (the loss inside, Adam's updates fused into
the backward). A method's step peak is what it holds between its steps (the parameters it
trains, its optimizer state, its buckets) plus its step's tracked rise, so methods
resident beside it do not count. PyTorch's method trains a copy of the model (DDP's
autograd hooks stay off the parameters monet trains). Prints a table per rank 0 and writes
the figures to --json.

Usage: PYTHONPATH=build/python bench/sharded_step.py [--layers 12] [--width 768]
           [--heads 12] [--seq 512] [--batch 4] [--vocab 8192] [--iters 2]
           [--reference-budget 1.0x] [--budgets 1200MiB,1500MiB,1800MiB]
           [--time-limit 60] [--json FILE]
"""
import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel

import monet

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from make_import_fixtures import TinyGPT  # noqa: E402
from gpt_memory_curve import checkpointed  # noqa: E402

MIB = 1 << 20
WORLD = 2
PORT = 29611  # PyTorch's group; monet's jobs take the ports after it


class CheckpointedGPT(torch.nn.Module):
    """TinyGPT with torch.utils.checkpoint around every block (gpt_memory_curve's
    forward), as a module DistributedDataParallel wraps."""

    def __init__(self, gpt):
        super().__init__()
        self.gpt = gpt
        self.run = checkpointed(gpt)

    def forward(self, idx):
        return self.run(idx)


def lm_loss(out, t):
    return F.cross_entropy(out.transpose(1, 2), t)


def adam(parameters):
    return torch.optim.Adam(parameters, lr=1e-4)


def created_bytes(make):
    """(what make() returns, the tracked bytes it left allocated)."""
    before = monet.current_memory()
    made = make()
    return made, monet.current_memory() - before


def make_methods(a, rank, model, x, y):
    """name -> (step function, what zero_grad clears its gradients, bytes it holds before
    its first step: the parameters it trains and what making it allocated)."""
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{PORT}", rank=rank,
                            world_size=WORLD)

    def make_ddp():
        ddp = DistributedDataParallel(CheckpointedGPT(copy.deepcopy(model)))
        return ddp, ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam,
                                            lr=1e-4)
    (ddp, zero), made = created_bytes(make_ddp)  # its own copy of the parameters among it

    def ddp_step():
        lm_loss(ddp(x), y).backward()
        zero.step()
    methods = {"DDP + ZeRO + checkpoint": (ddp_step, ddp, made)}  # ddp.zero_grad: every gradient
    budgets = [("none", a.reference_budget)] + [("gradients", b) for b in a.budgets.split(",")]
    for i, (shard, budget) in enumerate(budgets):
        opt = adam(model.parameters())
        try:
            fast, made = created_bytes(lambda: monet.data_parallel(
                model, x, budget=budget, shard=shard, rank=rank, world_size=WORLD,
                master_addr="127.0.0.1", master_port=PORT + 1 + i, timeout=600, optimizer=opt,
                loss=lm_loss, target=y, time_limit=a.time_limit))
        except monet.BudgetTooSmall as e:
            print(f"rank {rank}: shard={shard} at {budget}: no plan: {e}", flush=True)
            continue
        if rank == 0:
            print(f"shard={shard} at {budget}: {fast.plan}", flush=True)
        methods[f"monet shard={shard} {budget}"] = (
            lambda f=fast: f(x, y).backward(), opt, params + made)
    return methods, (ddp, zero)


def run_rank(a, rank):
    """Every method's step on this rank, interleaved: {name: peak, median s, held}."""
    torch.set_num_threads(1)
    monet.install_memory_tracker()
    gen = torch.Generator().manual_seed(1 + rank)
    x = torch.randint(0, a.vocab, (a.batch, a.seq), generator=gen)
    y = torch.randint(0, a.vocab, (a.batch, a.seq), generator=gen)
    torch.manual_seed(0)
    model = TinyGPT(a.vocab, a.width, a.heads, a.layers, a.seq).train()
    methods, keep = make_methods(a, rank, model, x, y)
    held = {name: made for name, (_, _, made) in methods.items()}
    peaks = {k: 0 for k in methods}
    seconds = {k: [] for k in methods}
    for r in range(1 + a.iters):
        for name, (step, zeroer, _) in methods.items():
            zeroer.zero_grad(set_to_none=True)
            start = monet.current_memory()
            with monet.track_memory() as m:
                t0 = time.perf_counter()
                step()
                elapsed = time.perf_counter() - t0
            if r == 0:  # the warm-up made the optimizer's state: the method holds it (not
                zeroer.zero_grad(set_to_none=True)  # the gradients: freed before each step)
                held[name] += monet.current_memory() - start
                continue
            peaks[name] = max(peaks[name], held[name] + m.peak_bytes - start)
            seconds[name].append(elapsed)
            if rank == 0:
                print(f"round {r} {name}: {elapsed:.2f} s, peak {peaks[name] / MIB:.1f} MiB",
                      flush=True)
    dist.barrier()
    del keep, methods
    dist.destroy_process_group()  # PyTorch 1.13's Gloo threads abort a finalizing interpreter
    return {n: {"peak_bytes": peaks[n], "median_seconds": statistics.median(seconds[n]),
                "held_bytes": held[n]} for n in peaks}


def table(result, reference):
    base = result["DDP + ZeRO + checkpoint"]["peak_bytes"]
    ref_s = result[reference]["median_seconds"] if reference in result else None
    print("| method | per-rank step peak (B) | against DDP + ZeRO + checkpoint | s/step | "
          "against monet unsharded |")
    print("| --- | --- | --- | --- | --- |")
    for name, r in result.items():
        over = f"{r['median_seconds'] / ref_s - 1:+.1%}" if ref_s else ""
        print(f"| {name} | {r['peak_bytes']:,} | {r['peak_bytes'] / base:.3f} | "
              f"{r['median_seconds']:.2f} | {over} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in (("layers", 12), ("width", 768), ("heads", 12), ("seq", 512),
                          ("batch", 4), ("vocab", 8192), ("iters", 2)):
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--reference-budget", default="1.0x",
                    help="monet without sharding: its budget (the time reference)")
    ap.add_argument("--budgets", default="1200MiB,1500MiB,1800MiB",
                    help="monet with sharded gradients: per-rank budgets")
    ap.add_argument("--time-limit", type=float, default=60)
    ap.add_argument("--json", default=None)
    ap.add_argument("--rank", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.rank is None:  # the launcher: both ranks, this script again
        ranks = [subprocess.Popen([sys.executable, __file__, *sys.argv[1:], "--rank", str(r)])
                 for r in range(WORLD)]
        sys.exit(max(p.wait() for p in ranks))
    import logging
    logging.basicConfig(level=logging.INFO if a.rank == 0 else logging.WARNING,
                        format="%(name)s: %(message)s")
    result = run_rank(a, a.rank)
    if a.rank != 0:
        return
    table(result, f"monet shard=none {a.reference_budget}")
    if a.json:
        config = {k: getattr(a, k) for k in ("layers", "width", "heads", "seq", "batch", "vocab",
                                             "iters", "reference_budget", "budgets")}
        with open(a.json, "w") as f:
            json.dump({"config": config, "ranks": WORLD, "methods": result}, f, indent=2)


if __name__ == "__main__":
    main()
