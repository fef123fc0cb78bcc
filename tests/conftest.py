"""Shared test setup: every test gets its own empty DP_EXPLORER_HOME, and the repo root is importable."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


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
