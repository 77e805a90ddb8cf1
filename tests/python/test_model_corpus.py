"""Models that need the generic path's list arguments, buffers as tensors and the generic
fallback of specialised operators: an einsum attention block, LSTM and GRU language
models (a recurrent layer is one generic node over its weight list), a registered buffer
fed to a Linear, a 1-D convolutional audio classifier (1-D pooling), dilated max pooling
and max pooling with indices undone by max_unpool2d, a model of two inputs (token ids and
a bool padding mask into nn.MultiheadAttention), an auxiliary head whose batch norm
updates its statistics though its logits are not trained, multi-head attention whose query, key and
value come from one projection by unbind (as timm's ViT), and operators whose result is a
list of tensors (tensor_split, hsplit, meshgrid), batch norm with running statistics and
no affine parameters, writes into slices of computed tensors, layers with computed
weights, integer tensors through operators that have floating specialisations (cat,
reshape), nn.EmbeddingBag with expanded logits, a detached branch, LSTM and GRU cells
unrolled over positions, and a spatial transformer (affine_grid, grid_sample). Each is planned at a budget
halfway between the leanest plan and store-all and trained 3 steps of SGD with momentum
in float64: losses and parameters equal PyTorch's (1e-9 relative)."""
import collections
import copy
import dataclasses
import json
import math
import os
import subprocess

import pytest
import torch

import torchvision

import monet
from test_training import make_optimizer, train, worst_state_error

STEPS = 3
TOLERANCE = 1e-9
VOCAB = 32


class EinsumAttention(torch.nn.Module):
    """Single-head self-attention written with einsum, on [N, T, 16] inputs."""

    def __init__(self, width=16):
        super().__init__()
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, 10)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = torch.einsum("ntd,nsd->nts", q, k) / 4.0
        h = torch.einsum("nts,nsd->ntd", scores.softmax(-1), v)
        return self.out(h.mean(1))


class UnbindAttention(torch.nn.Module):
    """Two-head self-attention as timm's ViT writes it: one projection reshaped to
    [3, N, heads, T, d] and unbound into query, key and value, on [N, T, 16] inputs."""

    def __init__(self, width=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, 10)

    def forward(self, x):
        n, t, c = x.shape
        qkv = self.qkv(x).reshape(n, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        h = (q @ k.transpose(-2, -1) / 8.0).softmax(-1) @ v
        return self.out(h.transpose(1, 2).reshape(n, t, c).mean(1))


class RecurrentLM(torch.nn.Module):
    """Embedding, a 2-layer LSTM or GRU, and a head: token ids [N, T] to logits [N, T, V]."""

    def __init__(self, cell):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 16)
        self.rnn = getattr(torch.nn, cell)(16, 24, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(24, VOCAB)

    def forward(self, tokens):
        h, _ = self.rnn(self.embed(tokens))
        return self.head(h)


class BufferThroughLinear(torch.nn.Module):
    """A registered table fed to a Linear (as Swin V2's continuous position bias is)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.randn(8, 4))
        self.mlp = torch.nn.Linear(4, 16)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(torch.relu(x + self.mlp(self.table).mean(0)))


class AudioNet(torch.nn.Module):
    """A 1-D convolutional classifier over [N, 1, 64] waveforms."""

    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv1d(1, 8, 5, padding=2), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
            torch.nn.MaxPool1d(2), torch.nn.Conv1d(8, 16, 3, padding=1),
            torch.nn.BatchNorm1d(16), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool1d(1))
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


class PoolingVariants(torch.nn.Module):
    """Dilated max pooling, and max pooling with indices undone by max_unpool2d."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.dilated = torch.nn.MaxPool2d(3, stride=1, padding=1, dilation=2)
        self.pool = torch.nn.MaxPool2d(2, return_indices=True)
        self.unpool = torch.nn.MaxUnpool2d(2)
        self.fc = torch.nn.Linear(8 * 6 * 6, 10)

    def forward(self, x):
        x = self.dilated(torch.relu(self.conv(x)))  # 8x8 -> 6x6
        y, indices = self.pool(x)
        return self.fc((self.unpool(y, indices) + x).flatten(1))


class TwoHeads(torch.nn.Module):
    """A classifier returning its logits and an auxiliary head's, as a tuple or a dict
    (as torchvision's segmentation models return {"out", "aux"})."""

    def __init__(self, as_dict):
        super().__init__()
        self.as_dict = as_dict
        self.body = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU())
        self.head = torch.nn.Linear(8 * 8 * 8, 10)
        self.aux = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        h = self.body(x).flatten(1)
        logits, aux = self.head(h), self.aux(h)
        return {"out": logits, "aux": aux} if self.as_dict else (logits, aux)


