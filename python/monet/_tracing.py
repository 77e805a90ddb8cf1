"""How monet.optimize traces a module: once, with its buffers and random state put back
afterwards, under no_grad, with torch.utils.checkpoint run inline, batch norms of
momentum=None written as tensor operations and what the model computes under its own
torch.no_grad detached; a Python value made of a computed tensor is refused; what a step
does beside the plan (batch norms' counts, nn.Embedding's max_norm renormalisation) is
recorded in a StepBeside; a result a trace cannot return stops the trace (the caller
traces a Flattened module instead); the model's own error on the example input becomes
one line."""
import contextlib
import sys
import warnings

import torch

from ._step import WithLoss
from ._structure import Flattened, traceable
from .errors import UnsupportedOperator


@contextlib.contextmanager
def _state_kept(module):
    """Tracing runs the module once: its buffers (batch-norm statistics), its Python
    numbers (a step counter) and the random number generator are put back as they were.
    A Python number forward changes is warned of: the trace records the value it read,
    and the planned steps neither change it nor read it again."""
    buffers = [(b, b.detach().clone()) for b in module.buffers()]
    numbers = _python_numbers(module)
    rng = torch.random.get_rng_state()
    try:
        yield
    finally:
        with torch.no_grad():
            for b, saved in buffers:
                b.copy_(saved)
        torch.random.set_rng_state(rng)
        changed = [(m, name, value) for (m, name), value in numbers.items()
                   if m.__dict__.get(name) is not value and m.__dict__.get(name) != value]
        for m, name, value in changed:
            setattr(m, name, value)
    if changed:
        names = {id(m): n for n, m in module.named_modules()}
        m, name, value = changed[0]
        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        where = f"{names.get(id(m)) or type(m).__name__}.{name}"
        warnings.warn(
            f"forward() changes the Python number '{where}'{more} (it was {value!r}): a trace "
            "records the value forward read, and the planned steps neither change it nor read "
            "it again; keep it in a buffer (register_buffer) to have it counted at each step",
            UserWarning, stacklevel=_callers_level())


def _python_numbers(module):
    """{(submodule, attribute): value} of the module's attributes that are Python numbers
    (int, float, bool), which forward may read and change."""
    return {(m, name): value for m in module.modules() for name, value in vars(m).items()
            if type(value) in (int, float, bool)}


@contextlib.contextmanager
def _checkpoints_inlined():
    """torch.utils.checkpoint's reentrant form (its default) is a Python autograd function,
    which a trace cannot save: while tracing, the checkpointed function runs inline (monet
    decides what to recompute itself)."""
    from torch.utils import checkpoint as ckpt
    if not hasattr(ckpt, "CheckpointFunction"):  # a PyTorch without the reentrant form
        yield
        return
    own = ckpt.CheckpointFunction.__dict__.get("apply")
    ckpt.CheckpointFunction.apply = staticmethod(lambda function, _preserve, *args:
                                                 function(*args))
    try:
        yield
    finally:
        if own is None:
            del ckpt.CheckpointFunction.apply
        else:
            ckpt.CheckpointFunction.apply = own


def _cumulative_forward(bn, x):
    """nn.BatchNorm's training forward with momentum=None in tensor operations: the factor
    1 / num_batches_tracked read from the buffer (PyTorch computes it in Python, which a
    trace would record as one number), the batch's mean and unbiased variance folded into
    the running statistics as ATen folds them (PyTorch counts the batch first: the factor
    is 1 / (count + 1), monet.optimize's module counting it after the planned forward),
    and the output normalised by the batch's statistics."""
    bn._check_input_dim(x)
    dims = [0] + list(range(2, x.dim()))
    # Traced under no_grad already: the statistics take no gradient.
    factor = (bn.num_batches_tracked + 1).to(x.dtype).reciprocal()
    bn.running_mean.mul_(1 - factor).add_(x.mean(dims) * factor)
    bn.running_var.mul_(1 - factor).add_(x.var(dims, unbiased=True) * factor)
    return torch.nn.functional.batch_norm(x, None, None, bn.weight, bn.bias, True, 0.0, bn.eps)


@contextlib.contextmanager
def _cumulative_averages_traced(module):
    """While tracing, each batch norm with momentum=None in training mode runs
    _cumulative_forward, so that every planned step uses its own factor."""
    cumulative = [m for m in module.modules()
                  if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.training
                  and m.momentum is None and m.track_running_stats
                  and m.num_batches_tracked is not None]
    own = [m.__dict__.get("forward") for m in cumulative]
    for m in cumulative:
        m.forward = _cumulative_forward.__get__(m)
    try:
        yield
    finally:
        for m, forward in zip(cumulative, own):
            if forward is None:
                del m.forward
            else:
                m.forward = forward


