"""Charts for a training run: held-out accuracy, training loss and ε spent per epoch; the real
accountants' ε next to the seed notebook's shortcut."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import plotly.graph_objects as go

from .. import claims
from ..training.results import TrainMetrics
from .style import ACCENT, BOUND, NEUTRAL, NON_PRIVATE, PRIVATE, base_layout, log_axis, mark_level

if TYPE_CHECKING:
    from ..training.results import TrainMetrics


def epoch_rows(history) -> list[dict]:
    """The per-epoch entries of a run's history (those with loss and accuracy), in epoch order."""
    rows = [
        h
        for h in (history or [])
        if isinstance(h, dict)
        and h.get("accuracy") is not None
        and h.get("loss") is not None
        and isinstance(h.get("epoch"), (int, float))
    ]
    return sorted(rows, key=lambda h: h["epoch"])


def _line(fig, rows, key, name, colour, dash="solid"):
    if rows:
        fig.add_trace(
            go.Scatter(
                x=[r["epoch"] for r in rows],
                y=[r[key] for r in rows],
                name=name,
                mode="lines+markers",
                line=dict(color=colour, dash=dash),
            )
        )


def accuracy_chart(history, baseline_history=None, *, height: int = 320) -> go.Figure:
    """Test (held-out) accuracy per epoch: the DP run and, if given, the non-private baseline. Computed on private
    test rows: a diagnostic, not covered by ε."""
    fig = go.Figure()
    _line(fig, epoch_rows(history), "accuracy", "this run", PRIVATE)
    _line(fig, epoch_rows(baseline_history), "accuracy", "non-private baseline", NON_PRIVATE, "dash")
    base_layout(fig, "Test accuracy (not covered by ε)", "epoch", "held-out test accuracy (fraction)", height=height)
    fig.update_yaxes(rangemode="tozero", range=[0, 1.02])
    return fig


def loss_chart(history, baseline_history=None, *, height: int = 320) -> go.Figure:
    """Mean training loss per epoch (computed on the private training rows: not DP)."""
    fig = go.Figure()
    _line(fig, epoch_rows(history), "loss", "this run", PRIVATE)
    _line(fig, epoch_rows(baseline_history), "loss", "non-private baseline", NON_PRIVATE, "dash")
    base_layout(fig, "Training loss (not covered by ε)", "epoch", "cross-entropy loss (nats)", height=height)
    return fig


def epsilon_chart(
    history,
    target_epsilon: float | None = None,
    final_epsilon: float | None = None,
    *,
    accountant: str | None = None,
    height: int = 320,
) -> go.Figure:
    """ε spent so far per epoch (log axis). Live values are an RDP upper bound over integer orders (quick, and
    looser than PRV: the last live point may sit above a target that PRV meets); the last point is the
    chosen accountant's (``accountant``) value once the run has finished. The legend says which is which."""
    fig = go.Figure()
    rows = [r for r in epoch_rows(history) if r.get("epsilon")]
    if rows:
        fig.add_trace(
            go.Scatter(
                x=[r["epoch"] for r in rows],
                y=[r["epsilon"] for r in rows],
                customdata=[claims.up(r["epsilon"]) for r in rows],
                hovertemplate="epoch %{x}: ε ≤ %{customdata}<extra>RDP, live</extra>",
                name="ε so far (live RDP bound, looser)",
                mode="lines+markers",
                line=dict(color=ACCENT),
            )
        )
    if target_epsilon:
        mark_level(fig, float(target_epsilon), f"target ε = {target_epsilon:g}", BOUND, log_y=True)
    if final_epsilon and rows:
        who = f"{accountant.upper()} accountant" if accountant else "accountant"
        fig.add_trace(
            go.Scatter(
                x=[rows[-1]["epoch"]],
                y=[final_epsilon],
                name=f"final ε ({who})",
                customdata=[claims.up(final_epsilon)],
                hovertemplate=f"final: ε ≤ %{{customdata}}<extra>{who}</extra>",
                mode="markers",
                marker=dict(color=PRIVATE, size=11, symbol="diamond"),
            )
        )
    base_layout(fig, "Privacy spent per epoch", "epoch", "ε spent so far (log scale)", height=height)
    # The range from the values shown, with 1-2-5 ticks: left to Plotly, a run within one decade (0.2 to 1.1)
    # had a single labelled tick, "1".
    shown = [r["epsilon"] for r in rows] + [float(v) for v in (target_epsilon, final_epsilon) if v]
    shown = [v for v in shown if v > 0]
    if shown:
        log_axis(fig, "y", lo=min(shown) / 1.3, hi=max(shown) * 1.5)  # room above for the target's label
    else:
        log_axis(fig, "y")
    return fig


def epsilon_comparison_chart(metrics: TrainMetrics | dict, *, height: int = 300) -> go.Figure:
    """PRV and RDP ε (real upper bounds) next to the seed notebook's shortcut (not a bound), on a log axis.
    ``metrics``: a run's :class:`~dpcore.training.results.TrainMetrics` (a stored result dict is read through
    :meth:`TrainMetrics.from_dict`)."""
    m = metrics if isinstance(metrics, TrainMetrics) else TrainMetrics.from_dict(metrics)
    names, values, colours, texts = [], [], [], []
    for v, name, colour, bound in (
        (m.epsilon_prv, "PRV accountant", PRIVATE, True),
        (m.epsilon_rdp, "RDP accountant", ACCENT, True),
        (m.shortcut_epsilon, "shortcut formula (not a bound)", NEUTRAL, False),
    ):
        if v:
            names.append(name)
            values.append(v)
            colours.append(colour)
            texts.append(claims.up(v) if bound else f"{v:.3g}")  # the accountants' bounds never read low
    fig = go.Figure(
        go.Scatter(
            x=values,
            y=names,
            mode="markers+text",
            marker=dict(color=colours, size=16),
            # beside the dot, on the side away from the target's line (above it, the top
            # dot's value was clipped and the line ran through it); the range leaves room
            text=texts,
            cliponaxis=False,
            textposition=["middle left" if (m.target_epsilon or 0) >= v else "middle right" for v in values],
            hovertemplate="%{y}: ε = %{x:.4g}<extra></extra>",
        )
    )
    target = m.target_epsilon
    if target:
        fig.add_vline(x=float(target), line=dict(color=BOUND, dash="dash"))
        fig.add_annotation(
            x=math.log10(float(target)),
            xref="x",
            y=1,
            yref="paper",
            yanchor="bottom",
            text=f"target ε = {target:g}",
            showarrow=False,
            font=dict(color=BOUND),
        )
    base_layout(
        fig,
        f"ε of this run (δ = {claims.delta(m.delta or 0)}): accountants vs shortcut",
        "ε (log scale)",
        "",
        height=height,
    )
    lo, hi = min(values + [target or values[0]]), max(values + [target or 0])
    log_axis(fig, "x", lo=10 ** (math.log10(lo) - 0.3), hi=10 ** (math.log10(hi) + 0.3))
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(showlegend=False, margin=dict(l=10))  # the names set the left margin (automargin)
    return fig
