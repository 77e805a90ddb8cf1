"""monet's exceptions and their fields: an unsupported operator, a budget below every
plan, a plan or a batch for another shape, and bad arguments."""
import copy
import io

import pytest
import torch

import monet
from conftest import halfway_budget
from test_training import SmallNet


class WithParameterUpdate(torch.nn.Module):
    """Updates a parameter inside forward() (a buffer monet writes when the step ends)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        with torch.no_grad():
            self.conv.weight.mul_(0.9)  # PARAMETER_UPDATE_LINE
        return self.conv(x)


def test_unsupported_operator_names_the_operator_and_its_source(cache_dir):
    with pytest.raises(monet.UnsupportedOperator) as e:
        monet.optimize(WithParameterUpdate(), torch.randn(2, 3, 8, 8), budget="0.5x",
                       cache_dir=cache_dir)
    assert e.value.operator == "aten::mul_"
    line = next(i for i, text in enumerate(open(__file__), 1)
                if "# PARAMETER_UPDATE_LINE" in text)
    assert e.value.source.endswith(f"test_errors.py:{line}"), e.value.source
    assert "on the parameter 'conv.weight' is not supported" in str(e.value)
    assert isinstance(e.value, ValueError)


class ReverseGradient(torch.autograd.Function):
    """A gradient reversal layer (domain-adversarial training): Python forward and backward."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return -grad


class WithPythonFunction(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return ReverseGradient.apply(self.fc(x))  # PYTHON_FUNCTION_LINE


def test_a_python_autograd_function_is_refused_in_one_line(cache_dir):
    """Its call is traced without its code: refused, naming it and its line."""
    with pytest.raises(monet.UnsupportedOperator) as e:
        monet.optimize(WithPythonFunction(), torch.randn(2, 8), budget="0.5x",
                       cache_dir=cache_dir)
    assert e.value.operator == "prim::PythonOp"
    line = next(i for i, text in enumerate(open(__file__), 1)
                if "# PYTHON_FUNCTION_LINE" in text)
    assert f"test_errors.py({line})" in e.value.source, e.value.source
    assert "Python autograd function 'ReverseGradient'" in str(e.value)
    assert "\n" not in str(e.value)


def test_a_detection_model_is_out_of_scope_in_one_line(cache_dir):
    """torchvision's detection models take lists of images and target dicts and branch on
    their values: refused before tracing, whatever the example input."""
    import torchvision
    model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, num_classes=3)
    images = [torch.rand(3, 64, 64)]
    targets = [{"boxes": torch.tensor([[4.0, 4.0, 30.0, 30.0]]), "labels": torch.tensor([1])}]
    for example in (images, (images, targets)):
        with pytest.raises(monet.UnsupportedOperator, match="FasterRCNN is a torchvision "
                           "detection model.*which a trace cannot capture") as e:
            monet.optimize(model, example, budget="0.5x", cache_dir=cache_dir)
        assert "\n" not in str(e.value)
    with pytest.raises(monet.UnsupportedOperator, match="FasterRCNN is a torchvision"):
        monet.optimize(model, images, budget="0.5x", loss=lambda out, y: out, target=torch.zeros(1),
                       cache_dir=cache_dir)


class WrongView(torch.nn.Module):
    def forward(self, x):
        return x.view(7, -1)


def test_a_model_failing_on_its_example_input_is_one_line(cache_dir):
    with pytest.raises(monet.UnsupportedOperator) as e:
        monet.optimize(WrongView(), torch.randn(4, 4), budget="0.5x", cache_dir=cache_dir)
    assert str(e.value) == ("tracing WrongView.forward on the example input failed: "
                            "RuntimeError: shape '[7, -1]' is invalid for input of size 16")
    assert isinstance(e.value.__cause__, RuntimeError)


