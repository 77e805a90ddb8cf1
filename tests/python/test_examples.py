"""The example script trains (tiny settings) and prints its figures."""
import os
import re
import subprocess
import sys

import pytest


def test_train_torchvision_example(cache_dir):
    script = os.path.join(os.environ.get("MONET_SOURCE_DIR", "."), "examples",
                          "train_torchvision.py")
    if not os.path.exists(script):
        pytest.skip("MONET_SOURCE_DIR is not set to the source tree")
    run = subprocess.run(
        [sys.executable, script, "--model", "mobilenet_v2", "--batch", "8", "--image", "64",
         "--samples", "64", "--epochs", "2", "--budget", "0.6x", "--time-limit", "20",
         "--search-limit", "work",
         "--cache-dir", cache_dir], capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    assert "epoch 1: loss" in run.stdout
    peaks = re.findall(r"step peak ([\d.]+) MiB \(budget ([\d.]+) MiB\)", run.stdout)
    assert peaks and all(float(p) <= float(b) for p, b in peaks), run.stdout
    assert "plain PyTorch" in run.stdout
    assert "monet: " in run.stderr  # progress on the logger
