"""Training through monet.optimize gives PyTorch's parameters and losses: torchvision
models and a hand-written model with a loss of its own, 5 steps of SGD with momentum
and 5 of Adam, in float64, at a budget halfway between the leanest plan and store-all."""
import copy
import os
import sys

import pytest
import torch
import torchvision

import monet
from conftest import halfway_budget, relative_error

sys.path.insert(0, os.path.join(os.environ["MONET_SOURCE_DIR"], "tools"))
from make_import_fixtures import TinyGPT  # noqa: E402

STEPS = 5
TOLERANCE = 1e-10
# The trained models' logits: the GPT's states agree to 1e-10, and its two attention
# blocks amplify that to 1.1e-10 in the logits.
LOGITS_TOLERANCE = {"gpt": 1e-9, "gpt_tied_matmul": 1e-9}


class SmallNet(torch.nn.Module):
    """A conv net with GroupNorm, GELU, LayerNorm and a regression head."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.norm1 = torch.nn.GroupNorm(2, 8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.norm2 = torch.nn.LayerNorm([16, 8, 8])
        self.head = torch.nn.Linear(16 * 8 * 8, 4)

    def forward(self, x):
        x = torch.nn.functional.gelu(self.norm1(self.conv1(x)))
        x = torch.tanh(self.norm2(self.conv2(x)))
        return self.head(x.flatten(1))


def smooth_l1_plus_penalty(out, y):
    """A loss of the caller's own (monet never sees it)."""
    return torch.nn.functional.smooth_l1_loss(out, y) + 1e-3 * out.pow(2).sum()


CASES = {
    "resnet18": (lambda: torchvision.models.resnet18(num_classes=10), (4, 3, 64, 64)),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(num_classes=10, dropout=0.0),
                     (4, 3, 96, 96)),
    "densenet121": (lambda: torchvision.models.densenet121(num_classes=10), (4, 3, 64, 64)),
    "small_net": (SmallNet, (2, 3, 16, 16)),
    # A GPT-2-style decoder: token ids in, logits [N, T, V] out, head tied to the token
    # embedding, attention dropout off (its noise is not PyTorch's).
    "gpt": (lambda: without_dropout(TinyGPT()), (4, 16)),
    # The same with its logits computed as `h @ wte.weight.t()` (the tied parameter read
    # through a view of it).
    "gpt_tied_matmul": (lambda: without_dropout(TinyGPT(head="matmul")), (4, 16)),
}


def without_dropout(model):
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    return model


def sequence_cross_entropy(logits, tokens):
    return torch.nn.functional.cross_entropy(logits.transpose(1, 2), tokens)


def make_optimizer(name, params):
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=0.01, momentum=0.9)
    return torch.optim.Adam(params, lr=1e-3)


def batches(case, shape):
    g = torch.Generator().manual_seed(1)
    if case.startswith("gpt"):
        xs = [torch.randint(0, 64, shape, generator=g) for _ in range(STEPS)]
        ys = [torch.randint(0, 64, shape, generator=g) for _ in range(STEPS)]
        return xs, ys, sequence_cross_entropy
    xs = [torch.randn(shape, generator=g, dtype=torch.float64) for _ in range(STEPS)]
    if case == "small_net":
        ys = [torch.randn(shape[0], 4, generator=g, dtype=torch.float64) for _ in range(STEPS)]
        return xs, ys, smooth_l1_plus_penalty
    ys = [torch.randint(0, 10, (shape[0],), generator=g) for _ in range(STEPS)]
    return xs, ys, torch.nn.functional.cross_entropy


def train(model, module, optimizer, xs, ys, loss_fn):
    """Losses of the steps, and the names of the parameters whose first gradient is 0 in
    exact arithmetic (at rounding level: 1e-12 of the largest)."""
    opt = make_optimizer(optimizer, module.parameters())
    losses, rounding_level = [], set()
    for x, y in zip(xs, ys):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(*x) if isinstance(x, tuple) else model(x), y)
        loss.backward()
        if not losses:
            grads = {n: p.grad.abs().max().item() for n, p in module.named_parameters()
                     if p.grad is not None}  # None: a head the loss does not read
            rounding_level = {n for n, g in grads.items() if g <= 1e-12 * max(grads.values())}
        opt.step()
        losses.append(loss.item())
    return losses, rounding_level


