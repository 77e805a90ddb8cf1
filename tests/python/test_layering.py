"""The layering of the sources (tools/check_layering.py): every #include of src/,
include/monet/ and python/ follows docs/DESIGN.md's layer order, and none makes a cycle.
The checker is also shown to fail on a planted upward include (between layers, and between
the planner's sub-folders), a planted cycle, a private header used outside its layer and a
layer below the public API included by the CLI."""
import os
import re
import shutil
import subprocess
import sys

import pytest

SOURCE = os.environ.get("MONET_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CHECKER = os.path.join(SOURCE, "tools", "check_layering.py")


def check(root):
    return subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True,
                          timeout=120)


def test_the_sources_follow_the_layer_order():
    r = check(SOURCE)
    assert r.returncode == 0, r.stdout + r.stderr


def copy_tree(tmp_path):
    for part in ("src", "include", "python", "docs"):
        shutil.copytree(os.path.join(SOURCE, part), tmp_path / part,
                        ignore=shutil.ignore_patterns("*.png", "*.json", "__pycache__"))
    return tmp_path


def plant(path, line):
    text = path.read_text()
    path.write_text(line + "\n" + text)


# (file the planted include goes into, the include, the line the checker must print)
PLANTED = {
    "upward": ("src/graph/graph.h", '#include "planner/monet_planner.h"',
               "src/graph/graph.h:1: includes src/planner/monet_planner.h (graph -> planner, up)"),
    "cycle": ("src/graph/graph.h", '#include "graph/zoo/model_zoo.h"', "include cycle:"),
    "sub-layer": ("src/planner/solver/milp.h", '#include "planner/search/program_search.h"',
                  "src/planner/solver/milp.h:1: includes src/planner/search/program_search.h "
                  "(planner/solver -> planner/search, up)"),
    "private": ("src/cli/cli_common.cpp", '#include "api/model_impl.h"',
                "src/cli/cli_common.cpp:1: includes src/api/model_impl.h, private to src/api/"),
    "below the public API": ("src/cli/command_plan.cpp", '#include "planner/named_planner.h"',
                             "src/cli/command_plan.cpp:1: includes src/planner/named_planner.h; "
                             "cli/ reaches the library through include/monet/ alone"),
}


@pytest.mark.parametrize("kind", list(PLANTED))
def test_a_planted_violation_fails(kind, tmp_path):
    path, line, expected = PLANTED[kind]
    root = copy_tree(tmp_path)
    plant(root / path, line)
    r = check(str(root))
    assert r.returncode == 1
    assert expected in r.stdout and path in r.stdout, r.stdout


def public_names():
    """Every class, struct and function name the public headers declare (comments dropped)."""
    names = set()
    folder = os.path.join(SOURCE, "include", "monet")
    for header in os.listdir(folder):
        with open(os.path.join(folder, header)) as f:
            for line in f:
                code = line.split("//")[0]
                names.update(re.findall(r"\b(?:class|struct)\s+(\w+)", code))
                names.update(re.findall(r"\b(\w+)\(", code))
    return names


def test_the_library_exports_only_the_public_api():
    """libmonet.so (src/libmonet.map) exports what include/monet/ declares and the memory
    tracker's C entry points; the layers below the API stay local."""
    binary = os.environ.get("MONET_BINARY")
    if not binary:
        pytest.skip("MONET_BINARY (the build's CLI, beside libmonet.so) is not set")
    library = os.path.join(os.path.dirname(binary), "libmonet.so")
    out = subprocess.run(["nm", "-DC", "--defined-only", library], capture_output=True,
                         text=True, check=True, timeout=120).stdout
    symbols = [line.split(" ", 2)[2] for line in out.splitlines() if line.count(" ") >= 2]
    public = public_names()
    strays = []
    for symbol in symbols:
        name = re.sub(r"^(typeinfo name for|typeinfo for|vtable for) ", "", symbol)
        if name.startswith("monet_tracker_"):
            continue
        parts = re.sub(r"\[abi:\w+\]", "", name.split("(")[0]).split("::")
        if parts[0] != "monet" or len(parts) < 2 or parts[1] not in public or "Impl" in parts:
            strays.append(symbol)
    assert not strays, "exported beyond the public API:\n" + "\n".join(strays[:20])
    exported = " ".join(symbols)
    for needed in ("monet::Model::load(", "monet::PlannedModel::step(", "monet::budget_range(",
                   "typeinfo for monet::BudgetError", "monet_tracker_peak"):
        assert needed in exported, needed
