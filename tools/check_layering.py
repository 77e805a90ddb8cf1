#!/usr/bin/env python3
"""Checks every #include of src/, include/monet/ and python/ against the layer order of
docs/DESIGN.md ("## Layers": one line per layer, the highest first; names on one line are
one level, and neither includes the other). A sub-folder (src/planner/solver/) is a layer
of its own, listed by its path. A file may include headers of its own layer
and of the layers below it; the public headers (include/monet/) are the api layer's. The
API's private headers (src/api/*_impl.h: what a Model and a PlannedModel hold) are for
src/api/ alone, and the CLI and Python include the public headers and their own files
alone. Also fails on a
cycle of includes between the project's own files. Prints one line per
violation and exits 1 when there is any; exits 0 when the includes follow the order.

usage: check_layering.py [SOURCE_DIR]"""
import os
import re
import sys


def layer_levels(design):
    """{layer name: level} from DESIGN.md's "## Layers" block (higher level: higher layer)."""
    text = open(design).read()
    block = text.split("## Layers", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    rows = []
    for line in block.split("\n"):
        names = []
        for word in line.split():
            if not word.endswith("/"):
                break
            names.append(word[:-1])
        if names:
            rows.append(names)
    return {name: len(rows) - i for i, names in enumerate(rows) for name in names}


# The layers over the public API alone: they include include/monet/ and their own files.
PUBLIC_ONLY = ("cli", "python")

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def project_files(root):
    """(path relative to root, layer) of every C++ source and header of the project."""
    for top, layer_of in (("src", None), ("include/monet", "api"), ("python", "python")):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".h", ".cpp")):
                    continue
                rel = os.path.relpath(os.path.join(d, f), root)
                yield rel, layer_of or layer_of_file(rel)


def resolve(root, kind, name):
    """The project file an include names (relative to root), or None (a system header)."""
    if kind == "<" and name.startswith("monet/"):
        return os.path.join("include", name)
    if kind == '"':
        for base in ("src", "include", "python"):
            if os.path.exists(os.path.join(root, base, name)):
                return os.path.join(base, name)
    return None


def layer_of_file(rel):
    """A file's layer: its folder under src/ ("planner/solver" for a sub-folder's), "api"
    for the public headers, "python" for the package; None for a file of src/ itself."""
    parts = rel.split(os.sep)
    if parts[0] == "include":
        return "api"
    if parts[0] == "python":
        return "python"
    return "/".join(parts[1:-1]) if len(parts) > 2 else None


def check(root):
    levels = layer_levels(os.path.join(root, "docs", "DESIGN.md"))
    problems, edges = [], {}
    for rel, layer in project_files(root):
        if layer is None:
            continue  # src/pch.h: the precompiled header (LibTorch only)
        if layer not in levels:
            problems.append(f"{rel}: layer '{layer}' is not in docs/DESIGN.md's layer list")
            continue
        text = open(os.path.join(root, rel)).read()
        for m in INCLUDE.finditer(text):
            target = resolve(root, m.group(1), m.group(2))
            if target is None:
                continue
            edges.setdefault(rel, []).append(target)
            to = layer_of_file(target)
            line = text[:m.start()].count("\n") + 1
            if to == "api" and target.endswith("_impl.h") and layer != "api":
                problems.append(f"{rel}:{line}: includes {target}, private to src/api/")
            elif layer in PUBLIC_ONLY and to != layer and not target.startswith("include" + os.sep):
                problems.append(f"{rel}:{line}: includes {target}; {layer}/ reaches the library "
                                "through include/monet/ alone")
            if to == layer or to is None:
                continue
            if to not in levels or levels[to] >= levels[layer]:
                way = "up" if levels.get(to, 0) > levels[layer] else "sideways"
                problems.append(f"{rel}:{line}: includes {target} ({layer} -> {to}, {way})")
    problems += [f"include cycle: {' -> '.join(c)}" for c in cycles(edges)]
    return problems


def cycles(edges):
    """One cycle per strongly connected part of the include graph that has one."""
    found, state = [], {}

    def visit(node, path):
        state[node] = 1
        path.append(node)
        for nxt in edges.get(node, []):
            if state.get(nxt) == 1:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path)
        path.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [])
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems = check(os.path.abspath(root))
    for p in problems:
        print(p)
    print(f"layering: {len(problems)} violation(s)" if problems else "layering: ok",
          file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
