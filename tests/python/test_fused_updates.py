"""Fused optimizer updates from Python: monet.optimize(..., optimizer=opt) with a
torch.optim.SGD, Adam or AdamW steps each parameter inside the planned backward, with
opt's own arithmetic and state, under a learning-rate schedule; 5 steps in float64 equal
plain PyTorch's, a state_dict saved after 3 fused steps continues in plain PyTorch
identically, and the gradients' bytes go to the plan."""
import copy

import pytest
import torch

import monet
from test_training import CASES, STEPS, TOLERANCE, batches, worst_state_error

OPTIMIZERS = {
    "sgd-nesterov-weight-decay": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9,
                                                           nesterov=True, weight_decay=1e-4),
    "sgd-dampening": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, dampening=0.1),
    "amsgrad": lambda p: torch.optim.Adam(p, lr=1e-3, amsgrad=True, weight_decay=1e-4),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=1e-2),
    # foreach: the same arithmetic on lists of tensors (each fused update a list of one);
    # parameter groups with their own learning rate and weight decay.
    "adamw-foreach-groups": lambda p: torch.optim.AdamW(decay_groups(p), lr=1e-3, foreach=True),
}


def decay_groups(parameters):
    """The usual AdamW recipe: weight decay on matrices and kernels, none (and another
    learning rate) on biases and norms' parameters."""
    parameters = list(parameters)
    return [{"params": [p for p in parameters if p.dim() > 1], "weight_decay": 0.05},
            {"params": [p for p in parameters if p.dim() <= 1], "weight_decay": 0.0,
             "lr": 5e-4}]
SCHEDULES = {
    "step": lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5),
    "cosine": lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4),
}


def fused_budget(model, x, opt, cache_dir):
    """Halfway between the leanest fused plan and store-all (bytes)."""
    r = monet.budget_range(model, x, optimizer=opt, cache_dir=cache_dir, time_limit=20,
                           search_limit="work")
    assert r.floor <= r.smallest < r.store_all
    return (r.smallest + r.store_all) // 2


def run(model, opt, schedule, xs, ys, loss_fn, first=0):
    """Steps from `first` on: zero_grad, loss, backward, step (a no-op after fused
    updates), schedule; the losses."""
    losses = []
    for x, y in list(zip(xs, ys))[first:]:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        schedule.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
@pytest.mark.parametrize("case, schedule", [("resnet18", "step"), ("gpt", "cosine")])
def test_fused_training_matches_pytorch(case, optimizer, schedule, cache_dir):
    make, shape = CASES[case]
    torch.manual_seed(0)
    model = make().double().train()
    reference = copy.deepcopy(model)
    xs, ys, loss_fn = batches(case, shape)
    opt = OPTIMIZERS[optimizer](model.parameters())
    fast = monet.optimize(model, xs[0], budget=fused_budget(model, xs[0], opt, cache_dir),
                          optimizer=opt, cache_dir=cache_dir, time_limit=20, search_limit="work")
    assert fast.plan.optimizer_update == "fused"
    ref_opt = OPTIMIZERS[optimizer](reference.parameters())
    losses = run(fast, opt, SCHEDULES[schedule](opt), xs, ys, loss_fn)
    assert all(p.grad is None for p in model.parameters()), "fused steps leave no gradient"
    want = run(reference, ref_opt, SCHEDULES[schedule](ref_opt), xs, ys, loss_fn)
    for got, expected in zip(losses, want):
        assert abs(got - expected) <= TOLERANCE * abs(expected)
    assert worst_state_error(model, reference) <= TOLERANCE
    assert opt.param_groups[0]["lr"] == ref_opt.param_groups[0]["lr"]


