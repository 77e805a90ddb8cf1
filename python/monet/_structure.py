"""Arguments and results of forward that are not flat tensors. Arguments may be lists,
tuples and dicts of tensors (a list of feature maps, a batch dict); results may be what a
trace cannot return (a dataclass, lists inside a dict) or returns without its names (a
named tuple). What monet traces then is Flattened: forward's arguments as one flat
sequence of tensors (the order of torch.utils._pytree), its result a tensor or a dict of
tensors named by path ("out", "aux.0", "logits"), and output= names one of those paths."""
import dataclasses
import inspect

import torch
from torch.utils import _pytree as pytree


def flat_arguments(example_input):
    """(the example's tensors in order, the structure of forward's arguments, or None when
    every argument is a tensor): `example_input` is one argument (a tensor, or a dict
    of them) or a tuple or list of arguments, each a tensor or lists, tuples and dicts of
    them."""
    if isinstance(example_input, (tuple, list)):
        arguments = tuple(example_input)
    else:
        arguments = (example_input,)
    leaves, spec = pytree.tree_flatten(arguments)
    for leaf in leaves:
        if not isinstance(leaf, torch.Tensor):
            raise TypeError("example_input must be a tensor, or a tuple of forward's arguments, "
                            "each a tensor or lists, tuples and dicts of tensors (the batch the "
                            f"model is planned for), not one holding a {type(leaf).__name__}")
    flat = all(isinstance(a, torch.Tensor) for a in arguments)
    return tuple(leaves), None if flat else spec


def call_arguments(inputs, spec):
    """The flat tensors of a call's arguments planned with structure `spec` (None: flat)."""
    if spec is None:
        return inputs
    leaves, got = pytree.tree_flatten(tuple(inputs))
    if got != spec:
        raise TypeError(f"the module was planned for arguments structured as {spec}, "
                        f"called with {got}")
    return tuple(leaves)


def positional_arguments(forward, inputs, keywords, loss_inside):
    """A call's arguments given by keyword (fast(ids, attention_mask=mask), fast(**batch))
    as the positional arguments of `forward` (the planned module's forward), in its order;
    with the loss inside the plan, the target (target=, or the last positional argument)
    last."""
    keywords = dict(keywords)
    target = ()
    if loss_inside:
        if "target" in keywords:
            target = (keywords.pop("target"),)
        elif inputs:
            inputs, target = inputs[:-1], inputs[-1:]
    try:
        bound = inspect.signature(forward).bind(*inputs, **keywords)
    except TypeError as e:
        raise TypeError(f"the planned module's arguments: {e}") from None
    if bound.kwargs:
        raise TypeError(f"the planned module takes forward's arguments that can be given by "
                        f"position; {', '.join(bound.kwargs)} cannot be")
    return tuple(bound.args) + target


def named_tensors(value, prefix=""):
    """(path, tensor) of every tensor in a result: tuples and lists by index, dicts by key,
    named tuples and dataclasses by field; other values (None, numbers) have none."""
    def join(key):
        return f"{prefix}.{key}" if prefix else str(key)
    if isinstance(value, torch.Tensor):
        return [(prefix, value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    elif isinstance(value, tuple) and hasattr(value, "_fields"):
        items = list(zip(value._fields, value))
    elif isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, (tuple, list)):
        items = list(enumerate(value))
    else:
        return []
    return [named for key, item in items for named in named_tensors(item, join(key))]


def traceable(value):
    """Whether a trace returns `value` as it is: a tensor, or a tuple, list or dict of
    tensors."""
    if isinstance(value, torch.Tensor):
        return True
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return False
    items = value.values() if isinstance(value, dict) else value
    return isinstance(value, (tuple, list, dict)) and all(
        isinstance(v, torch.Tensor) for v in items)


def output_name(output, returned, flattened):
    """The name the importer knows for `output=` (an index, key, field or path) of a
    module that returned `returned`: a traced tuple's outputs are "0", "1", ...; a
    Flattened module's are paths."""
    if output is None or returned is None:
        return output
    name = str(output)
    fields = _fields(returned)
    if not flattened:  # a named tuple traces as a tuple: its fields are indices
        return str(fields.index(name)) if name in fields else name
    paths = [path for path, _ in named_tensors(returned)]
    if name not in paths and name.isdigit() and fields and int(name) < len(fields):
        name = fields[int(name)]  # a named tuple's or dataclass's field by position
    return name


def _fields(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [f.name for f in dataclasses.fields(value)]
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return list(value._fields)
    return []


def select(outputs, key):
    """The output `key` names in a module's result: an index, a key, a field, or a path of
    them ("aux.0")."""
    value = outputs
    for part in str(key).split("."):
        if isinstance(value, dict):
            value = value[part]
        elif isinstance(value, (tuple, list)) and part.isdigit():
            value = value[int(part)]
        else:
            value = getattr(value, part)
    return value


class Flattened(torch.nn.Module):
    """`module` as monet traces it: its arguments rebuilt from one flat sequence of
    tensors by `spec` (None: they are the tensors), its result a tensor or a dict of the
    result's tensors by path. `returned` keeps the last result, for output names."""

    def __init__(self, module, spec):
        super().__init__()
        self.module = module
        self.spec = spec
        self.returned = None
        self.training = module.training  # the mode the importer reads

    def forward(self, *flat):
        arguments = flat if self.spec is None else pytree.tree_unflatten(list(flat), self.spec)
        result = self.module(*arguments)
        self.returned = result
        if isinstance(result, torch.Tensor):
            return result
        return dict(named_tensors(result))
