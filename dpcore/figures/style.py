"""One look for every chart: the palette, log axes with readable ticks, legends below, transparent backgrounds.

Colours: every series, marker and "your ε" line colour here has at least 3:1 contrast (WCAG 2.1) against
both Streamlit backgrounds, light (#ffffff) and dark (#0e1117); ``tests/dpcore/test_style.py`` checks it.
Backgrounds are transparent and no template is set, so charts follow the viewer's theme in the app (the HTML
report adds ``plotly_white`` itself).

Log axes: :func:`log_axis` labels decades only (or 1-2-5 values when the range spans less than two decades),
never Plotly's minor-tick labels ("5 0.1 2 5 1 2 5 …"). :func:`epsilon_axis` and :func:`roc_axes` use it.
"""

from __future__ import annotations

import math
import re

import plotly.graph_objects as go

from ..noise.interpret import level_edges

PRIVATE = "#2a9d8f"  # anything DP
NON_PRIVATE = "#e76f51"  # anything not private (baselines, true values)
NEUTRAL = "#6c757d"  # reference lines (random guessing), secondary text
ACCENT = "#457b9d"  # a second DP series, markers, the privacy-loss line
BOUND = "#8e44ad"  # theoretical bounds / ceilings
SEQUENCE = [PRIVATE, ACCENT, "#c77d14", "#d16ba5", BOUND, "#5a9e3a"]
PALETTE = (PRIVATE, NON_PRIVATE, NEUTRAL, ACCENT, BOUND, *SEQUENCE)  # what the contrast test checks

LIGHT_BG = "#ffffff"  # Streamlit's light and dark theme backgrounds
DARK_BG = "#0e1117"
TRANSPARENT = "rgba(0,0,0,0)"
# An empty template: the viewer's Streamlit theme fills it in the browser, and a figure without Plotly's
# default template is a quarter the size and several times faster to serialise on every rerun.
NO_TEMPLATE: dict = {}
MIN_CONTRAST = 3.0

# Alphas high enough that neighbouring zones read apart on white and on #0e1117 (at 0.10-0.14 moderate, weak
# and very weak differed by ~5 RGB levels), low enough that every series drawn over them keeps its contrast.
_ZONE_RGBA = ((42, 157, 143, 0.14), (233, 196, 106, 0.26), (244, 162, 97, 0.26), (231, 111, 81, 0.24))
_ZONE_COLOURS = tuple(f"rgba({r},{g},{b},{a:g})" for r, g, b, a in _ZONE_RGBA)
# The key's swatch is one character, not a band across the plot: the same hue, dense enough to see.
_ZONE_SWATCHES = tuple(f"rgba({r},{g},{b},0.75)" for r, g, b, _ in _ZONE_RGBA)
# On the dark theme's background the same translucent hues all read brown (yellow at 0.26 over #0e1117 is
# rgb(70, 63, 44)): there the bands are deeper, more opaque hues that stay teal, yellow, orange and red.
_ZONE_RGBA_DARK = ((42, 157, 143, 0.26), (210, 190, 60, 0.26), (230, 130, 40, 0.28), (220, 60, 60, 0.3))
#: A zone band's fill on the light theme -> its fill on the dark theme (:func:`for_dark`).
DARK_ZONE_FILLS = dict(zip(_ZONE_COLOURS, (f"rgba({r},{g},{b},{a:g})" for r, g, b, a in _ZONE_RGBA_DARK)))
# (low, high, label, colour) for epsilon zones on log axes: the words and edges of interpret.LEVELS
ZONES = tuple(
    (max(lo, 1e-3), min(hi, 1e3), word, colour) for (lo, hi, word), colour in zip(level_edges(), _ZONE_COLOURS)
)


def rgba(colour: str, alpha: float) -> str:
    """A palette colour ("#rrggbb") as a translucent fill."""
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha:g})"


def relative_luminance(colour: str) -> float:
    """WCAG 2.1 relative luminance of "#rrggbb"."""

    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(int(colour[i : i + 2], 16) / 255) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio between two "#rrggbb" colours (1 to 21)."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


# Plotly never wraps text, and a chart on a 390 px phone is ~350 px wide: titles, axis titles and legend
# entries longer than these are broken into lines at spaces (:func:`wrap`), and the margins grow to hold them.
TITLE_CHARS = 40  # a chart title per line (17 px bold)
X_TITLE_CHARS = 46  # an x-axis title per line (14 px)
TICK_CHARS = 20  # a category's tick label per line (longer names wrap; Plotly tilts them if they meet)
TITLE_LINE_PX = 22  # one more line of title: this much more top margin
Y_CHAR_PX = 7.5  # a y-axis title runs along the plot's height: about this many px per character


