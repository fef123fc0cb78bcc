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

_ZONE_COLOURS = ("rgba(42,157,143,0.10)", "rgba(233,196,106,0.14)", "rgba(244,162,97,0.14)", "rgba(231,111,81,0.12)")
# (low, high, label, colour) for epsilon zones on log axes: the words and edges of interpret.LEVELS
ZONES = tuple((max(lo, 1e-3), min(hi, 1e3), word, colour)
              for (lo, hi, word), colour in zip(level_edges(), _ZONE_COLOURS))


def rgba(colour: str, alpha: float) -> str:
    """A palette colour ("#rrggbb") as a translucent fill."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha:g})"


def relative_luminance(colour: str) -> float:
    """WCAG 2.1 relative luminance of "#rrggbb"."""
    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(int(colour[i:i + 2], 16) / 255) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio between two "#rrggbb" colours (1 to 21)."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def legend_below(height: int = 380, *, font_size: int | None = None) -> dict:
    """A horizontal legend under the plot, clear of the x-axis title (Plotly grows the bottom margin for it)."""
    plot_px = max(height - 60 - 55, 120)
    legend = dict(orientation="h", yanchor="top", y=-75 / plot_px, xanchor="left", x=0.0)
    if font_size:
        legend["font"] = dict(size=font_size)
    return legend


def base_layout(fig: go.Figure, title: str, x_title: str, y_title: str, *, height: int = 380) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, x=0.0, xanchor="left"),
        height=height,
        margin=dict(l=60, r=20, t=60, b=55),
        legend=legend_below(height),
        paper_bgcolor=TRANSPARENT,
        plot_bgcolor=TRANSPARENT,
        template=NO_TEMPLATE,
    )
    fig.update_xaxes(title_text=x_title, automargin=True)
    fig.update_yaxes(title_text=y_title, automargin=True)
    return fig


def _fmt_tick(v: float) -> str:
    return f"{v:g}" if 1e-4 <= v < 1e6 else f"1e{round(math.log10(v))}"


def log_ticks(lo: float, hi: float, max_ticks: int = 7) -> list[float]:
    """Tick values for a log axis from lo to hi: decades (thinned to ``max_ticks``), or 1-2-5 values when
    the range holds fewer than three decades."""
    if not (lo > 0 and hi > lo):
        return []
    k0, k1 = math.floor(math.log10(lo) + 1e-9), math.ceil(math.log10(hi) - 1e-9)
    decades = [10.0 ** k for k in range(k0, k1 + 1) if lo * (1 - 1e-9) <= 10.0 ** k <= hi * (1 + 1e-9)]
    if len(decades) >= 3:
        step = math.ceil(len(decades) / max_ticks)
        return decades[::step]
    for mantissas in ((1, 2, 5), (1, 3), (1,)):
        vals = [m * 10.0 ** k for k in range(k0 - 1, k1 + 1) for m in mantissas]
        vals = [v for v in vals if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]
        if len(vals) <= max_ticks and (len(vals) >= 2 or mantissas == (1,)):
            if vals:
                return vals
    return decades or [float(f"{lo:.2g}"), float(f"{hi:.2g}")]


def log_axis(fig: go.Figure, axis: str = "x", *, lo: float | None = None, hi: float | None = None,
             title: str | None = None, tickvals=None, ticktext=None, **kwargs) -> go.Figure:
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


def roc_axes(fig: go.Figure, floor: float, *, x_title: str = "false positive rate (log scale)",
             y_title: str = "true positive rate (log scale)") -> go.Figure:
    """Log–log ROC axes from ``floor`` to 1, labelled at decades only."""
    ticks = [v for v in log_ticks(floor, 1.0) if v >= floor]
    for axis, title in (("x", x_title), ("y", y_title)):
        log_axis(fig, axis, lo=floor, hi=1.0, title=title, tickvals=ticks)
    return fig


def mark_epsilon(fig: go.Figure, epsilon: float, label: str, colour: str = PRIVATE) -> go.Figure:
    """A dashed vertical line at epsilon on a log x axis, labelled (annotation x in log10 units)."""
    fig.add_vline(x=epsilon, line_color=colour, line_width=3, line_dash="dash")
    fig.add_annotation(x=math.log10(epsilon), y=0, xref="x", yref="paper", yanchor="bottom", xanchor="left",
                       text=label, showarrow=False, font=dict(color=colour))
    return fig


def add_epsilon_zones(fig: go.Figure, x_min: float, x_max: float) -> go.Figure:
    for i, (lo, hi, label, colour) in enumerate(ZONES):
        a, b = max(lo, x_min), min(hi, x_max)
        if a < b:
            fig.add_vrect(x0=a, x1=b, fillcolor=colour, line_width=0, layer="below")
            # On a log axis Plotly reads an annotation's x as log10 of the value (shapes take the value).
            # Staggered rows: narrow zones' labels would overlap on a phone.
            fig.add_annotation(x=math.log10(a), y=1 - 0.06 * (i % 2), xref="x", yref="paper", yanchor="top", xanchor="left",
                               text=label, showarrow=False, font=dict(size=10, color=NEUTRAL))
    return fig
