"""Models in forms a trace handles specially train like PyTorch: TorchScript code inside a
traced model (a scripted function with a branch and a loop on shapes: the branch taken,
the loop unrolled), parameters laid out channels_last (made contiguous at planning), and
what is refused in one line (a branch on a computed value)."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import monet
from test_model_corpus import batches, check_trains_like_pytorch


@torch.jit.script
def _mixed(x: torch.Tensor, steps: int) -> torch.Tensor:
    h = x
    for i in range(steps):
        if h.size(1) > 4:
            h = h + torch.tanh(h) * (i + 1)
        else:
            h = h * 0.5
    return h


@torch.jit.script
def _quick_gelu(x: torch.Tensor) -> torch.Tensor:
    if x.dim() > 2:
        return x * torch.sigmoid(1.702 * x)
    return x


class ScriptedCode(nn.Module):
    """A scripted function with a loop and a branch, and a scripted module."""

    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv2d(3, 8, 3), nn.Linear(8, 10)
        self.act = torch.jit.script(nn.SiLU())

    def forward(self, x):
        return self.fc(self.act(_mixed(_quick_gelu(self.conv(x)), 3)).mean((2, 3)))


class ChannelsLast(nn.Module):
    """Parameters and the input laid out channels_last, as for ATen's faster CPU kernels."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(),
                                 nn.Conv2d(8, 8, 3, groups=2), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
        self.to(memory_format=torch.channels_last)

    def forward(self, x):
        return self.net(x.contiguous(memory_format=torch.channels_last))


@pytest.mark.parametrize("make", [ScriptedCode, ChannelsLast])
def test_trains_like_pytorch(make, cache_dir):
    torch.manual_seed(0)
    model = make().double().train()
    xs, ys, loss_fn = batches("features", (2, 3, 8, 8))
    check_trains_like_pytorch(model, xs, ys, loss_fn, None, cache_dir)
    assert all(p.is_contiguous() for p in model.parameters())


@torch.jit.script
def _positive_doubled(x: torch.Tensor) -> torch.Tensor:
    for _ in range(int(x.sum() > 0)):
        x = x * 2
    return x


def test_control_flow_on_computed_values_is_refused_in_one_line(cache_dir):
    model = nn.Sequential(nn.Linear(4, 4))
    model.forward = lambda x: _positive_doubled(F.relu(model[0](x)))
    with pytest.raises(monet.UnsupportedOperator) as e:
        monet.plan(model, torch.randn(2, 4), planner="storeall", cache_dir=cache_dir)
    assert "makes a Python number of a tensor the model computes" in str(e.value)
    assert "\n" not in str(e.value).split("\n  at ")[0]
