"""Imports go one way: foundation → storage → jobs → noise and data → the domain packages → sweep and advisor →
statements → figures, report and export → commands and the CLI → pages and the app.

Every import counts — at the top of a module, inside a function, under ``if TYPE_CHECKING`` — so a circle cannot
hide behind an import written inside a function. dpcore's own imports sit at the top of each module; the few that
stay inside a function say why in a comment on the line or right above (``# lazy: torch takes ~2 s to import``: the
module they load pulls a heavy library that a light entry point, such as Home, must not wait for). The checks run on
the source (``ast``), not on what an import loads.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from ..conftest import ROOT

#: Lowest first. A module may import modules of its own layer or of the layers before it. A name is a module or a
#: package prefix (``dpcore.jobs`` covers ``dpcore.jobs.store``); the longest prefix that matches decides.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "foundation",
        (
            "dpcore",  # the package's own __init__ (this name alone, not a prefix)
            "dpcore.errors",
            "dpcore.limits",
            "dpcore.validation",
            "dpcore.textsafe",
            "dpcore.claims",
            "dpcore.safe_math",
        ),
    ),
    ("storage", ("dpcore.storage", "dpcore.serialize")),  # serialize writes the CLI's JSON files through storage
    # Signing is a service every kind of statement uses (a domain package signs the statement of what it releases);
    # the kinds themselves, which recompute a domain's figures, sit in the statements layer below.
    (
        "signing",
        (
            "dpcore.statements.canonical",
            "dpcore.statements.checks",
            "dpcore.statements.files",
            "dpcore.statements.keys",
            "dpcore.statements.legacy",
            "dpcore.statements.signing",
        ),
    ),
    ("jobs", ("dpcore.jobs",)),
    ("noise and data", ("dpcore.noise", "dpcore.data", "dpcore.nist")),  # nist: claims checked with the noise maths
    (
        "domain",
        (
            "dpcore.attacks",
            "dpcore.queries",
            "dpcore.budgets",
            "dpcore.training",
            "dpcore.synth",
            "dpcore.plan",
            "dpcore.statements.common",  # what every statement says the same way (a synthetic release's too)
        ),
    ),
    ("sweep and advisor", ("dpcore.sweep", "dpcore.advisor")),
    ("statements", ("dpcore.statements",)),
    ("figures, report and export", ("dpcore.figures", "dpcore.report", "dpcore.export")),
    ("commands and the CLI", ("dpcore.commands", "dpcore.cli", "dpcore.__main__", "dpcore.api")),
    ("pages and the app", ("pages", "app")),
]

FIRST_PARTY = ("dpcore", "pages", "app")

#: What is still to move, each in modules their owners are changing now: an entry goes when that change lands.
PENDING_UPWARD = {
    ("dpcore.jobs.work", "dpcore.sweep.runs"),  # until a sweep is a group of jobs in the one store (issue 36 §5)
}
PENDING_CYCLES = [
    ["dpcore.budgets.identities", "dpcore.budgets.schema", "dpcore.budgets.store"],  # the ledger, with the gate
    ["dpcore.report.audit", "dpcore.report.document", "dpcore.report.statements"],  # the report, split by section
]
PENDING_NESTED = {
    "dpcore.budgets.registry",
    "dpcore.budgets.schema",
    "dpcore.report.document",
    "dpcore.report.statements",
    "dpcore.synth.release",
}


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def source_files(root: Path) -> list[Path]:
    files = [*sorted((root / "dpcore").rglob("*.py")), *sorted((root / "pages").rglob("*.py"))]
    app = root / "app.py"
    return [*files, app] if app.exists() else files


def _imported(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: set[str]) -> list[str]:
    """The first-party modules one import statement names (``from a import b`` is module ``a.b`` when it exists)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            mod = ".".join([*base, node.module] if node.module else base)
        else:
            mod = node.module or ""
        names = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]
    out = []
    for name in names:
        if name.split(".")[0] not in FIRST_PARTY:
            continue
        while name and name not in known:  # an attribute of a module, or a module outside the tree
            name = name.rpartition(".")[0]
        if name:
            out.append(name)
    return out


def import_graph(root: Path) -> tuple[dict[str, set[str]], list[tuple[str, int, str]]]:
    """module → every first-party module it imports anywhere; and each import that sits inside a function
    (module, line, source line)."""
    files = {module_name(root, p): p for p in source_files(root)}
    known = set(files)
    graph: dict[str, set[str]] = {m: set() for m in files}
    nested: list[tuple[str, int, str]] = []
    for module, path in files.items():
        text = path.read_text()
        lines = text.splitlines()
        todo: list[tuple[ast.AST, bool]] = [(ast.parse(text), False)]
        while todo:
            node, in_function = todo.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    targets = _imported(module, path.name == "__init__.py", child, known)
                    graph[module].update(t for t in targets if t != module)
                    if in_function:
                        nested.append((module, child.lineno, lines[child.lineno - 1].strip()))
                inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                todo.append((child, inner))
    return graph, nested


