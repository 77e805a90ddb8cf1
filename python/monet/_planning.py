"""monet.optimize / monet.plan: trace a PyTorch module, import it into monet's C++
library with the module's own parameters and buffers (shared, not copied), plan a
training step under a memory budget (profiles and plans cached on disk), and run the
forward and backward under the plan."""
import itertools
import json
import logging
import math
import os
import sys
import tempfile

import torch

from . import _C
from ._step import (WithLoss, check_optimizer_holds, one_parameter_step, optimizer_memory)
from ._structure import (Flattened, call_arguments, flat_arguments, output_name,
                         positional_arguments)
from ._tracing import _ResultNotTraceable, _traced
from .errors import UnsupportedOperator

#: Optimizer names `optimizer=` takes: what the budget keeps room for (its state and
#: its update's temporaries).
OPTIMIZERS = tuple(_C.OPTIMIZERS)  # "none", "sgd", "sgd-momentum", "adam"
#: What ends the planner's searches, `search_limit=`: "wall-clock" or "work".
SEARCH_LIMITS = tuple(_C.PLANNING_LIMITS)
#: When the optimizer updates, `optimizer_update=`: "fused" (each parameter inside the
#: backward, once the plan is done with it) or "after-backward" (your opt.step()).
OPTIMIZER_UPDATES = tuple(_C.OPTIMIZER_UPDATES)

BudgetRange = _C.BudgetRange


def _budget_text(budget):
    if budget is None:
        return ""
    if isinstance(budget, bool) or not isinstance(budget, (int, str)):
        raise TypeError("budget must be bytes (int) or a string such as '0.4x', '3GiB' or "
                        f"'800MiB', not {type(budget).__name__}")
    return str(budget)


def _number(name, value, minimum, integer=False):
    """`value` as a finite number (an int when `integer`) of at least `minimum`."""
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise TypeError(f"{name} must be {'an integer' if integer else 'a number'}, "
                        f"not {type(value).__name__}")
    if not math.isfinite(value) or value < minimum:
        raise ValueError(f"{name} must be a finite number >= {minimum}, not {value}")
    return value


def _options(budget=None, planner="monet", optimizer="sgd-momentum", weight_decay=0.0,
             reserved_bytes=0, time_limit=60.0, plan_file="", cache_dir=None,
             use_cache=True, progress=True, search_limit="wall-clock", optimizer_update=None):
    if optimizer_update is not None and optimizer_update not in OPTIMIZER_UPDATES:
        raise ValueError(f"unknown optimizer_update {optimizer_update!r} "
                         f"(known: {', '.join(OPTIMIZER_UPDATES)})")
    optimizer, weight_decay, optimizer_update = optimizer_memory(optimizer, weight_decay,
                                                                 optimizer_update)
    if not isinstance(planner, str):
        raise TypeError(f"planner must be a name (str), not {type(planner).__name__}")
    if not isinstance(optimizer, str) or optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r} (known: {', '.join(OPTIMIZERS)})")
    _number("weight_decay", weight_decay, 0)
    _number("reserved_bytes", reserved_bytes, 0, integer=True)
    _number("time_limit", time_limit, 0)
    if time_limit == 0:
        raise ValueError("time_limit must be more than 0 seconds")
    if search_limit not in SEARCH_LIMITS:
        raise ValueError(f"unknown search_limit {search_limit!r} "
                         f"(known: {', '.join(SEARCH_LIMITS)})")
    if cache_dir is not None and os.path.exists(cache_dir) and not os.path.isdir(cache_dir):
        raise ValueError(f"cache_dir {str(cache_dir)!r} is not a directory")
    o = _C.PlanOptions()
    o.planner, o.budget, o.optimizer = planner, _budget_text(budget), optimizer
    o.weight_decay, o.reserved_bytes = float(weight_decay), int(reserved_bytes)
    o.time_limit_seconds, o.planning_limit = float(time_limit), search_limit
    o.plan_file, o.cache_dir = str(plan_file or ""), str(cache_dir or "")
    o.use_cache, o.progress, o.optimizer_update = bool(use_cache), bool(progress), optimizer_update
    return o


# Element types of non-floating inputs (ids and masks); libmonet reads their names
# ("int64" for torch.int64).
_ID_DTYPES = (torch.int64, torch.int32, torch.bool)


