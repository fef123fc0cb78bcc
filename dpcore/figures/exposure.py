"""Who is most exposed: the non-private baseline's most exposed records followed across ε, and digit images of the
records themselves. Built from :mod:`dpcore.sweep.exposure`; records are private rows shown to their owner."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import style

NO_DP = "no DP"


def exposure_chart(paths: list[dict], epsilons: list[float]) -> go.Figure:
    """Each of the baseline's most exposed records (one line each): the false-positive rate at which the attack
    flags it, at each ε and without DP (rightmost). Lower = more exposed, so the axis runs from 1 at the bottom to the
    rarest false alarm at the top: a line that falls as ε falls is a record DP protects."""
    grid = sorted({float(e) for e in epsilons})
    slots: dict[float | None, int] = {e: i for i, e in enumerate(grid)}
    slots[None] = len(grid)
    floor = 1e-3
    fig = go.Figure()
    for i, p in enumerate(paths):
        pts = [s for s in p["points"] if s["epsilon"] in slots]
        fig.add_trace(
            go.Scatter(
                x=[slots[s["epsilon"]] for s in pts],
                y=[max(s["fpr"], floor) for s in pts],
                mode="lines+markers",
                name=f"row {p['index']}",
                line=dict(color=style.SEQUENCE[i % len(style.SEQUENCE)], width=2),
                customdata=[
                    [s["proved_epsilon"], "no DP" if s["epsilon"] is None else f"ε = {s['epsilon']:g}"] for s in pts
                ],
                hovertemplate=f"row {p['index']}, %{{customdata[1]}}<br>flagged at FPR %{{y:.3g}}<br>"
                "proved ε ≥ %{customdata[0]}<extra></extra>",
            )
        )
    style.base_layout(
        fig,
        "The most exposed records without DP, model by model",
        "privacy budget ε of the model (no DP on the right)",
        "FPR needed to flag the record (log; higher = more exposed)",
        height=430,
    )
    fig.update_xaxes(
        tickmode="array",
        tickvals=list(range(len(grid) + 1)),
        ticktext=[f"{e:g}" for e in grid] + [NO_DP],
        range=[-0.3, len(grid) + 0.3],
    )
    # reversed log axis: FPR 1 at the bottom, the rarest false alarm at the top
    fig.update_yaxes(
        type="log",
        range=[0.05, np.log10(floor) - 0.1],
        tickvals=[floor, 0.01, 0.1, 1],
        ticktext=["≤ 0.1%", "1%", "10%", "100%"],
    )
    fig.update_layout(legend=style.legend_below(font_size=10))
    return fig


def image_chart(records: list[dict]) -> go.Figure:
    """Digit images of records (``record["pixels"]``, ``record["shape"]``) side by side, titled by row and label."""
    recs = [r for r in records if (r.get("record") or {}).get("pixels")]
    n = max(len(recs), 1)
    fig = make_subplots(
        rows=1,
        cols=n,
        horizontal_spacing=0.02,
        subplot_titles=[f"row {r['index']}<br>label {r['record']['label']}" for r in recs] or [""],
    )
    for i, r in enumerate(recs):
        h, w = r["record"]["shape"]
        img = np.asarray(r["record"]["pixels"], float).reshape(h, w)
        fig.add_trace(go.Heatmap(z=img[::-1], colorscale="Greys", showscale=False, hoverinfo="skip"), row=1, col=i + 1)
    fig.update_xaxes(visible=False)
    for i in range(n):
        fig.update_yaxes(visible=False, scaleanchor=f"x{i + 1 if i else ''}", row=1, col=i + 1)
    fig.update_annotations(font_size=10)
    fig.update_layout(height=170, margin=dict(l=0, r=0, t=40, b=0))
    return fig
