"""Data-parallel training from Python (monet.data_parallel): one process per rank, started
by torchrun or any launcher that sets MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE.

Rank 0 plans; every rank runs rank 0's plan on its own batches, starting from rank 0's
parameters and buffers; the planned backward averages the gradients over the ranks on
c10d Gloo, a bucket at a time as the plan completes them (as DistributedDataParallel
does), optionally with the optimizer state or the gradients sharded (ZeRO's stages 1 and
2)."""
import inspect
import io
import os

import torch

from . import _C
from ._planning import OptimizedModule, _planned_with, plan
from ._step import check_optimizer_holds, one_parameter_step

SHARD_MODES = ("none", "optimizer", "gradients")


def _environment_number(name, given, default):
    if given is not None:
        return given
    text = os.environ.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"environment variable {name}={text!r} is not a whole number") from None


def _job(shard, rank, world_size, master_addr, master_port, timeout):
    """Where this rank is and how the job runs (_C.DataParallel's `job`)."""
    job = dict(shard=shard,
               rank=_environment_number("RANK", rank, 0),
               world_size=_environment_number("WORLD_SIZE", world_size, 1),
               master_addr=master_addr or os.environ.get("MASTER_ADDR") or "127.0.0.1",
               master_port=_environment_number("MASTER_PORT", master_port, 29500),
               timeout=float(timeout))
    if job["world_size"] < 1 or not 0 <= job["rank"] < job["world_size"]:
        raise ValueError(f"rank {job['rank']} of world size {job['world_size']} is not a rank")
    if not 0 < job["master_port"] < 65536:
        raise ValueError(f"master_port {job['master_port']} is not a port number")
    if not job["timeout"] > 0:
        raise ValueError(f"timeout must be positive, not {timeout}")
    return job


def data_parallel(module, example_input, budget=None, *, shard="none", rank=None,
                  world_size=None, master_addr=None, master_port=None, timeout=300.0,
                  **kwargs):
    """`module` as one rank of a data-parallel job under a plan for `budget` (the
    per-rank step's peak, as monet.plan takes it; a ratio, "0.5x", is of PyTorch
    DistributedDataParallel's per-rank step, which holds DDP's gradient buckets): a drop-in nn.Module whose backward
    averages the parameters' gradients over the ranks, as DistributedDataParallel's does.
    Every rank calls it with the same module, example input and keywords; rank 0 plans.

        fast = monet.data_parallel(model, x, budget="0.5x")   # under torchrun
        loss = criterion(fast(x_of_this_rank), y_of_this_rank)
        loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)

    shard: "none" (every rank keeps and updates everything), "optimizer" (each rank keeps
        the optimizer state of its own contiguous run of the parameters, balanced by bytes,
        and updates those; the owners then broadcast them) or "gradients" (as "optimizer",
        and each bucket's gradients are summed onto their owner only). Sharded, pass the
        optimizer itself (optimizer=torch.optim.SGD(...), Adam or AdamW): the backward
        makes the updates, and opt.step() afterwards finds no gradient.
    rank, world_size, master_addr, master_port: where this rank is and where rank 0's
        rendezvous store listens; by default RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT
        from the environment (torchrun sets them).
    timeout: seconds every rank waits for the others to meet and for each collective; a
        rank that dies or hangs stops the others' backward with monet.DistributedError
        naming it.
    Any other keyword is monet.plan's (optimizer, optimizer_update, loss, target, planner,
    time_limit, cache_dir, ...).

    Raises what monet.plan raises (on every rank: the others get rank 0's planning error).
    """
    if shard not in SHARD_MODES:
        raise ValueError(f"unknown shard mode {shard!r} (none, optimizer or gradients)")
    parameters = inspect.signature(plan).parameters
    for name in kwargs:
        if name not in parameters or parameters[name].kind != inspect.Parameter.KEYWORD_ONLY:
            raise TypeError(f"data_parallel() got an unexpected keyword argument {name!r}")
    kw = {name: p.default for name, p in parameters.items()
          if p.kind == inspect.Parameter.KEYWORD_ONLY}
    kw.update(kwargs, budget=budget)
    optimizer = kw["optimizer"]
    if shard != "none" and not isinstance(optimizer, torch.optim.Optimizer):
        raise ValueError(f"shard={shard!r} updates each rank's own parameters inside the "
                         "step: pass the optimizer itself (optimizer=torch.optim.SGD(...), "
                         "Adam or AdamW)")
    job = _job(shard, rank, world_size, master_addr, master_port, timeout)
    result = _planned_with(lambda model, options: _C.DataParallel(model, options, job),
                           module, example_input, kw)
    if shard != "none" and result.optimizer_update != "fused":
        check_optimizer_holds(optimizer, module)
        result._planned.use_update(one_parameter_step(optimizer))
    return DataParallelModule(module, result)


class DataParallelModule(OptimizedModule):
    """An OptimizedModule that is one rank of a data-parallel job (monet.data_parallel):
    its backward leaves in every parameter's .grad the average over the ranks (unsharded,
    updates after the backward), or makes the updates itself (fused or sharded)."""

    @property
    def rank(self):
        return self.plan._planned.rank

    @property
    def world_size(self):
        return self.plan._planned.world_size

    @property
    def shard(self):
        return self.plan._planned.shard

    @property
    def bucket_buffer_bytes(self):
        """Bytes of the gradient buckets' buffers (inside the budget)."""
        return self.plan._planned.bucket_buffer_bytes

    def owns(self, parameter):
        """Sharded: whether this rank updates (and keeps the optimizer state of)
        `parameter`, a tensor of module.parameters()."""
        return self.plan._planned.owns(parameter)

    def consolidate_optimizer_state(self, optimizer):
        """Collective (every rank calls it, as ZeroRedundancyOptimizer's
        consolidate_state_dict): each rank sends the state of the parameters it owns to
        rank 0, whose `optimizer` then holds every parameter's state, so that its
        `state_dict()` is a plain PyTorch optimizer's (a checkpoint any number of ranks,
        or one process without monet, resumes). The other ranks' optimizers are unchanged.
        Unsharded it does nothing. Rank 0 then keeps the whole state until
        shard_optimizer_state(optimizer)."""
        if self.shard == "none":
            return
        params = _optimizer_parameters(optimizer)
        owned = {i: optimizer.state[p] for i, p in enumerate(params)
                 if self.owns(p) and p in optimizer.state}
        buffer = io.BytesIO()
        torch.save(owned if self.rank != 0 else {}, buffer)
        for gathered in self.plan._planned.gather_to_rank_zero(buffer.getvalue())[1:]:
            for i, state in torch.load(io.BytesIO(gathered)).items():
                optimizer.state[params[i]] = state

    def shard_optimizer_state(self, optimizer):
        """Drops from `optimizer` the state of the parameters this rank does not own: after
        consolidate_optimizer_state on rank 0, or after every rank loaded a whole
        checkpoint's `optimizer.load_state_dict(...)` to resume. Unsharded it does
        nothing."""
        if self.shard == "none":
            return
        for p in _optimizer_parameters(optimizer):
            if p in optimizer.state and not self.owns(p):
                del optimizer.state[p]


def _optimizer_parameters(optimizer):
    """The optimizer's parameters in its state_dict's order (the same on every rank)."""
    return [p for group in optimizer.param_groups for p in group["params"]]
