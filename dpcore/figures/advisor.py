"""Charts of the ε advisor and of worst-case trade-off curves (the noise page, training runs and statements
call these). Plotly only; no Streamlit."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from .. import claims, textsafe
from ..advisor import links
from ..attacks import audit
from ..noise import discrete, mechanisms, release
from ..training import accounting
from .style import BOUND, NEUTRAL, NON_PRIVATE, PRIVATE, SEQUENCE, base_layout, epsilon_axis, roc_axes, subtitle

FPR_MIN = 1e-5


def feasible_band_chart(result: dict, *, height: int = 260) -> go.Figure:
    """The ε axis (log) with the risk limit's ceiling, the utility target's floor, and the band between them
    (green when it exists, red over the gap when the two conflict)."""
    lo, hi = result["epsilon_range"]
    eps = result["epsilon"]
    pts = [v for v in (lo, hi, eps) if v]
    x0, x1 = min(pts) / 4, max(pts) * 4
    fig = go.Figure()
    if result["feasible"]:
        fig.add_vrect(x0=lo or x0, x1=hi, fillcolor="rgba(42,157,143,0.25)", line_width=0, layer="below")
        band = f"feasible: ε {'≥ ' + claims.up(lo) + ' and ' if lo else ''}≤ {claims.down(hi)}"
    else:
        fig.add_vrect(x0=hi, x1=lo, fillcolor="rgba(231,111,81,0.25)", line_width=0, layer="below")
        band = f"conflict: utility needs ε ≥ {claims.up(lo)}, risk allows ε ≤ {claims.down(hi)}"
    fig.add_trace(
        go.Scatter(
            x=[hi, hi],
            y=[0, 1],
            mode="lines",
            line=dict(color=BOUND, width=3),
            name=textsafe.plotly(f"risk limit: ε ≤ {claims.down(hi)}"),
        )
    )
    if lo:
        fig.add_trace(
            go.Scatter(
                x=[lo, lo],
                y=[0, 1],
                mode="lines",
                line=dict(color=NON_PRIVATE, width=3, dash="dash"),
                name=textsafe.plotly(f"utility target: ε ≥ {claims.up(lo)}"),
            )
        )
    fig.add_trace(
        go.Scatter(
            x=[eps],
            y=[0.5],
            mode="markers",
            marker=dict(size=14, color=PRIVATE, symbol="diamond"),
            name=f"recommended ε = {links.recommended_text(result)}",
        )
    )
    base_layout(fig, textsafe.plotly(band), "", "", height=height)
    epsilon_axis(fig, f"ε at δ = {claims.delta(result['delta'])} (log scale)", range=[math.log10(x0), math.log10(x1)])
    fig.update_yaxes(visible=False, range=[0, 1])
    return fig


def tradeoff_chart(
    curves: list[dict],
    title: str = "Worst-case membership attack (ROC ceiling)",
    *,
    height: int = 380,
    mark: tuple | None = None,
    note: str = "",
) -> go.Figure:
    """TPR against FPR on log–log axes. ``curves``: [{name, fpr, tpr, dash?}]; the diagonal is a coin flip.
    ``mark``: (fpr, tpr, label) of a risk limit to draw as a point; ``note``: plain text in small lines under
    the title (a line under the plot ran into the axis title and off a phone)."""
    fig = go.Figure()
    grid = np.geomspace(FPR_MIN, 1, 50)
    fig.add_trace(
        go.Scatter(
            x=grid, y=grid, mode="lines", line=dict(color=NEUTRAL, dash="dot", width=1), name="random guess (TPR = FPR)"
        )
    )
    for i, c in enumerate(curves):
        f = np.asarray(c["fpr"], float)
        t = np.asarray(c["tpr"], float)
        keep = f >= FPR_MIN
        fig.add_trace(
            go.Scatter(
                x=f[keep],
                y=np.maximum(t[keep], FPR_MIN),
                mode="lines",
                line=dict(color=c.get("colour") or SEQUENCE[i % len(SEQUENCE)], width=3, dash=c.get("dash", "solid")),
                name=textsafe.plotly(c["name"]),
            )
        )
    if mark is not None:
        fig.add_trace(
            go.Scatter(
                x=[mark[0]],
                y=[mark[1]],
                mode="markers",
                name=textsafe.plotly(mark[2]),
                marker=dict(size=12, color=NON_PRIVATE, symbol="x"),
            )
        )
    title = textsafe.plotly(title) + (f"<br>{subtitle(textsafe.plotly(note))}" if note else "")
    base_layout(fig, title, "false-positive rate (log scale)", "true-positive rate (log scale)", height=height)
    roc_axes(fig, FPR_MIN, x_title="false-positive rate (log scale)", y_title="true-positive rate (log scale)")
    return fig


def mechanism_curve(
    mechanism: str, epsilon: float, delta: float | None, sensitivity: float, scale: float, *, count: bool = False
) -> dict:
    """The exact worst-case ROC of one release of the noise page's mechanism (Laplace: ε; Gaussian: μ = Δ/σ).

    ``count``: the page releases the count itself, with whole-number noise (:func:`dpcore.noise.release.noise_for`),
    whose curve is not the continuous one's: the discrete Laplace of a count reaches the whole ε-DP ceiling
    min(e^ε·α, 1 − e^−ε·(1 − α)) (at ε = 1, TPR 0.731 at FPR 0.269, where the Laplace curve reads 0.658), and the
    discrete Gaussian rises above Φ(Φ⁻¹(α) + μ). Those curves are drawn then."""
    fpr = np.geomspace(FPR_MIN, 1, 121)
    if count:
        noise = release.noise_for(
            mechanism, epsilon=epsilon, delta=delta or 0.0, sensitivity=max(1, math.ceil(sensitivity))
        )
        if isinstance(noise, mechanisms.Geometric):
            return {
                "name": f"discrete Laplace of the count, ε = {epsilon:g}: the whole ε-DP ceiling",
                "fpr": fpr,
                "tpr": audit.dp_roc_ceiling(epsilon, 0.0, fpr),
            }
        tpr = discrete.tradeoff(noise.scale, int(noise.sensitivity), fpr)
        if tpr is not None:
            return {
                "name": f"discrete Gaussian of the count, σ = {noise.scale:.3g} (ε = {epsilon:g}, δ = "
                f"{claims.delta(delta)})",
                "fpr": fpr,
                "tpr": tpr,
            }
    if mechanism == "laplace":
        return {"name": f"Laplace, ε = {epsilon:g}", "fpr": fpr, "tpr": audit.laplace_tradeoff(epsilon, fpr)}
    mu = sensitivity / scale if scale > 0 else math.inf
    return {
        "name": f"Gaussian, μ = Δ/σ = {mu:.3g} (ε = {epsilon:g}, δ = {claims.delta(delta)})",
        "fpr": fpr,
        "tpr": audit.gaussian_tradeoff(mu, fpr),
    }


def noise_tradeoff_chart(
    mechanism: str, epsilon: float, delta: float | None, sensitivity: float, scale: float, *, count: bool = False
) -> go.Figure:
    """One chart call for the noise page: the worst-case ROC of what the page releases (``count``: the count with
    whole-number noise, :func:`mechanism_curve`)."""
    c = mechanism_curve(mechanism, epsilon, delta, sensitivity, scale, count=count)
    return tradeoff_chart([c], "Best possible attack on one release")


def _eps_text(rows, *, accountant: dict | None = None) -> str:
    """ε at each δ of a statement, each named by where it comes from: a training run's own accountant first (the
    number its page headlines), then the exact PLD's, which is tighter ("ε = 0.985" beside a headline of 0.995
    read as a contradiction)."""
    parts = []
    if accountant and accountant.get("epsilon") is not None and accountant.get("name"):
        parts.append(
            f"{str(accountant['name']).upper()} (the run's accountant): ε ≤ {claims.up(accountant['epsilon'])} "
            f"at δ = {claims.delta(accountant['delta'])}"
        )
    pld = [r for r in rows if r.get("epsilon_pld") is not None]
    if pld:
        parts.append(
            ("exact PLD: " if parts else "ε ")
            + ", ".join(f"≤ {claims.up(r['epsilon_pld'])} at δ = {claims.delta(r['delta'])}" for r in pld)
        )
    parts += [
        f"ε ≤ {claims.up(r['epsilon'])} at δ = {claims.delta(r['delta'])}"
        for r in rows
        if r.get("epsilon_pld") is None and r.get("epsilon") is not None and not parts
    ]
    return "; ".join(parts)


_STATEMENT_TITLE = {"training_run": "this run", "sweep": "each sweep point", "ledger": "this query history"}


def statement_tradeoff_chart(st: dict) -> go.Figure:
    """The trade-off curve of a privacy statement (training run, sweep or ledger), with ε at its δ beside it.
    A sweep draws one curve per distinct DP point (points that differ only by seed share a curve)."""
    title = f"Best possible attack on {_STATEMENT_TITLE.get(str(st.get('kind')), 'this release')}"
    if st.get("kind") == "sweep":
        curves, seen = [], set()
        for p in st.get("points") or []:
            m = p.get("mechanism") or {}
            key = (m.get("noise_multiplier"), m.get("sample_rate"), m.get("steps"))
            if key in seen or not (p.get("tradeoff") or {}).get("fpr"):
                continue
            seen.add(key)
            first = next((r for r in p.get("epsilon_at_delta") or [] if r.get("epsilon_pld") is not None), None)
            at = f": ε = {claims.up(first['epsilon_pld'])} at δ = {claims.delta(first['delta'])}" if first else ""
            curves.append({"name": f"target ε = {p.get('target_epsilon', 0):g}{at}", **p["tradeoff"]})
        note = st.get("neighbour_relation", "")
    else:
        mu = st.get("mu") or {}
        src = "the PLD" if st.get("kind") != "ledger" else "the (ε, δ) guarantees"
        name = f"worst case from {src}" + (f" (μ ≈ {mu['value']:.3g})" if mu.get("value") is not None else "")
        curves = [{"name": name, **st["tradeoff"]}]
        eps = _eps_text(
            st.get("epsilon_at_delta") or [],
            accountant=st.get("accountant") if st.get("kind") == "training_run" else None,
        )
        note = (eps + "; " if eps else "") + st.get("neighbour_relation", "")
    return tradeoff_chart(curves, title, note=note)


def advice_tradeoff_chart(result: dict) -> go.Figure:
    """The recommended setting's worst-case ROC with the risk limit's point (TPR limit at its FPR)."""
    fpr = np.geomspace(FPR_MIN, 1, 121)
    mech = result["mechanism"]
    if mech == "gaussian":
        c = {
            "name": f"Gaussian σ = {result['sigma']:.3g} (μ = {result['mu']:.3g})",
            "fpr": fpr,
            "tpr": audit.gaussian_tradeoff(result["mu"], fpr),
        }
    elif mech == "laplace":
        c = {
            "name": f"any ε-DP mechanism, ε = {result['epsilon']:.3g}",
            "fpr": fpr,
            "tpr": audit.dp_roc_ceiling(result["epsilon"], 0.0, fpr),
        }
    else:
        curve = accounting.dpsgd_tradeoff(result["noise_multiplier"], result["sample_rate"], result["steps"])
        c = {"name": f"DP-SGD noise multiplier {result['noise_multiplier']:.3g} (PLD)", **curve}
    r = result["risk"]
    mark = (r["at"], r["limit"], f"limit: TPR ≤ {r['limit']:g} at FPR {r['at']:g}") if r["kind"] == "tpr" else None
    return tradeoff_chart([c], "Best possible attack at this setting", mark=mark)
