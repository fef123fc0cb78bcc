"""Plan a release figures: each statistic's expected 95% error (the preview), the released values with their
intervals, the registry's ε beside the plan's, and an upload beside its DP synthetic table."""

from __future__ import annotations

import math
from collections.abc import Sequence

import plotly.graph_objects as go

from .. import claims, textsafe
from . import style


def preview(
    labels: Sequence[str], relative: Sequence[float], epsilons: Sequence[float], *, height: int | None = None
) -> go.Figure:
    """Each statistic's expected 95% error relative to its size (at the public guess of rows), with its ε share:
    the preview, computed from public numbers alone."""
    names = [style.tick_label(textsafe.plotly(f"{i + 1}. {lab}"), 22, 3) for i, lab in enumerate(labels)]
    pct = [100 * r for r in relative]
    fig = go.Figure(
        go.Bar(
            x=pct,
            y=names,
            orientation="h",
            marker_color=style.PRIVATE,
            text=[f"±{claims.up(p, 2)}% · ε {claims.up(e, 2)}" for p, e in zip(pct, epsilons)],
            textposition="auto",
            insidetextanchor="end",
            hovertemplate="%{y}<br>95% error ±%{x:.3g}% of its size<extra></extra>",
            name="95% error",
        )
    )
    style.base_layout(
        fig,
        "Expected 95% error of each statistic",
        "± % of its size",
        "",
        height=height or 150 + 52 * len(names),
    )
    top = max(pct) * 1.15 if pct else 1.0
    fig.update_xaxes(range=[0, top], rangemode="tozero", ticksuffix="%")
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(showlegend=False, margin=dict(l=10))
    return fig


def released(
    labels: Sequence[str], values: Sequence[float], lows: Sequence[float], highs: Sequence[float], *, title: str
) -> go.Figure:
    """One statistic's released cells with their 95% intervals (DP)."""
    pos = list(range(len(labels)))
    names = [textsafe.plotly(x) for x in labels]
    fig = go.Figure(
        go.Bar(
            x=pos,
            y=list(values),
            customdata=names,
            marker_color=style.PRIVATE,
            name="released (DP)",
            error_y=dict(
                type="data",
                symmetric=False,
                array=[h - v for h, v in zip(highs, values)],
                arrayminus=[v - lo for v, lo in zip(values, lows)],
                color=style.ACCENT,
                thickness=1.2,
            ),
            hovertemplate="%{customdata}: %{y:,.4g}<extra></extra>",
        )
    )
    style.base_layout(fig, textsafe.plotly(title), "cell", "released value with its 95% interval", height=340)
    fig.update_xaxes(tickvals=pos, ticktext=[style.tick_label(n, style.TICK_CHARS, 2) for n in names])
    fig.update_layout(showlegend=False)
    return fig


def registry_strip(epsilons: Sequence[float], names: Sequence[str], mine: float, *, label: str) -> go.Figure:
    """The registry's deployments of one kind by ε (log scale), the plan's ε marked: where it sits."""
    fig = go.Figure(
        go.Scatter(
            x=list(epsilons),
            y=[0.0] * len(epsilons),
            mode="markers",
            marker=dict(size=12, color=style.ACCENT, opacity=0.75, line=dict(width=1, color=style.NEUTRAL)),
            customdata=[textsafe.plotly(n) for n in names],
            hovertemplate="%{customdata}<br>ε = %{x:.3g}<extra></extra>",
            name="registry deployments",
        )
    )
    style.base_layout(fig, "Your ε among real deployments", "ε (log scale)", "", height=240)
    allv = [e for e in epsilons if e > 0] + [mine]
    lo, hi = 10 ** math.floor(math.log10(min(allv))), 10 ** math.ceil(math.log10(max(allv)))
    style.epsilon_axis(fig, "ε (log scale)", range=[math.log10(lo), math.log10(hi)])
    style.mark_epsilon(fig, mine, label, style.PRIVATE, at="top")
    fig.update_yaxes(visible=False, range=[-1, 1])
    fig.update_layout(showlegend=False)
    return fig


def side_by_side(
    labels: Sequence[str], original: Sequence[float], synthetic: Sequence[float], *, title: str
) -> go.Figure:
    """One column's shares in the uploaded rows (not covered by ε) and in the DP synthetic table."""
    names = [textsafe.plotly(x) for x in labels]
    pos = list(range(len(names)))
    fig = go.Figure(
        [
            go.Bar(x=pos, y=list(original), name="your rows (not covered by ε)", marker_color=style.NON_PRIVATE),
            go.Bar(x=pos, y=list(synthetic), name="DP synthetic", marker_color=style.PRIVATE),
        ]
    )
    style.base_layout(fig, textsafe.plotly(title), "", "share of rows", height=320)
    fig.update_xaxes(tickvals=pos, ticktext=[style.tick_label(n, style.TICK_CHARS, 2) for n in names])
    fig.update_yaxes(tickformat=".0%")
    fig.update_layout(barmode="group")
    return fig
