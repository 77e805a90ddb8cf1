"""torchvision 0.14 builders of the families the imported fixtures (tools/
make_import_fixtures.py) do not cover, as a user builds them: SqueezeNet, MNASNet, LR-ASPP
(segmentation, its "out" trained), GoogLeNet in training mode (its main output "0" trained,
its auxiliary heads' batch norms still updating their statistics), R3D-18 (video) and MViT V2 (video: torchvision's MViT
class in mvit_v2_s's configuration, with two small blocks; its relative positions and
residual pooling written into slices of the attention, an in-place dropout on the class
token). Each is traced by monet.optimize,
planned at a budget halfway between the leanest plan and store-all and trained 3 steps of
SGD with momentum in float64: losses and parameters equal PyTorch's (1e-9 relative).
Dropout is off (its noise is not PyTorch's); the batches are large enough that no batch
norm normalises over one or two values (ill-conditioned in any arithmetic)."""
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
