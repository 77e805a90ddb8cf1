"""Small models of the architectures people train, written as their users write them
(not with monet in mind): BERT-, T5-, GPT-2- and LLaMA-style blocks, the full
nn.Transformer, recurrent layers in their variants, U-Nets, super-resolution, mixtures of
experts, graph networks, capsules, WaveNet, Perceiver, dynamic convolution, the less
common pooling layers, a Fourier neural operator, a spatial transformer, a VQ-VAE,
distillation from a teacher under torch.no_grad and state the forward counts.
test_architectures.py trains each like PyTorch. Inputs: "tokens" ([N, T] ids of VOCAB),
"ids_and_mask" (ids and an int64 attention mask), "two_tokens" (source and target ids),
"features" (floats of the given shape), "two_features", "features_and_adjacency" (node
features and a dense adjacency)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 32


class MiniBert(nn.Module):
    """BERT's embeddings (a position-id buffer sliced, token types), an extended attention
    mask from the int mask, tanh-approximated GELU, a pooler on the first token."""

    def __init__(self):
        super().__init__()
        self.word, self.pos = nn.Embedding(VOCAB, 16), nn.Embedding(16, 16)
        self.kind = nn.Embedding(2, 16)
        self.register_buffer("position_ids", torch.arange(16).expand((1, -1)))
        self.ln, self.ln2 = nn.LayerNorm(16, eps=1e-12), nn.LayerNorm(16)
        self.qkv, self.o = nn.Linear(16, 48), nn.Linear(16, 16)
        self.ff1, self.ff2 = nn.Linear(16, 32), nn.Linear(32, 16)
        self.pool, self.head = nn.Linear(16, 16), nn.Linear(16, VOCAB)

    def forward(self, ids, mask):
        n, t = ids.shape
        h = self.ln(self.word(ids) + self.pos(self.position_ids[:, :t]) +
                    self.kind(torch.zeros_like(ids)))
        extended = (1.0 - mask[:, None, None, :].to(h.dtype)) * -10000.0
        q, k, v = self.qkv(h).view(n, t, 3, 2, 8).permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(8) + extended, -1)
        h = self.ln2(h + self.o((a @ v).transpose(1, 2).reshape(n, t, 16)))
        h = h + self.ff2(F.gelu(self.ff1(h), approximate="tanh"))
        return self.head(h + torch.tanh(self.pool(h[:, 0]))[:, None])


class T5Block(nn.Module):
    """T5's RMSNorm, relative position buckets computed from aranges (log-spaced) into a
    bias embedding, bias-free projections and a gated SiLU feed-forward."""

    def __init__(self):
        super().__init__()
        self.emb, self.rel = nn.Embedding(VOCAB, 16), nn.Embedding(8, 2)
        self.qkv = nn.Linear(16, 48, bias=False)
        self.scale = nn.Parameter(torch.ones(16))
        self.wi, self.wo = nn.Linear(16, 64, bias=False), nn.Linear(32, 16, bias=False)
        self.head = nn.Linear(16, VOCAB, bias=False)

    def rms(self, x):
        return self.scale * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))

    @staticmethod
    def buckets(t):
        distance = -torch.min(torch.arange(t)[None, :] - torch.arange(t)[:, None],
                              torch.zeros(t, t, dtype=torch.long))
        far = 4 + (torch.log(distance.float().clamp(min=1) / 4) / math.log(4) * 4).long()
        return torch.where(distance < 4, distance, torch.min(far, torch.full_like(far, 7)))

    def forward(self, tokens):
        n, t = tokens.shape
        h = self.emb(tokens)
        q, k, v = self.qkv(self.rms(h)).view(n, t, 3, 2, 8).permute(2, 0, 3, 1, 4)
        bias = self.rel(self.buckets(t)).permute(2, 0, 1)[None]
        a = torch.softmax(q @ k.transpose(-1, -2) + bias, -1)
        h = h + (a @ v).transpose(1, 2).reshape(n, t, 16)
        gate, up = self.wi(self.rms(h)).chunk(2, -1)
        return self.head(self.rms(h + self.wo(F.silu(gate) * up)))


class Conv1DGPT(nn.Module):
    """GPT-2's Conv1D (addmm with [in, out] weights), a boolean causal buffer applied with
    torch.where and the type's smallest value, and a head tied to the embedding."""

    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, 16), nn.Embedding(8, 16)
        self.attn_w = nn.Parameter(0.02 * torch.randn(16, 48))
        self.attn_b = nn.Parameter(torch.zeros(48))
        self.proj_w = nn.Parameter(0.02 * torch.randn(16, 16))
        self.proj_b = nn.Parameter(torch.zeros(16))
        causal = torch.tril(torch.ones(8, 8, dtype=torch.bool))
        self.register_buffer("bias", causal.view(1, 1, 8, 8))
        self.ln = nn.LayerNorm(16)

    def forward(self, tokens):
        n, t = tokens.shape
        h = self.wte(tokens) + self.wpe(torch.arange(t))
        qkv = torch.addmm(self.attn_b, self.ln(h).view(-1, 16), self.attn_w).view(n, t, 48)
        q, k, v = [z.view(n, t, 2, 8).permute(0, 2, 1, 3) for z in qkv.split(16, dim=2)]
        w = q @ k.transpose(-1, -2) / 8 ** 0.5
        w = torch.where(self.bias[:, :, :t, :t], w, torch.tensor(torch.finfo(w.dtype).min,
                                                                   dtype=w.dtype))
        a = (w.softmax(-1) @ v).permute(0, 2, 1, 3).contiguous().view(n, t, 16)
        h = h + torch.addmm(self.proj_b, a.view(-1, 16), self.proj_w).view(n, t, 16)
        return F.linear(self.ln(h), self.wte.weight)