_TAG = re.compile(r"</?[A-Za-z][^>]*>")  # Plotly's markup (<sup>, <span …>); "ε < 1" is plain text


# One character as a reader counts it: an HTML entity (``textsafe.plotly`` writes "&lt;") is one, never cut.
_UNIT = re.compile(r"&(?:[A-Za-z]+|#[0-9]+|#x[0-9A-Fa-f]+);|.", re.S)
_SOFT_BREAKS = "-_/.:,;|+"  # a word too long for a line is cut after one of these if it can be


def _pieces(word: str, width: int) -> list[str]:
    """``word`` cut into pieces of at most ``width`` characters: after the last hyphen, underscore, slash,
    dot … that leaves a piece that fits, else at ``width`` (an uploaded column name may have no spaces)."""
    units = _UNIT.findall(word)
    if len(units) <= width:
        return [word]
    out = []
    while len(units) > width:
        cut = next((i + 1 for i in range(width - 1, 0, -1) if units[i] in _SOFT_BREAKS), width)
        out.append("".join(units[:cut]))
        units = units[cut:]
    out.append("".join(units))
    return out


def wrap(text: str, width: int) -> str:
    """``text`` broken at spaces into lines of at most ``width`` characters, joined by Plotly's ``<br>``.

    Lines already broken by the caller stay broken; a line holding markup (``<sup>…``) is left as it is.
    A single word longer than ``width`` (a column name from an upload, say) is cut into pieces of ``width``
    (:func:`_pieces`), so no title runs out of its chart on a phone.
    """
    out = []
    for line in str(text).split("<br>"):
        if len(line) <= width or _TAG.search(line):
            out.append(line)
            continue
        cur = ""
        for word in line.split(" "):
            for j, piece in enumerate(_pieces(word, width)):  # a cut word goes on, unspaced, on the next line
                if cur and (j or len(cur) + 1 + len(piece) > width):
                    out.append(cur)
                    cur = piece
                else:
                    cur = f"{cur} {piece}" if cur else piece
        out.append(cur)
    return "<br>".join(out)


# Plotly's markup as the figures write it: bold, italic, super- and subscripts, and a span that only colours or
# sizes its text (the privacy-zone key). Anything else that looks like a tag is shown as text on a page.
_PAGE_TAG = re.compile(
    r"</?(?:b|i|em|sup|sub)>|</span>"
    r'|<span style="(?:(?:color:(?:#[0-9A-Fa-f]{3,8}|rgba?\([0-9., ]+\))|font-size:[0-9]+px);? ?)+">'
)
_ENTITY = re.compile(r"&(?:[A-Za-z]+|#[0-9]+|#x[0-9A-Fa-f]+);")


def _page_text(text: str) -> str:
    """Plain title text as HTML: entities ``textsafe.plotly`` wrote stay, any other ``&``, ``<`` and ``>`` become
    entities. (The page draws it with ``st.html``, never markdown: a ``$`` is a dollar sign there.)"""
    out, at = [], 0
    for m in _ENTITY.finditer(text):
        out.append(text[at : m.start()].replace("&", "&amp;"))
        out.append(m.group())
        at = m.end()
    out.append(text[at:].replace("&", "&amp;"))
    return "".join(out).replace("<", "&lt;").replace(">", "&gt;")


def title_lines(text: str) -> list[tuple[str, str]]:
    """A chart title made for Plotly, as HTML lines for a page that wraps text to its own width.

    Plotly never wraps, so :func:`text_layout` breaks a title at :data:`TITLE_CHARS` (``<br>``) to fit a phone,
    and a laptop then shows two short lines with room to spare. Here the heading's lines are joined again
    (``("title", html)``), and a line of notes (a :func:`subtitle` ``<sup>`` line, the privacy-zone key) stays a
    line of its own (``("note", html)``, its ``<sup>`` dropped: the page sets notes small). Only the markup in
    :data:`_PAGE_TAG` survives; any other tag is shown as text.
    """
    out: list[tuple[str, str]] = []
    joins = False  # the last line may take the next: a heading's line, or a subtitle's <sup> line
    for line in str(text).split("<br>"):
        parts, at, tags = [], 0, False
        for m in _PAGE_TAG.finditer(line):
            parts.append(_page_text(line[at : m.start()]))
            tag = m.group()
            tags = True
            if tag not in ("<sup>", "</sup>"):
                parts.append(tag)
            at = m.end()
        parts.append(_page_text(line[at:]))
        html = "".join(parts).strip()
        if not html:
            continue
        kind = "note" if tags and ("<sup>" in line or "<span" in line) else "title"
        sup = line.startswith("<sup>") and "<span" not in line
        if joins and out and out[-1][0] == kind and (kind == "title" or sup):
            out[-1] = (kind, f"{out[-1][1]} {html}")
        else:
            out.append((kind, html))
        joins = kind == "title" or sup
    return out