class LogitsAndFeatures(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(8, 6)
        self.head = torch.nn.Linear(6, 3)

    def forward(self, x):
        h = self.body(x)
        return self.head(h), h


def test_a_loss_given_a_tuple_it_cannot_take_says_what_it_got(cache_dir):
    """With loss= and no output=, the loss gets the model's whole tuple, as in PyTorch: a
    loss for one tensor fails in one line saying so; output= picks the logits for it."""
    x, y = torch.randn(4, 8), torch.randint(0, 3, (4,))
    loss = torch.nn.CrossEntropyLoss()
    with pytest.raises(monet.UnsupportedOperator) as e:
        monet.optimize(LogitsAndFeatures(), x, planner="storeall", loss=loss, target=y,
                       cache_dir=cache_dir)
    assert str(e.value).startswith("tracing LogitsAndFeatures.forward and the loss on the "
                                   "example input and target failed: TypeError: ")
    assert str(e.value).endswith("(the loss gets the whole tuple the module returns, as "
                                 "loss(module(x), target) does in PyTorch; output= picks one "
                                 "of its outputs for it)")
    assert "\n" not in str(e.value)
    fast = monet.optimize(LogitsAndFeatures(), x, planner="storeall", loss=loss, target=y,
                          output="0", cache_dir=cache_dir)
    fast(x, y).backward()


def test_budget_below_every_plan_gives_the_smallest_and_the_bound(cache_dir):
    torch.manual_seed(0)
    model = SmallNet().double()
    x = torch.randn(2, 3, 16, 16, dtype=torch.float64)
    r = monet.budget_range(model, x, cache_dir=cache_dir, time_limit=10, search_limit="work")
    with pytest.raises(monet.BudgetTooSmall) as e:
        monet.optimize(model, x, budget=r.floor - 1, cache_dir=cache_dir, time_limit=10,
                       search_limit="work")
    assert e.value.smallest_budget == r.smallest
    assert e.value.proven_bound == r.floor
    assert e.value.proven_bound <= e.value.smallest_budget
    # A budget that does not even hold the model: the bound, without profiling.
    with pytest.raises(monet.BudgetTooSmall) as e:
        monet.optimize(model, x, budget=1024, cache_dir=cache_dir, search_limit="work")
    assert e.value.smallest_budget is None and e.value.proven_bound > 1024


def test_plan_for_another_shape_is_a_mismatch(cache_dir, tmp_path):
    torch.manual_seed(0)
    model = SmallNet().double()
    x = torch.randn(2, 3, 16, 16, dtype=torch.float64)
    planned = monet.plan(model, x, budget=halfway_budget(model, x, cache_dir, "sgd-momentum"),
                         cache_dir=cache_dir, time_limit=10, search_limit="work")
    path = tmp_path / "plan.json"
    planned.save(path)
    loaded = monet.load_plan(path)
    assert loaded.fingerprint == planned.fingerprint
    fast = monet.optimize(model, x, plan=loaded, cache_dir=cache_dir)  # same shape: runs
    fast(x).sum().backward()

    with pytest.raises(monet.PlanMismatch) as e:
        monet.optimize(model, torch.randn(4, 3, 16, 16, dtype=torch.float64), plan=loaded,
                       cache_dir=cache_dir)
    assert "another model or shape" in str(e.value)
    with pytest.raises(monet.PlanMismatch) as e:
        fast(torch.randn(3, 3, 16, 16, dtype=torch.float64))
    assert "[2, 3, 16, 16]" in str(e.value)


def test_bad_arguments(cache_dir, tmp_path):
    model = SmallNet()
    x = torch.randn(2, 3, 16, 16)
    with pytest.raises(ValueError, match="unknown optimizer 'rmsprop'"):
        monet.optimize(model, x, budget="0.5x", optimizer="rmsprop")
    with pytest.raises(ValueError, match="budget"):
        monet.optimize(model, x, budget="lots", cache_dir=cache_dir)
    with pytest.raises(TypeError, match="budget must be bytes"):
        monet.optimize(model, x, budget=0.5)
    with pytest.raises(ValueError, match="planner"):
        monet.optimize(model, x, budget="0.5x", planner="nope", cache_dir=cache_dir)
    (tmp_path / "broken.json").write_text("{\"fingerprint\": ")
    with pytest.raises(ValueError, match="not valid JSON"):
        monet.load_plan(tmp_path / "broken.json")
    fast = monet.optimize(model, x, planner="storeall", cache_dir=cache_dir)
    with pytest.raises(ValueError, match="not the input's"):
        fast(x.clone().requires_grad_())


BAD_CALLS = [  # (description, arguments of monet.optimize beside the module)
    ("input not a tensor", ([1.0, 2.0],), {}),
    ("input of no elements", (torch.empty(0, 3, 16, 16),), {}),
    ("input of the wrong rank", (torch.randn(3, 16, 16),), {}),
    ("input of too few channels", (torch.randn(2, 1, 16, 16),), {}),
    ("integer input to a convolution", (torch.ones(2, 3, 16, 16, dtype=torch.int64),), {}),
    ("meta-device input", (torch.empty(2, 3, 16, 16, device="meta"),), {}),
    ("budget negative", (), {"budget": -5}),
    ("budget zero", (), {"budget": 0}),
    ("budget of no bytes", (), {"budget": "0x"}),
    ("budget negative ratio", (), {"budget": "-1x"}),
    ("budget not a number", (), {"budget": "nanx"}),
    ("budget beyond any size", (), {"budget": "1e400GiB"}),
    ("budget a list", (), {"budget": [1]}),
    ("time limit negative", (), {"budget": "0.9x", "time_limit": -1}),
    ("time limit not a number", (), {"budget": "0.9x", "time_limit": float("nan")}),
    ("time limit a string", (), {"budget": "0.9x", "time_limit": "soon"}),
    ("search limit unknown", (), {"budget": "0.9x", "search_limit": "soon"}),
    ("search limit a number", (), {"budget": "0.9x", "search_limit": 5}),
    ("planner None", (), {"planner": None}),
    ("optimizer a number", (), {"optimizer": 3}),
    ("weight decay a string", (), {"weight_decay": "a"}),
    ("loss copies negative", (), {"loss_copies": -1}),
    ("reserved bytes negative", (), {"reserved_bytes": -5}),
    ("cache directory a file", (), {"cache_dir": __file__}),
    ("plan file missing", (), {"plan": "/nonexistent/plan.json"}),
    ("output of a module with one", (), {"output": "logits"}),
]


@pytest.mark.parametrize("what,args,kwargs", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_arguments_raise_one_line_errors(what, args, kwargs, cache_dir):
    """Every bad argument raises a Python exception with a one-line message; none reaches
    the interpreter as a crash."""
    x = args[0] if args else torch.randn(2, 3, 16, 16)
    kwargs.setdefault("cache_dir", cache_dir)
    kwargs.setdefault("progress", False)
    with pytest.raises((TypeError, ValueError, RuntimeError, OSError, monet.MonetError)) as e:
        monet.optimize(SmallNet(), x, **kwargs)
    message = str(e.value)
    assert message and "\n" not in message.strip(), f"{what}: {message!r}"


def test_a_work_limited_search_plans_within_the_budget(cache_dir):
    """search_limit="work": the planner's searches end by their work counts (no clock);
    the plan fits its budget."""
    torch.manual_seed(0)
    model, x = SmallNet(), torch.randn(4, 3, 16, 16)
    budget = halfway_budget(model, x, cache_dir, "sgd-momentum")
    plan = monet.plan(model, x, budget=budget, cache_dir=cache_dir, search_limit="work",
                      progress=False)
    assert plan.planner == "monet"
    assert plan.predicted_peak is not None
    assert plan.predicted_peak + plan.optimizer_bytes <= plan.budget


def test_what_was_not_computed_is_none(tmp_path):
    """The plan's report (monet._C.PlanReport) gives None for what planning did not
    compute: no budget, no baseline and, without profiled costs, no prediction; a budget
    in bytes measures no baseline. Option names the library does not know are refused
    with the known ones."""
    torch.manual_seed(0)
    model, x = SmallNet(), torch.randn(2, 3, 16, 16)
    plan = monet.plan(model, x, planner="storeall", cache_dir=str(tmp_path), progress=False)
    assert (plan.budget, plan.baseline_peak, plan.predicted_peak, plan.solver_gap) == (
        None, None, None, None)
    assert plan.predicted_overhead is None
    r = monet.budget_range(model, x, cache_dir=str(tmp_path), time_limit=10,
                           search_limit="work", progress=False)
    smallest, store_all, floor = r
    assert floor <= smallest <= store_all and "BudgetRange(smallest=" in repr(r)
    plan = monet.plan(model, x, budget=store_all, cache_dir=str(tmp_path), time_limit=10,
                      search_limit="work", progress=False)
    assert plan.budget == store_all and plan.baseline_peak is None
    assert plan.predicted_peak is not None and plan.solver_gap is not None
    options = monet._C.PlanOptions()
    with pytest.raises(ValueError, match="known: none, sgd, sgd-momentum, adam"):
        options.optimizer = "lamb"
    assert monet.OPTIMIZERS == ("none", "sgd", "sgd-momentum", "adam")


def test_autocast_and_copies_are_refused_in_one_line(cache_dir):
    """Under torch.autocast the plan's operators would run in another type than the one
    its memory is counted in; an OptimizedModule's plan is bound to the module's tensors,
    so copying or pickling it is refused, naming what to copy instead."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = torch.randn(2, 4)
    fast = monet.optimize(model, x, planner="storeall", cache_dir=cache_dir)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.raises(RuntimeError, match="outside torch.autocast"):
            fast(x)
    with pytest.raises(TypeError, match="copy or save its module"):
        copy.deepcopy(fast)
    with pytest.raises(TypeError, match="copy or save its module"):
        torch.save(fast, io.BytesIO())
    fast(x).sum().backward()  # still usable
    assert all(p.grad is not None for p in model.parameters())


def test_degenerate_models_and_losses_are_refused_in_one_line(cache_dir):
    """A model returning its input (nothing to plan), and a loss= returning no tensor."""
    class Identity(torch.nn.Module):
        def forward(self, x):
            return x

    x = torch.randn(2, 4)
    with pytest.raises(ValueError, match="the model's output is its input") as e:
        monet.optimize(Identity(), x, planner="storeall", cache_dir=cache_dir)
    assert "monet-trace" not in str(e.value)  # not the temporary file monet traced into
    with pytest.raises(monet.UnsupportedOperator, match="the loss returned a tuple"):
        monet.optimize(torch.nn.Linear(4, 2), x, loss=lambda out, y: (out.sum(), out),
                       target=torch.randn(2, 2), planner="storeall", cache_dir=cache_dir)


@pytest.mark.parametrize("change, message", [
    (lambda m: setattr(m[0], "weight", torch.nn.Parameter(torch.zeros(8, 4))), "was replaced"),
    (lambda m: m.double(), "was torch.float32 when planned and is torch.float64 now"),
    (lambda m: m[0].requires_grad_(False), "was frozen"),
])
def test_parameters_changed_after_planning_are_refused(change, message, cache_dir):
    """A planned step after the module's parameters changed under the plan (replaced,
    converted, frozen): the plan would train tensors the module no longer has, or
    count memory in another type, or give a frozen parameter a gradient."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    fast = monet.optimize(model, torch.randn(2, 4), planner="storeall", cache_dir=cache_dir)
    change(model)
    x = torch.randn(2, 4, dtype=next(model.parameters()).dtype)
    with pytest.raises(RuntimeError, match=message):
        fast(x)


def test_a_smaller_last_batch_says_what_to_do(cache_dir):
    """A DataLoader's last batch, smaller than the planned one, is refused naming both
    sizes and the way out; the module itself trains it (autograd, outside the plan)."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    fast = monet.optimize(model, torch.randn(4, 4), planner="storeall", cache_dir=cache_dir)
    with pytest.raises(monet.PlanMismatch, match="a batch of 3 samples, the plan is for "
                       "batches of 4: drop the smaller last batch .*drop_last=True"):
        fast(torch.randn(3, 4))
    model(torch.randn(3, 4)).sum().backward()
    assert model[0].weight.grad is not None
    with pytest.raises(monet.PlanMismatch, match=r"shape \[4, 5\]"):
        fast(torch.randn(4, 5))  # another shape: the planned model's own message
    step = monet.optimize(model, torch.randn(4, 4), planner="storeall", cache_dir=cache_dir,
                          loss=torch.nn.CrossEntropyLoss(), target=torch.zeros(4).long())
    with pytest.raises(monet.PlanMismatch, match="input 1 of 2 .*a batch of 3 samples"):
        step(torch.randn(3, 4), torch.zeros(3).long())


def test_lazy_modules_not_yet_run_are_refused_in_one_line(cache_dir):
    """Lazy modules have no parameters before their first forward; once run, they plan."""
    model = torch.nn.Sequential(torch.nn.LazyLinear(8), torch.nn.ReLU(), torch.nn.LazyLinear(2))
    x = torch.randn(4, 6)
    with pytest.raises(ValueError, match=r"lazy modules have not made their parameters yet "
                       r"\('0.weight' and 3 more\): run it once on a batch"):
        monet.optimize(model, x, planner="storeall", cache_dir=cache_dir)
    model(x)
    monet.optimize(model, x, planner="storeall", cache_dir=cache_dir)(x).sum().backward()
    assert model[2].weight.grad is not None


class GradientHook(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)

    def forward(self, x):
        h = self.a(x)
        h.register_hook(lambda g: -g)  # a gradient reversal written as a hook
        return self.b(h)


def test_gradient_hooks_in_the_forward_are_refused_saying_why(cache_dir):
    with pytest.raises(monet.UnsupportedOperator, match="a gradient hook or retain_grad"):
        monet.optimize(GradientHook(), torch.randn(2, 4), planner="storeall",
                       cache_dir=cache_dir)