class GroupedQueryAttention(nn.Module):
    """LLaMA-style grouped-query attention: keys and values repeat_interleave'd over the
    query heads, a causal mask filled with -inf."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 16)
        self.q, self.kv = nn.Linear(16, 16, bias=False), nn.Linear(16, 16, bias=False)
        self.o, self.head = nn.Linear(16, 16, bias=False), nn.Linear(16, VOCAB, bias=False)

    def forward(self, tokens):
        n, t = tokens.shape
        h = self.emb(tokens)
        q = self.q(h).view(n, t, 4, 4).transpose(1, 2)
        k, v = self.kv(h).view(n, t, 2, 8).transpose(1, 2).chunk(2, -1)
        k, v = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        s = (q @ k.transpose(-1, -2)).masked_fill(~causal, float("-inf"))
        return self.head(h + self.o((s.softmax(-1) @ v).transpose(1, 2).reshape(n, t, 16)))


class FullTransformer(nn.Module):
    """nn.Transformer (encoder and decoder) on source and target ids, with its square
    subsequent mask."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 16)
        self.transformer = nn.Transformer(16, 2, 1, 1, 32, dropout=0.0, batch_first=True)
        self.head = nn.Linear(16, VOCAB)

    def forward(self, source, target):
        mask = nn.Transformer.generate_square_subsequent_mask(target.size(1)).to(torch.float64)
        return self.head(self.transformer(self.emb(source), self.emb(target), tgt_mask=mask))


class NormFirstEncoder(nn.Module):
    """nn.TransformerEncoder of pre-norm GELU layers with a final norm, the padding mask
    computed from the ids."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 16)
        layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16),
                                             enable_nested_tensor=False)
        self.head = nn.Linear(16, VOCAB)

    def forward(self, tokens):
        return self.head(self.encoder(self.emb(tokens), src_key_padding_mask=tokens == 0))


class Recurrent(nn.Module):
    """A bidirectional two-layer LSTM with projections, or a ReLU RNN time-major."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.emb = nn.Embedding(VOCAB, 8)
        if kind == "bidirectional_lstm":
            self.rnn = nn.LSTM(8, 12, num_layers=2, batch_first=True, bidirectional=True,
                               proj_size=6)
        else:
            self.rnn = nn.RNN(8, 12, nonlinearity="relu")
        self.head = nn.Linear(12, VOCAB)

    def forward(self, tokens):
        if self.kind == "bidirectional_lstm":
            out, _ = self.rnn(self.emb(tokens))
            return self.head(out)
        out, _ = self.rnn(self.emb(tokens).transpose(0, 1))
        return self.head(out.transpose(0, 1))


class OneHotLerp(nn.Module):
    """one_hot ids cast to floats into a Linear, addcmul and lerp."""

    def __init__(self):
        super().__init__()
        self.fc, self.head = nn.Linear(VOCAB, 16), nn.Linear(16, VOCAB)
        self.scale = nn.Parameter(torch.ones(16))

    def forward(self, tokens):
        h = self.fc(F.one_hot(tokens, VOCAB).to(self.fc.weight.dtype))
        h = torch.addcmul(h, h, self.scale.expand_as(h), value=0.5)
        return self.head(torch.lerp(h, torch.tanh(h), 0.3))


