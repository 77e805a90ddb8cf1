"""Models in forms a trace handles specially train like PyTorch: TorchScript code inside a
traced model (a scripted function with a branch and a loop on shapes: the branch taken,
the loop unrolled), parameters laid out channels_last (made contiguous at planning),
random draws from PyTorch's default generator (torch.randn_like, torch.rand in forward:
new at every step, the same under every plan), calls with keyword arguments, parameters
as the input of a layer, batch norms called twice or never, models in bfloat16 (with
float32 upcasts), and what is refused in one line (a branch on a computed value, a Python
number made of one)."""
import copy
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import monet
from test_model_corpus import (batches, check_every_plan_trains_alike, check_trains_like_pytorch,
                               planned_steps)
from test_training import train, worst_state_error


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


class GaussianHead(nn.Module):
    """A torch.distributions.Normal's log-density in forward (the distribution validates
    its arguments with bool() of computed tensors, inside torch) and int() of a shape."""

    def __init__(self):
        super().__init__()
        self.conv, self.mu, self.log_sigma = nn.Conv2d(3, 8, 3), nn.Linear(8, 10), nn.Linear(8, 10)

    def forward(self, x):
        h = self.conv(x).mean((2, 3))
        batch = int(x.shape[0])
        normal = torch.distributions.Normal(self.mu(h), self.log_sigma(h).exp())
        return normal.log_prob(torch.zeros(batch, 10, dtype=x.dtype))


class InferenceModeTeacher(nn.Module):
    """A teacher run under torch.inference_mode (its output cloned, as PyTorch needs to
    save it for the backward): no gradient flows into it, as under no_grad."""

    def __init__(self):
        super().__init__()
        self.student, self.teacher = (nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(),
                                                    nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                                    nn.Linear(8, 10)) for _ in range(2))

    def forward(self, x):
        with torch.inference_mode():
            t = self.teacher(x)
        return self.student(x) * t.clone().sigmoid()


class OuterProducts(nn.Module):
    """Operands broadcasting to each other ([N, L, 1] * [N, 1, L]: the generic path),
    einsum with the permuted operand second (its gradient a strided view of a batched
    product), and a Cholesky factor (probed on positive-definite matrices)."""

    input_shape = (4, 12)

    def __init__(self):
        super().__init__()
        self.q, self.k, self.head = nn.Linear(12, 6), nn.Linear(12, 6), nn.Linear(6 + 36, 10)

    def forward(self, x):
        w = torch.sigmoid(self.q(x))
        pairs = torch.tril(w.unsqueeze(2) * w.unsqueeze(1)).sum(2)
        keys = self.k(x.unsqueeze(1).expand(-1, 6, -1) * torch.linspace(0.5, 1.5, 6)[:, None])
        scores = torch.einsum("nd,nld->nl", self.q(x), keys)
        h = self.k(x)
        factor = torch.linalg.cholesky(h.t() @ h / h.shape[0] + torch.eye(6, dtype=x.dtype))
        return self.head(torch.cat([pairs + scores, (h @ factor).repeat(1, 6)], 1))


class ParametersAsInputs(nn.Module):
    """Parameters as the input of layers: a learned constant image into a convolution and a
    transposed one (a generator's constant input), learned queries into a Linear (a
    Perceiver's latents) and a 1-D code into a Linear making another layer's weight (a
    hypernetwork). Their gradients come from generic nodes, whose backward is autograd's."""

    def __init__(self):
        super().__init__()
        self.const = nn.Parameter(torch.randn(1, 3, 8, 8))
        self.conv, self.up = nn.Conv2d(3, 3, 3, padding=1), nn.ConvTranspose2d(3, 3, 1)
        self.latents, self.to_q = nn.Parameter(torch.randn(2, 8)), nn.Linear(8, 8)
        self.code, self.hyper = nn.Parameter(torch.randn(4)), nn.Linear(4, 8 * 3)
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        h = x * (self.conv(self.const) + self.up(self.const))
        keys = F.linear(h.mean((2, 3)), self.hyper(self.code).view(8, 3))
        scores = torch.softmax(keys @ self.to_q(self.latents).t(), 1)
        return self.head(scores @ self.to_q(self.latents))


