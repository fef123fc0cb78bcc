"""One look for every chart: colours for private / non-private, log epsilon axes, titles with units."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from ..noise.interpret import level_edges

PRIVATE = "#2a9d8f"  # anything DP
NON_PRIVATE = "#e76f51"  # anything not private (baselines, true values)
NEUTRAL = "#6c757d"
ACCENT = "#264653"
BOUND = "#8e44ad"  # theoretical bounds / ceilings
SEQUENCE = ["#2a9d8f", "#264653", "#e9c46a", "#f4a261", "#8e44ad", "#457b9d"]

_ZONE_COLOURS = ("rgba(42,157,143,0.10)", "rgba(233,196,106,0.14)", "rgba(244,162,97,0.14)", "rgba(231,111,81,0.12)")
# (low, high, label, colour) for epsilon zones on log axes: the words and edges of interpret.LEVELS
ZONES = tuple((max(lo, 1e-3), min(hi, 1e3), word, colour)
              for (lo, hi, word), colour in zip(level_edges(), _ZONE_COLOURS))


def base_layout(fig: go.Figure, title: str, x_title: str, y_title: str, *, height: int = 380) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, x=0.0, xanchor="left"),
        height=height,
        margin=dict(l=60, r=20, t=60, b=55),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0),
        template="plotly_white",
    )
    fig.update_xaxes(title_text=x_title)
    fig.update_yaxes(title_text=y_title)
    return fig


def epsilon_axis(fig: go.Figure, title: str = "privacy budget ε (log scale)", **kwargs) -> go.Figure:
    """ε axes are always log scale."""
    fig.update_xaxes(type="log", title_text=title, **kwargs)
    return fig


def mark_epsilon(fig: go.Figure, epsilon: float, label: str, colour: str = PRIVATE) -> go.Figure:
    """A dashed vertical line at epsilon on a log x axis, labelled (annotation x in log10 units)."""
    fig.add_vline(x=epsilon, line_color=colour, line_width=3, line_dash="dash")
    fig.add_annotation(x=math.log10(epsilon), y=0, xref="x", yref="paper", yanchor="bottom", xanchor="left",
                       text=label, showarrow=False, font=dict(color=colour))
    return fig


def add_epsilon_zones(fig: go.Figure, x_min: float, x_max: float) -> go.Figure:
    for lo, hi, label, colour in ZONES:
        a, b = max(lo, x_min), min(hi, x_max)
        if a < b:
            fig.add_vrect(x0=a, x1=b, fillcolor=colour, line_width=0, layer="below")
            # On a log axis Plotly reads an annotation's x as log10 of the value (shapes take the value).
            fig.add_annotation(x=math.log10(a), y=1, xref="x", yref="paper", yanchor="top", xanchor="left",
                               text=label, showarrow=False, font=dict(size=10, color=NEUTRAL))
    return fig
