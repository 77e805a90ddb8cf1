"""Profiling and planning report on the logger "monet"; a TorchScript module is taken as
it is."""
import logging

import torch

import monet
from test_training import SmallNet


def test_progress_goes_to_the_monet_logger(caplog, tmp_path):
    torch.manual_seed(0)
    model = SmallNet()
    x = torch.randn(2, 3, 16, 16)
    with caplog.at_level(logging.INFO, logger="monet"):
        monet.optimize(model, x, budget="0.9x", cache_dir=str(tmp_path), time_limit=10,
                       search_limit="work")
    messages = [r.getMessage() for r in caplog.records if r.name == "monet"]
    assert any(m.startswith("profiling:") for m in messages), messages
    assert any(m.startswith("planner:") for m in messages), messages
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="monet"):  # the second time: from the cache
        monet.optimize(model, x, budget="0.9x", cache_dir=str(tmp_path), time_limit=10,
                       search_limit="work")
    assert any(r.getMessage().startswith("plan: from the cache") for r in caplog.records)


def test_a_script_module_trains_its_own_parameters(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 16, 16)
    scripted = torch.jit.trace(SmallNet(), x)
    fast = monet.optimize(scripted, x, planner="storeall", cache_dir=str(tmp_path))
    fast(x).sum().backward()
    assert all(p.grad is not None for p in scripted.parameters())
    with torch.no_grad():
        assert torch.allclose(fast.eval()(x), scripted(x))
