"""Small Streamlit helpers shared by the pages (UI only: no maths here).

A little over 400 lines, one idea: what every page does the same way (guarded calls, charts and downloads, links
that carry settings, who the caller is, one submission per click, the admin and manage boxes). Each piece is a few
lines that pages import by name; splitting them by topic would spread one page's imports over five modules.
"""

from __future__ import annotations

import json
import math
import re
import secrets
import weakref
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import plotly.graph_objects as go
import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

from dpcore import limits, textsafe
from dpcore.budgets import identities
from dpcore.errors import DPError, sentence
from dpcore.figures import style as fig_style
from dpcore.jobs import owners
from pages.ui import identity as _identity
from pages.ui.errors import guarded

if TYPE_CHECKING:  # pandas costs ~0.5 s to import: Home's first chart does not wait for it
    import pandas as pd


def _route_deep_links_through_app() -> None:
    """Make a deep link (e.g. /noise) opened before app.py ever ran use app.py's navigation.

    Streamlit guesses a legacy "pages/ folder" app when the first session of a server opens a page URL
    directly, runs that page file alone and lists raw file names in the sidebar. Clearing the
    guess and rerunning sends the run through app.py (st.navigation), which resolves the same URL.
    """
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


_route_deep_links_through_app()


CHART_CONFIG = {"displayModeBar": False, "displaylogo": False}


_SENT: dict = {}  # id(figure) -> (weak ref to it, its frozen twin); the entry goes when the figure does
_FROZEN: type | None = None


def _sendable(fig):
    """``fig`` with its dict computed once per figure object. Streamlit's plotly_chart calls ``to_dict()`` on
    every rerun (a deep copy and base64 of every array: the largest per-chart cost when twenty viewers share
    one cached figure). Figures are read-only once shown: the cached ones are shared by every session."""
    global _FROZEN
    if type(fig) is not go.Figure:
        return fig
    if _FROZEN is None:

        class FrozenFigure(go.Figure):  # a BaseFigure to Streamlit; only its dict is ever read
            def __init__(self, spec: dict) -> None:  # skips Figure's validation: the spec came from a Figure
                self._frozen_spec = spec

            def to_dict(self) -> dict:
                return self._frozen_spec

            to_plotly_json = to_dict

        _FROZEN = FrozenFigure
    key = id(fig)
    ref, frozen = _SENT.get(key, (None, None))
    if ref is None or ref() is not fig:  # figures are unhashable; an id is reused only after its figure died
        frozen = _FROZEN(fig.to_dict())
        _SENT[key] = (weakref.ref(fig, lambda _r, k=key: _SENT.pop(k, None)), frozen)
    return frozen


def _dark_theme() -> bool:
    """Whether this viewer's browser shows the dark theme (Streamlit reports it after the first run)."""
    try:
        return getattr(st.context.theme, "type", None) == "dark"
    except Exception:  # noqa: BLE001 — no theme known (a bare run): the light figure
        return False


def _titled(sent):
    """(the chart's title as page HTML or "", the figure without it), once per sent figure.

    The title is drawn by the page, above the chart, where the browser wraps it to the width there is: Plotly
    draws text on one line, so a title broken to fit a phone took two lines on a laptop too. The figure keeps
    the title's text in ``layout.meta.title`` (what the tests read) and gives back the top margin it held."""
    if _FROZEN is None or type(sent) is not _FROZEN:  # not a Plotly figure of ours: shown as it is
        return "", sent
    cached = getattr(sent, "_titled", None)
    if cached is None:
        spec = sent.to_dict()
        layout = spec.get("layout") or {}
        text = (layout.get("title") or {}).get("text") or ""
        lines = fig_style.title_lines(text)
        if not lines:
            cached = ("", sent)
        else:
            meta = layout.get("meta") if isinstance(layout.get("meta"), dict) else {}
            layout = {**layout, "title": {"text": ""}, "meta": {**meta, "title": text}}
            margin = layout.get("margin") or {}
            if "t" in margin:  # the lines the title held, given back (28 px stay for a top tick or label)
                held = fig_style.TITLE_LINE_PX * fig_style.n_lines(text) + 10
                layout["margin"] = {**margin, "t": max(margin["t"] - held, 28)}
            body = "".join(f'<div class="dpx-chart-{kind}">{html}</div>' for kind, html in lines)
            cached = (f'<div class="dpx-chart-head">{body}</div>', _FROZEN({**spec, "layout": layout}))
        sent._titled = cached
    return cached


