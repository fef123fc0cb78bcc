"""The trade-off chart of promise and proof (:func:`tradeoff_chart`): on log–log ROC axes, the accountant's exact curve
(the promise: no attack above it), the last-iterate heuristic's curve, the corners an audit proves at 95% and the
Gaussian curve its μ rules out; :func:`point_tradeoff` draws it for one stored sweep point. The ε figures of the same
runs are :mod:`dpcore.figures.promise`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from .. import claims
from ..attacks import audit, fdp, gdp, last_iterate
from . import style
from .promise import _LEGEND_CHARS


def tradeoff_chart(
    accountant: Mapping[str, Sequence[float]] | None,
    *,
    heuristic: Mapping[str, Sequence[float]] | None = None,
    proved: Sequence[tuple[float, float]] = (),
    observed: Sequence[tuple[float, float]] = (),
    mu: float | None = None,
    proved_by: str = "the audit",
    mu_by: str = "the audit",
    title: str = "What the audit proves about the trade-off curve",
    height: int = 480,
) -> go.Figure:
    """ROC on log–log axes: the accountant's exact curve (the promise: no attack above it), the heuristic's, the
    audit's proved corners (FPR upper limit, TPR lower limit; joined to the observed rates they came from) and their
    upper hull (the true curve lies above it), and the Gaussian curve of the audit's μ."""
    floor = 1e-4
    grid = np.geomspace(floor, 1.0, 160)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=grid,
            y=grid,
            mode="lines",
            name="random guessing",
            meta="chance",
            line=dict(color=style.NEUTRAL, dash="dot"),
        )
    )
    if accountant:
        f, t = np.asarray(accountant["fpr"], float), np.asarray(accountant["tpr"], float)
        keep = f >= floor
        fig.add_trace(
            go.Scatter(
                x=f[keep],
                y=np.maximum(t[keep], floor),
                mode="lines",
                meta="promise",
                name=style.wrap("promise: the accountant's worst case (no attack above)", _LEGEND_CHARS),
                line=dict(color=style.BOUND, width=3),
            )
        )
    if heuristic:
        f, t = np.asarray(heuristic["fpr"], float), np.asarray(heuristic["tpr"], float)
        keep = f >= floor
        fig.add_trace(
            go.Scatter(
                x=f[keep],
                y=np.maximum(t[keep], floor),
                mode="lines",
                meta="heuristic",
                name=style.wrap("heuristic: the final model alone (linear loss)", _LEGEND_CHARS),
                line=dict(color=style.ACCENT, width=2, dash="dash"),
            )
        )
    if mu is not None and mu > 0:
        fig.add_trace(
            go.Scatter(
                x=grid,
                y=np.maximum(audit.gaussian_tradeoff(mu, grid), floor),
                mode="lines",
                meta="gaussian",
                name=style.wrap(
                    f"measurement: {mu_by} rule out every Gaussian curve below this one (μ ≥ {claims.down(mu)}, 95%)",
                    _LEGEND_CHARS,
                ),
                line=dict(color=style.PRIVATE, width=1.5, dash="dot"),
            )
        )
    if proved:
        hull = gdp.hull_tpr(proved, grid)
        fig.add_trace(
            go.Scatter(
                x=grid,
                y=np.maximum(hull, floor),
                mode="lines",
                meta="proved",
                name=style.wrap(f"measurement: proved by {proved_by}, 95% (the true curve lies above)", _LEGEND_CHARS),
                line=dict(color=style.PRIVATE, width=2.5),
            )
        )
        xs, ys = zip(*proved)
        fig.add_trace(
            go.Scatter(
                x=[max(x, floor) for x in xs],
                y=[max(y, floor) for y in ys],
                mode="markers",
                meta="corners",
                name="proved corners (upper limit on FPR, lower on TPR)",
                marker=dict(color=style.PRIVATE, size=9, symbol="square"),
                showlegend=False,
                hovertemplate="proved: TPR ≥ %{y:.3g} at FPR ≤ %{x:.3g}<extra></extra>",
            )
        )
        for (fx, fy), (px, py) in zip(observed, proved):
            fig.add_trace(
                go.Scatter(
                    x=[max(fx, floor), max(px, floor)],
                    y=[max(fy, floor), max(py, floor)],
                    mode="lines+markers",
                    line=dict(color=style.PRIVATE, width=1),
                    marker=dict(size=[6, 0], color=style.PRIVATE),
                    showlegend=False,
                    hoverinfo="skip",
                )
            )
    style.base_layout(fig, title, "", "", height=height)
    style.roc_axes(fig, floor)
    fig.update_layout(legend={**style.legend_below(font_size=10), "traceorder": "normal"})
    return fig


def point_tradeoff(point: Mapping[str, Any]) -> go.Figure | None:
    """The trade-off chart of one stored sweep point: its PLD curve, the heuristic at its (σ, q, T), the corner its
    split audit proves on ordinary records (95%) and the μ of its canaries' f-DP audit. None for a non-DP point."""
    if not point.get("tradeoff") or not point.get("noise_multiplier"):
        return None
    s, q, t = float(point["noise_multiplier"]), float(point["sample_rate"]), int(point["steps"])
    main = point.get("empirical_epsilon") or {}
    rec = main.get("records") or (main if not main.get("n_canaries") else None)
    proved, observed = [], []
    if rec and rec.get("tp") is not None:
        lo_hi = audit.clopper_pearson(rec["fp"], rec["nonmembers"], 0.05)[1]
        fnr_hi = audit.clopper_pearson(rec["members"] - rec["tp"], rec["members"], 0.05)[1]
        proved = [(float(lo_hi), float(1 - fnr_hi))]
        observed = [(rec["fp"] / rec["nonmembers"], rec["tp"] / rec["members"])]
    f = fdp.from_one_run(main) if main.get("n_canaries") else None
    return tradeoff_chart(
        point["tradeoff"],
        heuristic=last_iterate.heuristic_tradeoff(s, q, t),
        proved=proved,
        observed=observed,
        mu=f.mu if f is not None else None,
        proved_by="the records audit",
        mu_by="the canaries",
    )
