"""monet.data_parallel: two ranks (processes on this machine, Gloo over loopback) train
like PyTorch's DistributedDataParallel in the same processes (with
ZeroRedundancyOptimizer where monet shards the optimizer state or the gradients), in
float64, with updates after the backward or fused into it; sharded, the optimizer state
gathered on rank 0 equals ZeroRedundancyOptimizer's and resumes in plain PyTorch; a rank
that dies stops the other's backward with an error naming it; bad arguments are refused
before any rank waits for another."""
import json
import os
import socket
import subprocess
import sys

import pytest
import torch

import monet

RANK_SCRIPT = os.path.join(os.path.dirname(__file__), "data_parallel_rank.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("shard, optimizer, update", [
    ("none", "sgd-momentum", "after-backward"),
    ("none", "adam", "fused"),
    ("optimizer", "adam", "fused"),
    ("optimizer", "sgd-momentum", "after-backward"),
    ("gradients", "sgd-momentum", "fused"),
    ("gradients", "adam", "after-backward"),
])
def test_two_ranks_train_like_pytorch_ddp(tmp_path, shard, optimizer, update):
    ports = [str(free_port()), str(free_port())]
    ranks = [subprocess.Popen([sys.executable, RANK_SCRIPT, str(tmp_path / f"rank{r}.json"),
                               str(r), "2", *ports, shard, optimizer, update,
                               str(tmp_path / "cache")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(2)]
    logs = [p.communicate(timeout=600)[0] for p in ranks]
    # Both ranks' output on a failure: where each was when one stopped (faulthandler).
    assert all(p.returncode == 0 for p in ranks), "\n".join(
        f"rank {r} (exit {p.returncode}):\n{logs[r][-3000:]}" for r, p in enumerate(ranks))
    results = [json.load(open(tmp_path / f"rank{r}.json")) for r in range(2)]
    print(shard, optimizer, update, "worst relative parameter difference against DDP:",
          max(r["error"] for r in results))
    for r in results:
        assert r["moved"] > 1e-6, r  # trained, and rank 1 took rank 0's weights
        assert r["error"] <= 1e-12, r
        for got, want in zip(r["losses"], r["reference_losses"]):
            assert abs(got - want) <= 1e-12 * abs(want), r
    owned = [r["owned"] for r in results]
    if shard == "none":  # every rank updates every parameter
        assert owned[0] == owned[1] == [True] * len(owned[0])
    else:  # each parameter is one rank's, and each rank owns some
        assert all(a != b for a, b in zip(*owned)) and any(owned[0]) and any(owned[1])
        # Gathered on rank 0, monet's optimizer state is ZeroRedundancyOptimizer's; sharded
        # again, each rank keeps its own; the checkpoint resumes in plain PyTorch.
        print("optimizer state against ZeRO's:", results[0]["state_error"],
              "resumed in plain PyTorch against the uninterrupted run:",
              results[0]["resume_error"])
        assert results[0]["state_error"] <= 1e-12
        assert results[0]["resume_error"] <= 1e-12
        for r in results:
            assert r["state_kept"] == r["owned"], r


def test_a_dead_rank_stops_the_others_backward_naming_it(tmp_path):
    ports = [str(free_port()), str(free_port())]
    env = dict(os.environ, RANK_1_EXITS_AT_STEP="1")
    ranks = [subprocess.Popen([sys.executable, RANK_SCRIPT, str(tmp_path / f"rank{r}.json"),
                               str(r), "2", *ports, "gradients", "adam", "fused",
                               str(tmp_path / "cache")], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(2)]
    logs = [p.communicate(timeout=600)[0] for p in ranks]
    assert ranks[1].returncode == 3, logs[1][-3000:]
    assert ranks[0].returncode == 0, logs[0][-3000:]
    stopped = json.load(open(tmp_path / "rank0.json"))["stopped"]
    assert "rank 0, step 2: " in stopped and "rank 1 did not answer" in stopped, stopped


def test_bad_arguments_are_refused_before_the_rendezvous(cache_dir):
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 4))
    x = torch.randn(2, 3, 2, 2)
    with pytest.raises(ValueError, match="unknown shard mode 'stage2'"):
        monet.data_parallel(model, x, shard="stage2", cache_dir=cache_dir)
    with pytest.raises(ValueError, match="pass the optimizer itself"):
        monet.data_parallel(model, x, shard="optimizer", optimizer="adam", cache_dir=cache_dir)
    with pytest.raises(ValueError, match="rank 2 of world size 2 is not a rank"):
        monet.data_parallel(model, x, rank=2, world_size=2, cache_dir=cache_dir)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bucket'"):
        monet.data_parallel(model, x, bucket=3)
    env = dict(os.environ, WORLD_SIZE="two")
    out = subprocess.run([sys.executable, "-c", "import torch, monet; monet.data_parallel("
                          "torch.nn.Linear(3, 2), torch.randn(2, 3))"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "WORLD_SIZE='two' is not a whole number" in out.stderr


def test_one_rank_alone_trains_like_optimize(cache_dir):
    """A job of one rank (no launcher): the same training as monet.optimize."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 6 * 6, 5)).double()
    twin = __import__("copy").deepcopy(model)
    x = torch.randn(4, 3, 8, 8, dtype=torch.float64)
    y = torch.randint(0, 5, (4,))
    runs = []
    for m, make in ((model, lambda m, o: monet.data_parallel(
            m, x, optimizer=o, planner="storeall", rank=0, world_size=1,
            master_port=free_port(), cache_dir=cache_dir)),
                    (twin, lambda m, o: monet.optimize(m, x, optimizer=o, planner="storeall",
                                                       cache_dir=cache_dir))):
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        fast = make(m, opt)
        for _ in range(2):
            torch.nn.functional.cross_entropy(fast(x), y).backward()
        runs.append(fast.last_step()["peak_bytes"])
    for a, b in zip(model.parameters(), twin.parameters()):
        assert torch.equal(a, b)


DDP_PEAKS = """
import json, sys, torch, torch.distributed as dist, monet
monet.install_memory_tracker()
dist.init_process_group("gloo", init_method="file://" + sys.argv[1], rank=0, world_size=1)
x, y = torch.randn(4, 3, 8, 8), torch.randint(0, 5, (4,))
peaks = []
# The first, plain, run warms up what the first use of each operator allocates for good.
for wrap in (lambda m: m, lambda m: m, torch.nn.parallel.DistributedDataParallel):
    before = monet.current_memory()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Linear(4 * 6 * 6, 5))
    wrapped, opt = wrap(m), torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):  # the second step has the momentum
        opt.zero_grad(set_to_none=True)
        monet.reset_peak_memory()
        torch.nn.functional.cross_entropy(wrapped(x), y).backward()
        opt.step()
    peaks.append(monet.peak_memory() - before)
print(json.dumps({"autograd": peaks[1], "ddp": peaks[2],
                  "parameter_bytes": sum(p.numel() * 4 for p in m.parameters())}))
"""


def test_a_ratio_budget_is_of_pytorch_ddps_per_rank_step(tmp_path, cache_dir):
    """PyTorch's DDP (one rank, Gloo) peaks above plain autograd by one copy of the
    gradients (its buckets); monet.data_parallel's "1.0x" is of that step: its baseline
    exceeds monet.optimize's by the same bytes."""
    out = subprocess.run([sys.executable, "-c", DDP_PEAKS, str(tmp_path / "rendezvous")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    pytorch = json.loads(out.stdout)
    assert pytorch["ddp"] - pytorch["autograd"] == pytorch["parameter_bytes"], pytorch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 6 * 6, 5))
    x = torch.randn(4, 3, 8, 8)
    alone = monet.optimize(model, x, "1.0x", planner="storeall", cache_dir=cache_dir)
    parallel = monet.data_parallel(model, x, "1.0x", planner="storeall", rank=0, world_size=1,
                                   master_port=free_port(), cache_dir=cache_dir)
    assert alone.plan.budget_baseline == "autograd's step"
    assert parallel.plan.budget_baseline == "DDP's per-rank step"
    assert parallel.plan.baseline_peak - alone.plan.baseline_peak == pytorch["parameter_bytes"]
    assert parallel.plan.budget == parallel.plan.baseline_peak
