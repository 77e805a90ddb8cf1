"""Pieces shared by the fixture scripts: a TorchScript container of named tensors, and
batch-norm randomisation (non-trivial statistics and affine parameters, so that the
comparisons exercise them)."""
import torch


class Tensors(torch.nn.Module):
    """A module whose buffers carry named tensors into C++ (torch::jit::load)."""

    def __init__(self, tensors):
        super().__init__()
        for name, t in tensors.items():
            self.register_buffer(name, t.detach().clone())

    def forward(self):
        return 0


def randomize_batch_norm(model, gen):
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            c = m.num_features
            with torch.no_grad():
                m.weight.copy_(torch.rand(c, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(c, generator=gen) * 0.1)
                m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
