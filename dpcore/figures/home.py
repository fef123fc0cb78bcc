"""Home page figures: where real deployments put epsilon, and the attacker's posterior bound."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import claims
from ..noise.interpret import DEPLOYMENTS, fact_bound, posterior_bound
from . import style


def deployments_chart(user_epsilon: float) -> go.Figure:
    """Where published deployments put ε, and yours. The names wrap in short lines and the ε axis spans the
    deployments and your ε with a little room, not 0.05-300: on a phone the names took half the width and
    the eight dots sat in the middle third of what was left."""
    deps = sorted(DEPLOYMENTS, key=lambda d: d.epsilon)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[d.epsilon for d in deps],
            y=[style.tick_label(d.name, 15) for d in deps],
            mode="markers+text",
            text=[f"{d.epsilon:g}" for d in deps],
            textposition="middle right",  # short: fits a phone
            customdata=[[d.name, d.unit] for d in deps],
            marker=dict(size=12, color=style.ACCENT),
            name="published deployments",
            hovertemplate="%{customdata[0]}: ε = %{x} (%{customdata[1]})<extra></extra>",
        )
    )
    lo = min(0.5, user_epsilon / 2)
    hi = max(40.0, user_epsilon * 3)
    key = style.add_epsilon_zones(fig, lo, hi)
    style.base_layout(fig, f"Published deployments' ε<br>{key}", "", "", height=470)
    style.epsilon_axis(fig, range=[np.log10(lo), np.log10(hi)])
    style.mark_epsilon(fig, user_epsilon, f" your ε = {user_epsilon:g}", at="top")  # the bottom row has dots
    # the names' own width sets the left margin (automargin), so a phone keeps room for the plot
    fig.update_layout(showlegend=False, margin=dict(l=10, r=20, b=55))
    return fig


def posterior_chart(epsilon: float) -> go.Figure:
    """The attacker's highest belief after a release, for the two questions ε bounds: whether a person is in the
    data (e^ε) and a fact about someone known to be in it (the replace-one question, e^(2ε))."""
    prior = np.linspace(0, 1, 201)
    post = posterior_bound(prior, epsilon)
    fact = fact_bound(prior, epsilon)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=prior,
            y=prior,
            mode="lines",
            name="no information (ε = 0)",
            line=dict(color=style.NEUTRAL, dash="dot"),
            hoverinfo="skip",
        )
    )
    # the hover writes the bound rounded up (73.106% → "at most 73.2%"), not the axis' nearest whole percent
    fig.add_trace(
        go.Scatter(
            x=prior,
            y=post,
            mode="lines",
            name=f"is a person in the data? (ε = {epsilon:g})",
            customdata=[claims.percent(v, up=True) for v in post],
            hovertemplate="in the data: %{x:.1%} sure before → at most %{customdata} after<extra></extra>",
            line=dict(color=style.PRIVATE, width=3),
            fill="tonexty",
            fillcolor=style.rgba(style.PRIVATE, 0.15),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=prior,
            y=fact,
            mode="lines",
            name="a fact about someone known to be in it (2ε)",
            customdata=[claims.percent(v, up=True) for v in fact],
            hovertemplate="a fact: %{x:.1%} sure before → at most %{customdata} after<extra></extra>",
            line=dict(color=style.BOUND, width=2, dash="dash"),
        )
    )
    style.base_layout(
        fig,
        "Attacker's belief, before and after",  # short lines: fit a phone
        "belief before (prior probability)",
        "highest belief after (probability)",
    )
    fig.update_xaxes(range=[0, 1], tickformat=".0%")
    # no "0%" on the y axis: it met the x axis' "0%" at the corner (the origin is labelled once)
    fig.update_yaxes(range=[0, 1], tickformat=".0%", tickvals=[0.2, 0.4, 0.6, 0.8, 1.0])
    return fig
