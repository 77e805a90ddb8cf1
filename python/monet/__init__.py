"""monet: train PyTorch models in a fraction of the memory.

    import monet
    fast = monet.optimize(model, example_input, budget="0.4x")
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for x, y in loader:
        loss = criterion(fast(x), y)
        loss.backward()          # the planned backward; gradients land in model's .grad
        opt.step(); opt.zero_grad(set_to_none=True)

monet traces the module, and MONeT's 0-1 integer program chooses which activations to
keep or recompute and which implementation each operator uses so that a training step
fits the budget at the least compute. monet.data_parallel runs one rank of a
data-parallel job (torchrun) under rank 0's plan. Profiles and plans are cached on disk
($MONET_CACHE_DIR, default ~/.cache/monet). Progress goes to the logger "monet".
"""
import torch  # first: the extension uses the torch it has loaded

from . import _C, _progress
from ._planning import (OPTIMIZERS, BudgetRange, OptimizedModule, Plan, PlanFile,
                        budget_range, load_plan, optimize, plan)
from ._distributed import DataParallelModule, data_parallel
from .errors import (BudgetTooSmall, DistributedError, MonetError, PlanMismatch,
                     UnsupportedOperator)
from .memory import (MemoryMeasurement, current_memory, install_memory_tracker, peak_memory,
                     reset_peak_memory, track_memory)


def planner_names():
    """Every planner `planner=` takes."""
    return list(_C.planner_names())


def default_cache_dir():
    """Where profiles and plans are cached: $MONET_CACHE_DIR, else ~/.cache/monet."""
    return _C.default_cache_dir()


_progress.install()

__all__ = ["optimize", "plan", "load_plan", "budget_range", "Plan", "PlanFile",
           "OptimizedModule", "BudgetRange", "OPTIMIZERS", "data_parallel",
           "DataParallelModule", "BudgetTooSmall", "UnsupportedOperator", "PlanMismatch",
           "DistributedError", "MonetError", "track_memory",
           "MemoryMeasurement", "install_memory_tracker", "current_memory", "peak_memory",
           "reset_peak_memory", "planner_names", "default_cache_dir"]
