#!/usr/bin/python3
"""Writes the fixtures of the TorchScript import tests.

Also unsupported.pt, a traced module calling an operator monet does not import.

For each torchvision classification model: <name>.pt, the model traced with
torch.jit.trace in float32 (what a user hands to `monet --model file.pt`), and
<name>_ref.pt, a TorchScript container of tensors: the input, the target, and one
training iteration's loss and parameter gradients computed by PyTorch autograd in
float64 (in float32, rounding alone moves deep networks' gradients by ~1e-3).

Randomness is removed so the reference is deterministic: dropout probabilities are set
and stochastic depth (EfficientNet, ConvNeXt, Swin) probabilities are set to 0. Batch-norm parameters and running
statistics are randomised so that the comparison exercises them. Some models are traced
in eval mode and some in train mode (which records the num_batches_tracked updates):
the importer must handle both.

Gradients with more than 2**21 entries (VGG's first classifier layer) are stored as
every k-th entry of the flattened gradient ("sample64__", with "stride__" giving k).
Names use "__" for "." (buffer names cannot contain dots).

Uses Debian's python3-torch and python3-torchvision; downloads nothing.
Usage: make_import_fixtures.py OUTDIR [MODEL...]
"""
import copy
import os
import sys

import torch
import torch.nn.functional as F
import torchvision

from fixture_tensors import Tensors, randomize_batch_norm

# name: (constructor keyword arguments, input image size, traced in train mode)
MODELS = {
    "resnet18": ({}, 64, False),
    "resnet50": ({}, 64, True),
    "vgg11": ({}, 32, False),
    "mobilenet_v2": ({}, 64, True),
    "mobilenet_v3_small": ({}, 64, False),
    "googlenet": ({"aux_logits": False, "init_weights": True}, 64, True),
    "densenet121": ({}, 64, False),
    "efficientnet_b0": ({"stochastic_depth_prob": 0.0}, 64, True),
    "shufflenet_v2_x0_5": ({}, 64, True),
    "convnext_tiny": ({}, 32, True),
    "swin_t": ({}, 32, True),
}
# Other models: name -> (constructor, input image size, traced in train mode).
OTHERS = {
    "generic_ops": (lambda: GenericOps(), 16, True),
    "vit_tiny": (lambda: torchvision.models.vision_transformer.VisionTransformer(
        image_size=32, patch_size=4, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32,
        num_classes=CLASSES), 32, True),
    "unet_gn": (lambda: UNetGN(), 32, True),
    "gpt_tiny": (lambda: TinyGPT(), 16, True),
    "gpt_tied_matmul": (lambda: TinyGPT(head="matmul"), 16, True),
    "encoder_tiny": (lambda: EncoderClassifier(), 10, True),
    "first_outputs": (lambda: FirstOutputs(), 16, True),
    "integer_results": (lambda: IntegerResults(), 16, True),
    "spectral_norm": (lambda: SpectralNormNet(), 16, True),
}
# Language models: name -> vocabulary size. Their input is BATCH x image token ids, and
# they are trained with cross-entropy over the logits [N, T, V] ("sequence_cross_entropy").
TOKENS = {"gpt_tiny": 64, "gpt_tied_matmul": 64}
# Models fed sequences of feature vectors [N, T, F]: name -> F (T is the size above).
SEQUENCES = {"encoder_tiny": 8}
# Segmentation models (a dict output, {"out": [N, classes, H, W]}): name -> input size.
# They are trained with per-pixel cross-entropy on "out".
SEGMENTATION = {"fcn_resnet50": 32, "deeplabv3_mobilenet_v3_large": 32}
# Models trained with the mean squared error against a float target (loss "mse").
MSE = {"unet_gn"}
# Models whose reference runs the traced module (in float64) rather than the Python one:
# Swin's and the GPT's traces compute their attention scale from a size as a float32
# tensor, so the trace and the Python module differ by ~1e-8 in float64.
TRACE_REFERENCE = {"swin_t", "gpt_tiny", "gpt_tied_matmul"}
# Models whose trace moves buffers their forward reads (spectral normalisation's power
# iteration): the file keeps the buffers as they were before the trace, as the reference.
BUFFERS_BEFORE_TRACE = {"spectral_norm"}
BATCH = 2
CLASSES = 10
LARGE = 1 << 21


def prepare(model, gen):
    for m in model.modules():
        if isinstance(m, (torch.nn.Dropout, torchvision.ops.StochasticDepth)):
            m.p = 0.0
        if isinstance(m, torch.nn.MultiheadAttention):
            m.dropout = 0.0
    randomize_batch_norm(model, gen)


