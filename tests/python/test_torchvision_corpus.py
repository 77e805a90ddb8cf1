"""torchvision 0.14's architectures, a family each, as a user builds them: SqueezeNet,
MNASNet, AlexNet, Inception V3 (at its smallest input, 75x75, without the auxiliary head),
LR-ASPP (segmentation, its "out" trained), GoogLeNet in training mode (its main output "0"
trained, its auxiliary heads' batch norms still updating their statistics) and R3D-18
(video) from their builders; and, from the builders' own classes at small widths and
depths, MViT V2 and V1 (video: relative positions and residual pooling written into slices
of the attention, an in-place dropout on the class token; V1 without them), MaxViT, RegNet
Y, EfficientNet V2, Swin V2, ResNeXt, R(2+1)D and MC3. The families the imported fixtures
(tools/make_import_fixtures.py) cover are not repeated. Each is traced by monet.optimize,
planned at a budget halfway between the leanest plan and store-all and trained 3 steps of
SGD with momentum in float64: losses and parameters equal PyTorch's (1e-9 relative).
Dropout and stochastic depth are off (their noise is not PyTorch's); the batches are large
enough that no batch norm normalises over one or two values (ill-conditioned in any
arithmetic). Every builder at its own size: bench/torchvision_builders.py."""
import pytest
import torch
import torchvision

from test_model_corpus import STEPS, check_trains_like_pytorch

CLASSES = 10


def without_dropout(model):
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    return model


def lraspp():
    return torchvision.models.segmentation.lraspp_mobilenet_v3_large(
        num_classes=4, weights=None, weights_backbone=None)


def mvit_v2_tiny():
    """mvit_v2_s's architecture (torchvision.models.video.mvit) at two blocks of 16 and 32
    channels, for 4 frames of 32x32."""
    from torchvision.models.video.mvit import MSBlockConfig, MViT
    blocks = [MSBlockConfig(1, 16, 16, [3, 3, 3], [3, 3, 3], [1, 1, 1], [1, 2, 2]),
              MSBlockConfig(2, 16, 32, [3, 3, 3], [3, 3, 3], [1, 2, 2], [1, 1, 1])]
    return MViT(spatial_size=(32, 32), temporal_size=4, block_setting=blocks,
                residual_pool=True, residual_with_cls_embed=False, rel_pos_embed=True,
                proj_after_attn=True, dropout=0.0, num_classes=CLASSES)


def mvit_v1_tiny():
    """mvit_v1_b's configuration of the MViT class (no residual pooling, no relative
    positions, proj_after_attn off) at two blocks of 16 and 32 channels."""
    from torchvision.models.video.mvit import MSBlockConfig, MViT
    blocks = [MSBlockConfig(1, 16, 32, [], [3, 3, 3], [], [1, 2, 2]),
              MSBlockConfig(2, 32, 32, [3, 3, 3], [3, 3, 3], [1, 2, 2], [1, 1, 1])]
    return MViT(spatial_size=(32, 32), temporal_size=4, block_setting=blocks,
                residual_pool=False, residual_with_cls_embed=False, rel_pos_embed=False,
                proj_after_attn=False, dropout=0.0, stochastic_depth_prob=0.0,
                num_classes=CLASSES)


def maxvit_tiny():
    """maxvit_t's architecture (MBConv with squeeze-excitation, block and grid attention
    with relative positions) at two stages of 16 and 32 channels, for 32x32."""
    return torchvision.models.maxvit.MaxVit(
        input_size=(32, 32), stem_channels=8, partition_size=2, block_channels=[16, 32],
        block_layers=[1, 1], head_dim=8, stochastic_depth_prob=0.0, num_classes=CLASSES)


def regnet_y_tiny():
    """regnet_y's architecture (grouped bottlenecks with squeeze-excitation), 4 blocks."""
    from torchvision.models.regnet import BlockParams, RegNet
    return RegNet(BlockParams.from_init_params(depth=4, w_0=8, w_a=8.0, w_m=2.0, group_width=8,
                                               se_ratio=0.25), num_classes=CLASSES)


def efficientnet_v2_tiny():
    """efficientnet_v2's architecture: fused MBConv stages, then MBConv."""
    from torchvision.models.efficientnet import EfficientNet, FusedMBConvConfig, MBConvConfig
    setting = [FusedMBConvConfig(1, 3, 1, 8, 8, 1), FusedMBConvConfig(4, 3, 2, 8, 16, 2),
               MBConvConfig(4, 3, 2, 16, 24, 1)]
    return EfficientNet(setting, dropout=0.0, stochastic_depth_prob=0.0, num_classes=CLASSES,
                        last_channel=32)


