"""One look for every chart: colours for private / non-private, log epsilon axes, titles with units."""

from __future__ import annotations

import plotly.graph_objects as go

PRIVATE = "#2a9d8f"  # anything DP
NON_PRIVATE = "#e76f51"  # anything not private (baselines, true values)
NEUTRAL = "#6c757d"
ACCENT = "#264653"
BOUND = "#8e44ad"  # theoretical bounds / ceilings
SEQUENCE = ["#2a9d8f", "#264653", "#e9c46a", "#f4a261", "#8e44ad", "#457b9d"]

ZONES = (  # (low, high, label, colour) for epsilon zones on log axes
    (1e-3, 1.0, "strong", "rgba(42,157,143,0.10)"),
    (1.0, 5.0, "moderate", "rgba(233,196,106,0.14)"),
    (5.0, 10.0, "weak", "rgba(244,162,97,0.14)"),
    (10.0, 1e3, "very weak", "rgba(231,111,81,0.12)"),
)


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


def add_epsilon_zones(fig: go.Figure, x_min: float, x_max: float) -> go.Figure:
    for lo, hi, label, colour in ZONES:
        a, b = max(lo, x_min), min(hi, x_max)
        if a < b:
            fig.add_vrect(x0=a, x1=b, fillcolor=colour, line_width=0, layer="below",
                          annotation_text=label, annotation_position="top left",
                          annotation_font_size=10, annotation_font_color=NEUTRAL)
    return fig
