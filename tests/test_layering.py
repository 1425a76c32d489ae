"""The layering of docs/architecture.md, read from the source (ast), not hoped for: no
import cycle anywhere in offconv (function-level imports count), and no import that goes
up a layer or sideways between ``run`` and ``outputs``."""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "offconv"

# the layers, bottom first; a module may import its own layer or any below it
LAYERS = {
    "model": 0,
    "inputs": 1,
    "sched": 2,
    "analysis": 3,
    "run": 4,
    "outputs": 4,   # a peer of run: neither imports the other
    "cli": 5,       # the command line package (the only importer of click)
    "top": 5,       # launch, recorder, __main__
}
LEAVES = {"offconv", "offconv._speedups"}  # the package root and the C loop: import nothing


def modules() -> dict:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = p.relative_to(PKG.parent).with_suffix("").parts
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    return out


def layer(mod: str) -> int:
    if mod in LEAVES:
        return -1
    parts = mod.split(".")
    return LAYERS.get(parts[1], LAYERS["top"]) if len(parts) > 1 else -1


def import_graph() -> dict:
    mods = modules()
    graph = {}
    for name, (path, is_pkg) in mods.items():
        pkg = name if is_pkg else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                    m = ".".join(base + ([node.module] if node.module else []))
                else:
                    m = node.module or ""
                targets = [f"{m}.{a.name}" if f"{m}.{a.name}" in mods else m for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in mods and "." in t:
                    t = t.rpartition(".")[0]
                if t in mods and t != name and t.startswith("offconv"):
                    deps.add(t)
        graph[name] = deps
    return graph


def cycles(graph: dict) -> list:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_read():
    g = import_graph()
    assert "offconv.model.records" in g and "offconv.run.pipeline" in g
    assert "offconv.model.records" in g["offconv.run.pipeline"]


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_no_upward_or_sideways_import():
    bad = []
    for mod, deps in import_graph().items():
        for d in deps:
            if d == "offconv":
                continue
            up = layer(d) > layer(mod)
            sideways = (layer(d) == layer(mod) == LAYERS["run"]
                        and mod.split(".")[1] != d.split(".")[1])
            if up or sideways:
                bad.append(f"{mod} -> {d}")
    assert sorted(bad) == []


def test_every_module_is_in_a_layer():
    for mod in modules():
        parts = mod.split(".")
        if mod in LEAVES or len(parts) == 2:   # top-level modules are the top layer
            continue
        assert parts[1] in LAYERS, mod


def test_only_the_cli_imports_click():
    for mod, (path, _) in modules().items():
        tree = ast.parse(path.read_text())
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                 for a in n.names}
        names |= {(n.module or "").split(".")[0] for n in ast.walk(tree)
                  if isinstance(n, ast.ImportFrom) and not n.level}
        if "click" in names:
            assert layer(mod) == LAYERS["top"], mod


def test_a_cycle_and_an_upward_import_would_be_found():
    g = {"offconv.model.a": {"offconv.run.b"}, "offconv.run.b": {"offconv.model.a"}}
    assert cycles(g) == [["offconv.model.a", "offconv.run.b"]]
    assert layer("offconv.run.b") > layer("offconv.model.a")
    assert layer("offconv.outputs.svg.graph") == layer("offconv.run.pipeline")


# the analysis layer's modules in the order its __init__ gives: each imports only earlier ones
ANALYSIS_ORDER = ["totals", "lifetimes", "threads", "rules", "verdict", "critical_path", "wall",
                  "sample_report",
                  "sample_threads", "summary", "diff"]


def test_analysis_modules_import_only_those_before_them():
    graph = import_graph()
    names = {m.rsplit(".", 1)[1] for m in graph if m.startswith("offconv.analysis.")}
    assert names == set(ANALYSIS_ORDER)
    bad = []
    for i, name in enumerate(ANALYSIS_ORDER):
        for d in graph[f"offconv.analysis.{name}"]:
            if d.startswith("offconv.analysis.") and ANALYSIS_ORDER.index(d.rsplit(".", 1)[1]) >= i:
                bad.append(f"{name} -> {d}")
    assert bad == []


def test_no_command_branches_on_a_format_name():
    """What an output needs and how it meets an input without stacks are the registry's
    attributes (OutputFormat.analysis, by_name, ahead, empty...): no module above the
    formats compares a format's ``name`` with a format's name."""
    from offconv.model import registry
    names = set(registry.output_names()) | set(registry.input_names())
    bad = []
    for mod, (path, _) in modules().items():
        if layer(mod) < LAYERS["run"]:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            named = any(isinstance(s, ast.Attribute) and s.attr == "name" for s in sides)
            consts = {c.value for s in sides for c in ast.walk(s) if isinstance(c, ast.Constant)}
            if named and consts & names:
                bad.append(f"{mod}:{node.lineno}")
    assert bad == []
