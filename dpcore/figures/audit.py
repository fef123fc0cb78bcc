"""The "Audit your model" page's charts: the ROC of the uploaded scores (ordinary records and canaries) on log–log
axes, TPR at 1% and 0.1% FPR marked, under the worst case the stated mechanism allows (when one is stated); and the
promise-and-proof charts of :mod:`dpcore.figures.promise` for the same result (:func:`promise_bounds`,
:func:`tradeoff`)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import claims
from ..attacks import fdp, gdp, last_iterate
from ..errors import sentence
from . import promise, proof, style


def roc_chart(result: dict, whose: str = "your scores") -> go.Figure:
    """``result``: :func:`dpcore.attacks.model_audit.audit_model`'s; ``whose``: "your scores", or "the example's
    scores" before anything was uploaded. Traces carry ``meta``: "ceiling", "chance",
    "attack:records", "attack:canaries"."""
    curves = [
        (name, result[key]) for name, key in (("records", "attack"), ("canaries", "canary_attack")) if result.get(key)
    ]
    n_neg = max([c.get("n_nonmembers") or 1 for _, c in curves] or [1])
    floor = 1.0 / (2 * n_neg)
    grid = np.geomspace(floor, 1, 200)
    fig = go.Figure()
    ceiling = result.get("ceiling")
    if ceiling:
        f, t = np.asarray(ceiling["fpr"], dtype=float), np.asarray(ceiling["tpr"], dtype=float)
        keep = f >= floor
        fig.add_trace(
            go.Scatter(
                x=f[keep],
                y=np.ones(int(keep.sum())),
                mode="lines",
                line=dict(width=0),
                showlegend=False,
                hoverinfo="skip",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=f[keep],
                y=np.maximum(t[keep], floor),
                mode="lines",
                meta="ceiling",
                **style.legend_group("promise"),
                fill="tonexty",
                fillcolor=style.rgba(style.BOUND, 0.08),
                line=dict(color=style.BOUND, width=3),
                name=f"worst case the claim allows (ε = {claims.up(result['claimed_epsilon'])}, "
                f"δ = {claims.delta(result['delta'])}):<br>no attack can go above this line",
                hovertemplate="FPR %{x:.2g}<br>worst-case TPR %{y:.3g}<extra>ceiling</extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=grid,
            y=grid,
            mode="lines",
            name="random guessing",
            meta="chance",
            **style.legend_group("reference"),
            line=dict(color=style.NEUTRAL, dash="dot", width=1),
        )
    )
    for i, (name, c) in enumerate(curves):
        fpr = np.maximum(np.asarray(c["roc"]["fpr"], dtype=float), floor)
        tpr = np.maximum(np.asarray(c["roc"]["tpr"], dtype=float), floor)
        fig.add_trace(
            go.Scatter(
                x=fpr,
                y=tpr,
                mode="lines",
                line_shape="hv",
                meta=f"attack:{name}",
                **style.legend_group("measured"),
                name=f"your scores, {name}: AUC {c['auc']:.2f}<br>TPR {c['tpr_at_1pct_fpr']:.1%} at 1% FPR, "
                f"{c['tpr_at_0.1pct_fpr']:.1%} at 0.1%",
                line=dict(color=style.SEQUENCE[i % len(style.SEQUENCE)], width=2.5),
                hovertemplate="FPR %{x:.2g}<br>TPR %{y:.3g}<extra></extra>",
            )
        )
    point = operating_point(result, floor)
    if point is not None:
        fig.add_trace(point)
    for x in (0.01, 0.001):
        if x >= floor:
            fig.add_vline(x=x, line_color=style.NEUTRAL, line_dash="dot", line_width=1)
    style.base_layout(fig, f"ROC of {whose} (log–log)", "", "", height=560)
    style.roc_axes(fig, floor)
    fig.update_layout(legend={**style.legend_below(font_size=10), "traceorder": "grouped"})
    return fig


def operating_point(result: dict, floor: float) -> go.Scatter | None:
    """The split audit's test as a point on the ROC: the (FPR, TPR) it reached on the audit half, with the
    one-sided confidence box its ε bound is computed from (FPR at most ``fpr_hi``, TPR at least 1 − ``fnr_hi``).
    The bound is read from this one test, not from the curve. Trace ``meta``: "operating point"."""
    a = result.get("split_audit")
    if not a or a.get("tpr") is None or a.get("fpr") is None:
        return None
    fpr, tpr = max(float(a["fpr"]), floor), max(float(a["tpr"]), floor)
    fpr_hi, tpr_lo = max(float(a["fpr_hi"]), fpr), max(1.0 - float(a["fnr_hi"]), floor)
    side = "low" if a.get("direction") == "lower" else "high"
    return go.Scatter(
        x=[fpr],
        y=[tpr],
        mode="markers",
        meta="operating point",
        **style.legend_group("measured"),
        marker=dict(symbol="diamond", size=13, color=style.ACCENT, line=dict(color="white", width=1.5)),
        error_x=dict(type="data", symmetric=False, array=[fpr_hi - fpr], arrayminus=[0], color=style.ACCENT),
        error_y=dict(type="data", symmetric=False, array=[0], arrayminus=[tpr - min(tpr_lo, tpr)], color=style.ACCENT),
        name=f"the test behind the split audit's ε ≥ {claims.down(a['lower_bound'])}<br>"
        f"(audit half; bars: its {float(a['confidence']):.0%} bounds)",
        hovertemplate=(
            f"flags {side} scores: TPR {float(a['tpr']):.3g} of {a['members']:,} members, FPR {float(a['fpr']):.3g} of "
            f"{a['nonmembers']:,} non-members<br>bounded at TPR ≥ {1.0 - float(a['fnr_hi']):.3g}, FPR ≤ "
            f"{float(a['fpr_hi']):.3g}<extra>operating point</extra>"
        ),
    )


def promise_bounds(result: dict) -> tuple[promise.Bound, ...]:
    """The audit's figures for :func:`dpcore.figures.promise.run_chart`: the stated claim (the promise), the
    last-iterate heuristic for a stated DP-SGD run, and each audit's own 95% lower bound (measurements)."""
    out = []
    mech = result.get("mechanism") or {}
    if result.get("claimed_epsilon") is not None:
        out.append(promise.Bound("the stated claim", "promise", float(result["claimed_epsilon"])))
    if mech.get("kind") == "dpsgd" and result["delta"] > 0:
        out.append(
            promise.heuristic_bound(mech["noise_multiplier"], mech["sample_rate"], mech["steps"], result["delta"])
        )
    conf = float(result["confidence"])
    if result.get("split_audit"):
        out.append(
            promise.Bound("split audit (records)", "measurement", result["split_audit"]["lower_bound"], confidence=conf)
        )
    if result.get("gdp"):
        g = gdp.GdpAudit.from_dict(result["gdp"])
        out.append(
            promise.Bound(
                "Gaussian-DP audit (records)",
                "measurement",
                g.epsilon,
                confidence=conf,
                detail=f"μ ≥ {claims.down(g.mu)}; {len(g.points)} tests on the audit half",
            )
        )
    if result.get("one_run"):
        out.append(
            promise.Bound("one-run audit (canaries)", "measurement", result["one_run"]["lower_bound"], confidence=conf)
        )
    if result.get("one_run_fdp"):
        f = fdp.FdpAudit.from_dict(result["one_run_fdp"])
        if f.epsilon_gaussian is not None:
            out.append(
                promise.Bound(
                    "f-DP one-run audit (Gaussian curve)",
                    "measurement",
                    f.epsilon_gaussian,
                    confidence=conf,
                    detail=f"μ ≥ {claims.down(f.mu)}: a lower bound on ε if the curve is Gaussian-shaped",
                )
            )
    return tuple(out)