class BatchNormsCounted(nn.Module):
    """A batch norm applied twice, one never called and one kept in evaluation mode: each
    step adds to num_batches_tracked what nn.BatchNorm's calls add (2, 0 and 0)."""

    def __init__(self):
        super().__init__()
        self.conv, self.head = nn.Conv2d(3, 3, 3, padding=1), nn.Linear(3, 10)
        self.twice, self.unused, self.frozen = (nn.BatchNorm2d(3) for _ in range(3))

    def train(self, mode=True):
        super().train(mode)
        self.frozen.eval()
        return self

    def forward(self, x):
        return self.head(self.frozen(self.twice(self.conv(self.twice(x)))).mean((2, 3)))


@pytest.mark.parametrize("make", [ScriptedCode, ChannelsLast, GaussianHead, InferenceModeTeacher,
                                  OuterProducts, ParametersAsInputs,
                                  BatchNormsCounted])
def test_trains_like_pytorch(make, cache_dir):
    torch.manual_seed(0)
    model = make().double().train()
    xs, ys, loss_fn = batches("features", getattr(make, "input_shape", (2, 3, 8, 8)))
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


class VariationalHead(nn.Module):
    """A VAE's reparameterisation: mu + torch.randn_like(mu) * sigma."""

    def __init__(self):
        super().__init__()
        self.enc, self.mu, self.log_var = nn.Linear(12, 16), nn.Linear(16, 4), nn.Linear(16, 4)
        self.dec = nn.Linear(4, 10)

    def forward(self, x):
        h = F.relu(self.enc(x))
        mu, log_var = self.mu(h), self.log_var(h)
        return self.dec(mu + torch.randn_like(mu) * (0.5 * log_var).exp())


class NoisedInput(nn.Module):
    """Noise of the input's shape (torch.randn of a size, no tensor read) and a per-sample
    keep mask from torch.rand, as diffusion and stochastic-depth code write them."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(12, 16), nn.Linear(16, 10)

    def forward(self, x):
        h = torch.tanh(self.a(x + 0.5 * torch.randn(x.shape, dtype=x.dtype)))
        return self.b(h * (torch.rand(x.shape[0], 1, dtype=x.dtype) > 0.3).to(x.dtype))


class RandomMasking(nn.Module):
    """MAE's random masking: keep the tokens of the lowest torch.rand noise."""

    def __init__(self):
        super().__init__()
        self.embed, self.enc, self.head = nn.Linear(12, 8), nn.Linear(8, 8), nn.Linear(8, 10)

    def forward(self, x):
        t = self.embed(x).unsqueeze(1).expand(-1, 6, -1) * torch.arange(1, 7, dtype=x.dtype)[:, None]
        keep = torch.argsort(torch.rand(t.shape[0], 6), dim=1)[:, :3]
        kept = torch.gather(t, 1, keep.unsqueeze(-1).expand(-1, -1, t.shape[2]))
        return self.head(torch.relu(self.enc(kept)).mean(1))


class SelfNormalising(nn.Module):
    """SELU with nn.AlphaDropout (aten::alpha_dropout, on the generic path)."""

    def __init__(self):
        super().__init__()
        self.a, self.drop, self.b = nn.Linear(12, 16), nn.AlphaDropout(0.2), nn.Linear(16, 10)

    def forward(self, x):
        return self.b(self.drop(F.selu(self.a(x))))


