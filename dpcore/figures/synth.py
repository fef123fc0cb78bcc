"""Figures for DP synthetic data (the re-identification page's tab and the report): what the linkage attack
gets from a synthetic table as ε moves, and what the table keeps (marginals, a model trained on it)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import claims, textsafe
from ..noise.interpret import guess_ceiling
from . import style


def _x(frame) -> np.ndarray:
    return frame["epsilon"].to_numpy(dtype=float)


def _band(fig: go.Figure, x, lo, hi, colour: str) -> None:
    """The range over the releases, shaded behind its line (named in the chart's subtitle, not in the legend:
    a legend entry per band ran off a phone's width)."""
    fig.add_trace(
        go.Scatter(
            x=np.r_[x, x[::-1]],
            y=np.r_[hi, lo[::-1]],
            fill="toself",
            line=dict(width=0),
            fillcolor=style.rgba(colour, 0.18),
            hoverinfo="skip",
            showlegend=False,
        )
    )


def _series(
    fig, frame, key: str, scale: float, colour: str, name: str, *, band: bool = True, dash=None, unit: str = "%"
) -> None:
    x = _x(frame)
    if band and f"{key}_min" in frame:
        _band(fig, x, frame[f"{key}_min"].to_numpy() * scale, frame[f"{key}_max"].to_numpy() * scale, colour)
    fig.add_trace(
        go.Scatter(
            x=x,
            y=frame[key].to_numpy() * scale,
            mode="lines+markers",
            name=name,
            line=dict(color=colour, width=3, dash=dash),
            hovertemplate=f"ε = %{{x:g}}: %{{y:.3g}}{unit}<extra></extra>",
        )
    )


def _level(fig, x, y: float, colour: str, name: str, dash: str = "dash") -> None:
    fig.add_trace(
        go.Scatter(
            x=[float(x.min()), float(x.max())],
            y=[y, y],
            mode="lines",
            hoverinfo="skip",
            name=name,
            line=dict(color=colour, dash=dash, width=2),
        )
    )


def _axes(fig: go.Figure, x: np.ndarray, epsilon: float | None) -> go.Figure:
    lo, hi = float(x.min()) / 1.5, float(x.max()) * 1.5
    style.epsilon_axis(fig, range=[np.log10(lo), np.log10(hi)], tickvals=list(x), ticktext=[f"{v:g}" for v in x])
    if epsilon is not None:
        style.mark_epsilon(fig, epsilon, f" ε = {epsilon:g}", style.ACCENT, at="top")
    return fig


def attack_chart(study, epsilon: float | None = None, *, label=str) -> go.Figure:
    """Targets whose sensitive value the attacker names correctly from a synthetic table, against ε: tables
    fitted to the patients, tables fitted to an independent population (the baseline), the raw release and a
    blind guess, and the ceiling DP puts on a guess about a known patient (e^(2ε) × the blind guess)."""
    f, ref, cfg = study.frame(), study.result["reference"], study.result["config"]
    x = _x(f)
    fig = go.Figure()
    _series(fig, f, "targets_right", 100, style.PRIVATE, "synthetic table of the patients")
    _series(fig, f, "baseline_targets_right", 100, style.ACCENT, "synthetic table without them", dash="dot")
    prior = ref["blind_right"]
    xs = np.geomspace(x.min() / 1.5, x.max() * 1.5, 60)
    ceiling = [float(guess_ceiling(2 * e, prior)) * 100 for e in xs]
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ceiling,
            mode="lines",
            name="DP ceiling (e<sup>2ε</sup> × blind guess)",
            line=dict(color=style.BOUND, dash="dot", width=2),
            customdata=[claims.percent(c / 100, 0, up=True) for c in ceiling],
            hovertemplate="ε = %{x:.3g}: at most %{customdata}<extra></extra>",
        )
    )
    _level(
        fig,
        xs,
        ref["exact"]["targets_right"] * 100,
        style.NON_PRIVATE,
        f"the table itself: {ref['exact']['targets_right']:.0%}",
    )
    _level(fig, xs, prior * 100, style.NEUTRAL, f"blind guess: {prior:.0%}", dash="dot")
    what = textsafe.plotly(label(cfg["sensitive"]))
    r = cfg["repetitions"]
    note = style.subtitle(
        f"{cfg['n_targets']} patients · {r} release{'' if r == 1 else 's'} per ε (shaded: range) · not covered by ε"
    )
    style.base_layout(
        fig,
        f"Linking patients to a DP synthetic table: is their {what} named?<br>{note}",
        "privacy budget ε (log scale)",
        "patients whose value is named correctly (%)",
        height=480,
    )
    fig.update_yaxes(range=[0, 105], tickvals=[20, 40, 60, 80, 100])
    return _axes(fig, x, epsilon)


