"""Lossy implementations are offered only with lossy=True, and a plan says how many it
uses."""
import torch
import torch.nn.functional as F

import monet


class GeluNet(torch.nn.Module):
    """conv, GELU, pooling, linear: the GELU's backward has a lossy 4-bit alternative."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(F.gelu(self.conv(x)), 1).flatten(1))


def test_lossy_implementations_only_when_asked(cache_dir):
    torch.manual_seed(0)
    model = GeluNet()
    x = torch.randn(2, 3, 16, 16)
    exact = monet.plan(model, x, planner="lean", cache_dir=cache_dir, time_limit=10,
                       search_limit="work")
    assert exact.lossy_forwards == 0 and "LOSSY" not in repr(exact)
    lossy = monet.plan(model, x, planner="lean", cache_dir=cache_dir, time_limit=10, lossy=True,
                       search_limit="work")
    assert lossy.fingerprint != exact.fingerprint  # the graph offers the lossy backward
    assert lossy.lossy_forwards >= 0
    assert ("LOSSY" in repr(lossy)) == (lossy.lossy_forwards > 0)
    fast = monet.optimize(model, x, planner="lean", cache_dir=cache_dir, lossy=True,
                          search_limit="work")
    fast(x).sum().backward()
    assert model.conv.weight.grad is not None
