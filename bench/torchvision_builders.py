"""Every torchvision 0.14 builder (classification, segmentation, video) as a user builds
it, at a small input: traced by monet.optimize, planned with its loss inside at the
budget halfway between its leanest plan and store-all, trained 3 steps of SGD with
momentum in float64 beside a copy trained by PyTorch, then timed against PyTorch on the
same module, interleaved in this process (1 thread). One table row per builder:

    model | parameters | generic nodes | store-all / autograd | monet / autograd | overhead | rise - predicted | worst error | verdict

"generic nodes": operators on the generic ATen path of all those traced (the loss
among them); "store-all / autograd": store-all's predicted step (forward and backward, with the
optimizer's state) against PyTorch's measured step peak; "monet / autograd": the planned step's measured peak against PyTorch's (both above
what was live before the model); "overhead": median step time against PyTorch's, minus
one; "rise - predicted": a planned step's tracked rise less the simulated one (bytes);
"worst error": the largest relative difference of a loss or a parameter from PyTorch's
(a pass needs <= 1e-9). A builder with more parameters than --max-parameters is listed
as not run (its float64 state, four copies (monet's parameters, gradients and momentum,
and the reference's parameters), would not fit a 24 GiB machine).

Usage: torchvision_builders.py [--max-parameters N] [--rounds R] [NAME ...]
(run with bench/locate_monet.sh's PYTHONPATH, or an installed monet)."""
import argparse
import copy
import gc
import os
import statistics
import sys
import time

import torch
import torchvision