def chart(fig, *, key: str, where=st) -> None:
    """Show a dpcore figure full width, without Plotly's mode bar (``where``: a column or container), its title
    above it as page text (:func:`_titled`); on the dark theme with its dark privacy-zone fills
    (:func:`dpcore.figures.style.for_dark`)."""
    box = where.container(key=f"chartbox-{key}")  # the title and its chart together (tests find one from the other)
    title, sent = _titled(_sendable(fig))
    if title:
        box.html(title)  # not markdown: a title's text is never read as a link, an image or maths
    if _dark_theme() and type(fig) is go.Figure:
        dark = getattr(sent, "_dark", None)
        if dark is None:
            spec = fig_style.for_dark(sent.to_dict())
            dark = sent if spec is sent.to_dict() else _FROZEN(spec)
            sent._dark = dark
        sent = dark
    box.plotly_chart(sent, key=key, config=CHART_CONFIG)


def table_downloads(df: pd.DataFrame, name: str, key: str) -> None:
    """CSV and JSON download buttons for a table (CSV cells that a spreadsheet would run are neutralised)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(name)).strip("._") or "table"  # names may hold user text
    # side by side with a small gap, wrapping on a phone (in columns [1, 1, 2] they stood ~75 px apart)
    row = st.container(horizontal=True, gap="small")
    # The files are built when a button is pressed, not on every rerun (many viewers share the CPU).
    row.download_button(
        "Download CSV",
        lambda: textsafe.csv_bytes(df),
        f"{name}.csv",
        "text/csv",
        key=f"{key}_csv",
        icon=":material/download:",
    )
    row.download_button(
        "Download JSON",
        lambda: json.dumps(json.loads(df.to_json(orient="records")), indent=2).encode(),
        f"{name}.json",
        "application/json",
        key=f"{key}_json",
        icon=":material/download:",
    )


def code_downloads(recipe, key: str, where=None) -> None:
    """ "Download as Python script" and "Download as notebook" for a :class:`dpcore.export.Recipe` (built when
    pressed), side by side in ``where`` (a horizontal container; a new one when None)."""
    # Imported here, not at the top: the exports reach the plan's statement and with it pandas and scipy, and Home,
    # which imports this module, must open without them (tests/app/test_home_imports.py).
    from dpcore import export

    row = where if where is not None else st.container(horizontal=True, gap="small")
    for fmt, label, icon in (
        ("py", "Download as Python script", ":material/code:"),
        ("ipynb", "Download as notebook", ":material/book:"),
    ):
        row.download_button(
            label,
            lambda f=fmt: export.render(recipe, f),
            export.file_name(recipe, fmt),
            "text/plain" if fmt == "py" else "application/x-ipynb+json",
            key=f"{key}_{fmt}",
            icon=icon,
        )


def not_private(label: str = "Not private") -> None:
    """A visible label for anything shown from private data without DP."""
    st.caption(f":orange-badge[{label}] computed on the raw data, for teaching: a real release would not show it.")


@lru_cache(maxsize=1)
def _stylesheet() -> str:
    return (Path(__file__).resolve().parents[2] / "assets" / "style.css").read_text(encoding="utf-8")


def style() -> None:
    """The app's few style rules (assets/style.css), read once per server, not on every rerun of every viewer."""
    st.html(f"<style>{_stylesheet()}</style>")  # only <style>: Streamlit puts it where it takes no space