def layer_of(module: str) -> int:
    best, index = "", None
    for i, (_, names) in enumerate(LAYERS):
        for name in names:
            covers = module == name or (name != "dpcore" and module.startswith(name + "."))
            if covers and len(name) >= len(best):
                best, index = name, i
    if index is None:
        raise AssertionError(f"{module} is in no layer: add it (or its package) to LAYERS in {__file__}")
    return index


def upward_imports(graph: dict[str, set[str]], pending: set[tuple[str, str]] = frozenset()) -> list[str]:
    return sorted(
        f"{m} ({LAYERS[layer_of(m)][0]}) imports {t} ({LAYERS[layer_of(t)][0]}), a higher layer"
        for m, targets in graph.items()
        for t in targets
        if layer_of(t) > layer_of(m) and (m, t) not in pending
    )


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return found


def _reason(line: str) -> str:
    """The words of a line's comment, less ``noqa`` and ``type: ignore`` markers."""
    _, _, comment = line.partition("#")
    words = re.sub(r"noqa(: *[A-Z0-9, ]+)?|type: *ignore(\[[^]]*\])?", "", comment)
    return words.strip(" #:()")


def unexplained_nested(nested: list[tuple[str, int, str]], root: Path) -> list[str]:
    """Imports inside functions that do not say why: a comment on the import's line, on the first line of the group
    of imports it belongs to, or on the comment line right above that group (``# noqa`` and ``# type:`` alone are
    no reason)."""
    sources: dict[str, tuple[list[str], set[int]]] = {}
    for p in source_files(root):
        text = p.read_text()
        spans = {
            i
            for n in ast.walk(ast.parse(text))
            if isinstance(n, (ast.Import, ast.ImportFrom))
            for i in range(n.lineno, (n.end_lineno or n.lineno) + 1)
        }
        sources[module_name(root, p)] = (text.splitlines(), spans)
    bad = []
    for module, line, text in nested:
        src, spans = sources[module]
        above = line - 1
        while above in spans:  # the imports of the same group, each on its own line(s)
            above -= 1
        first = src[above].strip() if above < len(src) else ""
        comment = src[above - 1].strip() if above >= 1 else ""
        if not (_reason(text) or _reason(first) or (comment.startswith("#") and _reason(comment))):
            bad.append(f"{module}:{line}: {text}")
    return sorted(bad)


# --- the tree itself ---------------------------------------------------------------------------------------------


def test_every_module_sits_in_a_layer():
    graph, _ = import_graph(ROOT)
    for module in graph:
        layer_of(module)


def test_imports_follow_the_layers():
    graph, _ = import_graph(ROOT)
    assert upward_imports(graph, PENDING_UPWARD) == []


def test_no_import_cycle():
    graph, _ = import_graph(ROOT)
    assert [c for c in cycles(graph) if c not in PENDING_CYCLES] == []


def test_an_import_inside_a_function_says_why():
    """dpcore imports go at the top of modules; only an import that would load something heavy for a light caller
    stays inside a function, with its reason on the line."""
    _, nested = import_graph(ROOT)
    assert [x for x in unexplained_nested(nested, ROOT) if x.split(":")[0] not in PENDING_NESTED] == []


# --- the checks catch what they are for (a planted tree) --------------------------------------------------------


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for d in ("dpcore", "dpcore/noise", "dpcore/advisor", "dpcore/jobs"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
        (tmp_path / d / "__init__.py").touch()
    return tmp_path


def test_a_planted_upward_import_inside_a_function_fails(tmp_path):
    root = _plant(
        tmp_path,
        {
            "dpcore/noise/interpret.py": "def tail():\n    from ..advisor.risk import f  # lazy: planted\n    return f()\n",
            "dpcore/advisor/risk.py": "from dpcore.noise import interpret\n\ndef f():\n    return 1\n",
        },
    )
    graph, nested = import_graph(root)
    assert "dpcore.advisor.risk" in graph["dpcore.noise.interpret"]
    assert upward_imports(graph) == [
        "dpcore.noise.interpret (noise and data) imports dpcore.advisor.risk (sweep and advisor), a higher layer"
    ]
    assert cycles(graph) == [["dpcore.advisor.risk", "dpcore.noise.interpret"]]
    assert unexplained_nested(nested, root) == []  # it says why: still upward, still a circle


def test_a_planted_cycle_within_a_layer_and_an_unexplained_nested_import_fail(tmp_path):
    root = _plant(
        tmp_path,
        {
            "dpcore/jobs/a.py": "from . import b\n",
            "dpcore/jobs/b.py": "def g():\n    from dpcore.jobs.a import x  # noqa: F401\n    return x\n",
        },
    )
    graph, nested = import_graph(root)
    assert upward_imports(graph) == []
    assert cycles(graph) == [["dpcore.jobs.a", "dpcore.jobs.b"]]
    assert unexplained_nested(nested, root) == ["dpcore.jobs.b:2: from dpcore.jobs.a import x  # noqa: F401"]


def test_a_module_outside_every_layer_is_named(tmp_path):
    root = _plant(tmp_path, {"dpcore/newthing.py": "x = 1\n"})
    graph, _ = import_graph(root)
    with pytest.raises(AssertionError, match="dpcore.newthing is in no layer"):
        for module in graph:
            layer_of(module)