def _check_inputs(inputs):
    """Checks each example tensor (forward's arguments, flattened): a CPU tensor with
    elements, floating-point or int64/int32 ids or bool masks."""
    for i, x in enumerate(inputs):
        what = "example_input" if len(inputs) == 1 else f"example_input's tensor {i}"
        if x.device.type != "cpu":
            raise ValueError(f"monet runs on CPU tensors; {what} is on {x.device}")
        if x.numel() == 0:
            raise ValueError(f"{what} has no elements (shape {list(x.shape)})")
        if x.is_complex() or x.dtype not in _ID_DTYPES and not x.is_floating_point():
            raise TypeError(f"{what} has dtype {x.dtype}; monet takes floating-point inputs, "
                            "int64 or int32 ids and bool masks")


def _detection_models():
    """torchvision's detection model classes: none where torchvision's detection package
    was never imported (then no model is one)."""
    detection = sys.modules.get("torchvision.models.detection")
    if detection is None:
        return ()
    return (detection.generalized_rcnn.GeneralizedRCNN, detection.retinanet.RetinaNet,
            detection.ssd.SSD, detection.fcos.FCOS)


def _refuse_untraceable(module):
    """What a trace cannot record: torchvision's detection models take lists of images and
    target dicts and branch on their values."""
    inner = module.module if isinstance(module, WithLoss) else module
    if isinstance(inner, _detection_models()):
        raise UnsupportedOperator(
            f"{type(inner).__name__} is a torchvision detection model: its forward takes "
            "lists of images and target dicts and branches on their values (proposals, "
            "matching), which a trace cannot capture; monet plans models a trace records "
            "(its backbone, e.g. model.backbone, can be planned on its own)", "")


def _floating_dtype(module):
    """The module's floating type (float32 when it has no floating tensors); refuses a
    module whose floating tensors are not all float32, all float64 or all bfloat16 (the
    types monet plans; its memory model counts each tensor at its own type's size)."""
    dtypes = {t.dtype for t in itertools.chain(module.parameters(), module.buffers())
              if t.is_floating_point()}
    if not dtypes <= {torch.float32} and dtypes not in ({torch.float64}, {torch.bfloat16}):
        raise TypeError("monet plans float32, float64 and bfloat16 models; this one has "
                        + ", ".join(sorted(str(d) for d in dtypes)))
    return dtypes.pop() if dtypes else torch.float32


def _import(module, example_input, output, lossy=False):
    """(the C++ model of `module` traced on `example_input`, using the module's tensors;
    the module traced, `module` or a Flattened one; the structure of forward's arguments,
    None when they are tensors; what a planned step does beside the plan, a StepBeside).
    `lossy`: whether its lossy implementations are offered to the planner."""
    _refuse_untraceable(module)
    inputs, spec = flat_arguments(example_input)
    _check_inputs(inputs)
    _floating_dtype(module)
    planned = module if spec is None else Flattened(module, spec)
    try:
        traced, returned, beside = _traced(
            planned, inputs[0] if len(inputs) == 1 else inputs)
    except _ResultNotTraceable:  # a dataclass, lists inside a dict: a dict of paths
        planned = Flattened(module, spec)
        traced, returned, beside = _traced(
            planned, inputs[0] if len(inputs) == 1 else inputs)
    if isinstance(planned, Flattened):
        returned = planned.returned
    output = output_name(output, returned, isinstance(planned, Flattened))
    fd, path = tempfile.mkstemp(suffix=".pt", prefix="monet-trace-")
    os.close(fd)
    try:
        traced.save(path)
        model = _C.Model.load_traced(path, [list(x.shape) for x in inputs],
                                     [str(x.dtype).removeprefix("torch.")
                                      if x.dtype in _ID_DTYPES else "" for x in inputs],
                                     "" if output is None else str(output), "sum", bool(lossy))
    except Exception as e:  # its messages name the temporary file: not the caller's
        e.args = tuple(a.replace(f"'{path}': ", "") if isinstance(a, str) else a
                       for a in e.args)
        raise
    finally:
        os.unlink(path)
    tensors = list(planned.named_parameters()) + list(planned.named_buffers())
    _make_contiguous([t for _, t in tensors])
    model.share_tensors([(name, t) for name, t in tensors])
    return model, planned, spec, beside


