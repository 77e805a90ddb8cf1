"""The model the data-parallel tests train: a tiny ResNet with batch norm (torchvision's
BasicBlock), 10 classes, for 32x32 images."""
import torch
import torchvision


class TinyResNet(torch.nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        block = torchvision.models.resnet.BasicBlock
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.relu = torch.nn.ReLU(inplace=True)
        down = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 1, stride=2, bias=False),
                                   torch.nn.BatchNorm2d(16))
        self.layer1 = torch.nn.Sequential(block(8, 8), block(8, 16, stride=2, downsample=down))
        self.avgpool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(16, classes)

    def forward(self, x):
        x = self.layer1(self.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))