def headline_md(claim: str, detail: str) -> str:
    """A page's "so what" as markdown: a short bold claim (at most two lines on a 390 px phone) and the detail in
    plain weight below it (a whole sentence as one bold heading took four to six lines on a phone)."""
    return f"#### {claim}\n\n{detail}"


def unbroken(text: str) -> str:
    """A short phrase that must not wrap, such as a number and its unit ("54 years", "ε = 1"): its spaces become
    non-breaking, so a headline's last line never holds a unit alone."""
    return text.replace(" ", "\u00a0")


# --- shareable views: a page's main settings live in the URL -------------------------------------------


def _snapshot() -> dict:
    """The URL's query parameters as they were on this session's first run (the shared link)."""
    if "_url_initial" not in st.session_state:
        st.session_state["_url_initial"] = {k: st.query_params[k] for k in st.query_params}
    return st.session_state["_url_initial"]


def _parse_number(raw: str, kind: type):
    if kind is int:
        try:
            return int(raw.strip())
        except ValueError:
            x = float(raw)  # "5e3" is a whole number too
            if not math.isfinite(x) or x != int(x):
                raise ValueError(raw) from None
            return int(x)
    value = kind(raw)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(raw)
    return value


def from_url(key: str, default, options=None, *, lo=None, hi=None):
    """Initial value for widget ``key``: the shared link's value if it is valid, else ``default``.

    ``options``: the widget's choices; a link value is matched by its text or, for numbers, snapped to
    the nearest choice (with a warning when it lies outside the choices' range). ``lo``/``hi``: the widget's
    ``min_value``/``max_value`` (take them from :mod:`dpcore.limits`): a number outside is clamped to the range,
    with a warning, so a link can never ask for more than the widget allows. A value that does not parse is ignored
    (the default stays).
    """
    _defaults()[key] = default  # this run's default (one key may have another default in another mode)
    raw = _snapshot().get(key)
    if raw is None:
        return default
    raw = str(raw)[:200]
    try:
        if options is None:
            if isinstance(default, bool):
                return raw.lower() in ("1", "true", "yes")
            value = _parse_number(raw, type(default)) if isinstance(default, (int, float)) else type(default)(raw)
            if lo is not None and value < lo or hi is not None and value > hi:
                clamped = min(max(value, lo if lo is not None else value), hi if hi is not None else value)
                st.warning(
                    f"The link's setting {key} = {textsafe.md(raw)} is outside what this page allows "
                    f"({textsafe.md(lo)} to {textsafe.md(hi)}); using {textsafe.md(clamped)}."
                )
                return type(default)(clamped)
            return value
        for opt in options:
            if str(opt) == raw:
                return opt
        x = float(raw)
        if not math.isfinite(x):
            raise ValueError(raw)
        chosen = min(options, key=lambda o: abs(float(o) - x))
        low, high = min(options, key=float), max(options, key=float)
        if x < float(low) or x > float(high):  # a link's ε = 1e9 became 20 without a word
            st.warning(
                f"The link's setting {textsafe.md(key)} = {textsafe.md(raw)} is outside what this page offers "
                f"({textsafe.md(low)} to {textsafe.md(high)}); using {textsafe.md(chosen)}."
            )
        return chosen
    except (TypeError, ValueError, OverflowError):
        st.warning(f"Ignoring the link's setting {textsafe.md(key)} = {textsafe.md(raw)}: not a valid value.")
        return default


def _defaults() -> dict:
    """Each link setting's default on this session (recorded by :func:`from_url` and :func:`widget_state`)."""
    return st.session_state.setdefault("_url_defaults", {})