def _make_contiguous(tensors):
    """Lays out the module's parameters and buffers contiguously, in place (their objects,
    values and optimizer entries stay): monet's memory model and kernels take contiguous
    tensors, and a channels_last weight makes each convolution copy its input."""
    strided = [t for t in tensors if not t.is_contiguous()]
    if strided:
        logging.getLogger("monet").info(
            "%d parameter(s) or buffer(s) not laid out contiguously (channels_last) are "
            "made contiguous", len(strided))
    with torch.no_grad():
        for t in strided:
            t.data = t.data.contiguous()


class Plan:
    """A plan for one module and input shape, ready to run. Sizes in bytes, times in
    seconds (profiled, for forward and backward)."""

    def __init__(self, planned, model):
        self._planned = planned
        self._model = model
        r = planned.report()  # _C.PlanReport: None where not computed
        self.planner = r.planner
        self.budget = r.budget_bytes
        # Predictions need profiled costs: None where the planner ran without them (a
        # store-all or Chen plan and no cost cache).
        self.predicted_peak = r.predicted_peak_bytes  # forward + backward
        # Live when the forward begins, as simulated (parameters, buffers, the batch): a
        # step's rise, last_step()'s peak_bytes - start_bytes, is predicted_peak - this.
        self.predicted_start = r.predicted_start_bytes
        self.predicted_seconds = r.predicted_seconds
        self.store_all_peak = r.storeall_predicted_peak_bytes
        self.store_all_seconds = r.storeall_predicted_seconds
        self.solver_gap = r.solver_gap
        self.optimizer_bytes = r.optimizer_state_bytes + r.optimizer_update_bytes
        self.loss_bytes = r.loss_bytes  # room for the caller's loss: loss_copies outputs
        self.baseline_peak = r.baseline_peak_bytes  # what a ratio budget was a ratio of:
        self.budget_baseline = r.budget_baseline  # "autograd's step", "DDP's per-rank step"
        self.from_cache = r.from_cache
        self.lossy_forwards = r.lossy_forwards  # > 0: gradients differ from autograd's
        self.optimizer_update = r.optimizer_update  # "fused" or "after-backward"
        self.fingerprint = model.fingerprint
        # Operators traced (the loss among them), and of them those on the generic ATen
        # path (autograd's backward, no specialised implementation).
        self.node_count = model.node_count
        self.generic_node_count = model.generic_node_count
        self.input_shape = tuple(model.input_shape)  # the first input's
        self.input_shapes = [tuple(shape) for shape in model.input_shapes]

    def save(self, path):
        """Writes the plan as JSON (atomically); monet.load_plan reads it."""
        self._planned.save_plan(os.fspath(path))

    @property
    def predicted_overhead(self):
        """Predicted time against store-all's, minus one (0.1: 10% slower); None without
        profiled costs."""
        if not self.store_all_seconds:
            return None
        return self.predicted_seconds / self.store_all_seconds - 1

    def __repr__(self):
        mib = 1 << 20
        budget = f"{self.budget / mib:.1f} MiB" if self.budget else "none"
        prediction = "no prediction (no profiled costs)"
        if self.predicted_peak is not None:
            prediction = (f"predicted peak {self.predicted_peak / mib:.1f} MiB (store-all "
                          f"{self.store_all_peak / mib:.1f} MiB)")
            if self.predicted_overhead is not None:
                prediction += f", overhead {100 * self.predicted_overhead:+.1f}%"
        return (f"monet.Plan(planner={self.planner!r}, budget={budget}, {prediction}"
                + (f", LOSSY: {self.lossy_forwards} lossy forwards" if self.lossy_forwards else "")
                + ")")


