"""Import what the pages import, once, in the background, soon after the server starts.

Streamlit runs each session's script in its own thread, and a page's imports run on its first visit: twenty
visitors opening the noise page on a server nobody had visited spent most of their first run waiting on Python's
module locks while one of them imported pandas, scipy and dpcore's figures (py-spy: 109 of 289 samples of the
script threads), each import holding the GIL the server's event loop needs for health checks and messages. A server
started before the audience arrives now has them imported by then: :func:`start` is called by ``app.py``'s
``st.App`` when the server starts. It waits :data:`DELAY_S` first, so that a first visitor's Home (which imports
little on purpose) is not slowed by it.

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
#: Seconds after the server starts before the imports begin.
DELAY_S = 3.0
#: Never imported here, whatever a page names: heavy, and only some pages' actions need them.
HEAVY = ("torch", "opacus", "opendp", "jax", "sklearn", "ray")
#: Nor the pages' own helpers (``pages.ui.common`` acts on its first import in a session, e.g. a deep link's
#: route) and Streamlit itself: only the libraries underneath them.
SCRIPT_SIDE = ("pages", "streamlit")

_started = threading.Event()


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


def start(delay: float = DELAY_S) -> bool:
    """Start the warm-up thread once per process (later calls do nothing). Returns whether this call started it."""
    if _started.is_set():
        return False
    _started.set()
    timer = threading.Timer(delay, warm)  # a thread that waits ``delay`` first; nothing in a script run waits
    timer.name, timer.daemon = "dp-explorer-warm-up", True
    timer.start()
    return True