def test_state_dict_after_fused_steps_continues_in_plain_pytorch(cache_dir):
    make, shape = CASES["resnet18"]
    torch.manual_seed(0)
    model = make().double().train()
    reference = copy.deepcopy(model)
    xs, ys, loss_fn = batches("resnet18", shape)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, amsgrad=True)
    fast = monet.optimize(model, xs[0], budget=fused_budget(model, xs[0], opt, cache_dir),
                          optimizer=opt, cache_dir=cache_dir, time_limit=20, search_limit="work")
    schedule = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    run(fast, opt, schedule, xs[:3], ys[:3], loss_fn)
    saved = copy.deepcopy((model.state_dict(), opt.state_dict(), schedule.state_dict()))
    assert all(opt.state[p]["step"] == 3 for p in model.parameters())

    plain = make().double().train()
    plain.load_state_dict(saved[0])
    plain_opt = torch.optim.Adam(plain.parameters(), lr=1e-3, amsgrad=True)
    plain_opt.load_state_dict(saved[1])
    plain_schedule = torch.optim.lr_scheduler.StepLR(plain_opt, step_size=2, gamma=0.5)
    plain_schedule.load_state_dict(saved[2])
    run(plain, plain_opt, plain_schedule, xs, ys, loss_fn, first=3)

    ref_opt = torch.optim.Adam(reference.parameters(), lr=1e-3, amsgrad=True)
    run(reference, ref_opt, torch.optim.lr_scheduler.StepLR(ref_opt, step_size=2, gamma=0.5),
        xs, ys, loss_fn)
    assert worst_state_error(plain, reference) <= TOLERANCE


def test_fused_updates_give_the_plan_the_gradients_bytes(cache_dir):
    make, shape = CASES["resnet18"]
    torch.manual_seed(0)
    model = make().train()
    x = torch.randn(shape)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    fused = monet.budget_range(model, x, optimizer=opt, cache_dir=cache_dir, time_limit=20,
                               search_limit="work")
    after = monet.budget_range(model, x, optimizer="sgd-momentum", cache_dir=cache_dir,
                               time_limit=20, search_limit="work")
    assert fused.floor < after.floor
    assert fused.store_all < after.store_all
    assert fused.smallest < after.smallest


def test_other_optimizers_and_fused_names_are_refused_in_one_line(cache_dir):
    model = torch.nn.Sequential(torch.nn.Linear(4, 2))
    x = torch.randn(2, 4)
    with pytest.raises(TypeError, match="after-backward' and optimizer='sgd-momentum'"):
        monet.optimize(model, x, optimizer=torch.optim.Adagrad(model.parameters()),
                       cache_dir=cache_dir, planner="storeall")
    centered = torch.optim.RMSprop(model.parameters(), momentum=0.9, centered=True)
    with pytest.raises(TypeError, match="optimizer='adam' .* and reserved_bytes for 1 more"):
        monet.optimize(model, x, optimizer=centered, cache_dir=cache_dir, planner="storeall")
    with pytest.raises(ValueError, match="needs the optimizer itself"):
        monet.optimize(model, x, optimizer="adam", optimizer_update="fused",
                       cache_dir=cache_dir, planner="storeall")
    with pytest.raises(ValueError, match="unknown optimizer_update"):
        monet.optimize(model, x, optimizer="adam", optimizer_update="later",
                       cache_dir=cache_dir, planner="storeall")
    maximizing = torch.optim.SGD(model.parameters(), lr=0.1, maximize=True)
    with pytest.raises(ValueError, match="maximize and differentiable off"):
        monet.optimize(model, x, optimizer=maximizing, cache_dir=cache_dir, planner="storeall")
    fast = monet.optimize(model, x, optimizer=maximizing, optimizer_update="after-backward",
                          cache_dir=cache_dir, planner="storeall")
    assert fast.plan.optimizer_update == "after-backward"
    other = torch.nn.Linear(4, 2)
    with pytest.raises(ValueError, match="holds none of the module's parameters"):
        monet.optimize(model, x, optimizer=torch.optim.SGD(other.parameters(), lr=0.1),
                       cache_dir=cache_dir, planner="storeall")


def test_an_error_in_the_update_fails_the_backward_not_the_interpreter(cache_dir):
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = torch.randn(2, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    fast = monet.optimize(model, x, optimizer=opt, cache_dir=cache_dir, planner="storeall")

    def broken(closure=None):
        raise RuntimeError("the optimizer broke")

    opt.step = broken
    with pytest.raises(RuntimeError, match="the optimizer broke"):
        fast(x).sum().backward()
    del opt.step
    fast(x).sum().backward()  # the next step runs
