"""`monet train` data-parallel (c10d Gloo) under failure: a killed or stopped rank makes
the other stop within the timeout, naming it, and the last checkpoint loads; the
`--nproc` launcher names a killed rank and stops the others, and trains as PyTorch DDP does
(float32 against its float64 weights). (Equivalence in float64 with PyTorch's
DistributedDataParallel is tests/data_parallel_test.cpp.)"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

MONET = os.environ.get("MONET_BINARY", "")

pytestmark = pytest.mark.skipif(not os.path.exists(MONET), reason="MONET_BINARY is not set")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fault_args(d, *extra, steps=100000):
    return [MONET, "train", "--model", "resnet18", "--batch", "4", "--image", "32", "--width",
            "0.125", "--classes", "4", "--synthetic", "--planner", "storeall", "--steps",
            str(steps), "--timeout", "20", "--cache-dir", str(d / "cache"), *extra]


def wait_for(path, seconds):
    deadline = time.time() + seconds
    while not path.exists():
        assert time.time() < deadline, f"{path} was not written in {seconds} s"
        time.sleep(0.2)


@pytest.mark.parametrize("fault,shard", [("killed", "none"), ("stopped", "none"),
                                         ("killed", "gradients")])
def test_a_failed_rank_stops_the_other_and_the_checkpoint_loads(tmp_path, fault, shard):
    """Sharded (the checkpoint then gathers every rank's momentum on rank 0) or not."""
    ckpt = tmp_path / "c.pt"
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE="2")
    ranks = [subprocess.Popen(fault_args(tmp_path, "--checkpoint", str(ckpt),
                                         "--checkpoint-every", "2", "--shard", shard),
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for r in range(2)]
    try:
        wait_for(ckpt, 300)
        time.sleep(1)
        ranks[1].send_signal(signal.SIGKILL if fault == "killed" else signal.SIGSTOP)
        start = time.time()
        _, err = ranks[0].communicate(timeout=120)
        elapsed = time.time() - start
    finally:
        for p in ranks:
            if p.poll() is None:
                p.kill()
                p.wait()
    print(f"{fault} rank 1 (--shard {shard}): rank 0 stopped after {elapsed:.1f} s: {err.strip()[-400:]}")
    assert ranks[0].returncode == 1, err
    assert elapsed < 20 + 5 + 15  # the collective timeout, the roll call, slack
    assert "rank 1 did not answer a roll call" in err, err
    # The last checkpoint is whole: a single process resumes from it.
    out = subprocess.run(fault_args(tmp_path, "--resume", str(ckpt), steps=1),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "nothing to train" in out.stderr


def test_the_launcher_names_a_killed_rank_and_stops_the_others(tmp_path):
    launcher = subprocess.Popen(fault_args(tmp_path, "--nproc", "2", "--master-port",
                                           str(free_port()), "--checkpoint",
                                           str(tmp_path / "c.pt"), "--checkpoint-every", "2"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(tmp_path / "c.pt", 300)
        children = subprocess.run(["pgrep", "-P", str(launcher.pid)], capture_output=True,
                                  text=True).stdout.split()
        assert len(children) == 2, children
        victim = None
        for pid in children:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            if b"RANK=1" in env:
                victim = int(pid)
        assert victim is not None
        os.kill(victim, signal.SIGKILL)
        _, err = launcher.communicate(timeout=60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert launcher.returncode != 0
    assert f"rank 1 (pid {victim}) was killed by signal 9" in err, err
    for pid in children:
        assert not os.path.exists(f"/proc/{pid}") or \
            open(f"/proc/{pid}/stat").read().split()[2] == "Z"


@pytest.mark.parametrize("args, message", [
    (["--nnodes", "2", "--node-rank", "2"], "--node-rank 2 is not below --nnodes 2"),
    (["--nproc", "2", "--gradient-sync", "sometimes"], "--gradient-sync must be"),
    (["--nproc", "0"], "--nproc"),
])
def test_bad_data_parallel_options_exit_two(tmp_path, args, message):
    out = subprocess.run(fault_args(tmp_path, *args, steps=1), capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr, out.stderr
    assert not (tmp_path / "cache").exists()


def test_a_budget_no_rank_can_plan_for_is_printed_once(tmp_path):
    """Rank 0's planning error reaches every rank; the launcher's output says it once."""
    out = subprocess.run(fault_args(tmp_path, "--nproc", "2", "--master-port", str(free_port()),
                                    "--budget", "0.05x", steps=1),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr
    errors = [line for line in out.stderr.splitlines() if "error" in line]
    assert len(errors) == 1, out.stderr
    assert errors[0].startswith("monet: error: a budget of "), out.stderr


def test_the_launcher_trains_like_pytorch_ddp(tmp_path):
    """`--nproc 2` end to end (launcher, sharded loader, broadcast, buckets, rank 0's
    save) in float32 against DistributedDataParallel's float64 weights on the same
    shards (tools/ddp_reference.py at fixture set-up)."""
    d = os.path.join(os.environ["MONET_TRAINING_FIXTURE_DIR"], "ddp")
    saved = tmp_path / "m.pt"
    out = subprocess.run(
        [MONET, "train", "--model", os.path.join(d, "model.pt"), "--input-shape", "4,3,32,32",
         "--data", os.path.join(d, "data"), "--data-format", "cifar10", "--steps", "5",
         "--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9", "--seed", "3",
         "--planner", "storeall", "--nproc", "2", "--master-port", str(free_port()),
         "--bucket-mib", "0.01", "--save", str(saved), "--cache-dir", str(tmp_path / "cache")],
        capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "data parallel: 2 ranks" in out.stderr
    worst = trained_against_reference(saved, os.path.join(d, "ddp_rank0.pt"))
    print(f"float32 --nproc 2 against DDP in float64: largest relative error {worst:.3g}")
    assert worst < 1e-4


def trained_against_reference(saved, reference_file):
    """Largest relative difference of a saved TorchScript model's weights from a
    reference's (tools/ddp_reference.py's buffers, '.' in names as '__')."""
    import torch
    trained = torch.jit.load(str(saved)).state_dict()
    reference = dict(torch.jit.load(str(reference_file)).named_buffers())
    worst = 0.0
    for name, got in trained.items():
        ref = reference[name.replace(".", "__")]
        if not ref.is_floating_point():
            assert torch.equal(got, ref), name
            continue
        worst = max(worst, ((got.double() - ref).abs().max() / ref.abs().max()).item())
    return worst


@pytest.mark.parametrize("nproc", [1, 2])
def test_clipping_and_accumulation_train_like_pytorch(tmp_path, nproc):
    """`--clip-grad-norm` and `--accumulate` (after-backward updates) on one process and
    on two ranks, in float32, against PyTorch (DistributedDataParallel, torch.nn.utils.
    clip_grad_norm_, the micro-batches' mean loss) in float64 on the same shards."""
    d = os.path.join(os.environ["MONET_TRAINING_FIXTURE_DIR"], "ddp")
    script = os.path.join(os.environ["MONET_SOURCE_DIR"], "tools", "ddp_reference.py")
    port = str(free_port())
    ranks = [subprocess.Popen([sys.executable, script, d, str(r), str(nproc), port, "3", "4",
                               "3", "0.1", "0.9", "0.3", "2", str(tmp_path)])
             for r in range(nproc)]
    assert [p.wait(timeout=300) for p in ranks] == [0] * nproc
    saved = tmp_path / "m.pt"
    parallel = ["--nproc", "2", "--master-port", str(free_port()), "--bucket-mib", "0.01"]
    out = subprocess.run(
        [MONET, "train", "--model", os.path.join(d, "model.pt"), "--input-shape", "4,3,32,32",
         "--data", os.path.join(d, "data"), "--data-format", "cifar10", "--steps", "3",
         "--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9", "--seed", "3",
         "--planner", "storeall", "--clip-grad-norm", "0.3", "--accumulate", "2", "--json",
         "--save", str(saved), "--cache-dir", str(tmp_path / "cache"),
         *(parallel if nproc > 1 else [])],
        capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    steps = [json.loads(line) for line in out.stdout.splitlines() if '"step"' in line]
    assert len(steps) == 3
    assert all(s["gradient_norm"] > 0.3 for s in steps), steps  # the clipping acted
    worst = trained_against_reference(saved, tmp_path / "ddp_rank0.pt")
    print(f"--nproc {nproc} --clip-grad-norm 0.3 --accumulate 2, float32 against PyTorch in "
          f"float64: largest relative error {worst:.3g}")
    assert worst < 1e-4


@pytest.mark.parametrize("option", [["--clip-grad-norm", "1"], ["--accumulate", "2"]])
def test_clipping_and_accumulation_refuse_fused_updates(tmp_path, option):
    out = subprocess.run(fault_args(tmp_path, *option, "--optimizer-update", "fused", steps=1),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert f"{option[0]} needs every gradient before any update" in out.stderr, out.stderr
    assert "--optimizer-update after-backward" in out.stderr, out.stderr
    assert not (tmp_path / "cache").exists()


def test_resuming_two_ranks_equals_training_through(tmp_path):
    """`--resume` restores every rank (weights, momentum, step, data order): 2 + 2 steps
    give rank 0's weights of 4 uninterrupted steps, exactly."""
    import torch

    def run(*extra):
        out = subprocess.run(
            fault_args(tmp_path, "--nproc", "2", "--master-port", str(free_port()), *extra[1:],
                       steps=extra[0]),
            capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr

    run(4, "--save", str(tmp_path / "through.pt"))
    run(2, "--checkpoint", str(tmp_path / "c.pt"))
    run(4, "--resume", str(tmp_path / "c.pt"), "--save", str(tmp_path / "resumed.pt"))
    through = torch.load(tmp_path / "through.pt")
    resumed = torch.load(tmp_path / "resumed.pt")
    assert through.keys() == resumed.keys()
    for name, t in through.items():
        assert torch.equal(t, resumed[name]), name


def cifar_train_args(d, tmp_path, *extra, steps=3, nproc=2):
    """`monet train` on the DDP fixture's model and CIFAR shards, on `nproc` ranks."""
    parallel = ["--nproc", str(nproc), "--master-port", str(free_port()), "--bucket-mib", "0.01"]
    return [MONET, "train", "--model", os.path.join(d, "model.pt"), "--input-shape", "4,3,32,32",
            "--data", os.path.join(d, "data"), "--data-format", "cifar10", "--steps", str(steps),
            "--seed", "3", "--planner", "storeall", "--cache-dir", str(tmp_path / "cache"),
            *(parallel if nproc > 1 else []), *extra]


@pytest.mark.parametrize("shard", ["optimizer", "gradients"])
def test_sharded_ranks_train_like_pytorch_zero(tmp_path, shard):
    """`--nproc 2 --shard` (SGD with momentum) in float32 against DistributedDataParallel
    with ZeroRedundancyOptimizer in float64 on the same shards."""
    d = os.path.join(os.environ["MONET_TRAINING_FIXTURE_DIR"], "ddp")
    script = os.path.join(os.environ["MONET_SOURCE_DIR"], "tools", "ddp_reference.py")
    port = str(free_port())
    ranks = [subprocess.Popen([sys.executable, script, d, str(r), "2", port, "3", "4", "3", "0.1",
                               "0.9", "0", "1", str(tmp_path), "sgd", "1"]) for r in range(2)]
    assert [p.wait(timeout=300) for p in ranks] == [0, 0]
    saved = tmp_path / "m.pt"
    out = subprocess.run(cifar_train_args(d, tmp_path, "--optimizer", "sgd", "--lr", "0.1",
                                          "--momentum", "0.9", "--shard", shard, "--save",
                                          str(saved)),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert f"sharded ({shard})" in out.stderr, out.stderr
    worst = trained_against_reference(saved, tmp_path / "ddp_rank0.pt")
    print(f"--shard {shard}, float32 against DDP + ZeroRedundancyOptimizer in float64: "
          f"largest relative error {worst:.3g}")
    assert worst < 1e-4


def checkpoint_tensors(path):
    """A `monet train` checkpoint (a TorchScript archive of LibTorch's serialization), read
    in plain PyTorch: the model's tensors by name, and Adam's state of parameter i (LibTorch
    files it under the parameter's address, listed in order in its group) as
    'state/i/exp_avg' and so on."""
    import torch
    m = torch.jit.load(str(path))
    out = dict(m._c.getattr("tensors"))
    group = getattr(m.optimizer.param_groups, "param_groups/0")
    i = 0
    while group._c.hasattr(f"params/{i}"):
        key = group._c.getattr(f"params/{i}")
        if hasattr(m.optimizer.state, key):
            state = getattr(m.optimizer.state, key)._c
            for field in ["exp_avg", "exp_avg_sq"]:
                out[f"state/{i}/{field}"] = state.getattr(field)
            out[f"state/{i}/step"] = torch.tensor(state.getattr("step"))
        i += 1
    return out


def test_sharded_adam_equals_unsharded_and_its_checkpoint_resumes_anywhere(tmp_path):
    """Adam on two ranks: `--shard optimizer` and `--shard gradients` train the same weights
    as `--shard none`, bit for bit, and write the same checkpoint (rank 0 gathers every
    rank's moments); that checkpoint resumes on two sharded ranks exactly as training
    straight through, and on one process."""
    import torch
    d = os.path.join(os.environ["MONET_TRAINING_FIXTURE_DIR"], "ddp")

    def train(*extra, steps=2):
        out = subprocess.run(cifar_train_args(d, tmp_path, "--optimizer", "adam", "--lr", "0.01",
                                              *extra, steps=steps),
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        return out

    for shard in ["none", "optimizer", "gradients"]:
        train("--shard", shard, "--checkpoint", str(tmp_path / f"{shard}.ckpt"))
    whole = checkpoint_tensors(tmp_path / "none.ckpt")
    assert sum("exp_avg_sq" in name for name in whole) == 20, list(whole)  # every parameter
    for shard in ["optimizer", "gradients"]:
        got = checkpoint_tensors(tmp_path / f"{shard}.ckpt")
        assert got.keys() == whole.keys(), shard
        for name, t in whole.items():
            assert torch.equal(got[name], t), (shard, name)
    train("--shard", "gradients", "--save", str(tmp_path / "through.pt"), steps=4)
    train("--shard", "gradients", "--resume", str(tmp_path / "gradients.ckpt"), "--save",
          str(tmp_path / "resumed.pt"), steps=4)
    through = torch.jit.load(str(tmp_path / "through.pt")).state_dict()
    resumed = torch.jit.load(str(tmp_path / "resumed.pt")).state_dict()
    for name, t in through.items():
        assert torch.equal(t, resumed[name]), name
    alone = subprocess.run(
        cifar_train_args(d, tmp_path, "--optimizer", "adam", "--lr", "0.01", "--resume",
                         str(tmp_path / "gradients.ckpt"), steps=3, nproc=1),
        capture_output=True, text=True, timeout=600)
    assert alone.returncode == 0, alone.stderr


@pytest.mark.parametrize("option", [["--clip-grad-norm", "1"], ["--accumulate", "2"],
                                    ["--shard", "zero3"]])
def test_sharding_refuses_what_needs_every_gradient(tmp_path, option):
    extra = ["--shard", "optimizer"] if option[0] != "--shard" else []
    out = subprocess.run(fault_args(tmp_path, "--nproc", "2", *extra, *option, steps=1),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert "--shard" in out.stderr, out.stderr
    assert not (tmp_path / "cache").exists()
    alone = subprocess.run(fault_args(tmp_path, "--shard", "optimizer", steps=1),
                           capture_output=True, text=True, timeout=60)
    assert alone.returncode == 2 and "--nproc" in alone.stderr, alone.stderr