def write(outdir, name):
    gen = torch.Generator().manual_seed(1234)
    torch.manual_seed(0)
    if name in OTHERS:
        make, image, train_trace = OTHERS[name]
        model = make()
    elif name in SEGMENTATION:
        image, train_trace = SEGMENTATION[name], True
        model = getattr(torchvision.models.segmentation, name)(
            num_classes=CLASSES, weights_backbone=None)
    else:
        kwargs, image, train_trace = MODELS[name]
        model = getattr(torchvision.models, name)(num_classes=CLASSES, **kwargs)
    prepare(model, gen)
    if name in TOKENS:
        x = torch.randint(0, TOKENS[name], (BATCH, image), generator=gen)
    elif name in SEQUENCES:
        x = torch.randn(BATCH, image, SEQUENCES[name], generator=gen)
    else:
        x = torch.randn(BATCH, 3, image, image, generator=gen)

    model.train(train_trace)
    with torch.no_grad():
        traced = torch.jit.trace(copy_of(model), x, check_trace=False,
                                 strict=name not in SEGMENTATION)
    if name in BUFFERS_BEFORE_TRACE:
        before = dict(model.named_buffers())
        with torch.no_grad():
            for bname, b in traced.named_buffers():
                b.copy_(before[bname])
    traced.save(os.path.join(outdir, name + ".pt"))

    if name in TRACE_REFERENCE:
        model64 = torch.jit.load(os.path.join(outdir, name + ".pt")).double().train()
    else:
        model64 = model.double().train()
    out = model64(x.double() if x.is_floating_point() else x)
    if name in SEGMENTATION:
        out = out["out"]
    if name in TOKENS:
        target = torch.randint(0, TOKENS[name], x.shape, generator=gen)
        loss = F.cross_entropy(out.transpose(1, 2), target)
    elif name in MSE:
        target = torch.randn(out.shape, generator=gen)
        loss = F.mse_loss(out, target.double())
    else:
        target_shape = (out.shape[0],) + tuple(out.shape[2:])
        target = torch.randint(0, CLASSES, target_shape, generator=gen)
        loss = F.cross_entropy(out, target)
    loss.backward()
    tensors = {"input": x, "target": target, "loss64": loss.detach()}
    for pname, p in model64.named_parameters():
        key = pname.replace(".", "__")
        grad = p.grad if p.grad is not None else torch.zeros_like(p)
        if grad.numel() > LARGE:
            stride = grad.numel() // (LARGE // 8)
            tensors["sample64__" + key] = grad.flatten()[::stride].clone()
            tensors["stride__" + key] = torch.tensor(stride)
        else:
            tensors["grad64__" + key] = grad
    torch.jit.script(Tensors(tensors)).save(os.path.join(outdir, name + "_ref.pt"))
    print(f"{name}: {sum(p.numel() for p in model.parameters())} parameters, "
          f"input {tuple(x.shape)}, traced in {'train' if train_trace else 'eval'} mode")


class Unsupported(torch.nn.Module):
    """Updates a parameter in place inside forward(), which monet refuses (a buffer it
    writes when the iteration ends): the error must name the operator and where."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        with torch.no_grad():
            self.fc.weight.mul_(0.9)
        return self.fc(x)


class SpectralNormNet(torch.nn.Module):
    """Spectral normalisation in training: power iterations under no_grad that write the
    buffers weight_u and weight_v with `out=` (the convolution's twice)."""

    def __init__(self):
        super().__init__()
        sn = torch.nn.utils.spectral_norm
        self.conv = sn(torch.nn.Conv2d(3, 8, 3, padding=1), n_power_iterations=2)
        self.fc = sn(torch.nn.Linear(8, CLASSES))

    def forward(self, x):
        h = F.leaky_relu(self.conv(x), 0.2)
        return self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))


class GenericOps(torch.nn.Module):
    """A small conv net through operators that have no dedicated implementation in monet
    (the generic ATen path): GELU, group / instance / layer norm, leaky ReLU, ELU, tanh,
    softplus, Mish, padding, pixel shuffle, bilinear and nearest upsampling, permutes,
    broadcasting arithmetic with a parameter and with scalars, an in-place scalar multiply,
    a reshape that is no flatten, and a mean over all elements."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.gn = torch.nn.GroupNorm(2, 8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.inorm = torch.nn.InstanceNorm2d(16, affine=True)
        self.ln = torch.nn.LayerNorm(16)
        self.pos = torch.nn.Parameter(torch.randn(1, 16, 1, 1))
        self.conv3 = torch.nn.Conv2d(4, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, CLASSES)

    def forward(self, x):
        F = torch.nn.functional
        x = F.gelu(self.gn(self.conv1(x)))
        x = F.leaky_relu(self.conv2(x), 0.1)
        x = F.elu(self.inorm(x)) + self.pos
        x = self.ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        x = F.softplus(x) * 0.5 + F.mish(x)
        x = F.pixel_shuffle(x, 2)                      # [N, 4, H, W]
        x = F.interpolate(x, scale_factor=0.5, mode="bilinear", align_corners=False)
        x = torch.tanh(self.conv3(F.pad(x, (1, 0, 0, 1))))
        x = F.interpolate(x, scale_factor=2.0, mode="nearest")
        x = x.mul_(2.0)
        n, c, h, w = x.shape
        x = x.reshape(n, c, h * w).transpose(1, 2)     # [N, HW, C]
        return self.fc(x.mean(1)) + x.mean()


class EncoderClassifier(torch.nn.Module):
    """An nn.TransformerEncoder classifier: a linear embedding of [N, T, F] features, two
    encoder layers (nn.MultiheadAttention inside), mean over positions, a linear head."""

    def __init__(self, features=8, dim=16, heads=2, layers=2):
        super().__init__()
        self.embed = torch.nn.Linear(features, dim)
        layer = torch.nn.TransformerEncoderLayer(dim, heads, dim_feedforward=32, dropout=0.1,
                                                 batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(dim, CLASSES)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x)).mean(dim=1))


class UNetGN(torch.nn.Module):
    """A small UNet with group norm, leaky ReLU, bilinear upsampling, padding to the skip
    connection's size and a tanh output (an image-to-image model trained with MSE)."""

    def __init__(self):
        super().__init__()

        def block(cin, cout):
            return torch.nn.Sequential(
                torch.nn.Conv2d(cin, cout, 3, padding=1), torch.nn.GroupNorm(4, cout),
                torch.nn.LeakyReLU(0.2))

        self.down1, self.down2, self.mid = block(3, 8), block(8, 16), block(16, 16)
        self.up2, self.up1 = block(32, 8), block(16, 8)
        self.out = torch.nn.Conv2d(8, 3, 1)

    def forward(self, x):
        F = torch.nn.functional
        d1 = self.down1(x)
        d2 = self.down2(F.max_pool2d(d1, 2))
        m = self.mid(F.max_pool2d(d2, 3, 3))       # 16 -> 5: upsampled back to 10
        u = F.interpolate(m, scale_factor=2.0, mode="bilinear", align_corners=False)
        u = F.pad(u, (0, d2.shape[3] - u.shape[3], 0, d2.shape[2] - u.shape[2]))
        u = self.up2(torch.cat([u, d2], 1))
        u = F.interpolate(u, scale_factor=2.0, mode="bilinear", align_corners=True)
        u = self.up1(torch.cat([u, d1], 1))
        return torch.tanh(self.out(u))


