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


#: A browser session's owner id for tests that make its runs and sweeps first (pages/_ui.job_owner keeps it in
#: session state: a real session gets 128 random bits).
ME = "session:" + "a" * 32
SOMEONE_ELSE = "session:" + "b" * 32


def open_page(
    page: str, timeout: float = 60, *, owner: str | None = None, admin: bool = False, query: dict | None = None
) -> AppTest:
    """Run app.py and switch to one page, as a user clicking it in the sidebar would. ``owner``: this session's
    job owner (default: a random one, as in a browser); ``admin``: an admin unlocked it; ``query``: the link's
    parameters."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    if owner is not None:
        at.session_state["_job_owner"] = owner
    if admin:
        at.session_state["_jobs_admin"] = True
    for k, v in (query or {}).items():
        at.query_params[k] = v
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


def declare(at: AppTest, declarations) -> AppTest:
    """Fill an upload's one declaration editor (:func:`pages.ui.upload.editor`) as a data owner would, from
    declarations in the CLI's syntax (``age=18:90:1``: a range and its bin width; ``sex=F,M``: categories, codes for a
    number column), and run the page. Columns not named are left as they are."""
    from dpcore.synth.schema import parse_column

    bases = {}
    for w in [*at.number_input, *at.text_input]:
        for suffix in ("_lower", "_upper", "_cats", "_width"):
            if (w.key or "").endswith(suffix):
                bases[w.label.rsplit(": ", 1)[0]] = w.key[: -len(suffix)]
    keys = {c.key for c in at.checkbox}
    for text in declarations:
        col = parse_column(text)
        base = bases[col.name]
        if base + "_codes" in keys:  # a number column: as a range, or as codes
            at.checkbox(key=base + "_codes").set_value(not col.is_number).run()
        if col.is_number:
            at.number_input(key=base + "_lower").set_value(col.span[0])
            at.number_input(key=base + "_upper").set_value(col.span[1])
            if any(n.key == base + "_width" for n in at.number_input):
                at.number_input(key=base + "_width").set_value(col.step)
        else:
            at.text_input(key=base + "_cats").set_value(", ".join(map(str, col.values)))
    return at.run()
