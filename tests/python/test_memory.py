"""A training step through monet.optimize peaks within its budget by monet's tracker;
plain PyTorch's peak for the same step is measured in the same process beside it."""
import pytest
import torch
import torchvision

import monet
from conftest import halfway_budget

MIB = 1 << 20


def tiny_gpt_and_tokens(vocab, **sizes):
    """A maker of tools/make_import_fixtures.py's TinyGPT (seeded; called where the step's
    memory is measured from), and a batch of tokens and targets (4 sequences of its
    length)."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.environ["MONET_SOURCE_DIR"], "tools"))
    from make_import_fixtures import TinyGPT

    def make():
        torch.manual_seed(0)
        return TinyGPT(vocab=vocab, **sizes)

    shape = (4, sizes["length"])
    return make, torch.randint(0, vocab, shape), torch.randint(0, vocab, shape)


def step_peak(model_fn, x, y):
    """The tracked peak (bytes) of the second training step (the optimizer's state then
    exists), above what was alive before the model was built."""
    before = monet.current_memory()
    model, module = model_fn()
    opt = torch.optim.SGD(module.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        opt.zero_grad(set_to_none=True)
        with monet.track_memory() as m:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            del loss
    return m.peak_bytes - before


def test_step_peak_within_budget_and_below_pytorch(cache_dir):
    shape = (8, 3, 128, 128)
    x = torch.randn(shape)
    y = torch.randint(0, 10, (shape[0],))
    budget = {}

    def planned():
        torch.manual_seed(0)
        module = torchvision.models.mobilenet_v2(num_classes=10)
        budget["bytes"] = halfway_budget(module, x, cache_dir, "sgd-momentum")
        return monet.optimize(module, x, budget=budget["bytes"], cache_dir=cache_dir,
                              time_limit=20, search_limit="work"), module

    def plain():
        torch.manual_seed(0)
        module = torchvision.models.mobilenet_v2(num_classes=10)
        return module, module

    monet_peak = step_peak(planned, x, y)
    pytorch_peak = step_peak(plain, x, y)
    print(f"mobilenet_v2 {list(shape)}: monet {monet_peak / MIB:.1f} MiB (budget "
          f"{budget['bytes'] / MIB:.1f} MiB), PyTorch {pytorch_peak / MIB:.1f} MiB")
    assert monet_peak <= budget["bytes"]
    assert monet_peak < pytorch_peak


@pytest.mark.parametrize("where", ["halfway", "near the smallest"])
def test_a_language_models_loss_over_large_logits_stays_within_the_budget(where, cache_dir):
    """The caller's cross-entropy over [N, T, V] logits holds tensors of the logits' size
    outside the plan; the planner leaves room for them where the loss runs (loss_copies),
    also at a budget near the smallest, where the plan recomputes most of the model."""
    make, x, y = tiny_gpt_and_tokens(2048, dim=32, heads=4, layers=2, length=64)
    budget = {}

    def planned():
        module = make()
        if where == "halfway":
            budget["bytes"] = halfway_budget(module, x, cache_dir, "sgd-momentum")
        else:
            r = monet.budget_range(module, x, cache_dir=cache_dir, time_limit=20,
                                   search_limit="work")
            budget["bytes"] = r.smallest + (r.store_all - r.smallest) // 10
        return monet.optimize(module, x, budget=budget["bytes"], cache_dir=cache_dir,
                              time_limit=20, search_limit="work"), module

    def sequence_loss(model):
        return lambda idx: model(idx).transpose(1, 2)

    def planned_transposed():
        fast, module = planned()
        return sequence_loss(fast), module

    peak = step_peak(planned_transposed, x, y)
    print(f"tiny GPT, logits [4, 64, 2048], budget {where}: monet {peak:,} B "
          f"(budget {budget['bytes']:,} B)")
    assert peak <= budget["bytes"]


def test_the_callers_loss_over_dominant_logits_fits_store_alls_budget(cache_dir):
    """Logits larger than the rest of the model together: at store-all's own budget (no
    slack for a plan to leave unused), the step's peak stays within it. The caller's loss
    holds the logits only while it needs them, and its gradient goes into the planned
    backward and is freed there, as the planner's memory model has them."""
    make, x, y = tiny_gpt_and_tokens(8192, dim=32, heads=4, layers=1, length=64)
    budget = {}

    def planned():
        module = make()
        # Cross-entropy's own two copies, no more: a logits-sized tensor held longer than
        # the model says (the output, its gradient) does not fit.
        r = monet.budget_range(module, x, cache_dir=cache_dir, time_limit=20, loss_copies=2,
                               search_limit="work")
        budget["bytes"] = r.store_all
        fast = monet.optimize(module, x, budget=budget["bytes"], cache_dir=cache_dir,
                              time_limit=20, loss_copies=2, search_limit="work")
        return (lambda idx: fast(idx).transpose(1, 2)), module

    peak = step_peak(planned, x, y)
    logits = 4 * 64 * 8192 * 4
    print(f"tiny GPT, logits [4, 64, 8192] ({logits:,} B): monet {peak:,} B at store-all's "
          f"budget {budget['bytes']:,} B")
    assert peak <= budget["bytes"]


def small_cnn():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.BatchNorm2d(32),
        torch.nn.ReLU(), torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10))


def test_a_float64_model_is_planned_at_its_own_sizes(cache_dir):
    """A float64 model's tensors are counted at their own size (8 bytes an element): its
    memory floor holds its state in float64, and a step under a plan at a budget between
    its smallest and store-all peaks within that budget, below PyTorch's step."""
    x = torch.randn(4, 3, 32, 32)
    y = torch.randint(0, 10, (4,))
    double = small_cnn().double()
    r = monet.budget_range(double, x.double(), optimizer="sgd-momentum", cache_dir=cache_dir,
                           time_limit=20, search_limit="work")
    # The parameters, their gradients and momentum, in float64, and the batch.
    state = 3 * sum(p.numel() * 8 for p in double.parameters()) + x.numel() * 8
    assert r.floor >= state, (r, state)
    budget = {}

    def planned():
        torch.manual_seed(0)
        module = small_cnn().double()
        budget["bytes"] = halfway_budget(module, x.double(), cache_dir, "sgd-momentum")
        return monet.optimize(module, x.double(), budget=budget["bytes"], cache_dir=cache_dir,
                              time_limit=20, search_limit="work"), module

    def plain():
        torch.manual_seed(0)
        module = small_cnn().double()
        return module, module

    monet_peak = step_peak(planned, x.double(), y)
    pytorch_peak = step_peak(plain, x.double(), y)
    # The room left for the caller's loss (loss_copies=3 outputs of [4, 10]) in float64.
    fast, _ = planned()
    assert fast.plan.loss_bytes == 3 * 4 * 10 * 8, fast.plan.loss_bytes
    print(f"float64 CNN: monet {monet_peak:,} B (budget {budget['bytes']:,} B), "
          f"PyTorch {pytorch_peak:,} B")
    assert monet_peak <= budget["bytes"] < pytorch_peak


@pytest.mark.parametrize("dtypes", [(torch.float16,), (torch.float32, torch.float64)])
def test_a_model_of_another_or_mixed_floating_types_is_refused(dtypes, cache_dir):
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 2))
    for layer, dtype in zip(model, dtypes * 2):
        layer.to(dtype)
    refusal = ("monet plans float32, float64 and bfloat16 models; this one has "
               + ", ".join(sorted(str(d) for d in dtypes)))
    with pytest.raises(TypeError, match=refusal):
        monet.plan(model, torch.randn(2, 8, dtype=dtypes[0]), budget="0.5x",
                   cache_dir=cache_dir)
