"""The zoo's UNet (src/graph/zoo/zoo_unet.cpp) as a PyTorch module: the widely used layout
(DoubleConv = 2 x (3x3 convolution without bias, batch norm, ReLU in place); max-pool
down, transposed-convolution up, the skip concatenated before the up block's DoubleConv),
3 input channels, 64 features at the top, 5 resolutions, one output class trained with
binary cross-entropy on logits. `run(x, checkpointed=True)` wraps every block (the first
DoubleConv, each down and each up block) in torch.utils.checkpoint: the skip connections
make the network no chain, so checkpoint_sequential does not apply to it."""
import torch
import torch.utils.checkpoint


def double_conv(cin, cout):
    layers = []
    for c in (cin, cout):
        layers += [torch.nn.Conv2d(c, cout, 3, padding=1, bias=False),
                   torch.nn.BatchNorm2d(cout), torch.nn.ReLU(inplace=True)]
    return torch.nn.Sequential(*layers)


class Up(torch.nn.Module):
    """Transposed convolution to half the channels and twice the size, the skip
    concatenated in front, then a DoubleConv."""

    def __init__(self, cin, cout):
        super().__init__()
        self.up = torch.nn.ConvTranspose2d(cin, cin // 2, 2, stride=2)
        self.conv = double_conv(cin, cout)

    def forward(self, x, skip):
        return self.conv(torch.cat([skip, self.up(x)], 1))


class UNet(torch.nn.Module):
    def __init__(self, base=64, levels=5, classes=1):
        super().__init__()
        self.inc = double_conv(3, base)
        self.down = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.MaxPool2d(2), double_conv(base << (i - 1), base << i))
            for i in range(1, levels))
        self.up = torch.nn.ModuleList(
            Up(base << i, base << (i - 1)) for i in range(levels - 1, 0, -1))
        self.outc = torch.nn.Conv2d(base, classes, 1)

    def forward(self, x):
        return self.run(x, checkpointed=False)

    def run(self, x, checkpointed):
        """The forward pass, with every block under torch.utils.checkpoint when
        `checkpointed`."""
        def block(module, *inputs):
            if checkpointed:
                return torch.utils.checkpoint.checkpoint(module, *inputs, use_reentrant=False)
            return module(*inputs)

        skips = []
        x = block(self.inc, x)
        for down in self.down:
            skips.append(x)
            x = block(down, x)
        for up in self.up:
            x = block(up, x, skips.pop())
        return self.outc(x)