def tick_label(text: str, width: int, lines: int = 3) -> str:
    """A category's name as a tick label: :func:`wrap` to ``width``, at most ``lines`` lines, the last cut with
    "…" (give the full name in the hover). Use positions as the categories, not these labels: two long names
    may shorten alike."""
    out = wrap(text, width).split("<br>")
    if len(out) > lines:
        out = out[:lines]
        out[-1] = "".join(_UNIT.findall(out[-1])[: width - 1]) + "…"
    return "<br>".join(out)


def subtitle(text: str, width: int = 52) -> str:
    """A plain-text note as small lines under a title (``f"{title}<br>{subtitle(note)}"``), wrapped to fit a
    phone: each line its own ``<sup>``, so :func:`wrap` and :func:`text_layout` count them as lines."""
    return "<br>".join(f"<sup>{line}</sup>" for line in wrap(text, width).split("<br>"))


def n_lines(text: str) -> int:
    return str(text).count("<br>") + 1


def y_title_chars(height: int, top: int = 60) -> int:
    """How many characters of a y-axis title fit along a chart ``height`` px tall (minus the margins)."""
    return max(int((height - top - 55) / Y_CHAR_PX), 16)


# A chart's legend in three groups, each under its title, in this order (a flat legend of a dozen ROC lines read as
# one list): what a guarantee allows, what was measured, and the reference lines.
LEGEND_GROUPS = {
    "promise": "promised (an upper bound)",
    "measured": "measured (attacks on the model)",
    "reference": "reference",
}


def legend_group(kind: str) -> dict:
    """A trace's legend group and group title (``kind``: a key of :data:`LEGEND_GROUPS`); use with the layout's
    ``legend.traceorder = "grouped"``. The group's rank keeps the groups in the order above."""
    return dict(
        legendgroup=kind,
        legendgrouptitle=dict(text=LEGEND_GROUPS[kind]),
        legendrank=100 * (1 + list(LEGEND_GROUPS).index(kind)),
    )


def legend_below(*, font_size: int | None = None) -> dict:
    """A horizontal legend along the bottom of the chart, under the x-axis title.

    Anchored to the container, not the plot: Plotly then grows the bottom margin to hold the legend and the
    axis title together. A legend placed at a fraction of the plot's height (the old way) rose into the axis
    title whenever its own rows, wrapped on a phone, shrank the plot it was measured against.
    """
    legend = dict(orientation="h", yref="container", yanchor="bottom", y=0.0, xanchor="left", x=0.0)
    if font_size:
        legend["font"] = dict(size=font_size)
    return legend


def text_layout(title: str, x_title: str, y_title: str, *, height: int = 380) -> dict:
    """Title, axis titles, margins and legend of a chart, each text wrapped to fit a phone (see :func:`wrap`)."""
    title, x_title = wrap(title, TITLE_CHARS), wrap(x_title, X_TITLE_CHARS)
    # Hung from the top edge and growing down, with the margin grown to match: Plotly's default puts the
    # first line's baseline mid-margin, so a title of three or four lines ran into the plot's top label.
    top = 38 + TITLE_LINE_PX * n_lines(title)
    y_title = wrap(y_title, y_title_chars(height, top))
    return dict(
        title=dict(text=title, x=0.0, xanchor="left", yref="container", y=1.0, yanchor="top", pad=dict(t=14)),
        height=height,
        margin=dict(l=60, r=20, t=top, b=55),
        legend=legend_below(),
        xaxis=dict(title=dict(text=x_title), automargin=True),
        yaxis=dict(title=dict(text=y_title), automargin=True),
    )