class SuperResolution(nn.Module):
    """ESPCN-like: reflect and circular padding modes, PReLU, pixel shuffle."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1, padding_mode="reflect")
        self.c2 = nn.Conv2d(8, 12, 3, padding=1, padding_mode="circular")
        self.act, self.shuffle = nn.PReLU(8), nn.PixelShuffle(2)
        self.fc = nn.Linear(3 * 16 * 16, 10)

    def forward(self, x):
        return self.fc(self.shuffle(self.c2(self.act(self.c1(x)))).flatten(1))


class InstanceNormUNet(nn.Module):
    """A U-Net step: instance norms (one tracking running statistics), leaky ReLU, a
    bilinear upsampling with aligned corners and a skip concatenation."""

    def __init__(self):
        super().__init__()
        self.down1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.InstanceNorm2d(8, affine=True),
                                   nn.LeakyReLU(0.2))
        self.down2 = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1),
                                   nn.InstanceNorm2d(16, track_running_stats=True), nn.ReLU())
        self.up = nn.Conv2d(16 + 8, 8, 3, padding=1)
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        a = self.down1(x)
        b = F.interpolate(self.down2(a), size=a.shape[-2:], mode="bilinear", align_corners=True)
        return self.head(F.adaptive_avg_pool2d(self.up(torch.cat([b, a], 1)), 1).flatten(1))


class TopKPooling(nn.Module):
    """Scores, topk with gather of the selected rows, sort, cumsum and logcumsumexp."""

    def __init__(self):
        super().__init__()
        self.score, self.fc = nn.Linear(16, 1), nn.Linear(16, 10)

    def forward(self, x):
        s = self.score(x).squeeze(-1)
        top, index = s.topk(4, dim=1)
        chosen = x.gather(1, index.unsqueeze(-1).expand(-1, -1, x.size(-1)))
        ordered, _ = torch.sort(s, dim=1, descending=True)
        pooled = self.fc((chosen * torch.sigmoid(top).unsqueeze(-1)).mean(1))
        return (pooled + ordered[:, :1] + 0.1 * torch.cumsum(s, 1)[:, -1:] +
                torch.logcumsumexp(s, 1)[:, -1:])


class MixtureOfExperts(nn.Module):
    """Softmax gating kept for the top two experts by scatter, every expert computed and
    stacked, the outputs weighted."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(16, 4)
        self.experts = nn.ModuleList([nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
                                      for _ in range(4)])
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        w = F.softmax(self.gate(x), -1)
        top, index = w.topk(2, -1)
        kept = torch.zeros_like(w).scatter(-1, index, top)
        out = torch.stack([e(x) for e in self.experts], -1)
        return self.fc((out * kept.unsqueeze(-2)).sum(-1).mean(1))


class Activations(nn.Module):
    """GLU, Mish, Softmax2d, SiLU, normalize, layer_norm over several dimensions, std,
    var, logsumexp, amax and a vector norm."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 8, 3, padding=1)
        self.glu, self.mish, self.softmax2d = nn.GLU(1), nn.Mish(), nn.Softmax2d()
        self.fc = nn.Linear(4 * 8 * 8, 10)

    def forward(self, x):
        y = self.glu(self.mish(self.c(x)))
        y = y * self.softmax2d(y) + F.silu(y) + F.normalize(y, dim=1) + F.layer_norm(y, y.shape[1:])
        y = (y + y.std(1, keepdim=True) + y.var((2, 3), keepdim=True) +
             torch.logsumexp(y, 1, keepdim=True) + y.amax(1, keepdim=True) +
             torch.norm(y, p=2, dim=1, keepdim=True))
        return self.fc(y.flatten(1))


class Siamese(nn.Module):
    """One encoder applied to two inputs, their cosine similarity classified."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
        self.fc = nn.Linear(1, 10)

    def forward(self, a, b):
        return self.fc(F.cosine_similarity(self.encoder(a), self.encoder(b)).unsqueeze(-1))


