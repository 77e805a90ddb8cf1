"""What a planned training step runs besides the module: the caller's loss traced into
the plan (WithLoss), and optimizer updates fused into the planned backward
(optimizer_memory, one_parameter_step)."""
import torch

from ._structure import named_tensors, select

#: torch.optim classes whose updates monet fuses into the backward.
FUSABLE_OPTIMIZERS = (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW)


class WithLoss(torch.nn.Module):
    """`module` followed by `loss(output, target)`, the target its last argument: what
    monet traces for a loss inside the plan, so that the plan frees the output (a language
    model's logits) where its own backward is done with it. `output` picks the output of
    a module returning a tuple or dict (an index or key) for the loss; without it the loss
    gets whatever the module returns, as `loss(module(x), target)` does in PyTorch (a
    VAE's reconstruction, mean and log-variance together). It returns the loss first,
    then the module's other output tensors: the trace keeps what computes them, and the
    import drops it again except where it updates state (a batch norm's running
    statistics on an auxiliary head), as PyTorch's forward updates it."""

    def __init__(self, module, loss, output=None):
        super().__init__()
        self.module = module
        self.loss = loss  # a module's tensors (class weights) trace as constants
        self.output = output
        self.returned = None  # the type of what the module returned, when not a tensor
        # The module's mode, not its submodules' (a frozen batch norm stays in eval()): the
        # import runs what the trace records in evaluation mode as recorded only inside a
        # model traced in training mode.
        self.training = module.training

    def forward(self, *args):
        *inputs, target = args
        outputs = self.module(*inputs)
        if not isinstance(outputs, torch.Tensor):
            self.returned = type(outputs).__name__
        if self.output is None:
            return (self._loss(outputs, target),)
        # "0": a tuple's first, as the importer reads it; a key, field or path ("aux.0").
        out = select(outputs, self.output)
        others = [t for _, t in named_tensors(outputs) if t is not out]
        return (self._loss(out, target), *others)

    def _loss(self, output, target):
        value = self.loss(output, target)
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"the loss returned a {type(value).__name__}; monet's loss= must "
                            "return the loss tensor (reduce what it computes to the value "
                            "backward() starts from)")
        return value


# State tensors of a parameter's size that torch.optim's other optimizers keep per
# parameter (for the memory name they plan as).
_STATE_TENSORS = {"Adagrad": 1, "ASGD": 1, "Adadelta": 2, "Adamax": 2, "NAdam": 2, "RAdam": 2,
                  "Rprop": 2}


def _memory_name_hint(optimizer):
    """The optimizer= name whose state matches `optimizer`'s memory (a parameter-sized
    tensor per state entry: 'sgd-momentum' one, 'adam' two), as advice."""
    kind = type(optimizer).__name__
    groups = optimizer.param_groups
    if kind == "RMSprop":
        count = (1 + any(g.get("momentum", 0) for g in groups)
                 + any(g.get("centered") for g in groups))
    else:
        count = _STATE_TENSORS.get(kind)
    if count is None:
        return ("optimizer=<the name whose state matches its memory: 'sgd', 'sgd-momentum', "
                "'adam'>")
    name = {0: "sgd", 1: "sgd-momentum"}.get(count, "adam")
    more = (f" and reserved_bytes for {count - 2} more tensor(s) the size of the parameters"
            if count > 2 else "")
    return (f"optimizer='{name}' ({count} state tensor(s) per parameter, as {kind} "
            f"keeps){more}")


def optimizer_memory(optimizer, weight_decay, optimizer_update):
    """(memory name, weight decay, update mode) for `optimizer=`: a name, or a torch.optim
    instance whose updates are then fused by default."""
    if isinstance(optimizer, torch.optim.Optimizer):
        if not isinstance(optimizer, FUSABLE_OPTIMIZERS):
            if optimizer_update == "after-backward":
                raise TypeError(
                    f"optimizer={type(optimizer).__name__}: for the after-backward update "
                    "mode give the optimizer's name as far as memory goes ('none', 'sgd', "
                    "'sgd-momentum', 'adam') and call its step() after the backward")
            raise TypeError(
                f"monet fuses the updates of torch.optim.SGD, Adam and AdamW into the "
                f"backward, not {type(optimizer).__name__}'s: plan with "
                f"optimizer_update='after-backward' and {_memory_name_hint(optimizer)}, and "
                "call its step() after the backward")
        groups = optimizer.param_groups
        if isinstance(optimizer, torch.optim.SGD):
            name = "sgd-momentum" if any(g["momentum"] for g in groups) else "sgd"
        else:
            name = "adam"
        # foreach=True is the same arithmetic on a list of tensors: each fused update
        # steps a list of one, with the same temporaries.
        if optimizer_update != "after-backward" and \
                any(g.get("maximize") or g.get("differentiable") for g in groups):
            raise ValueError(
                f"monet fuses {type(optimizer).__name__}'s plain updates (maximize and "
                "differentiable off): minimise the negated objective instead of maximize=True, "
                "or plan with optimizer_update='after-backward' and call its step() after the "
                "backward")
        decay = max(g["weight_decay"] for g in groups)
        return name, max(weight_decay, decay), optimizer_update or "fused"
    if optimizer_update == "fused":
        raise ValueError("optimizer_update='fused' needs the optimizer itself "
                         "(optimizer=torch.optim.SGD(...), Adam or AdamW), not a name")
    return optimizer, weight_decay, optimizer_update or "after-backward"


def one_parameter_step(optimizer):
    """update(parameter): the optimizer's own step() on that one parameter (its .grad is
    complete), with its group's current options and its state in optimizer.state: exactly
    torch.optim's arithmetic, one parameter at a time."""
    groups = {}

    def update(parameter):
        if len(groups) != sum(len(g["params"]) for g in optimizer.param_groups):
            groups.clear()
            groups.update({id(p): g for g in optimizer.param_groups for p in g["params"]})
        group = groups.get(id(parameter))
        if group is None:
            return  # a parameter the optimizer does not train
        saved = optimizer.param_groups
        optimizer.param_groups = [dict(group, params=[parameter])]
        try:
            optimizer.step()
        finally:
            optimizer.param_groups = saved

    return update


def check_optimizer_holds(optimizer, module):
    """The fused optimizer must step the module's own parameter tensors."""
    held = {id(p) for g in optimizer.param_groups for p in g["params"]}
    if not held & {id(p) for p in module.parameters()}:
        raise ValueError("the optimizer holds none of the module's parameters: make it "
                         "from module.parameters()")