def base_layout(fig: go.Figure, title: str, x_title: str, y_title: str, *, height: int = 380) -> go.Figure:
    text = text_layout(title, x_title, y_title, height=height)
    x_axis, y_axis = text.pop("xaxis"), text.pop("yaxis")
    fig.update_layout(**text, paper_bgcolor=TRANSPARENT, plot_bgcolor=TRANSPARENT, template=NO_TEMPLATE)
    fig.update_xaxes(x_axis)  # every x axis of a figure with subplots
    fig.update_yaxes(y_axis)
    return fig


def _fmt_tick(v: float) -> str:
    return f"{v:g}" if 1e-4 <= v < 1e6 else f"1e{round(math.log10(v))}"


def log_ticks(lo: float, hi: float, max_ticks: int = 7) -> list[float]:
    """Tick values for a log axis from lo to hi: decades (thinned to ``max_ticks``), or 1-2-5 values when
    the range holds fewer than three decades."""
    if not (lo > 0 and hi > lo):
        return []
    k0, k1 = math.floor(math.log10(lo) + 1e-9), math.ceil(math.log10(hi) - 1e-9)
    decades = [10.0**k for k in range(k0, k1 + 1) if lo * (1 - 1e-9) <= 10.0**k <= hi * (1 + 1e-9)]
    if len(decades) >= 3:
        step = math.ceil(len(decades) / max_ticks)
        return decades[::step]
    for mantissas in ((1, 2, 5), (1, 3), (1,)):
        vals = [m * 10.0**k for k in range(k0 - 1, k1 + 1) for m in mantissas]
        vals = [v for v in vals if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]
        if len(vals) <= max_ticks and (len(vals) >= 2 or mantissas == (1,)):
            if vals:
                return vals
    return decades or [float(f"{lo:.2g}"), float(f"{hi:.2g}")]


def log_axis(
    fig: go.Figure,
    axis: str = "x",
    *,
    lo: float | None = None,
    hi: float | None = None,
    title: str | None = None,
    tickvals=None,
    ticktext=None,
    **kwargs,
) -> go.Figure:
    """Make ``axis`` ("x", "y", "x2", …) a log axis from lo to hi with readable ticks (see module docstring).

    Without lo/hi Plotly picks the range and only decades are labelled (dtick = 1 decade).
    """
    name = ("xaxis" if axis.startswith("x") else "yaxis") + axis[1:]
    opts: dict = dict(type="log", minor=dict(showgrid=False, ticks=""), **kwargs)
    if title is not None:
        opts["title"] = dict(text=title)
    if lo is not None and hi is not None:
        opts["range"] = [math.log10(lo), math.log10(hi)]
        if tickvals is None:
            tickvals = log_ticks(lo, hi)
    if tickvals is not None:
        opts["tickvals"] = list(tickvals)
        opts["ticktext"] = list(ticktext) if ticktext is not None else [_fmt_tick(v) for v in tickvals]
    else:
        opts["dtick"] = 1
    fig.update_layout({name: opts})
    return fig


def epsilon_axis(fig: go.Figure, title: str = "privacy budget ε (log scale)", *, range=None, **kwargs) -> go.Figure:
    """ε axes are always log scale with decade (or 1-2-5) labels; ``range`` in log10 units as Plotly takes it."""
    if range is not None:
        lo, hi = 10.0 ** range[0], 10.0 ** range[1]
        return log_axis(fig, "x", lo=lo, hi=hi, title=title, **kwargs)
    return log_axis(fig, "x", title=title, **kwargs)


def roc_axes(
    fig: go.Figure,
    floor: float,
    *,
    x_title: str = "false positive rate (log scale)",
    y_title: str = "true positive rate (log scale)",
) -> go.Figure:
    """Log–log ROC axes from ``floor`` to 1, labelled at decades only."""
    ticks = [v for v in log_ticks(floor, 1.0) if v >= floor]
    log_axis(fig, "x", lo=floor, hi=1.0, title=x_title, tickvals=ticks)
    # the floor labelled once, on the x axis: the two "1e-5" met at the corner
    log_axis(fig, "y", lo=floor, hi=1.0, title=y_title, tickvals=[v for v in ticks if v > floor * (1 + 1e-9)])
    return fig