def utility_chart(study, epsilon: float | None = None) -> go.Figure:
    """The largest cell error of the 2-way marginals that matter and the mean of the 1-way ones, against ε, with
    what two real samples of the same population differ by (the floor)."""
    f, ref = study.frame(), study.result["reference"]
    x = _x(f)
    fig = go.Figure()
    _series(fig, f, "two_way_max", 1, style.PRIVATE, "2-way marginals that matter", unit=" points")
    _series(fig, f, "one_way_mean", 1, style.ACCENT, "1-way marginals (mean)", unit=" points", dash="dot")
    floor = (ref.get("sampling_floor") or {}).get("two_way_max")
    if floor is not None:
        _level(fig, x, floor, style.NEUTRAL, f"two real samples: {floor:.1f}", dash="dot")
    note = style.subtitle("largest cell error, synthetic minus real share (shaded: range) · not covered by ε")
    style.base_layout(
        fig,
        f"What the synthetic table keeps: marginals<br>{note}",
        "privacy budget ε (log scale)",
        "largest cell error (percentage points)",
        height=440,
    )
    fig.update_yaxes(rangemode="tozero")
    return _axes(fig, x, epsilon)


def model_chart(study, epsilon: float | None = None) -> go.Figure:
    """Test accuracy on real held-out rows of a model trained on synthetic rows, against ε, beside the same model
    trained on the real rows."""
    f, ref = study.frame(), study.result["reference"]
    x = _x(f)
    fig = go.Figure()
    if "model_accuracy" in f:
        _series(fig, f, "model_accuracy", 100, style.PRIVATE, "trained on synthetic rows")
    if ref.get("model_accuracy") is not None:
        _level(
            fig,
            x,
            ref["model_accuracy"] * 100,
            style.NON_PRIVATE,
            f"trained on the real rows: {ref['model_accuracy']:.1%}",
        )
    note = style.subtitle("salary ≥ $60,000, tested on real patients no release saw (shaded: range) · not covered by ε")
    style.base_layout(
        fig,
        f"What the synthetic table keeps: a model<br>{note}",
        "privacy budget ε (log scale)",
        "test accuracy (%)",
        height=440,
    )
    return _axes(fig, x, epsilon)


def upload_marginals_chart(utility: dict) -> go.Figure:
    """An upload's synthetic table against the rows it was fitted to: the largest cell error of each declared
    column's 1-way marginal and of each 2-way marginal measured, in percentage points (column names are the
    uploader's text: escaped)."""
    m = utility["marginals"]
    one = sorted(m["one_way"].items(), key=lambda kv: kv[1])
    two = sorted(m["two_way"].items(), key=lambda kv: kv[1])
    fig = go.Figure()
    ticks, at = [], 0
    for items, colour, name in ((one, style.ACCENT, "1-way (a column)"), (two, style.PRIVATE, "2-way (a pair)")):
        if items:  # positions as the categories (two long names may shorten alike), full names in the hover
            names = [textsafe.plotly(k.replace("+", " × ")) for k, _ in items]
            ticks += [style.tick_label(n, style.TICK_CHARS) for n in names]
            fig.add_trace(
                go.Bar(
                    x=[v for _, v in items],
                    y=list(range(at, at + len(items))),
                    orientation="h",
                    name=name,
                    marker_color=colour,
                    customdata=names,
                    hovertemplate="%{customdata}: %{x:.2f} points<extra></extra>",
                )
            )
            at += len(items)
    note = style.subtitle(
        f"largest cell error, synthetic minus real share · {utility['fitted_rows']:,} rows read · not covered by ε"
    )
    rows = len(one) + len(two)
    style.base_layout(
        fig,
        f"What the synthetic table keeps: marginals<br>{note}",
        "largest cell error (percentage points)",
        "",
        height=max(300, 160 + 40 * rows),
    )
    fig.update_xaxes(rangemode="tozero")
    fig.update_yaxes(tickvals=list(range(at)), ticktext=ticks, automargin=True)
    fig.update_layout(legend=style.legend_below())
    return fig