_CALL = compile("func(*args, **kwargs)", "<monet>", "eval")


def _called_from(frame, func, args, kwargs):
    """func(*args, **kwargs) run by code of `frame`'s file and line, where the trace then
    records the operator (its source in monet's error messages), not in this module."""
    code = _CALL.replace(co_filename=frame.f_code.co_filename, co_firstlineno=frame.f_lineno,
                         co_name=frame.f_code.co_name)
    return eval(code, {"func": func, "args": args, "kwargs": kwargs})


class _ResultsDetached(torch.overrides.TorchFunctionMode):
    """Each new floating-point tensor a torch function returns is detached, so that the
    trace records aten::detach after it (results written in place are left as they are)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        caller = sys._getframe(1)
        while caller.f_back is not None and caller.f_code.co_filename == torch.overrides.__file__:
            caller = caller.f_back  # the mode's dispatch
        result = _called_from(caller, func, args, kwargs or {})
        arguments = [a for a in torch.utils._pytree.tree_flatten((args, kwargs))[0]
                     if isinstance(a, torch.Tensor)]

        def detached(r):
            new = not any(r is a for a in arguments)
            return r.detach() if new and r.is_floating_point() else r
        return torch.utils._pytree.tree_map(
            lambda r: detached(r) if isinstance(r, torch.Tensor) else r, result)


@contextlib.contextmanager
def _model_no_grad_detached():
    """The trace runs under no_grad, so it does not record where the model's forward turns
    gradients off itself (a teacher or target network under `with torch.no_grad()`, a
    @torch.no_grad method), and monet would differentiate through it. While tracing, the
    model's grad mode is kept aside from the real one (torch.is_grad_enabled and
    torch._C._set_grad_enabled, which every grad-mode context calls, read and write it;
    torch.inference_mode turns it off as no_grad does), and while the model has it off,
    what it computes is detached (_ResultsDetached)."""
    own = torch.is_grad_enabled, torch._C._set_grad_enabled
    model = {"enabled": True, "mode": None}

    def set_enabled(enabled):
        model["enabled"] = bool(enabled)
        if not enabled and model["mode"] is None:
            model["mode"] = _ResultsDetached()
            model["mode"].__enter__()
        elif enabled and model["mode"] is not None:
            model["mode"].__exit__(None, None, None)
            model["mode"] = None

    inference = torch.inference_mode.__enter__, torch.inference_mode.__exit__

    def enter_inference(context):  # as no_grad, for what the model computes
        context._monet_grad_enabled = model["enabled"]
        if context.mode:
            set_enabled(False)

    def exit_inference(context, *_):
        set_enabled(context._monet_grad_enabled)

    torch.is_grad_enabled = lambda: model["enabled"]
    torch._C._set_grad_enabled = set_enabled
    torch.inference_mode.__enter__, torch.inference_mode.__exit__ = enter_inference, exit_inference
    try:
        yield
    finally:
        set_enabled(True)
        torch.is_grad_enabled, torch._C._set_grad_enabled = own
        torch.inference_mode.__enter__, torch.inference_mode.__exit__ = inference


def _refuse_python_functions(traced):
    """A torch.autograd.Function's call is recorded as one Python operator, without its
    code: refused in one line, naming it and where the model calls it."""
    for node in traced.inlined_graph.nodes():
        if node.kind() == "prim::PythonOp":
            frames = node.sourceRange().splitlines()
            where = f" at {frames[0]}" if frames else ""
            raise UnsupportedOperator(
                f"the model calls the Python autograd function '{node.pyname()}'{where}: a "
                "trace records the call but not its Python forward and backward, and monet "
                "runs traced ATen operators only; write it with torch operators",
                "prim::PythonOp", frames[0] if frames else "")


# Trace nodes whose result follows the shape of their input, not its values.
_SHAPE_READS = {"aten::size", "aten::dim", "aten::numel", "aten::len", "prim::device",
                "prim::dtype"}
# Tensor methods that make a Python value of a tensor, and how the message names them.
_CONVERSIONS = {"item": ".item()", "tolist": ".tolist()", "numpy": ".numpy()",
                "__float__": "float()", "__int__": "int()", "__index__": "an index",
                "__complex__": "complex()", "__bool__": "a branch (bool())"}


def _reads_values(tensor):
    """Whether the traced `tensor` follows the values of the model's inputs, parameters or
    buffers (the trace's inputs), not only shapes and constants."""
    try:
        value = torch._C._get_value_trace(tensor)
    except RuntimeError:  # made outside the trace: a constant
        return False
    seen, pending = set(), [value]
    while pending:
        v = pending.pop()
        if v.unique() in seen:
            continue
        seen.add(v.unique())
        node = v.node()
        if node.kind() == "prim::Param":
            return True
        if node.kind() not in _SHAPE_READS:
            pending.extend(node.inputs())
    return False


@contextlib.contextmanager
def _computed_numbers_refused():
    """A trace records a Python number or branch made of a tensor as the example batch's
    constant, so the plan would reuse that value at every step. While tracing, making one of
    a tensor the model computes (h.max().item(), float(t), t.numpy(), `if t.any():`) in
    the model's code is refused, naming the line; torch's own checks (argument validation
    in torch.distributions) and anything made of shapes alone are left alone, without the
    trace's warning."""
    own = {name: getattr(torch.Tensor, name) for name in _CONVERSIONS}
    torch_dir = torch.__file__.rsplit("/", 1)[0] + "/"

    def guarded(name):
        def conversion(self, *args, **kwargs):
            caller = sys._getframe(1)
            if (torch._C._is_tracing() and not caller.f_code.co_filename.startswith(torch_dir)
                    and _reads_values(self)):
                where = f"{caller.f_code.co_filename}:{caller.f_lineno}"
                raise UnsupportedOperator(
                    f"the model makes a Python value of a tensor it computes ({_CONVERSIONS[name]} "
                    f"at {where}): a trace keeps the example batch's value at every step; keep "
                    "it a tensor (torch.where for a branch), or read it outside forward() if it "
                    "is only logged", _CONVERSIONS[name], where)
            with warnings.catch_warnings():  # a shape, or torch's check: the trace's is right
                warnings.simplefilter("ignore", torch.jit.TracerWarning)
                return own[name](self, *args, **kwargs)
        return conversion

    for name in _CONVERSIONS:
        setattr(torch.Tensor, name, guarded(name))
    try:
        yield
    finally:
        for name, method in own.items():
            setattr(torch.Tensor, name, method)


class _ResultNotTraceable(Exception):
    """The module's forward ran and returned what a trace cannot return (a dataclass,
    lists inside a dict)."""


class StepBeside:
    """What a planned step does in Python beside the plan, as the module's forward does it
    in PyTorch, recorded while tracing: each counting batch norm's training forwards (a
    dict by module: what a step adds to its num_batches_tracked) and the renormalisations
    of nn.Embedding(max_norm=...) whose ids are an input ((embedding, position of the ids
    among the flat inputs)), made in place before the planned forward."""

    def __init__(self):
        self.batch_norm_forwards = {}
        self.embedding_renorms = []

    def before_forward(self, inputs, shapes=None):
        """Renormalises the rows of `inputs` (the flat inputs of a call) that each lifted
        embedding looks up, as F.embedding does before its lookup; with the planned
        `shapes`, none when the ids do not have theirs (the planned call then fails,
        changing nothing)."""
        with torch.no_grad():
            for embedding, k in self.embedding_renorms:
                if shapes is None or list(inputs[k].shape) == list(shapes[k]):
                    torch.embedding_renorm_(embedding.weight, inputs[k], embedding.max_norm,
                                            embedding.norm_type)

    def after_forward(self):
        """Counts each batch norm's training forwards, as nn.BatchNorm does."""
        with torch.no_grad():
            for m, forwards in self.batch_norm_forwards.items():
                if m.training:
                    m.num_batches_tracked.add_(forwards)


@contextlib.contextmanager
def _recorded_beside(module, inputs, beside):
    """While tracing: counts into `beside` the training forwards of each batch norm that
    tracks its running statistics (none for one forward does not call, two for one it
    applies twice), and has each nn.Embedding with max_norm whose ids are one of `inputs`
    look up without renormalising (its renormalisation recorded instead: the planned step
    makes it before the plan runs; an embedding whose ids the model computes keeps its
    forward, whose in-place renormalisation of a parameter the import refuses)."""
    flat = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]

    def count(m, _arguments):
        if m.training:
            beside.batch_norm_forwards[m] = beside.batch_norm_forwards.get(m, 0) + 1

    def lookup(embedding, ids):
        position = next((k for k, x in enumerate(flat) if x is ids), None)
        if position is None:
            return type(embedding).forward(embedding, ids)
        beside.embedding_renorms.append((embedding, position))
        return torch.nn.functional.embedding(ids, embedding.weight, embedding.padding_idx,
                                             None, embedding.norm_type,
                                             embedding.scale_grad_by_freq, embedding.sparse)

    hooks = [m.register_forward_pre_hook(count) for m in module.modules()
             if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
             and m.track_running_stats and m.num_batches_tracked is not None]
    renormed = [m for m in module.modules()
                if type(m) is torch.nn.Embedding and m.max_norm is not None
                and "forward" not in m.__dict__]
    for m in renormed:
        m.forward = lookup.__get__(m)
    try:
        yield
    finally:
        for h in hooks:
            h.remove()
        for m in renormed:
            del m.forward


