"""Issue 28: every numeric widget and text field of every page, driven with extreme values — no traceback.

The noise page's custom value ±1e308 and sensitivity 1e308, its SUM bounds ±1e308, the advisor's SUM/MEAN
bounds ±1e30, the console's HISTOGRAM bounds ±1e308: each was a page exception (fields without min/max
accept any number a browser can send). This test finds such widgets by itself, on every page registered in
app.py and in every mode its menus open (a query kind, a mechanism, a dataset): each number field is set to
the extremes its range allows (±1e308 where it has none), each text field to hostile text, and the page's
buttons that do not start background work are pressed. It fails on any exception shown, or on "nan"/"inf"
written where a number should be (a wrong success: "inf, interval [nan, inf]").
"""

import random
import re

import pytest
from streamlit.runtime.state.common import TESTING_KEY

from .pages import open_page, registered_pages

HUGE = 1e308
#: Menus that pick stored things (a job, a sweep) rather than a mode of the page: not fuzzed here.
NOT_MODES = re.compile(r"_(pick|sweep|report_sweep|job|run)$")
#: Buttons that start background work or change stored state for everyone: pressed by their own tests.
NOT_PRESSED = re.compile(
    r"(?i)train|sweep|start|report|baseline only|delete|rename|cancel|register|grant|revoke|"
    r"sign|log ?in|log ?out|synth"
)
MAX_OPTIONS = 4  # per menu: the first few modes (a menu of 47 first names is one mode, many values)
HOSTILE_TEXT = ["=1+1", "http://evil.example/x [a](http://e.x) <b>x</b> $x$", "x" * 5000, "\x00\r\n\t;'\""]
BAD_NUMBER = re.compile(r"(?<![\w.])(nan|inf|-inf|infinity)(?![\w])", re.I)


def _modes(at):
    modes = [None]
    for kind in ("selectbox", "radio"):
        for w in getattr(at, kind):
            if w.key and not NOT_MODES.search(w.key):
                modes += [(kind, w.key, opt) for opt in list(w.options)[:MAX_OPTIONS]]
    return modes


def _value(w, pick):
    """An extreme value the widget's range allows: its top, its bottom (±1e308 where it has no bound), or one
    drawn by ``pick`` from those and ±1e30, a tiny 1e-300 and 0 (clipped into the range)."""
    lo = -HUGE if w.min is None else w.min
    hi = HUGE if w.max is None else w.max
    if pick == "spread":  # a lower bound at the bottom, everything else at the top: the widest interval
        pick = "bottom" if re.search(r"(^|_)(lo|lower|min)($|_)", w.key or "") else "top"
    v = pick([hi, lo, 1e30, -1e30, 1e-300, 0.0]) if callable(pick) else (hi if pick == "top" else lo)
    v = min(max(v, lo), hi)
    if isinstance(w.value, int) and not isinstance(w.value, bool):
        v = int(max(min(v, 2**62), -(2**62)))
    return v


def _check(at, where):
    assert not at.exception, f"{where}: {[e.value for e in at.exception][:1]}"
    shown = [
        m.value for m in [*at.markdown, *at.caption, *at.metric, *at.success, *at.info] if isinstance(m.value, str)
    ]
    bad = [s for s in shown if BAD_NUMBER.search(re.sub(r"\\.", "", s)) and "ε = ∞" not in s]
    assert not bad, f"{where}: a number written as nan/inf: {bad[:2]}"


def _press_buttons(at, where):
    labels = [b.label for b in at.button if not b.disabled and not NOT_PRESSED.search(b.label or "")]
    for label in labels:
        found = [b for b in at.button if b.label == label and not b.disabled]
        if not found:
            continue
        found[0].click().run()
        _check(at, f"{where}, after pressing {label!r}")


@pytest.mark.slow
@pytest.mark.parametrize("page", registered_pages())
def test_every_widget_at_its_extremes_leaves_no_traceback(chdir_root, page):
    at = open_page(page, timeout=120)
    _check(at, page)
    for mode in _modes(at):
        at = open_page(page, timeout=120)
        if mode is not None:
            kind, key, opt = mode
            widgets = [w for w in getattr(at, kind) if w.key == key]
            if not widgets:
                continue
            w = widgets[0]
            # choose by the option as shown (the browser sends its index; the server maps it to the value)
            at.session_state[TESTING_KEY][w.id] = str
            w.set_value(opt).run()
            _check(at, f"{page} {key}={opt}")
        rng = random.Random(f"{page}|{mode}")  # fixed per page and mode: a failure reproduces
        for n, pattern in enumerate(["top", "bottom", "spread", rng.choice]):
            for w in at.number_input:
                try:
                    w.set_value(_value(w, pattern))
                except Exception:
                    continue
            for t in at.text_input:
                t.set_value(HOSTILE_TEXT[n % len(HOSTILE_TEXT)])
            at.run()
            where = f"{page} mode {mode}, number fields {'at random extremes' if callable(pattern) else pattern}" + (
                f" ({[(w.key, w.value) for w in at.number_input]})" if callable(pattern) else ""
            )
            _check(at, where)
            if n in (0, 2, 3):
                _press_buttons(at, where)