class MessagePassing(nn.Module):
    """Messages gathered along edge buffers and summed into nodes by index_add and
    scatter_add."""

    def __init__(self):
        super().__init__()
        self.msg, self.update, self.fc = nn.Linear(16, 16), nn.Linear(32, 16), nn.Linear(16, 10)
        self.register_buffer("src", torch.tensor([0, 1, 2, 3, 4, 0, 2]))
        self.register_buffer("dst", torch.tensor([1, 2, 3, 4, 0, 3, 0]))

    def forward(self, x):
        m = self.msg(x[:, self.src])
        summed = torch.zeros_like(x).index_add(1, self.dst, m)
        index = self.dst.view(1, -1, 1).expand(x.size(0), -1, x.size(2))
        summed = summed + torch.zeros_like(x).scatter_add(1, index, m)
        return self.fc(F.relu(self.update(torch.cat([x, summed], -1))).mean(1))


class GraphAttention(nn.Module):
    """GAT over a dense adjacency input: pairwise scores, leaky ReLU, masked softmax."""

    def __init__(self):
        super().__init__()
        self.W, self.a = nn.Linear(8, 16, bias=False), nn.Linear(32, 1, bias=False)
        self.fc = nn.Linear(16, 10)

    def forward(self, x, adjacency):
        h = self.W(x)
        n = h.size(1)
        pairs = torch.cat([h.unsqueeze(2).expand(-1, -1, n, -1),
                           h.unsqueeze(1).expand(-1, n, -1, -1)], -1)
        e = F.leaky_relu(self.a(pairs).squeeze(-1), 0.2).masked_fill(adjacency == 0, -1e9)
        return self.fc(F.elu(e.softmax(-1) @ h).mean(1))


class WaveNet(nn.Module):
    """Causal dilated Conv1d with left padding and gated tanh * sigmoid units, a
    depthwise 'same' convolution, average pooling without the padding counted."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Conv1d(1, 8, 1)
        self.f = nn.ModuleList([nn.Conv1d(8, 8, 2, dilation=d) for d in (1, 2, 4)])
        self.g = nn.ModuleList([nn.Conv1d(8, 8, 2, dilation=d) for d in (1, 2, 4)])
        self.sep = nn.Conv1d(8, 8, 3, groups=8, padding="same", dilation=2)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        h = self.inp(x)
        for f, g, d in zip(self.f, self.g, (1, 2, 4)):
            p = F.pad(h, (d, 0))
            h = h + torch.tanh(f(p)) * torch.sigmoid(g(p))
        return self.fc(F.avg_pool1d(self.sep(h), 4, count_include_pad=False, padding=1).mean(-1))


class PoolingLayers(nn.Module):
    """Average pooling with a divisor override, LP pooling, fractional max pooling (fixed
    samples), nearest upsampling, Unfold and Fold."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 8, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2)
        self.unfold, self.fold = nn.Unfold(2, stride=2), nn.Fold((4, 4), 2, stride=2)
        self.fc = nn.Linear(8 * 4 * 4 * 2 + 8 * 2 * 2, 10)

    def forward(self, x):
        y = F.relu(self.c(x))
        a = F.avg_pool2d(y, 2, divisor_override=3) + F.lp_pool2d(y, 2, 2)
        samples = torch.full((y.size(0), 8, 2), 0.5, dtype=y.dtype)
        b = F.fractional_max_pool2d(y, 2, output_size=(4, 4), _random_samples=samples)
        c = self.fold(self.unfold(self.up(F.avg_pool2d(y, 4))))
        return self.fc(torch.cat([a.flatten(1), b.flatten(1), F.avg_pool2d(c, 2).flatten(1)], 1))


class Perceiver(nn.Module):
    """Learned latents expanded over the batch cross-attending to pixel tokens."""

    def __init__(self):
        super().__init__()
        self.latents, self.inp = nn.Parameter(torch.randn(4, 16)), nn.Linear(3, 16)
        self.attention = nn.MultiheadAttention(16, 2, batch_first=True)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        tokens = self.inp(x.flatten(2).transpose(1, 2))
        latents = self.latents.expand(x.size(0), -1, -1)
        out, _ = self.attention(latents, tokens, tokens)
        return self.fc((out + latents).mean(1))


