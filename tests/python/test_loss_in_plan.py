"""The loss inside the plan from Python: monet.optimize(..., loss=..., target=y) traces the
module and the loss together; fast(x, y) returns the loss, whose backward is the planned
backward. Training equals plain PyTorch's in float64 (with fused updates too), and the
plan frees the logits where it is done with them instead of keeping room for copies of
them beside the step."""
import copy
import os
import sys

import pytest
import torch

import monet
from test_model_corpus import check_trains_like_pytorch
from test_training import CASES, STEPS, TOLERANCE, batches, sequence_cross_entropy, \
    worst_state_error

sys.path.insert(0, os.path.join(os.environ["MONET_SOURCE_DIR"], "tools"))
from make_import_fixtures import TinyGPT  # noqa: E402

LOSSES = {"resnet18": torch.nn.CrossEntropyLoss(), "gpt": sequence_cross_entropy}


def run(fast, opt, xs, ys, loss_inside, loss_fn):
    losses = []
    for x, y in zip(xs, ys):
        opt.zero_grad(set_to_none=True)
        loss = fast(x, y) if loss_inside else loss_fn(fast(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("fused", [False, True], ids=["after-backward", "fused"])
@pytest.mark.parametrize("case", ["resnet18", "gpt"])
def test_loss_inside_the_plan_trains_as_pytorch(case, fused, cache_dir):
    make, shape = CASES[case]
    torch.manual_seed(0)
    model = make().double().train()
    reference = copy.deepcopy(model)
    xs, ys, loss_fn = batches(case, shape)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    optimizer = opt if fused else "sgd-momentum"
    r = monet.budget_range(model, xs[0], optimizer=optimizer, loss=LOSSES[case], target=ys[0],
                           cache_dir=cache_dir, time_limit=20, search_limit="work")
    fast = monet.optimize(model, xs[0], budget=(r.smallest + r.store_all) // 2,
                          optimizer=optimizer, loss=LOSSES[case], target=ys[0],
                          cache_dir=cache_dir, time_limit=20, search_limit="work")
    assert fast.plan.loss_inside
    losses = run(fast, opt, xs, ys, True, None)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.01, momentum=0.9)
    want = run(reference, ref_opt, xs, ys, False, loss_fn)
    for got, expected in zip(losses, want):
        assert abs(got - expected) <= TOLERANCE * abs(expected)
    assert worst_state_error(model, reference) <= TOLERANCE
    with torch.no_grad():  # the plain forward: the loss again
        assert torch.is_tensor(fast(xs[0], ys[0])) and fast(xs[0], ys[0]).dim() == 0


def test_the_plan_frees_the_logits_instead_of_keeping_room_for_copies(cache_dir):
    torch.manual_seed(0)
    model = TinyGPT(vocab=4096, dim=32, heads=4, layers=2, length=32).train()
    x = torch.randint(0, 4096, (8, 32))
    outside = monet.budget_range(model, x, cache_dir=cache_dir, time_limit=20, search_limit="work")
    inside = monet.budget_range(model, x, loss=sequence_cross_entropy, target=x,
                                cache_dir=cache_dir, time_limit=20, search_limit="work")
    # Outside, the default loss_copies=3 (log-probabilities, their gradient, one more);
    # inside, the specialised backward makes the logits' gradient from their softmax alone.
    logits = 8 * 32 * 4096 * 4
    assert outside.smallest - inside.smallest >= 0.9 * logits, (inside, outside)


def test_loss_arguments_are_checked(cache_dir):
    model = torch.nn.Linear(4, 3)
    x, y = torch.randn(2, 4), torch.tensor([0, 2])
    with pytest.raises(TypeError, match="needs target="):
        monet.optimize(model, x, loss=torch.nn.CrossEntropyLoss(), cache_dir=cache_dir,
                       planner="storeall")
    with pytest.raises(ValueError, match="give the loss too"):
        monet.optimize(model, x, target=y, cache_dir=cache_dir, planner="storeall")
    with pytest.raises(TypeError, match="callable"):
        monet.optimize(model, x, loss="cross_entropy", target=y, cache_dir=cache_dir,
                       planner="storeall")
    fast = monet.optimize(model, x, loss=torch.nn.CrossEntropyLoss(), target=y,
                          cache_dir=cache_dir, planner="storeall")
    with pytest.raises(TypeError, match="1 input\\(s\\) and the target, 1 given"):
        fast(x)


class TokenHead(torch.nn.Module):
    """Token ids [N, T] to logits [N, T, V] (an embedding and a Linear head)."""

    def __init__(self, vocab=32, width=16):
        super().__init__()
        self.embedding = torch.nn.Embedding(vocab, width)
        self.head = torch.nn.Linear(width, vocab)

    def forward(self, idx):
        return self.head(torch.tanh(self.embedding(idx)))


# Losses that compute on the target inside the plan (the target is then an activation of
# the traced step, not only an input): nanoGPT's flattened cross-entropy, a cloned target,
# and mean squared error against a scaled target (F.mse_loss broadcasts the prediction and
# the target: the target's half has no gradient).
TARGET_LOSSES = {
    "flattened_cross_entropy": (
        lambda out, y: torch.nn.functional.cross_entropy(out.view(-1, out.shape[-1]),
                                                         y.view(-1)), "tokens"),
    "cloned_target": (
        lambda out, y: torch.nn.functional.cross_entropy(out.transpose(1, 2), y.clone()),
        "tokens"),
    "mse_of_a_scaled_target": (
        lambda out, y: torch.nn.functional.mse_loss(out, 2 * y), "values"),
    # probabilities in [0, 1] (BCELoss after a sigmoid; probed on values in [0, 1))
    "binary_cross_entropy_of_probabilities": (
        lambda out, y: torch.nn.BCELoss()(torch.sigmoid(out), y.sigmoid()), "values"),
    # the target's classes and a constant padding concatenated (a list of tensors with a
    # constant of the trace among them), and a computed zero column beside the output
    "multilabel_margin_with_padding": (
        lambda out, y: torch.nn.functional.multilabel_margin_loss(
            torch.cat([out[:, 0], out.new_zeros(4, 1)], 1),
            torch.cat([y[:, :2], torch.full((4, 31), -1)], 1)), "tokens"),
}


@pytest.mark.parametrize("case", list(TARGET_LOSSES))
def test_a_loss_computing_on_its_target_trains_as_pytorch(case, cache_dir):
    loss_fn, kind = TARGET_LOSSES[case]
    g = torch.Generator().manual_seed(1)
    xs = [torch.randint(0, 32, (4, 6), generator=g) for _ in range(STEPS)]
    ys = [torch.randint(0, 32, (4, 6), generator=g) if kind == "tokens" else
          torch.randn(4, 6, 32, generator=g, dtype=torch.float64) for _ in range(STEPS)]
    torch.manual_seed(0)
    check_trains_like_pytorch(TokenHead().double().train(), xs, ys, loss_fn, None, cache_dir)


class MarginLoss(torch.nn.Module):
    """A loss with parameters of its own: ArcFace-style class centres and a learned scale
    on the cosine similarity of normalised embeddings."""

    def __init__(self, width=8, classes=10):
        super().__init__()
        self.centres = torch.nn.Parameter(torch.randn(classes, width))
        self.scale = torch.nn.Parameter(torch.tensor(4.0))

    def forward(self, embeddings, y):
        cosine = torch.nn.functional.normalize(embeddings) @ \
            torch.nn.functional.normalize(self.centres).t()
        return torch.nn.functional.cross_entropy(self.scale * cosine, y)


class NamedLikeTheStep(torch.nn.Module):
    """Submodules named `loss` and `target`, the names of what monet appends."""

    def __init__(self):
        super().__init__()
        self.target, self.loss = torch.nn.Linear(12, 16), torch.nn.Linear(16, 8)

    def forward(self, x):
        return self.loss(torch.relu(self.target(x)))


@pytest.mark.parametrize("fused", [False, True], ids=["after-backward", "fused"])
def test_a_loss_module_with_parameters_trains_with_the_model(fused, cache_dir):
    torch.manual_seed(0)
    model, loss_fn = NamedLikeTheStep().double().train(), MarginLoss().double()
    reference, reference_loss = copy.deepcopy(model), copy.deepcopy(loss_fn)
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(4, 12, generator=g, dtype=torch.float64) for _ in range(STEPS)]
    ys = [torch.randint(0, 10, (4,), generator=g) for _ in range(STEPS)]
    both = list(model.parameters()) + list(loss_fn.parameters())
    opt = torch.optim.SGD(both, lr=0.05, momentum=0.9)
    kw = dict(loss=loss_fn, target=ys[0], optimizer=opt if fused else "sgd-momentum",
              cache_dir=cache_dir, search_limit="work")
    r = monet.budget_range(model, xs[0], **kw)
    fast = monet.optimize(model, xs[0], budget=(r.smallest + r.store_all) // 2, **kw)
    losses = run(fast, opt, xs, ys, True, None)
    ref_opt = torch.optim.SGD(list(reference.parameters()) + list(reference_loss.parameters()),
                              lr=0.05, momentum=0.9)
    want = run(reference, ref_opt, xs, ys, False, reference_loss)
    for got, expected in zip(losses, want):
        assert abs(got - expected) <= TOLERANCE * abs(expected)
    assert worst_state_error(model, reference) <= TOLERANCE
    assert worst_state_error(loss_fn, reference_loss) <= TOLERANCE
    assert loss_fn.scale.item() != 4.0  # trained