def tradeoff(result: dict, whose: str = "your scores") -> go.Figure:
    """The trade-off chart of an audit (``whose``: as in :func:`roc_chart`): the stated claim's exact worst case, the heuristic for a stated DP-SGD run,
    the curve the Gaussian-DP audit of the records proves, and the Gaussian curve the canaries' f-DP audit rules out
    below."""
    mech = result.get("mechanism") or {}
    heur = None
    if mech.get("kind") == "dpsgd":
        heur = last_iterate.heuristic_tradeoff(mech["noise_multiplier"], mech["sample_rate"], mech["steps"])
    proved, observed = [], []
    if result.get("gdp"):
        g = gdp.GdpAudit.from_dict(result["gdp"])
        proved = [(p.fpr_hi, p.tpr_lo) for p in g.points]
        observed = [(p.fpr, p.tpr) for p in g.points]
    mu = fdp.FdpAudit.from_dict(result["one_run_fdp"]).mu if result.get("one_run_fdp") else None
    return proof.tradeoff_chart(
        result.get("ceiling"),
        heuristic=heur,
        proved=proved,
        observed=observed,
        mu=mu,
        proved_by="the records' Gaussian-DP audit",
        mu_by="the canaries",
        title=f"{sentence(whose)} as a trade-off curve",
    )