class DroppedLSTM(nn.Module):
    """A 2-layer LSTM with dropout between its layers (drawn inside aten::lstm) whose
    output and final state the model both reads: two nodes of one call, drawing alike."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(12, 16, num_layers=2, dropout=0.5, batch_first=True)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        out, (h, _) = self.rnn(x.unsqueeze(1).expand(-1, 5, -1).contiguous())
        return self.head(out[:, -1] + h[-1])


@pytest.mark.parametrize("make", [VariationalHead, NoisedInput, RandomMasking, SelfNormalising,
                                  DroppedLSTM])
def test_default_generator_draws_are_new_each_step_and_the_same_under_every_plan(
        make, cache_dir):
    """Each draw is a node seeded by the step and the node: a recomputation draws what the
    forward drew, so store-all, Chen's checkpoints and MONeT's leanest plan train to the
    same weights; the same batch twice sees new noise."""
    torch.manual_seed(0)
    base = make().double().train()
    xs, ys, loss_fn = batches("features", (4, 12))
    kw = dict(optimizer="sgd-momentum", cache_dir=cache_dir, search_limit="work")
    check_every_plan_trains_alike(base, xs, ys, loss_fn, "smallest", kw)
    fast = monet.optimize(copy.deepcopy(base), xs[0], planner="storeall", **kw)
    same_batch = []
    for _ in range(2):  # no optimizer given: backward leaves .grad, the weights stay
        loss = loss_fn(fast(xs[0]), ys[0])
        loss.backward()
        same_batch.append(loss.item())
    assert same_batch[0] != same_batch[1]


class MaskedEncoder(nn.Module):
    """forward(input_ids, attention_mask=None), as Hugging Face models name them."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 16)
        self.att = nn.MultiheadAttention(16, 2, batch_first=True)
        self.head = nn.Linear(16, 20)

    def forward(self, input_ids, attention_mask=None):
        h = self.emb(input_ids)
        h, _ = self.att(h, h, h, key_padding_mask=attention_mask == 0)
        return self.head(h)


def test_arguments_given_by_keyword_are_forwards_in_its_order(cache_dir):
    torch.manual_seed(0)
    model = MaskedEncoder().double()
    ids = torch.randint(0, 20, (2, 5))
    mask = torch.ones(2, 5, dtype=torch.long)
    mask[1, 3:] = 0
    fast = monet.optimize(model, (ids, mask), planner="storeall", cache_dir=cache_dir)
    want = fast(ids, mask)
    assert torch.equal(fast(ids, attention_mask=mask), want)
    assert torch.equal(fast(**dict(input_ids=ids, attention_mask=mask)), want)
    with pytest.raises(TypeError, match="unexpected keyword argument 'mask'"):
        fast(ids, mask=mask)

    def loss(out, y):
        return F.cross_entropy(out.flatten(0, 1), y.flatten())

    inside = monet.optimize(model, (ids, mask), planner="storeall", cache_dir=cache_dir,
                            loss=loss, target=ids)
    want = inside(ids, mask, ids)
    want.backward()
    for got in (inside(ids, attention_mask=mask, target=ids),
                inside(input_ids=ids, attention_mask=mask, target=ids),
                inside(ids, ids, attention_mask=mask)):  # the target last positional
        assert torch.equal(got, want)
        got.backward()


class ScaledByItem(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 10)

    def forward(self, x):
        h = torch.tanh(self.fc(x))
        return h / h.abs().max().item()


class ScaledByNumpy(ScaledByItem):
    def forward(self, x):
        return self.fc(x / float(x.detach().numpy().std()))


class BranchOnValues(ScaledByItem):
    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:
            return h
        return -h


@pytest.mark.parametrize("make, made", [(ScaledByItem, ".item()"), (ScaledByNumpy, ".numpy()"),
                                        (BranchOnValues, "a branch (bool())")])
def test_a_python_value_of_a_computed_tensor_is_refused_in_one_line(make, made, cache_dir):
    """A trace would keep the example batch's value at every step."""
    with pytest.raises(monet.UnsupportedOperator) as e:
        monet.plan(make(), torch.randn(4, 12), planner="storeall", cache_dir=cache_dir)
    assert f"makes a Python value of a tensor it computes ({made} at " in str(e.value)
    assert "test_model_forms.py:" in e.value.source
    assert "\n" not in str(e.value)


