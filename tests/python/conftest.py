"""The Python package's tests: Debian's python3-torch, the package from the build tree
(PYTHONPATH=build/python, set by CTest), and a cache directory of their own."""
import pytest
import torch

import monet

# Before any test builds a tensor, so that the tracker counts every model and batch.
monet.install_memory_tracker()
torch.set_num_threads(max(1, min(2, torch.get_num_threads())))


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("monet-cache"))


def relative_error(got, want):
    """The largest absolute difference over the largest magnitude of `want`."""
    scale = want.abs().max().item()
    return (got - want).abs().max().item() / (scale if scale > 0 else 1.0)


def halfway_budget(module, x, cache_dir, optimizer):
    """A whole-step budget halfway between the leanest plan's and store-all's (bytes)."""
    r = monet.budget_range(module, x, optimizer=optimizer, cache_dir=cache_dir, time_limit=20,
                           search_limit="work")
    assert r.floor <= r.smallest < r.store_all
    return (r.smallest + r.store_all) // 2
