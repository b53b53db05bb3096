"""The package's layers (DESIGN.md): dependencies point one way, downwards. Every import between roofline
modules — at the top of a file or inside a function (lazy imports count too) — goes to the same or a
lower layer. Parsed from the source with `ast`, so a new upward import fails this test."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "roofline"

#: layer of each top-level module or package (higher may import lower, never the reverse)
LAYERS = {
    0: {"units", "errors"},
    1: {"catalog", "model", "hardware"},
    2: {"layout", "memory", "network", "efficiency", "kernels", "speculative"},
    3: {"engine", "kernel_pass"},
    4: {"training", "planner", "simulate", "scaling", "pricing", "tiers", "validate", "calibrate", "lecture",
        "board", "reversible", "moe_scaling", "executors", "plan_simulate"},
    5: {"requests"},
    6: {"cli", "serve", "report", "plots", "__main__", "__init__"},
}
RANK = {name: rank for rank, names in LAYERS.items() for name in names}


def _top(module_path: Path) -> str:
    rel = module_path.relative_to(SRC).parts
    return rel[0].removesuffix(".py")


def _imports(path: Path):
    """(line, top-level roofline module) of every import of a roofline module in `path`."""
    tree = ast.parse(path.read_text(), str(path))
    pkg = path.relative_to(SRC).parts[:-1]  # package of this file, relative to roofline/
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: climb `level - 1` packages from this file's package
                base = list(pkg[: len(pkg) - (node.level - 1)]) if node.level > 1 else list(pkg)
                parts = base + (node.module.split(".") if node.module else [])
                targets = [parts[0]] if parts else [a.name for a in node.names]
            elif node.module and node.module.split(".")[0] == "roofline":
                parts = node.module.split(".")[1:]
                targets = [parts[0]] if parts else [a.name for a in node.names]
            else:
                continue
            for t in targets:
                yield node.lineno, t
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "roofline" and len(parts) > 1:
                    yield node.lineno, parts[1]


def test_every_module_has_a_layer():
    tops = {_top(p) for p in SRC.rglob("*.py")}
    assert tops - set(RANK) == set(), "give new modules a layer in tests/test_layers.py"


def test_no_module_imports_from_a_higher_layer():
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        me = _top(path)
        for line, target in _imports(path):
            if target not in RANK or target == me:
                continue
            if RANK[target] > RANK[me]:
                bad.append(f"{path.relative_to(SRC)}:{line} ({me}, layer {RANK[me]}) imports {target} "
                           f"(layer {RANK[target]})")
    assert not bad, "upward imports:\n" + "\n".join(bad)


@pytest.mark.parametrize("name", ["model", "hardware", "layout", "memory", "network", "efficiency", "engine"])
def test_the_core_never_touches_the_terminal_or_plots(name):
    """Formulas live below the edges: the core modules import neither typer, rich, matplotlib nor plots."""
    text = (SRC / f"{name}.py").read_text()
    for edge in ("import typer", "import rich", "matplotlib", "from .plots", "from .cli"):
        assert edge not in text, (name, edge)