def worst_state_error(model, reference, skipped=()):
    """The largest difference of a parameter or buffer entry, relative to the largest
    magnitude of its kind (parameters, buffers) in the reference: a batch-norm bias whose
    gradient is 0 in exact arithmetic stays at 0 give or take rounding and has no scale of
    its own. `skipped`: parameters not compared."""
    mine, theirs = model.state_dict(), reference.state_dict()
    assert mine.keys() == theirs.keys()
    params = {name for name, _ in reference.named_parameters()}
    scale = {True: 0.0, False: 0.0}
    for name, want in theirs.items():
        if want.is_floating_point():
            scale[name in params] = max(scale[name in params], want.abs().max().item())
    worst = 0.0
    for name, want in theirs.items():
        got = mine[name]
        if name in skipped:
            continue
        if not want.is_floating_point():
            assert torch.equal(got, want), name  # num_batches_tracked
            continue
        worst = max(worst, (got - want).abs().max().item() / scale[name in params])
    return worst


@pytest.mark.parametrize("optimizer", ["sgd-momentum", "adam"])
@pytest.mark.parametrize("case", list(CASES))
def test_training_matches_pytorch(case, optimizer, cache_dir):
    make, shape = CASES[case]
    torch.manual_seed(0)
    model = make().double().train()
    reference = copy.deepcopy(model)
    xs, ys, loss_fn = batches(case, shape)
    budget = halfway_budget(model, xs[0], cache_dir, optimizer)
    fast = monet.optimize(model, xs[0], budget=budget, optimizer=optimizer,
                          cache_dir=cache_dir, time_limit=20, search_limit="work")
    assert fast.plan.budget == budget
    assert fast.plan.predicted_peak < fast.plan.store_all_peak

    losses, _ = train(fast, model, optimizer, xs, ys, loss_fn)
    want, rounding_level = train(reference, reference, optimizer, xs, ys, loss_fn)
    for got, expected in zip(losses, want):
        assert abs(got - expected) <= TOLERANCE * abs(expected)
    # Adam divides each gradient by its own magnitude (plus eps = 1e-8): a gradient that is
    # 0 in exact arithmetic, 1e-16 to 1e-15 of rounding in either run, moves its parameter
    # by lr * rounding / eps, 1e-10 after 5 steps, differently in each run. Those
    # parameters are held to that bound; SGD moves them by lr * rounding.
    assert len(rounding_level) < len(list(model.parameters())) // 4
    assert worst_state_error(model, reference, rounding_level) <= TOLERANCE
    params = dict(model.named_parameters())
    for name, p in reference.named_parameters():
        if name in rounding_level:
            assert (params[name] - p).abs().max().item() <= 10 * STEPS * 1e-3 * 1e-15 / 1e-8

    # What was trained through monet loads into a fresh model: the same logits as the
    # model PyTorch trained.
    fresh = make().double()
    fresh.load_state_dict(model.state_dict())
    fresh.eval()
    reference.eval()
    with torch.no_grad():
        assert relative_error(fresh(xs[0]), reference(xs[0])) <= LOGITS_TOLERANCE.get(case, TOLERANCE)


def test_eval_and_no_grad_run_the_plain_forward(cache_dir):
    torch.manual_seed(0)
    model = SmallNet().double()
    x = torch.randn(2, 3, 16, 16, dtype=torch.float64)
    fast = monet.optimize(model, x, planner="storeall", cache_dir=cache_dir)
    with torch.no_grad():
        assert torch.equal(fast(x), model(x))
    fast.eval()
    assert not model.training
    out = fast(torch.randn(5, 3, 16, 16, dtype=torch.float64))  # any batch size
    assert out.shape == (5, 4)