def test_a_forward_hook_is_named_in_a_warning_and_a_backward_hook_refused(cache_dir):
    """Forward hooks run once, while tracing (what they record is the trace's); PyTorch's
    own parametrizations by hook (spectral_norm) are not warned of; module backward hooks
    never run under monet's backward and are refused saying so."""
    model = nn.Sequential(nn.utils.spectral_norm(nn.Linear(12, 16)), nn.ReLU(),
                          nn.Linear(16, 10))
    model[2].register_forward_hook(lambda module, inputs, output: None)
    with pytest.warns(UserWarning, match="forward hooks on '2' run once") as caught:
        monet.plan(model, torch.randn(4, 12), planner="storeall", cache_dir=cache_dir)
    assert len(caught) == 1 and caught[0].filename == __file__
    model[0].register_full_backward_hook(lambda module, grad_in, grad_out: None)
    with pytest.raises(monet.UnsupportedOperator, match="runs no module backward hooks"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the forward hook's, as above
        monet.plan(model, torch.randn(4, 12), planner="storeall", cache_dir=cache_dir)


def test_the_results_of_one_random_call_draw_alike(cache_dir):
    """The LSTM's last output and its final state are one tensor's values in PyTorch: the
    two nodes monet makes of the call draw the same dropout."""
    torch.manual_seed(0)
    model = DroppedLSTM().double().train()

    def last_output_less_final_state(x):
        out, (h, _) = model.rnn(x)
        return out[:, -1] - h[-1]

    model.forward = last_output_less_final_state
    x = torch.randn(4, 5, 12, dtype=torch.float64)
    assert torch.equal(model(x), torch.zeros(4, 16, dtype=torch.float64))
    fast = monet.optimize(model, x, planner="storeall", cache_dir=cache_dir)
    assert torch.equal(fast(x), torch.zeros(4, 16, dtype=torch.float64))


class StepCountedInPython(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.step = nn.Linear(12, 10), 0

    def forward(self, x):
        self.step += 1
        return self.fc(x) * min(1.0, self.step / 10)


def test_a_python_number_forward_changes_is_warned_of_and_put_back(cache_dir):
    """The trace runs forward once: the counter is put back, and the warning says the
    planned steps neither change nor read it."""
    model = StepCountedInPython()
    with pytest.warns(UserWarning, match="changes the Python number 'StepCountedInPython.step'"):
        monet.plan(model, torch.randn(4, 12), planner="storeall", cache_dir=cache_dir)
    assert model.step == 0


class RenormalisedEmbedding(nn.Module):
    """nn.Embedding(max_norm=...) on the token ids (renormalising the rows it looks up, in
    place, before each lookup) with its weight tied to the output head."""

    def __init__(self, shifted=False):
        super().__init__()
        self.shifted = shifted
        self.embedding = nn.Embedding(32, 8, max_norm=1.0, padding_idx=0)
        with torch.no_grad():
            self.embedding.weight.mul_(3.0)  # rows above the norm: renormalised when seen

    def forward(self, ids):
        return self.embedding(ids.flip(1) if self.shifted else ids) @ self.embedding.weight.t()


def test_an_embedding_with_max_norm_renormalises_as_pytorch(cache_dir):
    """The rows the step's ids select are renormalised before the planned forward, as
    F.embedding does (training steps equal PyTorch's; evaluation too); ids the model
    computes are refused in one line (the import does not update parameters in forward)."""
    torch.manual_seed(0)
    model = RenormalisedEmbedding().double().train()
    xs, ys, loss_fn = batches("tokens", (2, 6))
    reference = copy.deepcopy(model)
    check_trains_like_pytorch(model, xs, ys, loss_fn, None, cache_dir)
    norms = model.embedding.weight.norm(dim=1)
    assert norms.max() > 1.5 and norms[xs[0].unique()].max() <= 1.0 + 1e-6  # only rows seen
    fast = monet.optimize(reference, xs[0], planner="storeall", cache_dir=cache_dir)
    expected = copy.deepcopy(reference).eval()
    with torch.no_grad():
        assert torch.equal(fast.eval()(xs[1]), expected(xs[1]))
    assert torch.equal(reference.embedding.weight, expected.embedding.weight)
    with pytest.raises(monet.UnsupportedOperator, match="embedding_renorm_"):
        monet.plan(RenormalisedEmbedding(shifted=True), xs[0], planner="storeall",
                   cache_dir=cache_dir)


class RMSNormDecoder(nn.Module):
    """A LLaMA-style block for bfloat16 on [N, T, 16]: RMSNorm computed in float32
    (x.float(), then type_as), attention scores softmaxed in float32, and float32 logits
    for the loss, as such models upcast."""

    def __init__(self):
        super().__init__()
        self.norm = nn.Parameter(torch.ones(16))
        self.qkv = nn.Linear(16, 48, bias=False)
        self.head = nn.Linear(16, 10, bias=False)

    def forward(self, x):
        h = x.float()
        h = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).type_as(x) * self.norm
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        scores = torch.softmax((q @ k.transpose(-1, -2)).float() / 4, dim=-1).type_as(v)
        return self.head(x + scores @ v).float().mean(1)


class BfloatConvNet(nn.Module):
    """Convolution (no bias: a batch norm follows), batch norm, ReLU, a strided convolution,
    max pooling and a Linear on [N, 3, 8, 8]."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(), nn.Conv2d(8, 8, 3, stride=2, padding=1),
                                  nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 2 * 2, 10))

    def forward(self, x):
        return self.body(x)


class ConvNeXtStage(nn.Module):
    """Two of torchvision's ConvNeXt blocks of width 32 on [N, 32, 1, 1] (ConvNeXt's last
    stage at small images): each block's result, permuted back from channels-last, has
    channels-last strides on its size-1 dimensions, on which PyTorch's bfloat16 depthwise
    convolution takes a path with a dense weight: monet's results get standard strides,
    as the profile's inputs have, so that the run is the one profiled."""

    def __init__(self):
        super().__init__()
        from torchvision.models.convnext import CNBlock
        self.blocks = nn.Sequential(CNBlock(32, 1e-6, 0.0), CNBlock(32, 1e-6, 0.0))
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.blocks(x).mean((2, 3)))


