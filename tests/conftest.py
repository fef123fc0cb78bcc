"""Shared test setup: every test gets its own empty DP_EXPLORER_HOME. ``dpcore`` is the installed package
(``make test`` installs it editable); ``pages`` and ``tests`` import from the repo root, which pytest puts on the
path for the ``tests`` package."""

from pathlib import Path

import pytest

from dpcore.budgets import identities

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def dp_home(tmp_path, monkeypatch):
    home = tmp_path / "dp-home"
    monkeypatch.setenv("DP_EXPLORER_HOME", str(home))
    return home


@pytest.fixture(autouse=True)
def cheap_key_hashes(request, monkeypatch):
    """Keys and tokens hashed with scrypt at n = 2**10 in this process, not the app's 2**14 (a few ms a hash
    instead of ~0.1 s; the budget, API and console tests hash hundreds): they test what signing in accepts and
    refuses, not what a guess costs. A stored hash names its parameters, so it verifies the same way anywhere. A
    test marked ``real_hash_cost`` hashes as the app does."""
    if request.node.get_closest_marker("real_hash_cost") is None:
        monkeypatch.setattr(identities, "_SCRYPT", {**identities._SCRYPT, "n": 2**10})


def _scan_components_once() -> None:
    """Every AppTest scans the installed distributions for Streamlit components when it first runs (its own
    ``BidiComponentManager``, ``scan_component_manifests``: 0.27 s of CPU reading ~150 packages' metadata, most of a
    page test's first run, against ~20 ms for the page itself). The installed packages do not change while the
    tests run, so the scan is done once per process and its answer reused: each AppTest still registers what it
    finds in a manager of its own. The server the browser tests start is another process and scans as usual."""
    import functools

    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    cached = functools.lru_cache(maxsize=None)(lambda: tuple(scan()))
    manifest_scanner.scan_component_manifests = functools.wraps(scan)(lambda *_a, **_k: list(cached()))


_scan_components_once()


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture
def chdir_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    return ROOT


def pytest_collection_modifyitems(items):
    """The folder names the lane: tests/e2e are real-browser tests, tests/ray start a Ray cluster. Those run
    first, each module kept whole (a stable sort): under ``--dist loadfile`` the long modules are handed out
    before the short ones, so no worker is left with a browser module at the end while the others idle."""
    first = set()
    for item in items:
        parts = Path(str(item.fspath)).relative_to(ROOT).parts
        if parts[:2] == ("tests", "e2e"):
            item.add_marker(pytest.mark.e2e)
            first.add(item.fspath)
        elif parts[:2] == ("tests", "ray"):
            item.add_marker(pytest.mark.ray)
            first.add(item.fspath)
    items.sort(key=lambda item: item.fspath not in first)