def mark_epsilon(fig: go.Figure, epsilon: float, label: str, colour: str = PRIVATE, *, at: str = "bottom") -> go.Figure:
    """A dashed vertical line at epsilon on a log x axis, labelled inside the plot at its ``bottom`` or just
    above it (``top``, clear of data drawn along the bottom row). The label reads leftwards when epsilon sits
    in the right third of a set x range, so it never runs off the chart (annotation x in log10 units)."""
    fig.add_vline(x=epsilon, line_color=colour, line_width=3, line_dash="dash", layer="below")  # dots over it
    xanchor, rng = "left", fig.layout.xaxis.range
    if rng is not None and math.log10(epsilon) > rng[0] + 2 / 3 * (rng[1] - rng[0]):
        xanchor, label = "right", label.strip() + " "
    fig.add_annotation(
        x=math.log10(epsilon),
        y=1 if at == "top" else 0,
        xref="x",
        yref="paper",
        yanchor="bottom",
        xanchor=xanchor,
        text=label,
        showarrow=False,
        font=dict(color=colour),
        xshift=5 if xanchor == "left" else -5,
    )  # clear of the 3 px line, not struck through
    return fig


def mark_level(
    fig: go.Figure,
    y: float,
    label: str,
    colour: str = NEUTRAL,
    *,
    log_y: bool = False,
    dash: str = "dash",
    right: bool = False,
    font_size: int = 11,
) -> go.Figure:
    """A horizontal reference line at ``y`` labelled just above it, at the plot's left (or ``right``) edge.

    Plotly's ``add_hline(annotation_text=…)`` places the label at ``y`` read as log10 units when the axis is
    logarithmic (a target of 1 was labelled at 10, a ceiling of 3.8 off the chart): on a log ``y`` axis the
    label goes at log10(y) here. A level of 0 or below has no place on a log axis: nothing is drawn."""
    if log_y and not y > 0:
        return fig
    fig.add_hline(y=y, line_color=colour, line_dash=dash)
    fig.add_annotation(
        x=1 if right else 0,
        xref="paper",
        xanchor="right" if right else "left",
        y=math.log10(y) if log_y else y,
        yref="y",
        yanchor="bottom",
        text=label,
        showarrow=False,
        font=dict(color=colour, size=font_size),
    )
    return fig


def epsilon_zones(x_min: float, x_max: float) -> tuple[list[dict], str]:
    """The privacy-level zones (strong … very weak, :data:`ZONES`) between x_min and x_max on a log ε axis:
    the shaded bands (shape dicts) and their key, a line of coloured squares and words for the chart's title
    (``f"{title}<br>{key}"``).

    The words go in the title, not on the plot or in the legend: at 390 px the two middle zones are ~12 px
    wide, so labels inside the plot sat on each other and on the data, and four more legend entries squeezed
    the plot.
    """
    shapes, words = [], []
    for (lo, hi, label, colour), swatch in zip(ZONES, _ZONE_SWATCHES):
        a, b = max(lo, x_min), min(hi, x_max)
        if a < b:
            shapes.append(
                dict(
                    type="rect",
                    x0=a,
                    x1=b,
                    y0=0,
                    y1=1,
                    xref="x",
                    yref="paper",
                    fillcolor=colour,
                    line_width=0,
                    layer="below",
                )
            )
            words.append(f'<span style="color:{swatch}">■</span> {label}')
    key = f'<span style="font-size:12px">privacy: {"  ".join(words)}</span>' if words else ""  # <sup> read ~9 px
    return shapes, key


def add_epsilon_zones(fig: go.Figure, x_min: float, x_max: float) -> str:
    """:func:`epsilon_zones`' bands added to a figure; returns their key for the title."""
    shapes, key = epsilon_zones(x_min, x_max)
    for shape in shapes:
        fig.add_shape(shape)
    return key


def for_dark(spec: dict) -> dict:
    """A figure's dict (``fig.to_dict()``) for the dark theme: the privacy-zone bands in their dark fills
    (:data:`DARK_ZONE_FILLS`); everything else, and ``spec`` itself, unchanged. The pages apply it when the
    visitor's theme is dark (:func:`pages.ui.common.chart`); the report and exports keep the light fills."""
    shapes = (spec.get("layout") or {}).get("shapes") or []
    if not any(sh.get("fillcolor") in DARK_ZONE_FILLS for sh in shapes):
        return spec
    layout = dict(spec["layout"])
    layout["shapes"] = [
        {**sh, "fillcolor": DARK_ZONE_FILLS[sh["fillcolor"]]} if sh.get("fillcolor") in DARK_ZONE_FILLS else sh
        for sh in shapes
    ]
    return {**spec, "layout": layout}