def _traced(module, inputs):
    """(the trace of `module` on `inputs`, what its forward returned, what a planned step
    does beside the plan: a StepBeside)."""
    if isinstance(module, torch.jit.ScriptModule):
        return module, None, StepBeside()
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"monet plans a torch.nn.Module, not {type(module).__name__}")
    returned = []

    def keep(_module, _arguments, result):  # stops the trace at a result it cannot return
        returned.append(result)
        if not traceable(result):
            raise _ResultNotTraceable()

    _refuse_uninitialized(module)
    _warn_of_forward_hooks(module)
    hook = module.register_forward_hook(keep)
    beside = StepBeside()
    with _state_kept(module), torch.no_grad(), _checkpoints_inlined(), \
            _cumulative_averages_traced(module), _model_no_grad_detached(), \
            _computed_numbers_refused(), _recorded_beside(module, inputs, beside):
        try:
            # strict=False: a module returning a dict (torchvision's segmentation models).
            traced = torch.jit.trace(module, inputs, check_trace=False, strict=False)
        except (_ResultNotTraceable, UnsupportedOperator):
            raise
        except Exception as e:  # the model's own error on the example input, in one line
            raise _trace_failure(module, e) from e
        finally:
            hook.remove()
    _refuse_python_functions(traced)
    return traced, returned[-1] if returned else None, beside


