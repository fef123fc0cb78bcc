"""Figures for the re-identification page: class sizes, uniqueness as QIs are added, linkage funnel,
generalisation before/after, and the DP attack success curve (simulation)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .. import claims, textsafe
from ..noise.interpret import guess_ceiling
from . import style


def class_size_chart(report, *, max_size: int = 50, label=str) -> go.Figure:
    """Share of records by the size of their equivalence class (sizes above max_size pooled). ``label`` names
    the quasi-identifiers (the synthetic data's ``zip_code`` as "zip code"; an upload's names as they are)."""
    t = report.class_size_table()
    small = t[t["class_size"] <= max_size]
    big = t[t["class_size"] > max_size]
    x = small["class_size"].astype(str).tolist()
    y = (small["share_of_records"] * 100).tolist()
    if len(big):
        x.append(f">{max_size}")
        y.append(float(big["share_of_records"].sum() * 100))
    colours = [style.NON_PRIVATE if v == "1" else style.ACCENT for v in x]
    fig = go.Figure(
        go.Bar(
            x=x,
            y=y,
            marker_color=colours,
            name="records",
            hovertemplate="class size %{x}: %{y:.1f}% of records<extra></extra>",
        )
    )
    style.base_layout(
        fig,
        f"Equivalence-class sizes on {' + '.join(textsafe.plotly(label(q)) for q in report.qis)} (size 1 = unique)",
        "equivalence-class size (records sharing the same quasi-identifiers)",
        "share of records (%)",
    )
    fig.update_xaxes(type="category")
    return fig


def incremental_chart(steps: pd.DataFrame, *, label=str) -> go.Figure:
    """Unique share and average prosecutor risk as quasi-identifiers are added one by one.

    The names may come from an upload (any length, no spaces): each tick shows a few wrapped lines of it at
    its position and the hover the whole name, so a long name never runs into the next or off a phone."""
    labels = [("+ " if i else "") + textsafe.plotly(label(a)) for i, a in enumerate(steps["added"])]
    pos = list(range(len(labels)))
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=pos,
            y=steps["unique_fraction"] * 100,
            name="unique records (%)",
            customdata=labels,
            marker_color=style.NON_PRIVATE,
            hovertemplate="%{customdata}: %{y:.1f}% unique<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=pos,
            y=steps["prosecutor_risk_avg"] * 100,
            mode="lines+markers",
            customdata=labels,
            name="average re-identification risk (%)",
            line=dict(color=style.ACCENT, width=3),
            hovertemplate="%{customdata}: average risk %{y:.1f}%<extra></extra>",
        )
    )
    style.base_layout(
        fig,
        "How unique are people as quasi-identifiers are added",
        "quasi-identifiers known to the attacker (added left to right)",
        "share of records (%)",
    )
    fig.update_xaxes(
        tickvals=pos, ticktext=[style.tick_label(t, style.TICK_CHARS) for t in labels], range=[-0.5, len(labels) - 0.5]
    )
    fig.update_yaxes(range=[0, 105])
    return fig


def linkage_chart(result, title: str = "Linkage with the public register") -> go.Figure:
    """Funnel: register entries -> match exactly one record -> right person -> rare disease disclosed."""
    stages = [
        "register entries",
        "…who are patients (truth)",
        "match exactly one record",
        "…and it is the right person",
        "…with the rare disease",
    ]
    values = [result.register_size, result.in_release, result.matched_one, result.right_person, result.rare_disclosed]
    colours = [style.NEUTRAL, style.NEUTRAL, style.ACCENT, style.NON_PRIVATE, style.NON_PRIVATE]
    fig = go.Figure(
        go.Bar(
            y=stages,
            x=values,
            orientation="h",
            marker_color=colours,
            text=values,
            textposition="auto",
            hovertemplate="%{y}: %{x:,}<extra></extra>",
        )
    )
    style.base_layout(fig, title, "people (register entries)", "")
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(margin=dict(l=200, r=20, b=55), showlegend=False)
    return fig


def generalisation_chart(before: dict, after: dict) -> go.Figure:
    """Side-by-side bars (%) of the risk measures before and after generalisation — horizontal, so the
    measures' names read across a phone instead of tilting into the legend."""
    keys = list(before)
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            y=keys,
            x=[before[k] * 100 for k in keys],
            name="exact values (as released)",
            orientation="h",
            marker_color=style.NON_PRIVATE,
            hovertemplate="%{y}: %{x:.2f}%<extra></extra>",
        )
    )
    fig.add_trace(
        go.Bar(
            y=keys,
            x=[after[k] * 100 for k in keys],
            name="generalised",
            orientation="h",
            marker_color=style.ACCENT,
            hovertemplate="%{y}: %{x:.2f}%<extra></extra>",
        )
    )
    style.base_layout(fig, "Defence by generalisation: before and after", "share (%)", "", height=420)
    fig.update_layout(barmode="group")
    fig.update_yaxes(autorange="reversed")  # in the order the measures are listed
    fig.update_xaxes(range=[0, 105])
    return fig