class PlanFile:
    """A plan file (from Plan.save or `monet plan`), to run with
    monet.optimize(module, x, plan=monet.load_plan(path))."""

    def __init__(self, path):
        self.path = os.fspath(path)
        try:
            with open(self.path) as f:
                data = json.load(f)
        except OSError as e:
            raise ValueError(f"cannot read plan {self.path!r}: {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise ValueError(f"plan {self.path!r} is not valid JSON (truncated?): {e}") from None
        if not isinstance(data, dict) or "fingerprint" not in data:
            raise ValueError(f"{self.path!r} is not a monet plan (no fingerprint)")
        self.fingerprint = data["fingerprint"]
        self.planner = data.get("planner", "")

    def __repr__(self):
        return f"monet.PlanFile({self.path!r}, planner={self.planner!r})"


def load_plan(path):
    """Reads a plan file; pass it as `plan=` to monet.plan or monet.optimize. A plan for
    another model or input shape raises monet.PlanMismatch there."""
    return PlanFile(path)


def plan(module, example_input, budget=None, *, planner="monet", optimizer="sgd-momentum",
         weight_decay=0.0, reserved_bytes=0, loss_copies=3, time_limit=60.0, plan=None,
         output=None, cache_dir=None, use_cache=True, progress=True, lossy=False,
         search_limit="wall-clock", optimizer_update=None, loss=None, target=None):
    """Plans a training step of `module` on batches shaped like `example_input`: a tensor,
    or a tuple of tensors for a module whose forward takes several (token ids and a bool
    mask: call the optimized module with as many, in the same order).

    budget: the whole step's peak (parameters, gradients, optimizer state, the batch,
        forward and backward): bytes, "3GiB", "800MiB", or "0.4x" of autograd's peak.
    planner: "monet" (the 0-1 program) or another of monet.planner_names().
    optimizer: the optimizer itself (torch.optim.SGD, Adam or AdamW over the module's
        parameters): its updates are then fused into the planned backward, each parameter
        stepped by optimizer.step() on that parameter alone as soon as the plan no longer
        uses it and its gradient freed at once, so the gradients never all exist together
        (its state stays in optimizer.state; learning rates a scheduler sets are read at
        every update; optimizer.step() and zero_grad() after the backward do nothing).
        Or, for an optimizer you step after the backward, its name as far as memory goes:
        "none", "sgd", "sgd-momentum" or "adam". weight_decay: its weight decay (read from
        the optimizer itself when given).
    optimizer_update: "fused" (the default with an optimizer) or "after-backward" (the
        default with a name; needed for gradient clipping by global norm or accumulation
        over micro-batches, which need every gradient before any update).
    reserved_bytes: other bytes the step must leave room for (e.g. prefetched batches).
    loss, target: the loss inside the plan: `loss(output, target)` (an nn.Module such as
        nn.CrossEntropyLoss() or a function; anything that traces) and an example target.
        The optimized module is then called with the inputs and the target and returns the
        loss (`fast(x, y).backward()`); the plan frees the output (a language model's
        logits) where its backward is done with it, and loss_copies does not apply.
    loss_copies: tensors of the output's size the caller's loss holds at once beside the
        output and the output's gradient (the loss is outside the plan: cross-entropy
        keeps the log-probabilities, and its backward makes their gradient before the
        output's: 2; the default leaves room for one more). The planner leaves room for
        them where the loss runs, between the forward and the backward pass; memory the
        loss keeps longer belongs in reserved_bytes.
    time_limit: the planner's limit in seconds. search_limit: what ends its searches,
    "wall-clock" (their share of time_limit) or "work" (solver nodes, heuristics run to
    their end: the same plan on every machine for the same costs; time_limit then only
    chooses strategies). plan: a PlanFile (or path) to run instead
    of planning. output: for a module returning a tuple or dict, the output trained (an
    index or a key; default the first), or with loss= the output the loss gets (default:
    whatever the module returns, as loss(module(x), target) gets it in PyTorch).
    cache_dir: where profiles and plans are cached (default $MONET_CACHE_DIR or
    ~/.cache/monet). lossy: also offer LOSSY implementations,
    whose gradients differ slightly from autograd's (GELU's backward from a 4-bit code of
    its input); the plan's lossy_forwards says how many it uses.

    Raises monet.BudgetTooSmall, monet.UnsupportedOperator, monet.PlanMismatch.
    """
    return _planned_with(_C.PlannedModel, module, example_input, dict(
        budget=budget, planner=planner, optimizer=optimizer, weight_decay=weight_decay,
        reserved_bytes=reserved_bytes, loss_copies=loss_copies, time_limit=time_limit,
        plan=plan, output=output, cache_dir=cache_dir, use_cache=use_cache, progress=progress,
        lossy=lossy, search_limit=search_limit, optimizer_update=optimizer_update, loss=loss,
        target=target))


def _planned_with(runner, module, example_input, kw):
    """A Plan of `module` run by `runner(model, options)` (_C.PlannedModel, or a
    data-parallel rank's _C.DataParallel), from monet.plan's keywords `kw`."""
    plan = kw["plan"]
    plan_file = plan.path if isinstance(plan, PlanFile) else plan
    optimizer = kw["optimizer"]
    options = _options(kw["budget"], kw["planner"], optimizer, kw["weight_decay"],
                       kw["reserved_bytes"], kw["time_limit"], plan_file, kw["cache_dir"],
                       kw["use_cache"], kw["progress"], kw["search_limit"],
                       kw["optimizer_update"])
    traced, example_input, output, loss_copies = _with_loss(
        module, example_input, kw["output"], kw["loss_copies"], kw["loss"], kw["target"])
    model, planned_module, arguments, beside = _import(traced, example_input, output,
                                                       kw["lossy"])
    _leave_room_beside(model, planned_module, loss_copies, options)
    planned = runner(model, options)
    if options.optimizer_update == "fused":
        check_optimizer_holds(optimizer, module)
        planned.use_update(one_parameter_step(optimizer))
    result = Plan(planned, model)
    loss = kw["loss"]
    result.loss_inside = loss is not None
    result._traced_module = traced
    result._arguments = arguments  # the structure of forward's arguments (None: tensors)
    result._beside = beside  # what a step does beside the plan (counts, renormalisations)
    return result


def _with_loss(module, example_input, output, loss_copies, loss, target):
    """(module to trace, its example inputs, output, loss copies): `module` as it is, or
    with `loss` after it (WithLoss) and `target` as its last input."""
    if loss is None:
        if target is not None:
            raise ValueError("target= is the example target of loss=; give the loss too")
        return module, example_input, output, loss_copies
    if not callable(loss):
        raise TypeError(f"loss must be a callable of (output, target), not {type(loss).__name__}")
    if not isinstance(target, torch.Tensor):
        raise TypeError("loss= needs target=, an example target tensor (the batch's labels)")
    inputs = tuple(example_input) if isinstance(example_input, (tuple, list)) \
        else (example_input,)
    return WithLoss(module, loss, output), inputs + (target,), "0", 0


def _leave_room_beside(model, module, loss_copies, options):
    """Sets `options`' room for what runs beside the imported `model`: the caller's loss
    (loss_bytes) and the module's tensors the model does not share (reserved_bytes)."""
    options.loss_bytes = _loss_bytes(model, loss_copies, _floating_dtype(module))
    options.reserved_bytes += _unshared_bytes(module, model)


def _unshared_bytes(module, model):
    """Bytes of the module's parameters and buffers that the imported model does not use
    (a causal mask becomes a constant of the trace, a copy the model holds and counts):
    alive through every step beside the model's own."""
    shared = {name for name, _ in model.named_parameters()}
    shared |= {name for name, _ in model.named_buffers()}
    seen, total = set(), 0
    for name, t in list(module.named_parameters()) + list(module.named_buffers()):
        if name in shared or t.data_ptr() in seen:
            continue
        seen.add(t.data_ptr())
        total += t.numel() * t.element_size()
    return total


def _loss_bytes(model, copies, dtype):
    """Bytes of `copies` tensors of the model's output in `dtype` (the caller's loss)."""
    if copies < 0:
        raise ValueError(f"loss_copies must be >= 0, not {copies}")
    element = torch.empty((), dtype=dtype).element_size()
    return int(copies) * element * math.prod(model.output_shape)


def budget_range(module, example_input, *, optimizer="sgd-momentum", weight_decay=0.0,
                 reserved_bytes=0, loss_copies=3, time_limit=60.0, output=None, cache_dir=None,
                 use_cache=True, progress=True, search_limit="wall-clock",
                 optimizer_update=None, loss=None, target=None):
    """The budgets `module` can be planned for (a BudgetRange, bytes): `smallest` is found
    as `monet plan` finds it (the budget-minimising program, searched within `time_limit`
    seconds under `search_limit`, or a leaner heuristic plan; cached in `cache_dir` by
    model, time limit and search limit, so a second call does not search again),
    `store_all` and the proven `floor` are simulated."""
    options = _options(None, "monet", optimizer, weight_decay, reserved_bytes, time_limit, "",
                       cache_dir, use_cache, progress, search_limit, optimizer_update)
    traced, example_input, output, loss_copies = _with_loss(module, example_input, output,
                                                            loss_copies, loss, target)
    model, planned_module, _, _ = _import(traced, example_input, output)
    _leave_room_beside(model, planned_module, loss_copies, options)
    return _C.budget_range(model, options)


class OptimizedModule(torch.nn.Module):
    """`module` run under a monet plan. Its parameters and buffers are the module's own:
    an optimizer, state_dict(), saving and eval() act on the original module.

    In training mode with gradients enabled, calling it runs the planned forward and
    returns the output, whose backward runs the planned backward and accumulates the
    parameters' .grad, as autograd would. In eval() mode or under torch.no_grad() it
    runs the module's plain forward. With the loss inside the plan (loss=, target=) it
    takes the inputs and the target and returns the loss. Arguments may be given by
    keyword, as forward names them (fast(ids, attention_mask=mask), the target as target=
    or last)."""

    def __init__(self, module, plan):
        super().__init__()
        self.module = module
        self.plan = plan
        # What the plan was made for: each parameter, its type and whether it trains.
        self._planned_for = [(name, p, p.dtype, p.requires_grad)
                             for name, p in module.named_parameters()]

    def _check_parameters(self):
        """Refuses a planned step after the module's parameters changed under the plan:
        one replaced, converted to another type, frozen or unfrozen."""
        now = list(self.module.named_parameters())
        if len(now) != len(self._planned_for):
            raise RuntimeError(f"the module has {len(now)} parameters and was planned with "
                               f"{len(self._planned_for)}: plan it again (monet.optimize)")
        for (name, p), (_, planned, dtype, trains) in zip(now, self._planned_for):
            what = ("was replaced after planning" if p is not planned
                    else f"was {dtype} when planned and is {p.dtype} now" if p.dtype != dtype
                    else ("was frozen after planning" if trains
                          else "was unfrozen after planning")
                    if p.requires_grad != trains else None)
            if what:
                raise RuntimeError(f"parameter '{name}' {what}: plan the module again "
                                   "(monet.optimize)")

    def forward(self, *inputs, **keywords):
        if keywords:
            inputs = positional_arguments(self.module.forward, inputs, keywords,
                                          self.plan.loss_inside)
        if torch.is_autocast_enabled() or torch.is_autocast_cpu_enabled():
            raise RuntimeError(
                "monet runs its plan in the module's floating type (float32, float64 or "
                "bfloat16), which the plan's memory is counted in; call it outside "
                "torch.autocast (or convert the module with .bfloat16() / .float() and plan "
                "that)")
        if not (self.training and torch.is_grad_enabled()):
            self.plan._beside.before_forward(call_arguments(inputs, self.plan._arguments))
            out = self.plan._traced_module(*inputs)
            return out[0] if self.plan.loss_inside else out  # WithLoss: the loss first
        self._check_parameters()
        inputs = call_arguments(inputs, self.plan._arguments)
        if any(isinstance(x, torch.Tensor) and x.requires_grad for x in inputs):
            raise ValueError("monet computes the parameters' gradients, not the input's: pass "
                             "an input that does not require grad")
        if len(inputs) != len(self.plan.input_shapes):
            what = "input(s) and the target" if self.plan.loss_inside else "input(s)"
            count = len(self.plan.input_shapes) - self.plan.loss_inside
            raise TypeError(f"the module was planned for {count} {what}, "
                            f"{len(inputs)} given")
        self.plan._beside.before_forward(inputs, self.plan.input_shapes)
        out = self.plan._planned.forward(list(inputs))
        self.plan._beside.after_forward()
        return out

    def __reduce_ex__(self, protocol):
        # deepcopy and torch.save pickle: the plan is bound to the module's own tensors.
        raise TypeError(
            "an OptimizedModule runs a plan bound to its module's own tensors and cannot be "
            "copied or pickled: copy or save its module (fast.module, or its state_dict()) "
            "and plan a copy with monet.optimize")

    def last_step(self):
        """The last planned iteration whose backward ran: peak_bytes (tracked, absolute),
        start_bytes (tracked, live when its forward began) and seconds of its forward and
        backward."""
        return self.plan._planned.last_step()


def optimize(module, example_input, budget=None, **kwargs):
    """`module` under a plan for `budget` (see monet.plan for the arguments): a drop-in
    nn.Module for the training loop.

        fast = monet.optimize(model, x, budget="0.4x")
        loss = criterion(fast(x), y); loss.backward(); opt.step()
    """
    return OptimizedModule(module, plan(module, example_input, budget, **kwargs))
