"""A parameter read by two operators, one of them through a view of it: a GPT-style
decoder whose logits are `h @ wte.weight.t()` (the head tied to the token embedding, as
GPT-2 writes it). Every planner of `monet plan` plans the traced model, `monet verify`
accepts each plan, and `monet.optimize` plans it without touching the interpreter
(training against PyTorch is in test_training.py, case gpt_tied_matmul)."""
import os
import subprocess
import sys

import pytest
import torch

import monet

sys.path.insert(0, os.path.join(os.environ["MONET_SOURCE_DIR"], "tools"))
from make_import_fixtures import TinyGPT  # noqa: E402

MONET = os.environ.get("MONET_BINARY", "")
# Every planner that plans without a loss of precision (gist-fp16 is lossy).
PLANNERS = ["monet", "monet-noop", "checkmate", "storeall", "chen", "gist", "lean", "chain",
            "random"]


@pytest.fixture(scope="module")
def traced_decoder(tmp_path_factory):
    torch.manual_seed(0)
    model = TinyGPT(head="matmul").train()
    x = torch.randint(0, 64, (2, 16))
    path = tmp_path_factory.mktemp("tied") / "gpt.pt"
    with torch.no_grad():
        torch.jit.trace(model, x, check_trace=False).save(str(path))
    return str(path)


@pytest.mark.skipif(not os.path.exists(MONET), reason="MONET_BINARY is not set")
@pytest.mark.parametrize("planner", PLANNERS)
def test_every_planner_plans_and_verifies(traced_decoder, planner, tmp_path, cache_dir):
    plan = tmp_path / "plan.json"
    args = [MONET, "plan", "--model", traced_decoder, "--input-shape", "2,16",
            "--loss", "sequence_cross_entropy", "--planner", planner, "--cache-dir", cache_dir,
            "--time-limit", "5", "-o", str(plan)]
    if planner not in ("storeall", "chen", "gist", "random"):
        args += ["--budget", "1.0x"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    out = subprocess.run([MONET, "verify", "--plan", str(plan)], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr


def test_optimize_plans_the_decoder_in_this_process(cache_dir):
    torch.manual_seed(0)
    model = TinyGPT(head="matmul").double().train()
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    x = torch.randint(0, 64, (2, 16))
    # A float64 model: "Nx" is a ratio of autograd's float32 step, as plans count bytes.
    fast = monet.optimize(model, x, budget="2.0x", cache_dir=cache_dir, time_limit=5,
                          search_limit="work")
    got = fast(x)
    want = model(x)
    # The trace computes the attention's scale from a size as a float32 tensor: the traced
    # and the Python module differ by ~1e-9 in float64 (make_import_fixtures.py,
    # TRACE_REFERENCE).
    assert (got - want).abs().max().item() <= 1e-7 * want.abs().max().item()
    got.sum().backward()
    assert model.wte.weight.grad is not None