class AuxiliaryHead(torch.nn.Module):
    """Inception V3's pattern: a body of two results (a submodule's tuple, unpacked) and
    torchvision's InceptionAux head (pooling, two conv + batch norm + in-place ReLU,
    pooling, Linear), whose logits the model returns beside its own; trained on "0", the
    head's batch norms still update their running statistics in PyTorch's forward, and so
    in monet's."""

    class Body(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(8)

        def forward(self, x):
            h = self.bn(self.conv(x)).relu()
            return h, h.mean((2, 3))

    def __init__(self):
        super().__init__()
        self.body = AuxiliaryHead.Body()
        self.aux = torchvision.models.inception.InceptionAux(8, 10)
        self.head = torch.nn.Linear(8, 10)

    def forward(self, x):  # x: [N, 3, 17, 17], as InceptionAux's input in Inception V3
        h, pooled = self.body(x)
        return self.head(pooled), self.aux(h)


class MaskedEncoder(torch.nn.Module):
    """Two inputs: token ids [N, T] and a bool key padding mask [N, T] (True: padding)
    into nn.MultiheadAttention, then a per-position head."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 16)
        self.attention = torch.nn.MultiheadAttention(16, 2, batch_first=True)
        self.norm = torch.nn.LayerNorm(16)
        self.head = torch.nn.Linear(16, VOCAB)

    def forward(self, tokens, padding):
        h = self.embed(tokens)
        a, _ = self.attention(h, h, h, key_padding_mask=padding, need_weights=False)
        return self.head(self.norm(h + a))


class FallbackLayers(torch.nn.Module):
    """Layers whose specialised operators do not apply, on the generic path: batch norm
    without running statistics, grouped and dilated transposed convolution, 'same'
    padding."""

    def __init__(self):
        super().__init__()
        N = torch.nn
        self.body = N.Sequential(
            N.Conv2d(3, 8, 4, padding="same"), N.BatchNorm2d(8, track_running_stats=False),
            N.ReLU(), N.ConvTranspose2d(8, 8, 3, groups=2, dilation=2), N.ReLU(),
            N.Conv2d(8, 4, 3, padding="same", dilation=2), N.BatchNorm2d(4, affine=False,
                                                                          track_running_stats=False))
        self.head = N.Linear(4 * 12 * 12, 10)

    def forward(self, x):
        return self.head(self.body(x).flatten(1))


class ListResults(torch.nn.Module):
    """Operators whose result is a list of tensors: tensor_split by a count and at indices,
    hsplit, meshgrid of computed vectors (its second piece views the second input) and of
    constant aranges, on [N, 3, 8, 8] inputs."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 6, 3, padding=1)
        self.row = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(2 * 8 * 8 + 8 + 7, 10)

    def forward(self, x):
        h = self.conv(x)
        a, b, c = h.tensor_split(3, dim=1)
        top, rest = h.tensor_split([1], dim=2)
        left, right = rest.hsplit(2)
        steps = torch.arange(8, dtype=x.dtype)
        yy, xx = torch.meshgrid(steps, steps, indexing="ij")
        r = self.row(h.mean(dim=(0, 1, 2)))
        gy, gx = torch.meshgrid(r, r * 2, indexing="xy")
        m = a * b + c + gy + gx * yy / 8 - xx / 8
        return self.head(torch.cat([m.flatten(1), top.mean((1, 2)) * left.mean((1, 3)).sum(1, True),
                                    right.mean((1, 3))], 1))


class BatchNormWithoutAffine(torch.nn.Module):
    """Batch norm with running statistics and no weight or bias (affine=False), 2-D and 1-D,
    between convolutions, on [N, 3, 8, 8] inputs."""

    def __init__(self):
        super().__init__()
        N = torch.nn
        self.body = N.Sequential(N.Conv2d(3, 8, 3, padding=1), N.BatchNorm2d(8, affine=False),
                                 N.ReLU(), N.Conv2d(8, 8, 3, padding=1),
                                 N.BatchNorm2d(8, affine=False, momentum=0.3), N.ReLU())
        self.fc = N.Linear(8 * 8 * 8, 16)
        self.norm = N.BatchNorm1d(16, affine=False)
        self.head = N.Linear(16, 10)

    def forward(self, x):
        return self.head(self.norm(self.fc(self.body(x).flatten(1))).relu())


class ViewWrites(torch.nn.Module):
    """Writes into part of a computed tensor: a slice of a cloned parameter zeroed in place
    (as Swin V2 zeroes the key's share of its qkv bias), `+=` into a slice of a slice (as
    MViT V2 adds relative positions into its attention) and an index assignment, on
    [N, 2, 5, 8] inputs."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)
        self.rel = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(2 * 8, 10)

    def forward(self, x):
        bias = self.qkv.bias.clone()
        bias[8:16].zero_()
        q, k, v = torch.nn.functional.linear(x, self.qkv.weight, bias).chunk(3, dim=-1)
        attn = q @ k.transpose(-2, -1)
        attn[:, :, 1:, 1:] += self.rel(x)[:, :, 1:, 1:5]
        h = attn.softmax(-1) @ v
        h[:, :, 0] = h[:, :, 1] * 2
        return self.head(h.mean(2).flatten(1))


class ComputedWeights(torch.nn.Module):
    """Layers whose weight or bias the model computes: a weight-standardised convolution
    and a Linear whose bias is a scaled parameter (generic nodes), on [N, 3, 8, 8]."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        w = self.conv.weight
        w = (w - w.mean((1, 2, 3), keepdim=True)) / (w.std((1, 2, 3), keepdim=True) + 1e-5)
        h = torch.nn.functional.conv2d(x, w, self.conv.bias, padding=1).relu()
        return torch.nn.functional.linear(h.flatten(1), self.fc.weight, self.fc.bias * 1.5)


class IntegerTensorOps(torch.nn.Module):
    """Token ids concatenated, shifted and reshaped before their embedding (operators with
    specialised floating implementations, here on int64 tensors): [N, T] ids to
    [N, T, V] logits."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 8)
        self.head = torch.nn.Linear(16, VOCAB)

    def forward(self, tokens):
        n, t = tokens.shape
        both = (torch.cat([tokens, tokens.flip(1)], 1) + 1) % VOCAB
        e = self.embed(both.reshape(-1)).view(n, 2 * t, 8)
        return self.head(torch.cat([e[:, :t], e[:, t:]], -1))


class ExpandedBag(torch.nn.Module):
    """nn.EmbeddingBag over [N, T] ids (it flattens them) and a head whose [N, V] logits
    are expanded over the T positions: the loss reads a view of 12 times its storage's
    bytes."""

    def __init__(self):
        super().__init__()
        self.bag = torch.nn.EmbeddingBag(VOCAB, 8, mode="mean")
        self.head = torch.nn.Linear(8, VOCAB)

    def forward(self, tokens):
        return self.head(self.bag(tokens)).unsqueeze(1).expand(-1, tokens.shape[1], -1)


class DetachedFeatures(torch.nn.Module):
    """A branch of detached features (a stop-gradient, as target networks and truncated
    backpropagation use): no gradient flows back through h.detach(), on [N, 16]."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 16)
        self.b = torch.nn.Linear(16, 10)

    def forward(self, x):
        h = torch.tanh(self.a(x))
        return self.b(h + 0.5 * h.detach() ** 2)


class DetachedBranch(torch.nn.Module):
    """A branch read only through .detach() (a stop-gradient gate): its layer gets no
    gradient, and no backward runs for it."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 16)
        self.gate = torch.nn.Linear(16, 16)
        self.b = torch.nn.Linear(16, 10)

    def forward(self, x):
        g = torch.tanh(self.gate(x)).detach()
        return self.b(torch.relu(self.a(x)) * (1 + g))


class CellLoop(torch.nn.Module):
    """nn.LSTMCell and nn.GRUCell unrolled over the positions (the trace decomposes each
    cell; the states start as zeros made by new_zeros, constants of the trace): [N, T]
    ids to [N, T, V] logits."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 8)
        self.lstm = torch.nn.LSTMCell(8, 12)
        self.gru = torch.nn.GRUCell(12, 12)
        self.head = torch.nn.Linear(12, VOCAB)

    def forward(self, tokens):
        x = self.embed(tokens)
        h, c, g = (x.new_zeros(tokens.shape[0], 12) for _ in range(3))
        outs = []
        for i in range(tokens.shape[1]):
            h, c = self.lstm(x[:, i], (h, c))
            g = self.gru(h, g)
            outs.append(g)
        return self.head(torch.stack(outs, 1))


class SpatialTransformer(torch.nn.Module):
    """A spatial transformer: a Linear's [N, 6] output viewed as [N, 2, 3] affine matrices
    (a view that splits the channels but is no channel shuffle), affine_grid and
    grid_sample, on [N, 3, 8, 8]."""

    def __init__(self):
        super().__init__()
        self.loc = torch.nn.Linear(3 * 8 * 8, 6)
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.fc = torch.nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        identity = torch.tensor([[1.0, 0, 0], [0, 1.0, 0]], dtype=x.dtype)
        theta = self.loc(x.flatten(1)).view(-1, 2, 3) * 0.1 + identity
        grid = torch.nn.functional.affine_grid(theta, list(x.shape), align_corners=False)
        y = torch.nn.functional.grid_sample(x, grid, align_corners=False)
        return self.fc(self.conv(y).flatten(1))


class StochasticDepthNet(torch.nn.Module):
    """Two residual blocks whose branch torchvision's StochasticDepth drops per sample
    (p = 0.5, active: the module in training mode), on [N, 3, 8, 8]."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8),
                                torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, padding=1))
            for _ in range(2))
        self.drop = torchvision.ops.StochasticDepth(0.5, "row")
        self.head = torch.nn.Linear(8, 10)

    def forward(self, x):
        h = self.stem(x).relu()
        for block in self.blocks:
            h = h + self.drop(block(h))
        return self.head(h.mean((2, 3)))


class FractionalPoolNet(torch.nn.Module):
    """nn.FractionalMaxPool2d between two convolutions, on [N, 3, 16, 16]: its forward
    draws the pooling's samples with torch.rand, which the operator reads without a
    gradient."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.pool = torch.nn.FractionalMaxPool2d(3, output_size=5)
        self.conv2 = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.head = torch.nn.Linear(4 * 5 * 5, 10)

    def forward(self, x):
        return self.head(self.conv2(self.pool(self.conv(x))).relu().flatten(1))


class SpectralNormed(torch.nn.Module):
    """Spectral normalisation in training (a GAN discriminator's): each forward runs power
    iterations under no_grad that write the buffers weight_u and weight_v with `out=`, the
    convolution's twice (its second iteration writes into its first's result)."""

    def __init__(self):
        super().__init__()
        sn = torch.nn.utils.spectral_norm
        self.conv = sn(torch.nn.Conv2d(3, 8, 3, padding=1), n_power_iterations=2)
        self.fc = sn(torch.nn.Linear(8 * 4 * 4, 10))

    def forward(self, x):
        h = torch.nn.functional.leaky_relu(self.conv(x), 0.2)
        return self.fc(torch.nn.functional.avg_pool2d(h, 2).flatten(1))


class RunningMean(torch.nn.Module):
    """A buffer updated in place in the forward (an exponential moving average of the
    features, as a centring or a teacher network keeps), read after its update."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 8 * 8, 10)
        self.register_buffer("mean", torch.zeros(8))

    def forward(self, x):
        h = torch.relu(self.conv(x))
        with torch.no_grad():
            self.mean.mul_(0.9).add_(0.1 * h.mean((0, 2, 3)))
        return self.fc((h - self.mean.view(1, 8, 1, 1)).flatten(1))


class RunningStatistics(torch.nn.Module):
    """Running statistics updated in ways a trace does not record by itself: batch norms
    with momentum=None (a cumulative average, its factor 1 / num_batches_tracked computed
    in Python at every step) and an instance norm tracking running statistics (updated
    inside ATen's call, a side effect its schema does not declare)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8, momentum=None)
        self.inorm = torch.nn.InstanceNorm2d(8, affine=True, track_running_stats=True)
        self.fc = torch.nn.Linear(8 * 8 * 8, 16)
        self.bn1d = torch.nn.BatchNorm1d(16, momentum=None, affine=False)
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        h = self.inorm(torch.relu(self.bn(self.conv(x))))
        return self.head(torch.relu(self.bn1d(self.fc(h.flatten(1)))))


class TimestepConditioned(torch.nn.Module):
    """A diffusion model's shape: an image and one timestep per sample (a 1-D input),
    sinusoidal features of the timestep scaling and shifting group-normalised features."""

    def __init__(self):
        super().__init__()
        self.time = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.SiLU(),
                                        torch.nn.Linear(32, 16))
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.norm = torch.nn.GroupNorm(2, 8)
        self.film = torch.nn.Linear(16, 16)
        self.head = torch.nn.Linear(8, 10)

    def forward(self, x, t):
        freqs = torch.exp(-math.log(10000) * torch.arange(8, dtype=x.dtype) / 8)
        angles = t[:, None] * freqs[None]
        emb = self.time(torch.cat([torch.cos(angles), torch.sin(angles)], -1))
        scale, shift = self.film(emb).chunk(2, -1)
        h = self.norm(self.conv(x)) * (1 + scale[:, :, None, None]) + shift[:, :, None, None]
        return self.head(torch.nn.functional.silu(h).mean((2, 3)))


class FeatureLevels(torch.nn.Module):
    """forward takes a list of feature maps (a feature pyramid's levels) and fuses them."""

    def __init__(self):
        super().__init__()
        self.lateral = torch.nn.ModuleList([torch.nn.Conv2d(3, 8, 1), torch.nn.Conv2d(5, 8, 1)])
        self.head = torch.nn.Linear(8, 10)

    def forward(self, levels):
        coarse = torch.nn.functional.interpolate(self.lateral[1](levels[1]), scale_factor=2.0)
        fused = self.lateral[0](levels[0]) + coarse
        return self.head(torch.relu(fused).mean((2, 3)))


class BatchDict(torch.nn.Module):
    """forward takes the batch as a dict: images and a weight per sample."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.head = torch.nn.Linear(8, 10)

    def forward(self, batch):
        features = torch.relu(self.conv(batch["image"])).mean((2, 3))
        return self.head(features * batch["weight"][:, None])


Prediction = collections.namedtuple("Prediction", "features logits")


@dataclasses.dataclass
class Outputs:
    logits: torch.Tensor
    features: torch.Tensor
    note: str = "a field that is no tensor"


class StructuredOutputs(torch.nn.Module):
    """Results a trace returns without names (a named tuple) or not at all (a dataclass,
    a list inside a dict)."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.body = torch.nn.Linear(16, 12)
        self.head = torch.nn.Linear(12, 10)

    def forward(self, x):
        h = torch.relu(self.body(x))
        logits = self.head(h)
        if self.kind == "named_tuple":
            return Prediction(h, logits)
        if self.kind == "dataclass":
            return Outputs(logits, h)
        return {"out": logits, "aux": [h, 2 * h]}


class FourierMixing(torch.nn.Module):
    """FNet's token mixing: a Fourier transform over the features and the positions, its
    real and imaginary parts read back (complex intermediates, complex gradients)."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)
        self.norm = torch.nn.LayerNorm(16)
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        h = self.proj(x)
        c = torch.fft.fft2(h)
        return self.head(self.norm(h + c.real + 0.5 * c.imag).mean(1))


class RotaryDecoder(torch.nn.Module):
    """A LLaMA-style block: RMSNorm, rotary position embeddings applied as LLaMA's
    reference code does (pairs of features viewed as complex numbers, view_as_complex,
    multiplied by a complex table made by torch.polar, view_as_real), causal attention, a
    SwiGLU MLP, over token ids [N, T]."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 16)
        self.qkv = torch.nn.Linear(16, 48, bias=False)
        self.out = torch.nn.Linear(16, 16, bias=False)
        self.gate = torch.nn.Linear(16, 32, bias=False)
        self.up = torch.nn.Linear(16, 32, bias=False)
        self.down = torch.nn.Linear(32, 16, bias=False)
        self.head = torch.nn.Linear(16, VOCAB, bias=False)
        self.norm_weight = torch.nn.Parameter(torch.ones(16))
        angles = torch.outer(torch.arange(12.0), 1e4 ** -(torch.arange(4.0) / 4))
        self.rotation = torch.polar(torch.ones_like(angles), angles)  # [T, 4] complex

    def rms_norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.norm_weight

    def rotate(self, x):  # [N, T, heads, 8]
        n, t, heads, d = x.shape
        c = torch.view_as_complex(x.reshape(n, t, heads, d // 2, 2))
        return torch.view_as_real(c * self.rotation[:t].view(1, t, 1, d // 2)).flatten(3)

    def forward(self, tokens):
        h = self.embed(tokens)
        n, t, _ = h.shape
        q, k, v = self.qkv(self.rms_norm(h)).view(n, t, 3, 2, 8).unbind(2)
        q, k, v = self.rotate(q).transpose(1, 2), self.rotate(k).transpose(1, 2), v.transpose(1, 2)
        causal = torch.full((t, t), float("-inf"), dtype=h.dtype).triu(1)
        att = torch.softmax(q @ k.transpose(2, 3) / 8 ** 0.5 + causal, -1)
        h = h + self.out((att @ v).transpose(1, 2).reshape(n, t, 16))
        x = self.rms_norm(h)
        h = h + self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))
        return self.head(self.rms_norm(h))


class DeformableConv(torch.nn.Module):
    """torchvision.ops.DeformConv2d, its offsets from a convolution: an operator of
    torchvision's own library (torchvision::deform_conv2d) on the generic path."""

    def __init__(self):
        super().__init__()
        self.offsets = torch.nn.Conv2d(3, 18, 3, padding=1)
        self.deform = torchvision.ops.DeformConv2d(3, 4, 3, padding=1)
        self.head = torch.nn.Linear(4, 10)

    def forward(self, x):
        return self.head(self.deform(x, self.offsets(x)).mean((2, 3)))


class OneByOneTable(torch.nn.Module):
    """MViT V2's relative positions where the feature map is 1 x 1 (its last stage on a
    small clip): offsets [1, 1] computed from aranges index a table into [1, 1, C], read by
    an einsum (a one-element tensor that is no number)."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 8)
        self.table = torch.nn.Parameter(torch.randn(1, 8))
        self.head = torch.nn.Linear(8, 10)

    def forward(self, x):
        offsets = torch.arange(1)[:, None] * 1.0 - torch.arange(1)[None, :]
        rel = self.table[offsets.long()]  # [1, 1, 8]
        h = self.proj(x)
        return self.head(h + torch.einsum("nc,hkc->nk", h, rel))


class TabularNet(torch.nn.Module):
    """Two inputs, categorical ids [N, 3] and continuous features [N, 6]: the ids' embeddings
    flattened and concatenated with the normalised features (the embedding's gradient a
    strided slice of the concatenation's)."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 4)
        self.norm = torch.nn.BatchNorm1d(6)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(3 * 4 + 6, 16), torch.nn.PReLU(),
                                       torch.nn.Linear(16, 10))

    def forward(self, ids, features):
        return self.mlp(torch.cat([self.embed(ids).flatten(1), self.norm(features)], 1))


class CheckpointedBlocks(torch.nn.Module):
    """A model that checkpoints its own blocks with torch.utils.checkpoint: the reentrant
    form (the default, a Python autograd function that monet runs inline) and
    checkpoint_sequential; monet plans the recomputation itself."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Linear(16, 16)
        self.block = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh(),
                                         torch.nn.Linear(16, 16), torch.nn.ReLU())
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint, checkpoint_sequential
        h = self.stem(x)  # an input that requires grad: PyTorch's reentrant form needs one
        return self.head(checkpoint(self.block, h) + checkpoint_sequential(self.block, 2, h))


class VariationalAutoencoder(torch.nn.Module):
    """Returns (reconstruction, mean, log-variance): the loss takes all three (the
    reconstruction error and the KL term), as `loss(model(x), x)` does in PyTorch. The
    reparameterisation's noise is a fixed buffer (PyTorch's draws are not monet's)."""

    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Sequential(torch.nn.Linear(16, 12), torch.nn.ReLU())
        self.mean = torch.nn.Linear(12, 4)
        self.log_variance = torch.nn.Linear(12, 4)
        self.decoder = torch.nn.Sequential(torch.nn.Linear(4, 12), torch.nn.Tanh(),
                                           torch.nn.Linear(12, 16))
        self.register_buffer("noise", torch.randn(4))

    def forward(self, x):
        h = self.encoder(x)
        mu, log_variance = self.mean(h), self.log_variance(h)
        z = mu + torch.exp(0.5 * log_variance) * self.noise
        return self.decoder(z), mu, log_variance


def reconstruction_and_kl(out, x):
    reconstruction, mu, log_variance = out
    kl = -0.5 * torch.sum(1 + log_variance - mu.pow(2) - log_variance.exp(), 1)
    return torch.nn.functional.mse_loss(reconstruction, x) + kl.mean()


class FrozenBackbone(torch.nn.Module):
    """Fine-tuning a head: the backbone's parameters do not require gradients (PyTorch gives
    them none, and an optimizer over every parameter leaves them as they are)."""

    def __init__(self):
        super().__init__()
        self.backbone = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU())
        self.backbone.requires_grad_(False)
        self.head = torch.nn.Linear(8, 10)

    def forward(self, x):
        return self.head(self.backbone(x).mean((2, 3)))


class SubmodulesInEvaluation(torch.nn.Module):
    """A model that trains with a frozen batch norm and a dropout kept in eval() (as
    detection backbones freeze theirs): PyTorch runs those with running statistics, not
    updated, and without dropout; the others train."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.frozen = torch.nn.BatchNorm2d(8)
        self.body = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(8)
        self.dropout = torch.nn.Dropout(0.5)
        self.head = torch.nn.Linear(8, 10)
        with torch.no_grad():
            self.frozen.running_mean.uniform_(-0.2, 0.2)
            self.frozen.running_var.uniform_(0.5, 1.5)

    def train(self, mode=True):
        super().train(mode)
        self.frozen.eval()
        self.dropout.eval()
        return self

    def forward(self, x):
        h = torch.relu(self.norm(self.body(torch.relu(self.frozen(self.stem(x))))))
        return self.head(self.dropout(h.mean((2, 3))))


def sequence_cross_entropy(logits, tokens):
    return torch.nn.functional.cross_entropy(logits.transpose(1, 2), tokens)


CASES = {
    "einsum_attention": (EinsumAttention, "features", (4, 8, 16)),
    "unbind_attention": (UnbindAttention, "features", (4, 8, 16)),
    "lstm_lm": (lambda: RecurrentLM("LSTM"), "tokens", (4, 12)),
    "gru_lm": (lambda: RecurrentLM("GRU"), "tokens", (4, 12)),
    "buffer_through_linear": (BufferThroughLinear, "features", (4, 16)),
    "audio_conv1d": (AudioNet, "features", (4, 1, 64)),
    "pooling_variants": (PoolingVariants, "features", (2, 3, 8, 8)),
    "tuple_output": (lambda: TwoHeads(as_dict=False), "features", (2, 3, 8, 8)),
    "dict_output": (lambda: TwoHeads(as_dict=True), "features", (2, 3, 8, 8)),
    "auxiliary_head": (AuxiliaryHead, "features", (4, 3, 17, 17)),
    "two_inputs": (MaskedEncoder, "tokens_and_mask", (4, 12)),
    "generic_fallbacks": (FallbackLayers, "features", (2, 3, 8, 8)),
    "list_results": (ListResults, "features", (2, 3, 8, 8)),
    "batch_norm_without_affine": (BatchNormWithoutAffine, "features", (4, 3, 8, 8)),
    "view_writes": (ViewWrites, "features", (3, 2, 5, 8)),
    "computed_weights": (ComputedWeights, "features", (2, 3, 8, 8)),
    "integer_tensor_ops": (IntegerTensorOps, "tokens", (4, 12)),
    "expanded_bag": (ExpandedBag, "tokens", (4, 12)),
    "detached_features": (DetachedFeatures, "features", (4, 16)),
    "detached_branch": (DetachedBranch, "features", (4, 16)),
    "cell_loop": (CellLoop, "tokens", (4, 5)),
    "spatial_transformer": (SpatialTransformer, "features", (2, 3, 8, 8)),
    "spectral_norm": (SpectralNormed, "features", (4, 3, 8, 8)),
    "buffer_updated_in_forward": (RunningMean, "features", (4, 3, 8, 8)),
    "running_statistics": (RunningStatistics, "features", (4, 3, 8, 8)),
    "timestep_conditioned": (TimestepConditioned, "image_and_timestep", (4, 3, 8, 8)),
    "feature_levels": (FeatureLevels, "feature_levels", (4, 3, 8, 8)),
    "batch_dict": (BatchDict, "batch_dict", (4, 3, 8, 8)),
    "named_tuple_output": (lambda: StructuredOutputs("named_tuple"), "features", (4, 16)),
    "dataclass_output": (lambda: StructuredOutputs("dataclass"), "features", (4, 16)),
    "nested_output": (lambda: StructuredOutputs("nested"), "features", (4, 16)),
    "fourier_mixing": (FourierMixing, "features", (4, 8, 16)),
    "ids_and_features": (TabularNet, "ids_and_features", (4, 3)),
    "checkpointed_blocks": (CheckpointedBlocks, "features", (4, 16)),
    "rotary_decoder": (RotaryDecoder, "tokens", (2, 12)),
    "deformable_convolution": (DeformableConv, "features", (2, 3, 8, 8)),
    "one_by_one_table": (OneByOneTable, "features", (4, 16)),
    "loss_over_every_output": (VariationalAutoencoder, "reconstruction", (4, 16)),
    "frozen_backbone": (FrozenBackbone, "features", (4, 3, 8, 8)),
    "submodules_in_evaluation": (SubmodulesInEvaluation, "features", (4, 3, 8, 8)),
}
# The output trained, of models returning several (monet.optimize's `output`).
OUTPUT = {"tuple_output": "0", "dict_output": "out", "auxiliary_head": "0",
          "named_tuple_output": "logits", "dataclass_output": "logits", "nested_output": "out"}


def picked(out, name):
    """The output `name` picks: a tuple's index, a dict's key, a field."""
    if torch.is_tensor(out):
        return out
    if isinstance(out, dict):
        return out[name]
    return out[int(name)] if name.isdigit() else getattr(out, name)


def trained_output(case, loss_fn):
    """`loss_fn` on the output monet trains: the reference model returns them all."""
    name = OUTPUT.get(case)
    if name is None:
        return loss_fn
    return lambda out, y: loss_fn(picked(out, name), y)


def batches(kind, shape):
    g = torch.Generator().manual_seed(1)
    if kind == "tokens_and_mask":  # the first key never padding: no row fully masked
        masks = [torch.rand(shape, generator=g) < 0.3 for _ in range(STEPS)]
        for m in masks:
            m[:, 0] = False
        xs = [(torch.randint(0, VOCAB, shape, generator=g), m) for m in masks]
        ys = [torch.randint(0, VOCAB, shape, generator=g) for _ in range(STEPS)]
        return xs, ys, sequence_cross_entropy
    if kind == "ids_and_features":  # categorical ids [N, 3] and 6 continuous features
        xs = [(torch.randint(0, VOCAB, shape, generator=g),
               torch.randn(shape[0], 6, generator=g, dtype=torch.float64)) for _ in range(STEPS)]
        ys = [torch.randint(0, 10, (shape[0],), generator=g) for _ in range(STEPS)]
        return xs, ys, torch.nn.functional.cross_entropy
    if kind == "image_and_timestep":  # images [N, C, H, W] and timesteps [N]
        xs = [(torch.randn(shape, generator=g, dtype=torch.float64),
               100 * torch.rand(shape[0], generator=g, dtype=torch.float64))
              for _ in range(STEPS)]
        ys = [torch.randint(0, 10, (shape[0],), generator=g) for _ in range(STEPS)]
        return xs, ys, torch.nn.functional.cross_entropy
    if kind in ("feature_levels", "batch_dict"):  # one argument: a list, or a dict
        images = [torch.randn(shape, generator=g, dtype=torch.float64) for _ in range(STEPS)]
        if kind == "feature_levels":
            coarse = (shape[0], 5, shape[2] // 2, shape[3] // 2)
            xs = [([x, torch.randn(coarse, generator=g, dtype=torch.float64)],) for x in images]
        else:
            xs = [({"image": x, "weight": torch.rand(shape[0], generator=g,
                                                     dtype=torch.float64)},) for x in images]
        ys = [torch.randint(0, 10, (shape[0],), generator=g) for _ in range(STEPS)]
        return xs, ys, torch.nn.functional.cross_entropy
    if kind == "reconstruction":  # the target is the input
        xs = [torch.randn(shape, generator=g, dtype=torch.float64) for _ in range(STEPS)]
        return xs, xs, reconstruction_and_kl
    if kind == "tokens":
        xs = [torch.randint(0, VOCAB, shape, generator=g) for _ in range(STEPS)]
        ys = [torch.randint(0, VOCAB, shape, generator=g) for _ in range(STEPS)]
        return xs, ys, sequence_cross_entropy
    xs = [torch.randn(shape, generator=g, dtype=torch.float64) for _ in range(STEPS)]
    ys = [torch.randint(0, 10, (shape[0],), generator=g) for _ in range(STEPS)]
    return xs, ys, torch.nn.functional.cross_entropy


def planned_steps(fast, module, xs, ys):
    """Losses and tracked rises (the peak above the step's start, bytes) of STEPS steps of
    `fast`, its loss inside the plan, with SGD with momentum as `train` runs it."""
    opt = make_optimizer("sgd-momentum", module.parameters())
    losses, rises = [], []
    for x, y in zip(xs, ys):
        opt.zero_grad(set_to_none=True)
        loss = fast(*(x if isinstance(x, tuple) else (x,)), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        step = fast.last_step()
        rises.append(step["peak_bytes"] - step["start_bytes"])
    return losses, rises


def check_trains_like_pytorch(model, xs, ys, loss_fn, output, cache_dir):
    """Plans `model` (float64, training mode) with `loss_fn` inside the plan at the budget
    halfway between its leanest plan and store-all, trains it STEPS steps of SGD with
    momentum on (xs, ys) beside a copy trained by PyTorch, and checks that losses and
    parameters agree to TOLERANCE and that every step's tracked rise is the predicted one
    (the simulated peak above the start) to within two loss scalars: the simulation
    replays the loss node's value and seed gradient where a planned forward() leaves the
    caller's loss (held from the forward through loss.backward()) and autograd's seed."""
    reference = copy.deepcopy(model)
    want, rounding_level = train(reference, reference, "sgd-momentum", xs, ys, loss_fn)
    inside = dict(loss=loss_fn, target=ys[0], output=output, optimizer="sgd-momentum",
                  cache_dir=cache_dir, time_limit=20, search_limit="work")
    r = monet.budget_range(model, xs[0], **inside)
    assert r.floor <= r.smallest <= r.store_all
    fast = monet.optimize(model, xs[0], budget=(r.smallest + r.store_all) // 2, **inside)
    plan = fast.plan
    assert plan.predicted_peak <= plan.store_all_peak
    losses, rises = planned_steps(fast, model, xs, ys)
    predicted = plan.predicted_peak - plan.predicted_start
    scalars = 2 * torch.empty((), dtype=torch.float64).element_size()
    assert all(abs(rise - predicted) <= scalars for rise in rises), (rises, predicted)
    for got, expected in zip(losses, want):
        assert abs(got - expected) <= TOLERANCE * abs(expected), (losses, want)
    assert worst_state_error(model, reference, rounding_level) <= TOLERANCE


def check_every_plan_trains_alike(base, xs, ys, loss_fn, monet_budget, kw):
    """Trains copies of `base` under store-all, Chen's checkpoints and MONeT's plan at
    `monet_budget` ("smallest", or "midpoint" between it and store-all) with monet.optimize's
    keywords `kw`, checks that they reach the same losses and weights (to 1e-12), and
    returns store-all's losses: what a model's random draws must give under any plan."""
    r = monet.budget_range(base, xs[0], **kw)
    budget = r.smallest if monet_budget == "smallest" else (r.smallest + r.store_all) // 2
    runs = {}
    for planner, b in (("storeall", None), ("chen", None), ("monet", budget)):
        model = copy.deepcopy(base)
        fast = monet.optimize(model, xs[0], budget=b, planner=planner, **kw)
        runs[planner] = (train(fast, model, "sgd-momentum", xs, ys, loss_fn)[0], model)
    losses, reference = runs["storeall"]
    for planner, (got, model) in runs.items():
        assert got == pytest.approx(losses, rel=1e-12, abs=0), planner
        assert worst_state_error(model, reference) <= 1e-12, planner
    return losses


@pytest.mark.parametrize("case", list(CASES))
def test_trains_like_pytorch(case, cache_dir):
    make, kind, shape = CASES[case]
    torch.manual_seed(0)
    model = make().double().train()
    xs, ys, loss_fn = batches(kind, shape)
    check_trains_like_pytorch(model, xs, ys, trained_output(case, loss_fn), OUTPUT.get(case),
                              cache_dir)


def test_frozen_parameters_get_no_gradient(cache_dir):
    """Parameters that do not require gradients stay so under monet: no .grad, not a
    parameter of the plan (no gradient, no optimizer state counted)."""
    torch.manual_seed(0)
    model = FrozenBackbone().double().train()
    x = torch.randn(4, 3, 8, 8, dtype=torch.float64)
    y = torch.randint(0, 10, (4,))
    fast = monet.optimize(model, x, planner="storeall", loss=torch.nn.CrossEntropyLoss(),
                          target=y, cache_dir=cache_dir)
    fast(x, y).backward()
    for name, p in model.named_parameters():
        trained = name.startswith("head.")
        assert p.requires_grad == trained, name
        assert (p.grad is not None) == trained, name
    planned = {name for name, _ in fast.plan._model.named_parameters()}
    assert planned == {"module.head.weight", "module.head.bias"}  # WithLoss.module


def monet_cli(*args):
    return subprocess.run([os.environ["MONET_BINARY"], *args], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("kind", ["named_tuple", "dataclass", "nested"])
def test_a_structured_result_trains_the_output_named(kind, cache_dir):
    """Without the loss in the plan: the planned module returns the output `output=`
    names (a named tuple's field, a dataclass's, a path into nested containers, or a
    position), and its gradients are autograd's."""
    torch.manual_seed(0)
    model = StructuredOutputs(kind).double()
    reference = copy.deepcopy(model)
    x = torch.randn(4, 16, dtype=torch.float64)
    name = {"named_tuple": "1", "dataclass": "logits", "nested": "out"}[kind]
    fast = monet.optimize(model, x, planner="storeall", output=name, cache_dir=cache_dir)
    logits = fast(x)
    assert torch.equal(logits, picked(reference(x), "logits" if name == "1" else name))
    logits.pow(2).sum().backward()
    picked(reference(x), "logits" if name == "1" else name).pow(2).sum().backward()
    for (n, p), q in zip(model.named_parameters(), reference.parameters()):
        assert torch.allclose(p.grad, q.grad, rtol=1e-12, atol=0), n


def test_arguments_structured_otherwise_are_refused_in_one_line(cache_dir):
    """A call whose arguments are structured unlike the example's names both."""
    model = FeatureLevels().double()
    levels = [torch.randn(2, 3, 8, 8, dtype=torch.float64),
              torch.randn(2, 5, 4, 4, dtype=torch.float64)]
    fast = monet.optimize(model, (levels,), planner="storeall", cache_dir=cache_dir)
    with pytest.raises(TypeError, match="planned for arguments structured as"):
        fast(levels[0], levels[1])
    with pytest.raises(TypeError, match="holding a str"):
        monet.optimize(model, ([levels[0], "coarse"],), planner="storeall", cache_dir=cache_dir)


def test_a_value_per_sample_from_the_cli(tmp_path):
    """A 1-D input (a timestep per sample): `--input-shape 4` plans and verifies."""
    torch.manual_seed(0)
    traced = str(tmp_path / "diffusion.pt")
    x, t = torch.randn(4, 3, 8, 8), 100 * torch.rand(4)
    torch.jit.trace(TimestepConditioned().train(), (x, t), check_trace=False).save(traced)
    plan = str(tmp_path / "plan.json")
    r = monet_cli("plan", "--model", traced, "--input-shape", "4,3,8,8", "--input-shape", "4",
                  "--planner", "storeall", "--cache-dir", str(tmp_path / "cache"), "-o", plan)
    assert r.returncode == 0, r.stderr
    r = monet_cli("verify", "--plan", plan)
    assert r.returncode == 0 and "OK" in r.stdout + r.stderr, r.stdout + r.stderr


def test_several_inputs_from_the_cli(tmp_path):
    """`--input-shape` once per input of forward, with element types: plan, verify and
    run; a wrong count, an unknown type and `monet train` are refused in one line."""
    torch.manual_seed(0)
    traced = str(tmp_path / "encoder.pt")
    tokens, mask = torch.randint(0, VOCAB, (4, 12)), torch.zeros(4, 12, dtype=torch.bool)
    torch.jit.trace(MaskedEncoder(), (tokens, mask), check_trace=False).save(traced)
    plan = str(tmp_path / "plan.json")
    model = ["--model", traced, "--loss", "sequence_cross_entropy"]
    shapes = ["--input-shape", "4,12", "--input-shape", "4,12:bool"]
    r = monet_cli("plan", *model, *shapes, "--budget", "0.9x", "--time-limit", "5",
                  "--search-limit", "work",
                  "--cache-dir", str(tmp_path / "cache"), "-o", plan)
    assert r.returncode == 0, r.stderr
    r = monet_cli("verify", "--plan", plan)
    assert r.returncode == 0 and "OK" in r.stdout + r.stderr, r.stdout + r.stderr
    r = monet_cli("run", "--plan", plan, "--iters", "1", "--warmup", "0")
    assert r.returncode == 0, r.stderr
    r = monet_cli("plan", *model, "--input-shape", "4,12", "--budget", "0.9x", "-o", plan)
    assert r.returncode != 0 and "forward takes 2 inputs, 1 given" in r.stderr, r.stderr
    r = monet_cli("plan", *model, "--input-shape", "4,12", "--input-shape", "4,12:complex",
                  "--budget", "0.9x", "-o", plan)
    assert r.returncode == 2 and "unknown element type 'complex'" in r.stderr, r.stderr
    r = monet_cli("train", *model, *shapes, "--synthetic", "--budget", "0.9x", "--steps", "1")
    assert r.returncode == 2 and "monet train feeds models of one input" in r.stderr, r.stderr


def test_a_library_operator_the_cli_cannot_load_is_one_line(tmp_path):
    """A traced file calling torchvision's own operator: the CLI, where torchvision's
    library is not loaded, names it and says where it runs (Python), exit 2."""
    path = str(tmp_path / "deform.pt")
    torch.jit.trace(DeformableConv(), torch.randn(2, 3, 8, 8)).save(path)
    r = monet_cli("plan", "--model", path, "--input-shape", "2,3,8,8", "--planner", "storeall",
                  "-o", str(tmp_path / "p.json"))
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert "it calls 'torchvision::deform_conv2d', which no library loaded" in r.stderr
    assert not (tmp_path / "p.json").exists()


def test_a_plan_counts_the_operators_on_the_generic_path(cache_dir, tmp_path):
    cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(8 * 6 * 6, 10))
    plan = monet.plan(cnn, torch.randn(2, 3, 8, 8), planner="storeall", cache_dir=cache_dir)
    assert (plan.node_count, plan.generic_node_count) == (5, 0)  # the loss among the five
    # Linear, chunk's three slices, two einsums, the division, softmax, mean, Linear, loss:
    # the einsums, the division, softmax over the last axis of a 3-D tensor and the mean
    # run on the generic path.
    plan = monet.plan(EinsumAttention(), torch.randn(4, 8, 16), planner="storeall",
                      cache_dir=cache_dir)
    assert (plan.node_count, plan.generic_node_count) == (11, 5)
    path = str(tmp_path / "einsum_attention.pt")
    torch.jit.trace(EinsumAttention(), torch.randn(4, 8, 16)).save(path)
    shown = monet_cli("show", "--model", path, "--input-shape", "4,8,16")
    assert shown.returncode == 0, shown.stderr
    assert "operators: 11 (5 on the generic ATen path)" in shown.stdout, shown.stdout


def test_a_stacked_recurrent_layer_is_one_node_per_layer(cache_dir):
    """A stacked LSTM is one generic node per layer (a backward re-runs or keeps one layer,
    not the stack), but one node where dropout between its layers is active in training
    (the noise is inside the operator)."""
    counts = {}
    for layers, dropout in ((2, 0.0), (3, 0.0), (3, 0.5)):
        model = RecurrentLM("LSTM")
        model.rnn = torch.nn.LSTM(16, 24, num_layers=layers, dropout=dropout, batch_first=True)
        plan = monet.plan(model, torch.randint(0, VOCAB, (4, 12)), planner="storeall",
                          cache_dir=cache_dir)
        counts[layers, dropout] = plan.node_count
    assert counts[3, 0.0] == counts[2, 0.0] + 1
    assert counts[3, 0.5] == counts[2, 0.0] - 1


class MaskIndexed(torch.nn.Module):
    """Indexing by a mask the model computes: as many rows as the mask has true values."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 8)
        self.head = torch.nn.Linear(8, VOCAB)

    def forward(self, tokens):
        h = self.embed(tokens)
        return self.head(h[tokens > VOCAB // 2])


class NonzeroCount(MaskIndexed):
    def forward(self, tokens):
        h = self.embed(tokens)
        return self.head(h * torch.nonzero(h > 0).size(0))


class PackedLSTM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 8)
        self.rnn = torch.nn.LSTM(8, 12, batch_first=True)
        self.head = torch.nn.Linear(12, VOCAB)

    def forward(self, tokens):
        lengths = torch.tensor([12, 10, 7, 5])
        packed = torch.nn.utils.rnn.pack_padded_sequence(self.embed(tokens), lengths,
                                                         batch_first=True)
        h, _ = torch.nn.utils.rnn.pad_packed_sequence(self.rnn(packed)[0], batch_first=True)
        return self.head(h)


class RenormalisedOnComputedIds(torch.nn.Module):
    """nn.Embedding(max_norm=...) looking up ids the model computes: its in-place
    renormalisation of the weight cannot be made before the step, as for input ids."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 8, max_norm=1.0)
        self.head = torch.nn.Linear(8, VOCAB)

    def forward(self, tokens):
        return self.head(self.embed(tokens.flip(1)))


@pytest.mark.parametrize("make, reason", [
    (PackedLSTM, "packed sequences"),
    (RenormalisedOnComputedIds, "on a view of 'embed.weight'"),
    (MaskIndexed, "'aten::index' with a boolean mask: its result's shape follows the values"),
    (NonzeroCount, "'aten::nonzero': its result's shape follows the values"),
])
def test_what_a_trace_cannot_train_is_refused_in_one_line(make, reason, cache_dir):
    """Packed sequences (their shapes follow the lengths' values), an embedding with
    max_norm on computed ids (it renormalises its weight in place in the forward, through
    a detached view) and results shaped by values (indexing by a computed mask, nonzero)."""
    with pytest.raises(monet.UnsupportedOperator, match=reason) as e:
        monet.plan(make(), torch.randint(0, VOCAB, (4, 12)), planner="storeall",
                   cache_dir=cache_dir)
    assert "\n" not in str(e.value).split("\n  at ")[0]


def test_active_stochastic_depth_draws_the_same_noise_under_every_plan(cache_dir):
    """Stochastic depth in training mode draws new noise at every step (the seeded
    generic node), and every plan draws the same: store-all, Chen's checkpoints and
    MONeT's plan at the midpoint budget train to the same weights, which differ from
    those of the same model without the noise."""
    torch.manual_seed(0)
    base = StochasticDepthNet().double().train()
    xs, ys, loss_fn = batches("features", (4, 3, 8, 8))
    kw = dict(optimizer="sgd-momentum", cache_dir=cache_dir, time_limit=20,
              search_limit="work")
    losses = check_every_plan_trains_alike(base, xs, ys, loss_fn, "midpoint", kw)
    noiseless = copy.deepcopy(base)
    noiseless.drop.p = 0.0
    fast = monet.optimize(noiseless, xs[0], planner="storeall", **kw)
    without, _ = train(fast, noiseless, "sgd-momentum", xs, ys, loss_fn)
    assert all(abs(a - b) > 1e-6 * abs(b) for a, b in zip(losses, without)), (losses, without)


def test_fractional_max_pooling_draws_the_same_samples_under_every_plan(cache_dir):
    """Fractional max pooling's samples, drawn in forward, are a random draw read without
    a gradient: each call draws anew (as PyTorch's), every plan draws the same (store-all,
    Chen's checkpoints and MONeT's leanest train to the same weights), and each step's
    tracked rise at the midpoint budget is the predicted one."""
    torch.manual_seed(0)
    base = FractionalPoolNet().double().train()
    xs, ys, loss_fn = batches("features", (4, 3, 16, 16))
    kw = dict(optimizer="sgd-momentum", cache_dir=cache_dir, search_limit="work")
    check_every_plan_trains_alike(base, xs, ys, loss_fn, "smallest", kw)
    model = copy.deepcopy(base)
    inside = dict(kw, loss=loss_fn, target=ys[0])
    r = monet.budget_range(model, xs[0], **inside)
    fast = monet.optimize(model, xs[0], budget=(r.smallest + r.store_all) // 2, **inside)
    _, rises = planned_steps(fast, model, xs, ys)
    predicted = fast.plan.predicted_peak - fast.plan.predicted_start
    scalars = 2 * torch.empty((), dtype=torch.float64).element_size()
    assert all(abs(rise - predicted) <= scalars for rise in rises), (rises, predicted)
    plain = monet.optimize(copy.deepcopy(base), xs[0], planner="storeall", **kw)
    assert not torch.equal(plain(xs[0]), plain(xs[0]))


def cli_planned_peak(traced, loss, plan, cache_dir):
    """Plans `traced` (input 8,16) with the CLI's chain planner at 1.0x and `loss` into
    `plan`, runs it once, checks the run peaks at the predicted bytes, and returns them."""
    r = monet_cli("plan", "--model", traced, "--input-shape", "8,16", "--loss", loss,
                  "--planner", "chain", "--budget", "1.0x", "--search-limit", "work",
                  "--cache-dir", cache_dir, "-o", plan, "--json")
    assert r.returncode == 0, r.stderr
    predicted = json.loads(r.stdout)["predicted_peak_bytes"]
    r = monet_cli("run", "--plan", plan, "--iters", "1", "--warmup", "0", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["peak_bytes"] == predicted, (traced, r.stdout, predicted)
    return predicted


def test_a_float64_or_bfloat16_traced_file_runs_at_its_predicted_peak(tmp_path):
    """A model traced in float64 (bfloat16) is planned in float64 (bfloat16) by the CLI:
    `monet run` of the plan peaks at exactly the predicted bytes, twice those of the same
    model in float32 (below them: ATen's bfloat16 matmul keeps float32 workspace, which
    the profile measures)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    peaks = {}
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        traced = str(tmp_path / f"mlp_{dtype}.pt")
        typed = copy.deepcopy(model).to(dtype)
        torch.jit.trace(typed, torch.randn(8, 16, dtype=dtype)).save(traced)
        peaks[dtype] = cli_planned_peak(traced, "sum", str(tmp_path / f"plan_{dtype}.json"),
                                        str(tmp_path / "cache"))
    assert peaks[torch.float64] == 2 * peaks[torch.float32], peaks
    assert peaks[torch.bfloat16] < peaks[torch.float32], peaks


class Float32Logits(torch.nn.Module):
    """A bfloat16 MLP whose logits are made float32 for the loss, as language models do."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                                        torch.nn.Linear(32, 4))

    def forward(self, x):
        return self.body(x).float()


@pytest.mark.parametrize("loss", ["cross_entropy", "mse"])
def test_float32_logits_of_a_bfloat16_traced_file_take_the_clis_loss(loss, tmp_path):
    """The CLI's loss takes a bfloat16 model's float32 logits (and float32 targets): the
    plan runs at its predicted peak, and its gradients are autograd's (`monet verify`)."""
    torch.manual_seed(0)
    traced = str(tmp_path / "mlp.pt")
    torch.jit.trace(Float32Logits().to(torch.bfloat16),
                    torch.randn(8, 16).to(torch.bfloat16)).save(traced)
    plan = str(tmp_path / "plan.json")
    cli_planned_peak(traced, loss, plan, str(tmp_path / "cache"))
    r = monet_cli("verify", "--plan", plan)
    assert r.returncode == 0, r.stdout + r.stderr


class SparseEmbedding(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 8, sparse=True)
        self.head = torch.nn.Linear(8, 10)

    def forward(self, ids):
        return self.head(self.embed(ids).mean(1))


def test_a_sparse_embedding_gets_its_gradient_dense(cache_dir):
    """nn.Embedding(sparse=True): monet's gradient is the dense tensor of PyTorch's sparse
    one, and SGD with momentum trains both to the same weights."""
    torch.manual_seed(0)
    model = SparseEmbedding().double()
    reference = copy.deepcopy(model)
    xs, ys, _ = batches("tokens", (4, 6))
    ys = [y[:, 0] % 10 for y in ys]
    loss = torch.nn.CrossEntropyLoss()
    fast = monet.optimize(model, xs[0], planner="storeall", loss=loss, target=ys[0],
                          cache_dir=cache_dir)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (model, reference)]
    for x, y in zip(xs, ys):
        for opt in opts:
            opt.zero_grad(set_to_none=True)
        fast(x, y).backward()
        loss(reference(x), y).backward()
        assert model.embed.weight.grad.layout == torch.strided
        assert reference.embed.weight.grad.layout == torch.sparse_coo
        assert torch.allclose(model.embed.weight.grad, reference.embed.weight.grad.to_dense(),
                              rtol=1e-12, atol=0)
        for opt in opts:
            opt.step()
    for a, b in zip(model.parameters(), reference.parameters()):
        assert torch.allclose(a, b, rtol=1e-12, atol=1e-15)