def swin_v2_tiny():
    """swin_v2_t's architecture (cosine attention, a continuous position bias through a
    Linear, post-norm residuals, PatchMergingV2) at two stages of 16 and 32 channels."""
    from torchvision.models.swin_transformer import (PatchMergingV2, SwinTransformer,
                                                     SwinTransformerBlockV2)
    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
                           window_size=[4, 4], stochastic_depth_prob=0.0, num_classes=CLASSES,
                           block=SwinTransformerBlockV2, downsample_layer=PatchMergingV2)


def resnext_tiny():
    """resnext50_32x4d's block (grouped 3x3 bottleneck convolutions), one per stage."""
    from torchvision.models.resnet import Bottleneck, ResNet
    return ResNet(Bottleneck, [1, 1, 1, 1], groups=4, width_per_group=4, num_classes=CLASSES)


def r2plus1d_tiny():
    """r2plus1d_18's architecture ((2+1)-D convolutions: spatial, then temporal), one block a
    stage."""
    from torchvision.models.video.resnet import BasicBlock, Conv2Plus1D, R2Plus1dStem, VideoResNet
    return VideoResNet(BasicBlock, [Conv2Plus1D] * 4, [1, 1, 1, 1], R2Plus1dStem,
                       num_classes=CLASSES)


def mc3_tiny():
    """mc3_18's architecture (3-D convolutions in the first stage, then spatial only), one
    block a stage."""
    from torchvision.models.video.resnet import (BasicBlock, BasicStem, Conv3DNoTemporal,
                                                 Conv3DSimple, VideoResNet)
    return VideoResNet(BasicBlock, [Conv3DSimple] + [Conv3DNoTemporal] * 3, [1, 1, 1, 1],
                       BasicStem, num_classes=CLASSES)


# name: (builder, input shape, the output trained (None: the model's only output))
CASES = {
    "squeezenet1_1": (lambda: without_dropout(torchvision.models.squeezenet1_1(
        num_classes=CLASSES)), (4, 3, 64, 64), None),
    "mnasnet0_5": (lambda: torchvision.models.mnasnet0_5(num_classes=CLASSES, dropout=0.0),
                   (4, 3, 64, 64), None),
    "lraspp_mobilenet_v3_large": (lraspp, (2, 3, 64, 64), "out"),
    "googlenet": (lambda: without_dropout(torchvision.models.googlenet(
        num_classes=CLASSES, aux_logits=True, init_weights=False)), (4, 3, 64, 64), "0"),
    "r3d_18": (lambda: torchvision.models.video.r3d_18(num_classes=CLASSES), (2, 3, 4, 32, 32),
               None),
    "mvit_v2_tiny": (mvit_v2_tiny, (2, 3, 4, 32, 32), None),
    "mvit_v1_tiny": (mvit_v1_tiny, (2, 3, 4, 32, 32), None),
    "maxvit_tiny": (maxvit_tiny, (2, 3, 32, 32), None),
    "regnet_y_tiny": (regnet_y_tiny, (4, 3, 64, 64), None),
    "efficientnet_v2_tiny": (efficientnet_v2_tiny, (4, 3, 32, 32), None),
    "swin_v2_tiny": (swin_v2_tiny, (2, 3, 32, 32), None),
    "resnext_tiny": (resnext_tiny, (4, 3, 64, 64), None),
    "r2plus1d_tiny": (r2plus1d_tiny, (2, 3, 4, 32, 32), None),
    "mc3_tiny": (mc3_tiny, (2, 3, 4, 32, 32), None),
    "alexnet": (lambda: without_dropout(torchvision.models.alexnet(num_classes=CLASSES)),
                (2, 3, 64, 64), None),
    "inception_v3": (lambda: torchvision.models.inception_v3(
        num_classes=CLASSES, aux_logits=False, init_weights=False, dropout=0.0),
        (2, 3, 75, 75), None),
}


def batches(shape, output):
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(shape, generator=g, dtype=torch.float64) for _ in range(STEPS)]
    if output is None or output.isdigit():  # classification: the logits, or a tuple's
        ys = [torch.randint(0, CLASSES, (shape[0],), generator=g) for _ in range(STEPS)]

        def logits_loss(out, y):
            logits = out if torch.is_tensor(out) else out[int(output)]
            return torch.nn.functional.cross_entropy(logits, y)
        return xs, ys, logits_loss
    ys = [torch.randint(0, 4, (shape[0],) + shape[2:], generator=g) for _ in range(STEPS)]

    def loss(out, y):  # the reference returns the dict; monet its trained output
        return torch.nn.functional.cross_entropy(out if torch.is_tensor(out) else out[output], y)
    return xs, ys, loss


@pytest.mark.parametrize("case", list(CASES))
def test_builder_trains_like_pytorch(case, cache_dir):
    make, shape, output = CASES[case]
    torch.manual_seed(0)
    model = make().double().train()
    xs, ys, loss_fn = batches(shape, output)
    check_trains_like_pytorch(model, xs, ys, loss_fn, output, cache_dir)
