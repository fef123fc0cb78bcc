"""Shared test setup: every test gets its own empty DP_EXPLORER_HOME. ``dpcore`` is the installed package
(``make test`` installs it editable); ``pages`` and ``tests`` import from the repo root, which pytest puts on the
path for the ``tests`` package."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def dp_home(tmp_path, monkeypatch):
    home = tmp_path / "dp-home"
    monkeypatch.setenv("DP_EXPLORER_HOME", str(home))
    return home


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture
def chdir_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    return ROOT


def pytest_collection_modifyitems(items):
    """The folder names the lane: tests/e2e are real-browser tests, tests/ray start a Ray cluster."""
    for item in items:
        parts = Path(str(item.fspath)).relative_to(ROOT).parts
        if parts[:2] == ("tests", "e2e"):
            item.add_marker(pytest.mark.e2e)
        elif parts[:2] == ("tests", "ray"):
            item.add_marker(pytest.mark.ray)