class Capsules(nn.Module):
    """Primary capsules squashed, routing by agreement unrolled over three iterations."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, stride=2)
        self.W = nn.Parameter(0.1 * torch.randn(1, 18, 10, 4, 8))

    @staticmethod
    def squash(s):
        n2 = (s ** 2).sum(-1, keepdim=True)
        return n2 / (1 + n2) * s / torch.sqrt(n2 + 1e-8)

    def forward(self, x):
        n = x.size(0)
        u = self.squash(self.conv(x).view(n, 2, 8, 9).permute(0, 1, 3, 2).reshape(n, 18, 8))
        predicted = (self.W @ u[:, :, None, :, None]).squeeze(-1)
        logits = torch.zeros(predicted.shape[:3], dtype=x.dtype)
        for _ in range(3):
            v = self.squash((logits.softmax(2)[..., None] * predicted).sum(1))
            logits = logits + (predicted * v[:, None]).sum(-1)
        return v.norm(dim=-1)


class Patches1d(nn.Module):
    """Tensor.unfold into overlapping windows, adaptive max pooling returning indices,
    diag_embed."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 16)
        self.pool = nn.AdaptiveMaxPool1d(4, return_indices=True)
        self.fc = nn.Linear(16 * 4 + 4, 10)

    def forward(self, x):
        h = F.gelu(self.proj(x.unfold(-1, 4, 2).squeeze(1)))
        m, _ = self.pool(h.transpose(1, 2))
        return self.fc(torch.cat([m.flatten(1), torch.diag_embed(m[:, 0]).sum(-1)], 1))


class DynamicConv(nn.Module):
    """A convolution whose kernel the model computes from its input."""

    def __init__(self):
        super().__init__()
        self.kernels, self.fc = nn.Linear(3 * 8 * 8, 4 * 3 * 9), nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        kernel = self.kernels(x[:1].flatten(1)).view(4, 3, 3, 3)
        return self.fc(F.conv2d(x, kernel).flatten(1))


class FourierLayer(nn.Module):
    """A Fourier neural operator's layer: rfft2, a complex product with weights stored as
    real pairs, written into a slice of a complex zeros tensor, irfft2."""

    def __init__(self):
        super().__init__()
        self.lift, self.skip = nn.Conv2d(3, 8, 1), nn.Conv2d(8, 8, 1)
        self.weights = nn.Parameter(torch.randn(8, 8, 3, 3, 2) * 0.1)
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        h = self.lift(x)
        f = torch.fft.rfft2(h)
        modes = torch.zeros(h.size(0), 8, h.size(-2), h.size(-1) // 2 + 1, dtype=f.dtype)
        modes[:, :, :3, :3] = torch.einsum("bixy,ioxy->boxy", f[:, :, :3, :3],
                                           torch.view_as_complex(self.weights))
        h = F.gelu(torch.fft.irfft2(modes, s=h.shape[-2:]) + self.skip(h))
        return self.head(h.mean((2, 3)))


class SpatialTransformer(nn.Module):
    """A localisation network's affine transform, affine_grid and grid_sample."""

    def __init__(self):
        super().__init__()
        self.locate = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                    nn.Flatten(), nn.Linear(4, 6))
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                  nn.Flatten(), nn.Linear(8, 10))

    def forward(self, x):
        identity = torch.tensor([[1.0, 0, 0], [0, 1, 0]], dtype=x.dtype)
        theta = self.locate(x).view(-1, 2, 3) + identity
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        return self.body(F.grid_sample(x, grid, align_corners=False))


class VectorQuantiser(nn.Module):
    """VQ-VAE: the nearest code by argmin, the straight-through estimator and the
    commitment terms (detach)."""

    def __init__(self):
        super().__init__()
        self.encode, self.decode = nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(4, 3, 3, padding=1)
        self.codes, self.fc = nn.Embedding(6, 4), nn.Linear(3, 10)

    def forward(self, x):
        z = self.encode(x).permute(0, 2, 3, 1)
        q = self.codes((z.unsqueeze(-2) - self.codes.weight).pow(2).sum(-1).argmin(-1))
        commitment = (q.detach() - z).pow(2).mean() + (q - z.detach()).pow(2).mean()
        q = z + (q - z).detach()
        return self.fc(self.decode(q.permute(0, 3, 1, 2)).mean((2, 3))) + commitment


class Distillation(nn.Module):
    """A student and a teacher the forward runs under torch.no_grad (and a @torch.no_grad
    method): the teacher's parameters get no gradient, as in PyTorch."""

    def __init__(self):
        super().__init__()
        def net():
            return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                 nn.Flatten(), nn.Linear(8, 10))
        self.student, self.teacher, self.target = net(), net(), nn.Linear(10, 10)

    @torch.no_grad()
    def soft_target(self, logits):
        return self.target(logits).softmax(-1)

    def forward(self, x):
        with torch.no_grad():
            teacher = self.teacher(x)
        student = self.student(x)
        return student + 0.1 * teacher + self.soft_target(student)