@pytest.mark.parametrize("make, shape, of_float32", [(RMSNormDecoder, (4, 6, 16), 0.8),
                                                     (BfloatConvNet, (4, 3, 8, 8), 0.6),
                                                     (ConvNeXtStage, (4, 32, 1, 1), 0.6)])
def test_a_bfloat16_model_trains_like_pytorch_in_bfloat16(make, shape, of_float32, cache_dir):
    """A bfloat16 model is planned and trained in bfloat16 (its float32 upcasts in float32,
    as PyTorch computes them): 3 SGD-momentum steps at the midpoint budget give PyTorch's
    losses (in its type) and parameters to bfloat16's rounding (implementations round differently), the
    parameters stay bfloat16, each step's tracked rise is the predicted one (to two float32
    loss scalars), the plan counts 2 bytes an element (its store-all peak below
    `of_float32` of the same model's in float32, 0.6 where everything is bfloat16), and
    Chen's checkpoints (recomputing) train alike."""
    torch.manual_seed(0)
    model = make().to(torch.bfloat16).train()
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(shape, generator=g).to(torch.bfloat16) for _ in range(3)]
    ys = [torch.randint(0, 10, (shape[0],), generator=g) for _ in range(3)]
    reference, reference_start = copy.deepcopy(model), copy.deepcopy(model)
    want, _ = train(reference, reference, "sgd-momentum", xs, ys, F.cross_entropy)
    kw = dict(loss=F.cross_entropy, target=ys[0], optimizer="sgd-momentum",
              cache_dir=cache_dir, search_limit="work")
    r = monet.budget_range(model, xs[0], **kw)
    in_float32 = monet.budget_range(copy.deepcopy(model).float(), xs[0].float(), **kw)
    assert r.store_all < of_float32 * in_float32.store_all, (r.store_all, in_float32.store_all)
    fast = monet.optimize(model, xs[0], budget=(r.smallest + r.store_all) // 2, **kw)
    losses, rises = planned_steps(fast, model, xs, ys)
    predicted = fast.plan.predicted_peak - fast.plan.predicted_start
    assert all(abs(rise - predicted) <= 2 * 4 for rise in rises), (rises, predicted)
    assert losses == pytest.approx(want, rel=1e-2), (losses, want)
    # The loss in the type PyTorch computes it in (float32 from float32 logits): a bfloat16
    # loss is a number of 8 significant bits.
    def in_bfloat16(v):
        return float(torch.tensor(v).to(torch.bfloat16)) == v
    assert [in_bfloat16(v) for v in losses] == [in_bfloat16(v) for v in want], (losses, want)
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())
    assert worst_state_error(model, reference) <= 1e-2
    # Chen's checkpoints recompute, and re-run backwards on stand-ins of the inputs they
    # do not read (a float32 cast's stand-in is of its bfloat16 input's type).
    chen_model = copy.deepcopy(reference_start)
    chen = monet.optimize(chen_model, xs[0], planner="chen", **kw)
    assert planned_steps(chen, chen_model, xs, ys)[0] == pytest.approx(want, rel=1e-2)