import monet

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("MONET_SOURCE_DIR", os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
from interleaved_steps import measure_interleaved  # noqa: E402
from test_training import train, without_dropout, worst_state_error  # noqa: E402

STEPS = 3
CLASSES = 10
M = torchvision.models
# Builders whose stem needs another image side than 64, and their keyword arguments
# (a ViT's image side is its constructor's; Inception V3's auxiliary head pools a 5x5
# window of its 17x17 feature map (299 in); MaxViT's windows need 224).
IMAGE = {"inception_v3": 299, "maxvit_t": 224, "vit_h_14": 56, "alexnet": 96}
KWARGS = {"inception_v3": {"init_weights": False}, "googlenet": {"init_weights": False}}
KWARGS.update({n: {"image_size": IMAGE.get(n, 64)}
               for n in ("vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14")})


def builders():
    """(name, family) of every builder torchvision registers."""
    out = [(n, "classification") for n in M.list_models(module=M)]
    out += [(n, "segmentation") for n in M.list_models(module=M.segmentation)]
    out += [(n, "video") for n in M.list_models(module=M.video)]
    return out


def video_model(name, frames, side):
    """The builder's model; MViT's at a clip of `frames` x `side`²: its builders fix 16 x
    224² (the size of its position embeddings), so their blocks are built as they are,
    for the smaller clip (torchvision's _mvit given the clip's size)."""
    if not name.startswith("mvit"):
        return M.get_model(name, num_classes=CLASSES)
    from torchvision.models.video import mvit
    build_mvit = mvit._mvit

    def at_clip_size(**kwargs):
        kwargs.update(spatial_size=(side, side), temporal_size=frames)
        return build_mvit(**kwargs)
    mvit._mvit = at_clip_size
    try:
        return M.get_model(name, num_classes=CLASSES)
    finally:
        mvit._mvit = build_mvit


def build(name, family):
    """(model, input shape, output trained, target maker)."""
    if family == "segmentation":  # batch 4: DeepLabV3's pooled branch normalises N values
        model = M.get_model(name, num_classes=4, weights=None, weights_backbone=None)
        return model, (4, 3, 64, 64), "out", lambda g: torch.randint(0, 4, (4, 64, 64),
                                                                       generator=g)
    if family == "video":
        # S3D's last pooling window is 2x7x7 of a 1/8 x 1/32 feature map (one clip of
        # 16x224x224: its batch norms normalise over frames and pixels).
        big = name == "s3d"
        batch, frames, side = (1, 16, 224) if big else (2, 4, 32)
        model = video_model(name, frames, side)
        shape = (batch, 3, frames, side, side)
    else:
        model = M.get_model(name, num_classes=CLASSES, **KWARGS.get(name, {}))
        side = IMAGE.get(name, 64)
        shape = (4, 3, side, side)
    output = "0" if name in ("inception_v3", "googlenet") else None
    return model, shape, output, lambda g: torch.randint(0, CLASSES, (shape[0],), generator=g)


def loss_of(output):
    def loss(out, y):
        if not torch.is_tensor(out):
            out = out[int(output)] if output.isdigit() else out[output]
        return torch.nn.functional.cross_entropy(out, y)
    return loss


def run_one(name, family, rounds):
    torch.manual_seed(0)
    gc.collect()  # the previous builder's cycles, lest they be freed inside a measured step
    before = monet.current_memory()
    model, shape, output, target = build(name, family)
    for m in model.modules():  # its noise is monet's, not PyTorch's: off, as dropout
        if isinstance(m, torchvision.ops.StochasticDepth):
            m.p = 0.0
    model = without_dropout(model).double().train()
    params = sum(p.numel() for p in model.parameters())
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(shape, generator=g, dtype=torch.float64) for _ in range(STEPS)]
    ys = [target(g) for _ in range(STEPS)]
    loss_fn = loss_of(output)
    reference = copy.deepcopy(model)
    want, rounding_level = train(reference, reference, "sgd-momentum", xs, ys, loss_fn)
    for p in reference.parameters():  # only its weights are compared: one copy, not two
        p.grad = None
    inside = dict(loss=loss_fn, target=ys[0], output=output, optimizer="sgd-momentum",
                  time_limit=20, search_limit="work", progress=False)
    r = monet.budget_range(model, xs[0], **inside)
    fast = monet.optimize(model, xs[0], budget=(r.smallest + r.store_all) // 2, **inside)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    losses, rises = [], []
    for x, y in zip(xs, ys):
        opt.zero_grad(set_to_none=True)
        loss = fast(x, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        s = fast.last_step()
        rises.append(s["peak_bytes"] - s["start_bytes"])
    error = max(abs(a - b) / abs(b) for a, b in zip(losses, want))
    error = max(error, worst_state_error(model, reference, rounding_level))
    del reference
    plan = fast.plan
    predicted = plan.predicted_peak - plan.predicted_start
    methods = {"pytorch": lambda: loss_fn(model(xs[0]), ys[0]),
               "monet": lambda: fast(xs[0], ys[0])}
    peaks, seconds = measure_interleaved(methods, opt, rounds, before)
    pytorch_time = statistics.median(seconds["pytorch"])
    return {"parameters": params,
            "store_all": (plan.store_all_peak + plan.optimizer_bytes) / peaks["pytorch"],
            "memory": peaks["monet"] / peaks["pytorch"],
            "overhead": statistics.median(seconds["monet"]) / pytorch_time - 1,
            "generic": f"{fast.plan.generic_node_count} of {fast.plan.node_count}",
            "rise": max(rises, key=lambda v: abs(v - predicted)) - predicted,
            "error": error}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="builders, in this order (default: every one)")
    ap.add_argument("--max-parameters", type=int, default=400_000_000)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(1)
    monet.install_memory_tracker()
    family = dict(builders())
    unknown = [n for n in a.names if n not in family]
    if unknown:
        ap.error(f"unknown builder(s): {', '.join(unknown)}")
    chosen = [(n, family[n]) for n in a.names] if a.names else list(family.items())
    print("| model | parameters | generic nodes | store-all / autograd | monet / autograd | "
          "overhead | rise - predicted (B) | worst error | verdict |")
    print("|---|---|---|---|---|---|---|---|---|")
    passed = 0
    for name, family in chosen:
        start = time.perf_counter()
        count = sum(p.numel() for p in build(name, family)[0].parameters())
        gc.collect()
        if count > a.max_parameters:
            print(f"| {name} | {count / 1e6:.1f}M | | | | | | | not run: over "
                  f"{a.max_parameters / 1e6:.0f}M parameters |", flush=True)
            continue
        try:
            row = run_one(name, family, a.rounds)
        except Exception as e:  # the reason, in one line
            print(f"| {name} | {count / 1e6:.1f}M | | | | | | | fails: "
                  f"{str(e).splitlines()[0][:160]} |", flush=True)
            continue
        ok = row["error"] <= 1e-9 and abs(row["rise"]) <= 16
        passed += ok
        print(f"| {name} | {row['parameters'] / 1e6:.2f}M | {row['generic']} | "
              f"{row['store_all']:.2f} | "
              f"{row['memory']:.2f} | {row['overhead']:+.1%} | {row['rise']} | "
              f"{row['error']:.1e} | {'pass' if ok else 'FAIL'} "
              f"({time.perf_counter() - start:.0f} s) |", flush=True)
    print(f"\n{passed} of {len(chosen)} builders pass")


if __name__ == "__main__":
    main()
