"""Every fenced code block in README.md and docs/*.md is checked, so that none goes stale.
A block's info string says what it is and how it is checked:
- `sh`: commands, run one after another in a fresh directory (`monet` is the built CLI,
  `python3` Debian's with the built package); `traced.pt` there is a traced torchvision
  MobileNetV2 (input 1x3x96x96), for the blocks that plan a traced model.
- `python`: a script, run as it is.
- `cpp`: an excerpt of a program in examples/ (its lines in order), which the suite
  builds and runs (test example_find_package).
- `bench`: a benchmark's commands (docs/RESULTS.md), minutes to hours each: checked as
  `text` is, not run (their figures are in the text beside them).
- `text`: a synopsis or a layout: each `monet SUBCOMMAND --flag` must be a flag that
  subcommand accepts (`--help`), each repository path (src/..., docs/...) must exist.
A fence without an info string fails."""
import os
import re
import subprocess
import sys

import pytest

SOURCE = os.environ.get("MONET_SOURCE_DIR", ".")
MONET = os.environ.get("MONET_BINARY", "")
PAGES = ["README.md"] + sorted(
    os.path.join("docs", f) for f in os.listdir(os.path.join(SOURCE, "docs"))
    if f.endswith(".md") and f != "HISTORY.md")  # HISTORY.md quotes superseded commands

pytestmark = pytest.mark.skipif(not os.path.exists(MONET), reason="MONET_BINARY is not set")


def blocks():
    """(page, first line, info string, text) of every fenced block of every page."""
    found = []
    for page in PAGES:
        lines = open(os.path.join(SOURCE, page)).read().split("\n")
        i = 0
        while i < len(lines):
            if lines[i].startswith("```"):
                info, start = lines[i][3:].strip(), i + 1
                i += 1
                while i < len(lines) and not lines[i].startswith("```"):
                    i += 1
                found.append((page, start, info, "\n".join(lines[start:i])))
            i += 1
    return found


BLOCKS = blocks()


def ids(kind):
    return [b for b in BLOCKS if b[2] == kind]


def name(block):
    return f"{block[0]}:{block[1]}"


def test_every_block_says_what_it_is():
    unknown = [f"{name(b)} ({b[2] or 'no info string'})" for b in BLOCKS
               if b[2] not in ("sh", "python", "cpp", "text", "bench")]
    assert not unknown, unknown


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A directory with traced.pt, and the environment the blocks run in."""
    d = tmp_path_factory.mktemp("docs")
    subprocess.run([sys.executable, "-c",
                    "import torch, torchvision; m = torchvision.models.mobilenet_v2(); "
                    "torch.jit.trace(m, torch.randn(1, 3, 96, 96)).save('traced.pt')"],
                   cwd=d, check=True, timeout=300)
    bin_dir = d / "bin"
    bin_dir.mkdir()
    (bin_dir / "monet").symlink_to(MONET)
    env = dict(os.environ, PATH=f"{bin_dir}:/usr/bin:/bin", MONET_CACHE_DIR=str(d / "cache"))
    return d, env


@pytest.mark.parametrize("block", ids("sh"), ids=name)
def test_shell_block_runs(block, workdir):
    d, env = workdir
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", block[3]], cwd=d, env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, f"{name(block)}:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"


@pytest.mark.parametrize("block", ids("python"), ids=name)
def test_python_block_runs(block, workdir):
    d, env = workdir
    out = subprocess.run([sys.executable, "-c", block[3]], cwd=d, env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, f"{name(block)}:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"


def code_lines(text):
    """Non-blank lines without trailing // comments and surrounding space."""
    lines = (re.sub(r"\s*//.*$", "", line).strip() for line in text.split("\n"))
    return [line for line in lines if line]


@pytest.mark.parametrize("block", ids("cpp"), ids=name)
def test_cpp_block_is_an_example_excerpt(block):
    want = code_lines(block[3])
    examples = os.path.join(SOURCE, "examples")
    for f in sorted(os.listdir(examples)):
        if not f.endswith(".cpp"):
            continue
        have = iter(code_lines(open(os.path.join(examples, f)).read()))
        if all(line in have for line in want):  # in order: `in` consumes the iterator
            return
    pytest.fail(f"{name(block)} is not an excerpt of a program in examples/")


def accepted_flags(subcommand, cache={}):
    if subcommand not in cache:
        out = subprocess.run([MONET, subcommand, "--help"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, f"monet {subcommand} --help: {out.stderr}"
        cache[subcommand] = set(re.findall(r"(--[a-z][a-z0-9-]*)", out.stdout))
    return cache[subcommand]


@pytest.mark.parametrize("block", ids("text") + ids("bench") + ids("sh"), ids=name)
def test_block_names_flags_and_paths_that_exist(block):
    text = block[3].replace("\\\n", " ")
    for line in text.split("\n"):
        m = re.match(r"\s*monet\s+([a-z]+)(.*)", line)
        if m:
            unknown = set(re.findall(r"(--[a-z][a-z0-9-]*)", m.group(2))) - \
                accepted_flags(m.group(1))
            assert not unknown, f"{name(block)}: monet {m.group(1)} has no {sorted(unknown)}"
        for path in re.findall(r"\b((?:src|docs|tests|tools|bench|scripts|examples|include|"
                               r"python)/[\w./-]*\w)", line):
            assert os.path.exists(os.path.join(SOURCE, path)), f"{name(block)}: no {path}"