def _warn_of_forward_hooks(module):
    """Forward hooks run while monet traces the module, once: what they return is in the
    plan, but a hook that records what it sees (feature extraction) records the trace's
    tensors and nothing at the planned steps. Warns naming the modules that have one
    (PyTorch's weight parametrizations by hook, spectral_norm's and pruning's, aside)."""
    def own(hooks):  # not PyTorch's weight parametrizations (spectral_norm, pruning)
        return [h for h in hooks.values() if not type(h).__module__.startswith("torch.nn.utils")]
    hooked = [name or type(m).__name__ for name, m in module.named_modules()
              if own(m._forward_hooks) or own(m._forward_pre_hooks)]
    hooked += ["every module (a global hook)"] if (
        torch.nn.modules.module._global_forward_hooks
        or torch.nn.modules.module._global_forward_pre_hooks) else []
    if hooked:
        more = f" and {len(hooked) - 1} more" if len(hooked) > 1 else ""
        warnings.warn(
            f"forward hooks on '{hooked[0]}'{more} run once, while monet traces the model, "
            "not at each planned step: what they return is part of the plan, but one that "
            "records tensors sees only the trace's; return what it records from forward() "
            "instead", UserWarning, stacklevel=_callers_level())


def _callers_level():
    """warnings.warn's stacklevel of the first caller outside monet (the user's line)."""
    here, level = __file__.rsplit("/", 1)[0] + "/", 2
    frame = sys._getframe(2)
    while frame is not None and (frame.f_code.co_filename.startswith(here)
                                 or frame.f_code.co_filename == contextlib.__file__):
        frame, level = frame.f_back, level + 1
    return level


def _refuse_uninitialized(module):
    """Lazy modules (nn.LazyLinear, LazyConv2d, LazyBatchNorm2d) make their parameters at
    their first forward: PyTorch asks for one before anything else uses them."""
    lazy = [name for name, t in list(module.named_parameters()) + list(module.named_buffers())
            if isinstance(t, torch.nn.parameter.UninitializedTensorMixin)]
    if lazy:
        raise ValueError(
            f"the module's lazy modules have not made their parameters yet ('{lazy[0]}'"
            f"{f' and {len(lazy) - 1} more' if len(lazy) > 1 else ''}): run it once on a "
            "batch (model(x)) before monet.optimize, as before building its optimizer")


def _trace_failure(module, e):
    """The module's error on the example input, in one line."""
    first = (str(e).strip().splitlines() or [""])[0]
    inner = module.module if isinstance(module, Flattened) else module
    what = (f"{type(inner.module).__name__}.forward and the loss on the example input and "
            "target" if isinstance(inner, WithLoss)
            else f"{type(inner).__name__}.forward on the example input")
    hint = ""
    if "register a hook on a tensor" in first or "retain_grad" in first:
        hint = (" (monet traces the forward without autograd and computes the backward "
                "itself: a gradient hook or retain_grad() inside forward() cannot change or "
                "see it; remove it, or write the gradient's change with torch operators)")
    elif "backward hooks" in first:
        hint = (" (monet computes the backward itself and runs no module backward hooks: "
                "remove them)")
    elif isinstance(inner, WithLoss) and inner.output is None and inner.returned:
        hint = (f" (the loss gets the whole {inner.returned} the module returns, as "
                "loss(module(x), target) does in PyTorch; output= picks one of its "
                "outputs for it)")
    return UnsupportedOperator(f"tracing {what} failed: {type(e).__name__}: {first}{hint}",
                               "torch.jit.trace")