def dp_success_chart(sim: dict, epsilon: float | None = None, *, label=str) -> go.Figure:
    """Attacker's success rate against ε (log axis), with the no-noise attack and a blind guess."""
    c = sim["curve"]
    x = c["epsilon"].to_numpy()
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=np.r_[x, x[::-1]],
            y=np.r_[c["ci_high"], c["ci_low"][::-1]] * 100,
            fill="toself",
            fillcolor=style.rgba(style.PRIVATE, 0.2),
            line=dict(width=0),
            hoverinfo="skip",
            name="95% interval (simulation)",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=c["success_rate"] * 100,
            mode="lines+markers",
            name="attacker with noisy counts",
            line=dict(color=style.PRIVATE, width=3),
            hovertemplate="ε = %{x:g}: %{y:.1f}% correct<extra></extra>",
        )
    )
    xs = np.geomspace(x.min(), x.max(), 60)  # the replace-one guarantee: at most e^(2ε) × the blind guess
    ceiling = [float(guess_ceiling(2 * e, sim["prior_guess"])) for e in xs]
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=[c * 100 for c in ceiling],
            mode="lines",
            customdata=[claims.percent(c, 0, up=True) for c in ceiling],
            name="DP ceiling for a known patient (e<sup>2ε</sup> × blind guess)",
            line=dict(color=style.BOUND, dash="dot", width=2),
            hovertemplate="ε = %{x:.3g}: at most %{customdata}<extra></extra>",
        )
    )
    # the two reference levels are named in the legend: written on the plot, the curve and the ceiling ran
    # through their words at one end or the other
    ends = [float(x.min()), float(x.max())]
    fig.add_trace(
        go.Scatter(
            x=ends,
            y=[sim["no_noise"] * 100] * 2,
            mode="lines",
            hoverinfo="skip",
            name=f"exact counts (no DP): {sim['no_noise']:.0%}",
            line=dict(color=style.NON_PRIVATE, dash="dash", width=2),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=ends,
            y=[sim["prior_guess"] * 100] * 2,
            mode="lines",
            hoverinfo="skip",
            name=f"guessing the most common value: {sim['prior_guess']:.0%}",
            line=dict(color=style.NEUTRAL, dash="dot", width=2),
        )
    )
    lo, hi = float(x.min()), float(x.max())
    key = style.add_epsilon_zones(fig, lo, hi)
    note = style.subtitle(f"simulation: {sim['n_releases']} releases × {sim['n_targets']} targets")
    style.base_layout(
        fig,
        f"Attacker learning {textsafe.plotly(label(sim['sensitive']))}<br>from noisy counts<br>{note}<br>{key}",
        "privacy budget ε (log scale)",
        "attacker guesses correctly (%)",
        height=460,
    )
    style.epsilon_axis(fig, range=[np.log10(lo), np.log10(hi)], tickvals=list(x), ticktext=[f"{v:g}" for v in x])
    fig.update_yaxes(range=[0, 105], tickvals=[20, 40, 60, 80, 100])  # a "0" met the first ε label at the corner
    if epsilon is not None:
        style.mark_epsilon(
            fig, epsilon, f" your ε = {epsilon:g}", style.ACCENT, at="top"
        )  # off the zones: legible in dark
    return fig


def narrowing_chart(narrowing: pd.DataFrame, n: int) -> go.Figure:
    """Patients still matching as the attacker adds each known fact (log axis: 1,000 to 1 on one chart)."""
    labels = ["everyone in the release"] + ["+ " + textsafe.plotly(f) for f in narrowing["fact known"]]
    values = [int(n)] + [int(v) for v in narrowing["matching patients"]]
    colours = [style.NEUTRAL] + [style.NON_PRIVATE if v == 1 else style.ACCENT for v in values[1:]]
    shown = [max(v, 0.8) for v in values]  # a zero is drawn as a stub at the axis, labelled 0
    fig = go.Figure(
        go.Bar(
            y=labels,
            x=shown,
            orientation="h",
            marker_color=colours,
            text=[f"{v:,} patient{'' if v == 1 else 's'}" for v in values],
            textposition="auto",
            hovertemplate="%{y}: %{text}<extra></extra>",
        )
    )
    style.base_layout(
        fig, "Each fact rules patients out", "patients still matching (log scale)", "", height=120 + 45 * len(labels)
    )
    top = max(values) * 8
    fig.update_xaxes(
        type="log",
        range=[np.log10(0.8), np.log10(top)],
        tickvals=[1, 10, 100, 1_000, 10_000, 100_000, 1_000_000],
        ticktext=["1", "10", "100", "1k", "10k", "100k", "1M"],
    )
    fig.update_yaxes(autorange="reversed", automargin=True)
    fig.update_layout(showlegend=False, margin=dict(l=10, r=20, b=55))
    return fig