def share_in_url(*keys: str) -> None:
    """Write the current values of these widgets into the URL, so the link opens the same view — leaving out
    every setting at its default (:func:`from_url` and :func:`widget_state` record the defaults).

    Each change of the URL's query string from the server is a new browser-history entry in Streamlit (its
    frontend pushes it), so writing a just-opened page's default settings made each visit cost two or three
    entries and Back needed as many presses per page. Now a visit with the default settings leaves the URL as
    the navigation made it (one entry), and a link without those settings opens the same view."""
    defaults = _defaults()
    params = {}
    for k in keys:
        v = st.session_state.get(k)
        if v is not None and not (k in defaults and str(defaults[k]) == str(v)):
            params[k] = str(v)
    if params != {k: st.query_params.get(k) for k in params} or set(st.query_params) - set(params):
        st.query_params.from_dict(params)


# --- one error path that stops the page, one way to hold page state ------------------------------------


def required(fn, *args, **kwargs):
    """Like :func:`guarded`, for a result the rest of the page needs: on an error show the same one
    message and stop this run of the page (``st.stop()``) instead of returning None."""
    failed = []

    def call():
        try:
            return fn(*args, **kwargs)
        except BaseException:
            failed.append(True)
            raise

    value = guarded(call)
    if failed:
        st.stop()
    return value


def state(key: str, default):
    """This session's value of page state ``key`` (not a widget's), set to ``default`` on first use.

    Every page holds its own state this way: ``step = state("dif_step", 1)``; change it by assigning
    ``st.session_state[key]`` (in a button branch or a callback). Widgets take their defaults from
    ``value=from_url(key, default)`` instead, so a shared link can set them, or, when a callback also sets
    them or a run may not draw them, from :func:`widget_state`.
    """
    if key not in st.session_state:
        st.session_state[key] = default
    return st.session_state[key]


def widget_state(defaults: dict, *, shared=(), options: dict | None = None, ranges: dict | None = None) -> None:
    """Give these widgets their defaults and keep their values through runs that do not draw them.

    For widgets whose value the page or a callback also sets (a new column resets its bounds, a new
    dataset its hyper-parameters) or that a run may leave undrawn (waiting for an upload, a field shown for
    one mode only): Streamlit forgets the state of a widget a run did not draw, and the browser would then show
    the widget's blank default instead of ours. Call it once near the top of the page, before the widgets,
    with every such key; those widgets take no ``value=``/``index=`` (their value lives in session state).
    Keys in ``shared`` start from the shared link when this session has none yet, validated like
    :func:`from_url` (``options[key]``: the choices; ``ranges[key]``: the widget's ``(min, max)``).
    """
    options, ranges = options or {}, ranges or {}
    for key, default in defaults.items():
        _defaults().setdefault(key, default)
        if key in shared and key not in st.session_state:  # a link never asks for more than the widget allows
            lo, hi = ranges.get(key, (None, None))
            default = from_url(key, default, options.get(key), lo=lo, hi=hi)
        st.session_state[key] = st.session_state.get(key, default)  # re-assigned: kept while not drawn


# --- whose jobs: the session's owner, the admin check, one key per click ----------------------------------


def job_owner() -> str:
    """Who this browser session is to the job store: the runs and sweeps it starts belong to it.

    A session signed in (an analyst's name and key, the identity provider, the admin token: :mod:`pages.ui.identity`)
    is its identity's (``dpcore.jobs.owners.user_owner``), in every tab. A visitor is their browser's: a hash of
    the visitor cookie (:mod:`pages.ui.visitor_cookie`), so a reload or another tab of the same browser finds the
    work again; a browser without that cookie is this session's only (:func:`pages.ui.identity.owner`). Never a
    link."""
    return _identity.owner()


def admin_refusal(token) -> str | None:
    """The pages' one admin check: None when ``token`` makes this session an admin, else the reason, as a sentence.
    It asks :func:`dpcore.budgets.identities.check_admin_token`: the token against the hash the data owner stored
    with ``python -m dpcore admin init`` (never the server's environment)."""
    try:
        identities.check_admin_token(token)
    except DPError as err:
        return sentence(str(err))
    return None