class FirstOutputs(torch.nn.Module):
    """Operators with several results of which the model uses the first: max and min over
    a dimension (values without indices), sort, kthvalue."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, CLASSES)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        x = x * x.max(dim=1, keepdim=True)[0] - x.min(dim=2, keepdim=True).values
        x = torch.sort(x, dim=3)[0] + torch.kthvalue(x, 2, dim=3, keepdim=True)[0]
        return self.fc(x.mean((2, 3)))


class IntegerResults(torch.nn.Module):
    """Results that are not floating point, read by later operators: a comparison's mask
    (torch.where), both results of max over a dimension, and arithmetic on indices
    (gather)."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.conv3 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, CLASSES)

    def forward(self, x):
        x = self.conv1(x)
        x = torch.where(x > 0, x, 0.1 * x)
        values, indices = x.max(dim=1, keepdim=True)
        x = self.conv2(x * values + torch.gather(x, 1, torch.remainder(indices + 3, 8)))
        x = self.conv3(torch.relu(x))
        return self.fc(torch.relu(x).mean((2, 3)))


class CausalSelfAttention(torch.nn.Module):
    """Hand-written causal attention, as GPT-2 implementations write it."""

    def __init__(self, dim, heads, length):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.drop = torch.nn.Dropout(0.1)
        self.register_buffer("mask", torch.tril(torch.ones(length, length)).view(
            1, 1, length, length))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        a = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5)
        a = a.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        a = self.drop(F.softmax(a, dim=-1))
        return self.proj((a @ v).transpose(1, 2).contiguous().view(b, t, c))


class TinyGPT(torch.nn.Module):
    """A GPT-2-style decoder: token and learned position embeddings, pre-norm blocks of
    causal self-attention and a GELU MLP, a final layer norm, the head tied to the token
    embedding: a Linear sharing its weight (head="linear"), or the logits computed as
    `h @ wte.weight.t()` (head="matmul": the parameter read by the embedding and, through
    a view of it, by a matmul)."""

    def __init__(self, vocab=64, dim=32, heads=4, layers=2, length=16, head="linear"):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, dim)
        self.wpe = torch.nn.Embedding(length, dim)
        self.blocks = torch.nn.ModuleList()
        for _ in range(layers):
            block = torch.nn.Module()
            block.ln1, block.ln2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
            block.attn = CausalSelfAttention(dim, heads, length)
            block.fc, block.out = torch.nn.Linear(dim, 4 * dim), torch.nn.Linear(4 * dim, dim)
            self.blocks.append(block)
        self.ln = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.wte.weight
        self.matmul_head = head == "matmul"

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = x + b.attn(b.ln1(x))
            x = x + b.out(F.gelu(b.fc(b.ln2(x))))
        if self.matmul_head:
            return self.ln(x) @ self.wte.weight.t()
        return self.head(self.ln(x))


def copy_of(model):
    # Tracing must not touch the model the reference is computed with (train-mode tracing
    # updates batch-norm running statistics).
    return copy.deepcopy(model)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    names = sys.argv[2:] or list(MODELS) + list(OTHERS) + list(SEGMENTATION)
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(2)
    for name in names:
        write(outdir, name)
    traced = torch.jit.trace(Unsupported(), torch.randn(2, 8))
    traced.save(os.path.join(outdir, "unsupported.pt"))


if __name__ == "__main__":
    main()