class StepCount(nn.Module):
    """An integer buffer counted in the forward and read after its update (a warm-up
    weight), and a float average updated in place under torch.no_grad."""

    def __init__(self):
        super().__init__()
        self.register_buffer("step", torch.zeros((), dtype=torch.long))
        self.register_buffer("average", torch.zeros(10))
        self.a, self.b = nn.Linear(192, 10), nn.Linear(192, 10)

    def forward(self, x):
        self.step += 1
        w = torch.clamp(self.step.to(x.dtype) / 4, max=1.0)
        x = x.flatten(1)
        out = self.a(x) * w + self.b(torch.tanh(x)) * (1 - w)
        with torch.no_grad():
            self.average.mul_(0.9).add_(out.mean(0), alpha=0.1)
        return out - self.average


class EncoderDecoder(nn.Module):
    """nn.TransformerEncoder and nn.TransformerDecoder with the causal mask made in the
    forward (generate_square_subsequent_mask), LSTM and GRU cells unrolled over time."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(16, 2, 32, 0.0, batch_first=True), 1)
        self.decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(16, 2, 32, 0.0, batch_first=True), 1)
        self.lstm, self.gru, self.head = nn.LSTMCell(16, 8), nn.GRUCell(8, 8), nn.Linear(8, VOCAB)

    def forward(self, tokens):
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.size(1)).to(torch.float64)
        e = self.embed(tokens)
        d = self.decoder(e, self.encoder(e), tgt_mask=mask)
        h = c = g = torch.zeros(tokens.size(0), 8, dtype=e.dtype)
        outs = []
        for t in range(tokens.size(1)):
            h, c = self.lstm(d[:, t], (h, c))
            g = self.gru(h, g)
            outs.append(g)
        return self.head(torch.stack(outs, 1))


# name: (constructor, inputs, shape)
CASES = {
    "mini_bert": (MiniBert, "ids_and_mask", (2, 6)),
    "t5_block": (T5Block, "tokens", (2, 6)),
    "conv1d_gpt": (Conv1DGPT, "tokens", (2, 6)),
    "grouped_query_attention": (GroupedQueryAttention, "tokens", (2, 6)),
    "full_transformer": (FullTransformer, "two_tokens", (2, 6)),
    "norm_first_encoder": (NormFirstEncoder, "tokens", (2, 6)),
    "bidirectional_lstm": (lambda: Recurrent("bidirectional_lstm"), "tokens", (2, 6)),
    "relu_rnn": (lambda: Recurrent("relu_rnn"), "tokens", (2, 6)),
    "one_hot_lerp": (OneHotLerp, "tokens", (2, 6)),
    "super_resolution": (SuperResolution, "features", (2, 3, 8, 8)),
    "instance_norm_unet": (InstanceNormUNet, "features", (2, 3, 8, 8)),
    "topk_pooling": (TopKPooling, "features", (4, 8, 16)),
    "mixture_of_experts": (MixtureOfExperts, "features", (4, 8, 16)),
    "activations": (Activations, "features", (2, 3, 8, 8)),
    "siamese": (Siamese, "two_features", (4, 16)),
    "message_passing": (MessagePassing, "features", (4, 5, 16)),
    "graph_attention": (GraphAttention, "features_and_adjacency", (2, 5, 8)),
    "wavenet": (WaveNet, "features", (4, 1, 32)),
    "pooling_layers": (PoolingLayers, "features", (2, 3, 8, 8)),
    "perceiver": (Perceiver, "features", (2, 3, 8, 8)),
    "capsules": (Capsules, "features", (2, 3, 8, 8)),
    "patches_1d": (Patches1d, "features", (4, 1, 32)),
    "dynamic_conv": (DynamicConv, "features", (2, 3, 8, 8)),
    "fourier_layer": (FourierLayer, "features", (2, 3, 8, 8)),
    "spatial_transformer": (SpatialTransformer, "features", (2, 3, 8, 8)),
    "vector_quantiser": (VectorQuantiser, "features", (2, 3, 8, 8)),
    "distillation": (Distillation, "features", (2, 3, 8, 8)),
    "step_count": (StepCount, "features", (2, 3, 8, 8)),
    "encoder_decoder": (EncoderDecoder, "tokens", (2, 5)),
}