def job_caller():
    """This session as the job store sees it: its owner, and whether an admin unlocked it (:func:`admin_box`) or
    signed in as one (:mod:`pages.ui.identity`)."""
    admin = bool(st.session_state.get("_jobs_admin")) or _identity.current().is_admin
    return owners.Caller(job_owner(), admin=admin)


def _unlock(token_key: str) -> None:
    token = st.session_state.get(token_key) or ""
    st.session_state[token_key] = ""  # the token is checked, never kept
    refusal = admin_refusal(token)
    st.session_state["_jobs_admin"] = refusal is None
    st.session_state["_jobs_admin_refused"] = refusal


def _lock() -> None:
    st.session_state["_jobs_admin"] = False


def admin_box(key: str) -> None:
    """A closed expander where an admin unlocks everyone's runs and sweeps for this session (checked by
    :func:`admin_refusal`; the token is not kept)."""
    with st.expander("Admin: everyone's runs and sweeps", icon=":material/admin_panel_settings:"):
        if st.session_state.get("_jobs_admin"):
            st.caption("This session is an admin: it sees, cancels, renames and deletes everyone's runs and sweeps.")
            st.button("Leave admin mode", key=f"{key}_lock", on_click=_lock)
            return
        st.text_input("Admin token", key=f"{key}_token", type="password", help="The server's admin token.")
        st.button("Unlock", key=f"{key}_unlock", on_click=_unlock, args=(f"{key}_token",))
        refused = st.session_state.pop("_jobs_admin_refused", None)
        if refused:
            st.error(textsafe.md_message(refused))


def clicked(button_key: str, pressed: bool) -> bool:
    """A submit button's value, keeping one idempotency key per click (see :func:`submit_once`). Call it on
    every run right after drawing the button: a run without a press ends the click, so the next press is new,
    while the presses of a double click (no other run between them) share one key."""
    if not pressed:
        st.session_state.pop(f"_click_{button_key}", None)
    return pressed


def submit_once(button_key: str, fn, *args, **kwargs):
    """Call a submitting dpcore function (``store.submit_many``, ``sweep_runs.start_sweep``) with this click's
    idempotency key (``key=``). Returns ``(value, repeated)``: a repeat of the same click queues nothing — the
    store refuses it — and returns what the first press made (its job or sweep id) with ``repeated`` True, after
    saying so; a next press is a new click. Other errors are one message, as :func:`guarded` shows them
    (``(None, False)``)."""
    slot = f"_click_{button_key}"
    key = st.session_state.setdefault(slot, secrets.token_hex(16))

    def call():
        try:
            return fn(*args, key=key, **kwargs), False
        except owners.AlreadySubmitted as dup:
            st.session_state.pop(slot, None)
            st.info(
                "Already queued by your previous click (a double click queues it once). Press again to queue another.",
                icon=":material/done_all:",
            )
            return dup.ref, True

    return guarded(call) or (None, False)


def manage_box(what: str, name: str, *, key: str, rename, delete) -> bool:
    """An expander to rename or delete a run or sweep (shown to its owner and admins only). ``rename(new)`` and
    ``delete()`` are the dpcore calls. Returns True when something changed (the caller reruns the page)."""
    with st.expander(f"Rename or delete this {what}", icon=":material/edit:"):
        c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
        new = c1.text_input("Name", value=name, key=f"{key}_name", max_chars=_name_max())
        if c2.button("Rename", key=f"{key}_rename") and guarded(rename, new) is not None:
            st.toast(f"Renamed to {textsafe.md(new.strip())}")
            return True
        sure = st.checkbox(f"Delete this {what} and its files (cannot be undone)", key=f"{key}_sure")
        if st.button("Delete", key=f"{key}_delete", disabled=not sure, icon=":material/delete:"):
            if guarded(lambda: delete() or True):
                st.toast(f"Deleted: {textsafe.md(name)}")
                return True
    return False


def _name_max() -> int:
    return limits.JOB_NAME_MAX_CHARS
