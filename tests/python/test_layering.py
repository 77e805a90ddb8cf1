"""The layering of the sources (tools/check_layering.py): every #include of src/,
include/monet/ and python/ follows docs/DESIGN.md's layer order, and none makes a cycle.
The checker is also shown to fail on a planted upward include (between layers, and between
the planner's sub-folders), a planted cycle and a private header used outside its layer."""
import os
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
}


@pytest.mark.parametrize("kind", list(PLANTED))
def test_a_planted_violation_fails(kind, tmp_path):
    path, line, expected = PLANTED[kind]
    root = copy_tree(tmp_path)
    plant(root / path, line)
    r = check(str(root))
    assert r.returncode == 1
    assert expected in r.stdout and path in r.stdout, r.stdout
