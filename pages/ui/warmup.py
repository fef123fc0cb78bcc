"""Import what the pages import, once, in the background, soon after the server starts.

Streamlit runs each session's script in its own thread, and a page's imports run on its first visit: twenty
visitors opening the noise page on a server nobody had visited spent most of their first run waiting on Python's
module locks while one of them imported pandas, scipy and dpcore's figures (py-spy: 109 of 289 samples of the
script threads), each import holding the GIL the server's event loop needs for health checks and messages. A server
started before the audience arrives now has them imported by then: :func:`start` is called by ``app.py``'s
``st.App`` when the server starts.

No script may run while the warm-up imports: a module half-imported in one thread is already in ``sys.modules``,
and plotly reads pandas from there without importing it (``_plotly_utils``' ``get_module("pandas",
should_load=False)``), so a Home drawn while the warm-up was importing pandas raised "partially initialized module
'pandas' has no attribute 'Series'" (once in CI; 3 of 15 fresh servers on a loaded machine, none of 15 since). Every
script run therefore calls :func:`ensure` first (``app.py``): it returns at once once the warm-up is done, waits for
it while it runs, and runs it itself when no warm-up has begun. One lock covers it, so the pages' libraries are
imported by one thread, once, before any page uses them.

What is imported is read from the pages' own top-level ``import`` lines (nothing to keep in step by hand); none of
them imports torch, OpenDP or scikit-learn (the pages that need those import them when used). This module imports
nothing of Streamlit: it runs in the server.
"""

from __future__ import annotations

import ast
import importlib
import sys
import threading
from pathlib import Path

PAGES = Path(__file__).resolve().parents[1]
#: Never imported here, whatever a page names: heavy, and only some pages' actions need them.
HEAVY = ("torch", "opacus", "opendp", "jax", "sklearn", "ray")
#: Nor the pages' own helpers (``pages.ui.common`` acts on its first import in a session, e.g. a deep link's
#: route) and Streamlit itself: only the libraries underneath them.
SCRIPT_SIDE = ("pages", "streamlit")

_started = threading.Event()
_done = threading.Event()
_lock = threading.Lock()


def modules(pages: Path = PAGES) -> list[str]:
    """The modules the pages and their helpers import at their top (``import x``, ``from x import y``: x, and
    x.y when y is a module), in file order, without :data:`HEAVY` and :data:`SCRIPT_SIDE`."""
    names: list[str] = []
    for path in sorted(pages.glob("*.py")) + sorted((pages / "ui").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return [n for n in dict.fromkeys(names) if n.split(".")[0] not in HEAVY + SCRIPT_SIDE]


def warm(names: list[str] | None = None) -> list[str]:
    """Import ``names`` (default :func:`modules`); those that are not modules (a function imported by name) or
    fail are skipped: a page that needs one imports it itself, with its own message. Returns what was imported."""
    done = []
    for name in modules() if names is None else names:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a warm-up never fails the server; the page's own import reports it
            continue
        done.append(name)
    return done


def _warm_once() -> None:
    with _lock:
        if not _done.is_set():
            try:
                warm()
            finally:  # a failed warm-up (it skips what fails, so hardly) never holds the scripts back twice
                _done.set()


def ensure() -> None:
    """Return once the warm-up has finished: at once when it has, after it when it is running, after running it
    here when it has not begun (a test's app, or a script before the thread began). Called by every script run."""
    if not _done.is_set():
        _warm_once()


def start() -> bool:
    """Start the warm-up thread once per process (later calls do nothing). Returns whether this call started it.
    It starts at once: a visitor would wait for the imports anyway (:func:`ensure`)."""
    if _started.is_set():
        return False
    _started.set()
    threading.Thread(target=_warm_once, name="dp-explorer-warm-up", daemon=True).start()
    return True
