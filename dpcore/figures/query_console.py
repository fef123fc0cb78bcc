"""Query console figures: the remaining-budget gauge, a noisy histogram with its intervals, composition vs k."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import claims, textsafe
from . import style


def budget_gauge(remaining: float | None, total: float | None, *, opens: bool = False, height: int = 260) -> go.Figure:
    """Remaining ε of the total as a gauge (red zone under 10% left). ``opens``: no budget exists yet and
    ``total`` is the one the first question will open: the gauge is full, and says so (an empty grey gauge
    read as a budget already spent)."""
    total = float(total or 0.0)
    remaining = float(remaining if remaining is not None else total)
    spent = f" ({total - remaining:.4g} spent)" if total else ""
    if opens:  # nothing can be spent before the budget exists
        remaining, spent = total, "<br>" + style.subtitle("opens with the first question")
    fig = go.Figure(
        go.Indicator(
            # what was spent is in the title: Plotly's delta line under the number touched it
            mode="gauge+number",
            value=remaining,
            number=dict(valueformat=".4~g", suffix=" ε"),  # "~": "0.4 ε" as the metrics say, not "0.4000 ε"
            title=dict(text=f"ε remaining of {total:g}{spent}" if total else "ε remaining (no budget set yet)"),
            gauge=dict(
                axis=dict(range=[0, total if total > 0 else 1], ticksuffix=" ε"),
                bar=dict(color=style.PRIVATE),
                steps=[dict(range=[0, 0.1 * total], color=style.rgba(style.NON_PRIVATE, 0.4))] if total else [],
                threshold=dict(line=dict(color=style.NON_PRIVATE, width=3), value=remaining) if total else None,
            ),
        )
    )
    fig.update_layout(height=height, margin=dict(l=30, r=30, t=60, b=10), paper_bgcolor=style.TRANSPARENT)
    return fig


def histogram_answer(answer: dict, column: str = "") -> go.Figure:
    """Noisy counts per bin with their 95% noise intervals. Category labels and the column name are untrusted
    (an upload chose them): escaped, so Plotly shows them as text, never as links or markup."""
    counts = np.asarray(answer["answer"], dtype=float)
    lows, highs = (np.asarray(v, dtype=float) for v in answer["interval"])
    labels = [textsafe.plotly(v) for v in answer["labels"]]  # category labels are user data
    pos = list(range(len(labels)))  # positions, not labels, as categories: two long labels may shorten alike
    fig = go.Figure(
        go.Bar(
            x=pos,
            y=counts,
            customdata=labels,
            marker_color=style.PRIVATE,
            name="noisy count (DP)",
            error_y=dict(
                type="data",
                symmetric=False,
                array=highs - counts,
                arrayminus=counts - lows,
                color=style.ACCENT,
                thickness=1.2,
            ),
            hovertemplate="%{customdata}: %{y:,.0f} rows (95% noise interval shown)<extra></extra>",
        )
    )
    col = textsafe.plotly(column)
    style.base_layout(
        fig,
        f"Noisy histogram of {col or 'the column'} (ε = {answer['epsilon']:g})",
        f"{col} (category or bin)",
        "noisy count (rows)",
        height=360,
    )
    fig.update_xaxes(
        tickvals=pos, ticktext=[style.tick_label(t, style.TICK_CHARS) for t in labels], range=[-0.5, len(labels) - 0.5]
    )
    fig.update_layout(showlegend=False)
    return fig


def composition_chart(
    curves: dict,
    *,
    epsilon: float,
    delta_prime: float,
    mechanism: str = "laplace",
    budget: float | None = None,
    budget_label: str = "your quota",
) -> go.Figure:
    """Total ε after k identical queries under basic, advanced and zCDP/RDP composition (log ε axis), with the
    ``budget`` they spend from marked (``budget_label``: "your quota", "the visitors' quota", "the dataset's cap")."""
    k = np.asarray(curves["k"])
    fig = go.Figure()
    per = "Gaussian" if mechanism == "gaussian" else "ε-DP"
    lines = [
        ("basic", "basic: k·ε (δ = k·δ)", style.NON_PRIVATE, "solid"),
        ("advanced", f"advanced (DRV, δ′ = {claims.delta(delta_prime)})", style.SEQUENCE[2], "dash"),
        ("zcdp", f"zCDP (δ = {claims.delta(delta_prime)})", style.PRIVATE, "solid"),
        ("rdp", f"RDP, improved conversion (δ = {claims.delta(delta_prime)})", style.SEQUENCE[1], "dot"),
    ]
    for name, label, colour, dash in lines:
        fig.add_trace(
            go.Scatter(
                x=k,
                y=curves[name],
                mode="lines",
                name=label,
                line=dict(color=colour, dash=dash, width=2.5),
                hovertemplate=f"{name}: k = %{{x}}, total ε = %{{y:.4g}}<extra></extra>",
            )
        )
    if budget:
        style.mark_level(fig, budget, f"{budget_label} ε = {budget:g}", style.BOUND, log_y=True, right=True)
    style.base_layout(
        fig, f"Total ε of k {per} queries at ε = {epsilon:g}", "number of queries k", "total ε (log scale)", height=400
    )
    # ticks from the range drawn: 1-2-5 over a few decades, decades only beyond (fixed 1-2-5 ticks over the
    # thousands that advanced composition reaches at a large ε sat on each other on a phone)
    ys = np.concatenate([np.asarray(curves[name], dtype=float) for name, *_ in lines] + [np.asarray([budget or 0.0])])
    ys = ys[np.isfinite(ys) & (ys > 0)]
    lo, hi = float(ys.min()) / 1.3, float(ys.max()) * 1.3
    style.log_axis(fig, "y", lo=lo, hi=hi)
    return fig
