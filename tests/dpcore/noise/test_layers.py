"""Issue 25 §1: one release path with one-way imports in dpcore/noise — maths and calibration below, sampling and
release above. charge.py, mechanisms.py and release.py imported each other (a circle, through imports inside
functions); every import counts here, at the top of a module or inside a function."""

import ast
import subprocess
import sys

import pytest

from ...conftest import ROOT

NOISE = ROOT / "dpcore" / "noise"
#: The intended order, lowest first: a module may import only modules before it.
LAYERS = [
    "calibration",
    "discrete",
    "grid",
    "charge",
    "composition",
    "interpret",
    "mechanisms",
    "release",
    "view",
    "teaching",
]


def _edges() -> dict[str, set[str]]:
    """module -> the dpcore.noise modules it imports anywhere in its source."""
    names = {p.stem for p in NOISE.glob("*.py") if p.stem != "__init__"}
    graph = {}
    for name in names:
        tree = ast.parse((NOISE / f"{name}.py").read_text())
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                if node.level == 1:  # from . import x / from .x import y
                    targets = [mod] if mod else [a.name for a in node.names]
                elif node.level == 0 and mod.startswith("dpcore.noise"):
                    rest = mod[len("dpcore.noise") :].lstrip(".")
                    targets = [rest] if rest else [a.name for a in node.names]
                elif node.level == 2 and mod.startswith("noise"):
                    rest = mod[len("noise") :].lstrip(".")
                    targets = [rest] if rest else [a.name for a in node.names]
                else:
                    targets = []
                deps |= {t.split(".")[0] for t in targets if t.split(".")[0] in names}
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("dpcore.noise."):
                        deps.add(a.name.split(".")[2])
        graph[name] = deps - {name}
    return graph


def test_the_noise_package_has_no_import_cycle():
    graph = _edges()
    state: dict[str, int] = {}

    def visit(node, path):
        if state.get(node) == 1:
            raise AssertionError("import cycle: " + " -> ".join(path + [node]))
        if state.get(node) == 2:
            return
        state[node] = 1
        for dep in sorted(graph[node]):
            visit(dep, path + [node])
        state[node] = 2

    for node in sorted(graph):
        visit(node, [])


def test_imports_follow_the_layers():
    graph = _edges()
    assert set(graph) == set(LAYERS), "a new module in dpcore/noise: place it in LAYERS"
    for module, deps in graph.items():
        above = [d for d in deps if LAYERS.index(d) > LAYERS.index(module)]
        assert not above, f"{module} imports {above}, which sit above it"
    assert "release" not in set().union(
        *(graph[m] for m in ("calibration", "discrete", "grid", "charge", "mechanisms"))
    )


@pytest.mark.slow  # a fresh interpreter per module
def test_each_module_imports_alone():
    """Each module imports in a fresh interpreter (no module needs another to have been imported first), and only
    the release path loads OpenDP."""
    code = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    importlib.import_module('dpcore.noise.' + name)\n"
        "print('opendp' in sys.modules)\n"
    )
    for name in LAYERS:
        out = subprocess.run([sys.executable, "-c", code, name], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, (name, out.stderr[-2000:])
        assert out.stdout.strip() == "False", f"importing dpcore.noise.{name} loaded OpenDP"
