"""Helpers for AppTest: the page files registered in app.py, and a runner for one page."""

import ast
import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def registered_pages() -> list[str]:
    """Page paths passed to st.Page(...) in app.py, read from its source."""
    tree = ast.parse((ROOT / "app.py").read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Page" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                out.append(arg.value)
    return out


def open_page(page: str, timeout: float = 60) -> AppTest:
    """Run app.py and switch to one page, as a user clicking it in the sidebar would."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    at.run()
    if page != registered_pages()[0]:
        at.switch_page(page)
        at.run()
    return at


_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # CommonMark: a backslash before ASCII punctuation


def shown(markdown: str) -> str:
    """The text a reader sees for markdown source with backslash escapes (``ε \\< 1`` shows ``ε < 1``).

    An AppTest element's ``.value`` is the markdown *source*; pages escape messages with
    ``dpcore.textsafe.md_message`` (``[ ] < \\`` and autolinks), which the browser renders as the plain text.
    """
    return _MD_ESCAPE.sub(r"\1", markdown)
