#!/usr/bin/env python3
"""Training fixtures: an ImageFolder of simple coloured shapes and a small traced ResNet.

Usage: make_training_fixtures.py OUTDIR

OUTDIR/shapes/<class>/<n>.png|jpg: 4 classes (red square, green disc, blue horizontal
bar, yellow cross) at random positions and sizes on a noisy grey background, 64 images
per class at 32x32, a quarter of them JPEG. OUTDIR/resnet_tiny.pt: a small ResNet
(torchvision's BasicBlock, 3-2-2 blocks of 16-32-64 channels, 4 classes) whose activations dominate its
memory, traced in eval mode. OUTDIR/cnn_plain.pt: a small CNN without batch norm or
dropout (data-parallel training against one process on the whole batch).
OUTDIR/ddp/: a tiny ResNet with batch norm (model.pt traced, init.pt its state_dict),
48 CIFAR-10-format records (data/data_batch_1.bin), and PyTorch DistributedDataParallel's
weights after 5 steps on 2 ranks over Gloo in float64 (ddp_rank{0,1}.pt; tools/ddp_reference.py).
Needs Debian's python3-torch and python3-torchvision (torchvision.io writes the images).
"""
import os
import socket
import subprocess
import sys

import torch
import torchvision
from torchvision.io import write_jpeg, write_png

SIZE = 32
PER_CLASS = 64
COLOURS = [(230, 40, 40), (40, 200, 60), (50, 70, 230), (230, 210, 40)]
NAMES = ["square", "disc", "bar", "cross"]


def shape_image(kind, gen):
    img = torch.full((3, SIZE, SIZE), 110.0) + torch.randn(3, SIZE, SIZE, generator=gen) * 12
    r = int(torch.randint(5, 9, (1,), generator=gen))
    cy, cx = (int(v) for v in torch.randint(r + 1, SIZE - r - 1, (2,), generator=gen))
    yy, xx = torch.meshgrid(torch.arange(SIZE), torch.arange(SIZE), indexing="ij")
    if kind == 0:
        mask = ((yy - cy).abs() <= r) & ((xx - cx).abs() <= r)
    elif kind == 1:
        mask = (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
    elif kind == 2:
        mask = ((yy - cy).abs() <= 2) & ((xx - cx).abs() <= r + 3)
    else:
        mask = (((yy - cy).abs() <= 1) & ((xx - cx).abs() <= r)) | (
            ((xx - cx).abs() <= 1) & ((yy - cy).abs() <= r))
    for c in range(3):
        img[c][mask] = COLOURS[kind][c] + torch.randn(int(mask.sum()), generator=gen) * 8
    return img.clamp(0, 255).to(torch.uint8)


class TinyResNet(torch.nn.Module):
    def __init__(self, classes):
        super().__init__()
        block = torchvision.models.resnet.BasicBlock
        self.conv1 = torch.nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(16)
        self.relu = torch.nn.ReLU(inplace=True)

        def down(cin, cout):
            return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride=2, bias=False),
                                       torch.nn.BatchNorm2d(cout))
        self.layer1 = torch.nn.Sequential(block(16, 16), block(16, 16), block(16, 16))
        self.layer2 = torch.nn.Sequential(block(16, 32, stride=2, downsample=down(16, 32)),
                                          block(32, 32))
        self.layer3 = torch.nn.Sequential(block(32, 64, stride=2, downsample=down(32, 64)),
                                          block(64, 64))
        self.avgpool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(64, classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def plain_cnn(classes):
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, classes))


DDP_STEPS, DDP_BATCH, DDP_SEED, DDP_LR, DDP_MOMENTUM, DDP_IMAGES = 5, 4, 3, 0.1, 0.9, 48


def ddp_fixtures(out):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from distributed_models import TinyResNet
    d = os.path.join(out, "ddp")
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    torch.manual_seed(0)
    model = TinyResNet()
    torch.save(model.state_dict(), os.path.join(d, "init.pt"))
    torch.jit.trace(model.eval(), torch.randn(2, 3, SIZE, SIZE)).save(os.path.join(d, "model.pt"))
    gen = torch.Generator().manual_seed(1)
    labels = torch.randint(0, 10, (DDP_IMAGES, 1), generator=gen).to(torch.uint8)
    pixels = torch.randint(0, 256, (DDP_IMAGES, 3 * SIZE * SIZE), generator=gen).to(torch.uint8)
    with open(os.path.join(d, "data", "data_batch_1.bin"), "wb") as f:
        f.write(torch.cat([labels, pixels], 1).numpy().tobytes())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ddp_reference.py")
    ranks = [subprocess.Popen([sys.executable, script, d, str(r), "2", str(port)] +
                              [str(v) for v in (DDP_STEPS, DDP_BATCH, DDP_SEED, DDP_LR,
                                                DDP_MOMENTUM)]) for r in range(2)]
    if [p.wait() for p in ranks] != [0, 0]:
        sys.exit("the DistributedDataParallel reference failed")


def main():
    out = sys.argv[1]
    gen = torch.Generator().manual_seed(0)
    for kind, name in enumerate(NAMES):
        d = os.path.join(out, "shapes", name)
        os.makedirs(d, exist_ok=True)
        for i in range(PER_CLASS):
            img = shape_image(kind, gen)
            if i % 4 == 3:
                write_jpeg(img, os.path.join(d, f"{i:03d}.jpg"), quality=95)
            else:
                write_png(img, os.path.join(d, f"{i:03d}.png"))
    torch.manual_seed(0)
    model = TinyResNet(len(NAMES))
    # Traced in eval mode: monet trains with batch statistics whatever the mode, and the
    # saved file then normalises with the running statistics, as eval() would.
    model.eval()
    torch.jit.trace(model, torch.randn(2, 3, SIZE, SIZE)).save(os.path.join(out, "resnet_tiny.pt"))
    plain = plain_cnn(len(NAMES)).eval()
    torch.jit.trace(plain, torch.randn(2, 3, SIZE, SIZE)).save(os.path.join(out, "cnn_plain.pt"))
    ddp_fixtures(out)
    print(f"training fixtures in {out}: {len(NAMES) * PER_CLASS} images, resnet_tiny.pt, "
          "cnn_plain.pt, ddp/")


if __name__ == "__main__":
    main()
