"""Differencing attack figures: the two totals and their difference, the noisy estimates, success vs ε."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..attacks.differencing import AttackResult
from ..attacks.differencing_dp import AGE_HIGH, AGE_LOW, QUERIES_PER_ATTACK
from . import style


def totals_chart(attack: AttackResult) -> go.Figure:
    """x·c₁ and y·c₂ (total age of each group) and, in its own panel below, their difference: the target's age.

    The totals are ~100× the difference, so one linear axis would draw the answer as a sliver: two panels,
    stacked, with the bars lying down so their labels read across a phone (side by side, the two panels'
    labels and titles ran into each other at 390 px).
    """
    t1 = attack.avg_with * attack.count_with
    t2 = attack.avg_group * attack.count_group
    labels = [
        f"target OR group<br>x·c₁ = {attack.avg_with:.4g}·{attack.count_with}",
        f"group<br>y·c₂ = {attack.avg_group:.4g}·{attack.count_group}",
    ]
    fig = make_subplots(
        rows=2,
        cols=1,
        row_heights=[0.62, 0.38],
        vertical_spacing=0.2,
        subplot_titles=("two allowed totals (years)", "their difference: the target's age (years)"),
    )
    fig.add_trace(
        go.Bar(
            y=labels,
            x=[t1, t2],
            text=[f"{t1:,.0f}", f"{t2:,.0f}"],
            textposition="outside",
            orientation="h",
            marker_color=[style.NEUTRAL, style.NEUTRAL],
            hovertemplate="%{y}: %{x:,.2f} years<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            y=["difference"],
            x=[attack.recovered],
            text=[f"{attack.recovered:g}"],
            textposition="outside",
            orientation="h",
            marker_color=[style.NON_PRIVATE],
            hovertemplate="%{y}: %{x:,.2f} years<extra></extra>",
        ),
        row=2,
        col=1,
    )
    style.base_layout(
        fig, "Exact answers: total age of each group, and the difference (not private)", "", "", height=420
    )
    fig.update_xaxes(range=[0, max(t1, t2) * 1.25], row=1, col=1)
    fig.update_xaxes(range=[0, max(attack.recovered, 1) * 1.3], row=2, col=1)
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_annotations(font_size=12)
    fig.update_layout(showlegend=False, margin=dict(t=fig.layout.margin.t + 18))  # room for the panel title
    return fig


def estimates_histogram(estimates: np.ndarray, true_value: float, epsilon: float, k: float) -> go.Figure:
    """Simulated distribution of the attacker's (clipped) estimate at one ε, with the ±k window."""
    est = np.asarray(estimates, dtype=np.float64)
    hit = float(np.mean(np.abs(est - true_value) <= k)) if est.size else 0.0
    fig = go.Figure()
    fig.add_vrect(
        x0=max(true_value - k, AGE_LOW - 2),
        x1=min(true_value + k, AGE_HIGH + 2),
        fillcolor=style.rgba(style.NON_PRIVATE, 0.22),
        line_width=0,
        layer="below",
    )  # seen on dark too
    fig.add_trace(
        go.Histogram(
            x=est,
            xbins=dict(start=AGE_LOW - 0.5, end=AGE_HIGH + 0.5, size=1),
            marker_color=style.PRIVATE,
            name="attacker's estimate (simulated releases)",
            hovertemplate="estimate %{x}: %{y} releases<extra></extra>",
        )
    )
    fig.add_vline(
        x=true_value,
        line_color=style.NON_PRIVATE,
        line_width=3,
        line_dash="dash",
        annotation_text=f"true age {true_value:g} (not private)",
        annotation_position="top right",
        annotation_xshift=4,
    )  # clear of the line
    # Titles in short lines: Plotly does not wrap them, and a phone is 390 px wide.
    style.base_layout(
        fig,
        f"Attacker's estimate, ε = {epsilon:g} per query<br>"
        f"<sup>{est.size:,} simulated releases; attack total ε = {QUERIES_PER_ATTACK * epsilon:g}<br>"
        f"shaded ±{k:g} years around the truth: {hit:.1%} land there</sup>",
        "estimated age (years, clipped to 18–90)",
        "simulated releases (count)",
        height=440,
    )
    fig.update_layout(showlegend=False)
    fig.update_xaxes(range=[AGE_LOW - 2, AGE_HIGH + 2])
    return fig


def success_chart(curve: pd.DataFrame, epsilon: float | None, k: float) -> go.Figure:
    """P(|estimate − truth| ≤ k) against ε per query: simulated and exact (unclipped)."""
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=curve["epsilon_per_query"],
            y=curve["simulated"],
            mode="lines+markers",
            name="simulated (clipped estimate)",
            line=dict(color=style.PRIVATE, width=3),
            customdata=curve["total_epsilon"],
            hovertemplate="ε per query %{x:.3g} (total %{customdata:.3g}): %{y:.1%}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=curve["epsilon_per_query"],
            y=curve["analytic_unclipped"],
            mode="lines",
            name="exact formula (unclipped)",
            line=dict(color=style.BOUND, dash="dash"),
            hovertemplate="ε per query %{x:.3g}: %{y:.1%}<extra>1 − e^(−k/b)(1 + k/2b), b = 72/ε</extra>",
        )
    )
    style.base_layout(
        fig,
        f"Chance the attacker is within ±{k:g} years<br><sup>simulated vs exact (unclipped)</sup>",
        "",
        f"P(|estimate − true age| ≤ {k:g} years)",
        height=420,
    )
    xs = curve["epsilon_per_query"]
    style.epsilon_axis(
        fig,
        title=f"ε per query (log scale; the attack spends {QUERIES_PER_ATTACK}ε)",
        range=[float(np.log10(xs.min())), float(np.log10(xs.max()))] if len(xs) else None,
    )
    if epsilon is not None:  # add_vline's own label took ε as log10 units: it sat at 10× ε, across the line
        style.mark_epsilon(fig, epsilon, f" your ε = {epsilon:g} per query", style.ACCENT, at="top")
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%")
    return fig
