"""One chart of promise and proof: the accountant's ε (a promise: an upper bound), the last-iterate heuristic, and
the audits' lower bounds (measurements, at 95%, with their intervals) — for one run (:func:`run_chart`) and across ε
for a sweep (:func:`sweep_chart`). The trade-off chart beside it (the curve an audit proves against the
accountant's exact curve) is :mod:`dpcore.figures.proof`.

The chart functions take plain inputs (:class:`Bound`, :class:`RunBounds`, curves as {"fpr", "tpr"}), so a caller
with its own figures draws them directly. The builders read what dpcore stores:

* :func:`run_bounds` — a training run's metrics (``TrainMetrics.to_dict()``): ε, δ, σ, q, T, and, when the run
  audited itself, ``one_run`` (:func:`dpcore.attacks.one_run.one_run_lower_bound`'s dict), ``one_run_fdp``
  (:class:`dpcore.attacks.fdp.FdpAudit` as a dict) and ``gdp`` (:class:`dpcore.attacks.gdp.GdpAudit` as a dict),
  at the top level or under ``audit``;
* :func:`sweep_bounds` and :func:`point_bounds` — a sweep's stored points.

Words (:func:`verdict`) name which figure is a promise and which a measurement, and never call a lower bound a
guarantee.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import plotly.graph_objects as go

from .. import claims
from ..attacks import fdp, gdp, last_iterate
from ..errors import DPError
from ..sweep import summary as sweep_summary
from . import style

Kind = Literal["promise", "heuristic", "measurement"]
RELATION = "add/remove one record"
#: A lower bound of 0 has no place on a log axis: drawn here, and said in words.
FLOOR = 0.01
_SYMBOL = {"promise": "triangle-left", "heuristic": "circle-open", "measurement": "triangle-right"}
_COLOUR = {"promise": style.BOUND, "heuristic": style.ACCENT, "measurement": style.PRIVATE}
_MEASURE_COLOURS = (style.PRIVATE, "#c77d14", "#d16ba5", "#5a9e3a")
#: Legend lines short enough for a phone's width beside the symbol.
_LEGEND_CHARS = 44


@dataclass(frozen=True)
class Bound:
    """One figure about ε at the chart's δ. ``epsilon``: the promise's upper bound, the heuristic's value, or the
    measurement's lower bound; ``low``/``high``: an interval around it (seeds' spread, or the test's own two-sided
    interval); ``confidence``: a measurement's level; ``detail``: one short line for the hover."""

    label: str
    kind: Kind
    epsilon: float
    low: float | None = None
    high: float | None = None
    confidence: float | None = None
    detail: str = ""


@dataclass(frozen=True)
class RunBounds:
    """One run (or one ε of a sweep): ``x`` its accountant's ε, the x of the sweep chart."""

    x: float
    delta: float
    bounds: tuple[Bound, ...]


# --- words ----------------------------------------------------------------------------------------------------


def verdict(bounds: Sequence[Bound], delta: float) -> str:
    """What the figures say together: the promise, the heuristic, each measurement — by name and kind."""
    d = claims.delta(delta)
    promise = [b for b in bounds if b.kind == "promise"]
    parts = []
    for b in promise:
        parts.append(
            f"Promise: {b.label} ε ≤ {claims.up(b.epsilon)} at δ = {d} ({RELATION}), an upper bound that holds for "
            "every attack if training did what the accountant was told."
        )
    for b in bounds:
        if b.kind == "heuristic":
            parts.append(
                f"Heuristic: auditing only the final model can be expected to show up to about ε ≈ "
                f"{b.epsilon:.2g} ({b.label}) — an estimate, not a bound."
            )
    top = max((b.epsilon for b in promise), default=math.inf)
    for b in bounds:
        if b.kind != "measurement":
            continue
        conf = f"{b.confidence:.0%}" if b.confidence else "95%"
        if b.epsilon <= 0:
            parts.append(f"Measurement: {b.label} proved nothing (ε ≥ 0 at {conf}).")
            continue
        over = b.epsilon > top + 1e-9
        parts.append(
            f"Measurement: {b.label} proves ε ≥ {claims.down(b.epsilon)} at {conf} — a lower bound for this attack, "
            "not a guarantee"
            + (
                "; it is above the promise: the training, its accounting or its settings are wrong, or this is "
                "the 5% chance a 95% bound has of failing."
                if over
                else "."
            )
        )
    return " ".join(parts)


# --- one run --------------------------------------------------------------------------------------------------


def _range(values: Sequence[float]) -> tuple[float, float]:
    pos = [v for v in values if v and v > 0 and math.isfinite(v)]
    lo = max(min(pos, default=1.0) / 2.5, FLOOR / 1.5)
    hi = max(max(pos, default=1.0) * 2.5, lo * 10)
    return lo, hi


def run_chart(bounds: Sequence[Bound], delta: float, *, title: str | None = None, height: int = 330) -> go.Figure:
    """One run's figures on one log ε line: each a row (promise ◄, heuristic ○, measurement ►, intervals as bars);
    the band between the largest measurement and the promise is where the true ε lies if the accountant is right."""
    if not bounds:
        raise DPError("nothing to draw: give at least the accountant's ε")
    vals = [b.epsilon for b in bounds] + [v for b in bounds for v in (b.low, b.high) if v is not None]
    lo, hi = _range(vals)
    fig = go.Figure()
    rows = [style.tick_label(b.label, 22, lines=2) for b in bounds]
    promise = min((b.epsilon for b in bounds if b.kind == "promise"), default=None)
    proved = max((b.epsilon for b in bounds if b.kind == "measurement"), default=0.0)
    if promise is not None and promise > max(proved, FLOOR):
        fig.add_vrect(
            x0=max(proved, lo),
            x1=promise,
            fillcolor=style.rgba(style.BOUND, 0.09),
            line_width=0,
            layer="below",
        )
    for b, row in zip(bounds, rows):
        x = max(b.epsilon, lo)
        err = None
        if b.low is not None and b.high is not None:
            err = dict(
                type="data",
                symmetric=False,
                array=[max(b.high, lo) - x],
                arrayminus=[x - max(b.low, lo)],
                thickness=2,
                width=6,
            )
        sign = {"promise": "≤", "heuristic": "≈", "measurement": "≥"}[b.kind]
        text = f"ε {sign} {claims.up(b.epsilon) if b.kind == 'promise' else claims.down(b.epsilon)}"
        fig.add_trace(
            go.Scatter(
                x=[x],
                y=[row],
                mode="markers+text",
                marker=dict(symbol=_SYMBOL[b.kind], size=15, color=_COLOUR[b.kind], line=dict(width=2)),
                error_x=err,
                text=[text if b.epsilon > 0 else "nothing proved"],
                # a mark at the axis's left end (nothing proved, or below the range) writes to its right, clear of
                # the row labels beside the axis
                textposition="top center" if b.epsilon > lo * 1.5 else "middle right",
                textfont=dict(size=11, color=_COLOUR[b.kind]),
                showlegend=False,
                meta=b.kind,
                name=b.label,
                hovertemplate=f"{b.label}<br>{text}<br>{b.detail}<extra>{b.kind}</extra>",
            )
        )
    heading = title or f"Promise and proof: ε at δ = {claims.delta(delta)}"
    # each row's label may take two lines: the chart grows with its rows so that they never overlap
    style.base_layout(fig, heading, "", "", height=max(height, 120 + 56 * len(rows)))
    style.log_axis(
        fig, "x", lo=lo, hi=hi, title=style.wrap("ε, log scale: ◄ promise (at most) · ► measurement (at least)", 40)
    )
    # categories top to bottom, with room above the first row for its label
    fig.update_yaxes(
        type="category", title=None, range=[len(rows) - 0.5, -0.9], categoryorder="array", categoryarray=rows
    )
    fig.update_layout(margin=dict(l=10))
    return fig


# --- a sweep --------------------------------------------------------------------------------------------------


def sweep_chart(runs: Sequence[RunBounds], delta: float, *, height: int = 460) -> go.Figure:
    """Across ε: x the accountant's ε of each setting, y each figure at it — the promise on the diagonal, the
    heuristic's line, each measurement's combined bound with its seeds' spread as a bar. Above the diagonal is
    impossible if the accountant is right."""
    runs = sorted(runs, key=lambda r: r.x)
    if not runs:
        raise DPError("nothing to draw yet: no finished DP point")
    xs = [r.x for r in runs]
    vals = xs + [b.epsilon for r in runs for b in r.bounds] + [b.low or 0 for r in runs for b in r.bounds]
    lo, hi = _range(vals)
    lo_axis = lo / 1.4  # a bound drawn at the floor stays inside the plot
    fig = go.Figure()
    diag = np.geomspace(lo, hi, 40)
    fig.add_trace(
        go.Scatter(
            x=diag,
            y=np.full(diag.size, hi),
            mode="lines",
            line=dict(width=0),
            showlegend=False,
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=diag,
            y=diag,
            mode="lines",
            fill="tonexty",
            fillcolor=style.rgba(style.BOUND, 0.07),
            line=dict(color=style.BOUND, width=2, dash="dash"),
            meta="promise",
            name=style.wrap("promise: the accountant's ε (upper bound; above it is impossible)", _LEGEND_CHARS),
            hoverinfo="skip",
        )
    )
    labels: dict[str, Kind] = {}
    for r in runs:
        for b in r.bounds:
            if b.kind != "promise":
                labels.setdefault(b.label, b.kind)
    colours = iter(_MEASURE_COLOURS * 4)
    for label, kind in labels.items():
        pts = [(r.x, b) for r in runs for b in r.bounds if b.label == label]
        colour = style.ACCENT if kind == "heuristic" else next(colours)
        ys = [max(b.epsilon, lo) for _, b in pts]
        err = None
        if any(b.low is not None for _, b in pts):
            err = dict(
                type="data",
                symmetric=False,
                array=[max(b.high if b.high is not None else b.epsilon, lo) - y for (_, b), y in zip(pts, ys)],
                arrayminus=[y - max(b.low if b.low is not None else b.epsilon, lo) for (_, b), y in zip(pts, ys)],
                thickness=1.5,
                width=4,
            )
        conf = next((b.confidence for _, b in pts if b.confidence), 0.95)
        name = style.wrap(
            f"heuristic: {label} (what auditing the final model can show)"
            if kind == "heuristic"
            else f"measurement: {label}, {conf:.0%} lower bound (bar: seeds' spread)",
            _LEGEND_CHARS,
        )
        fig.add_trace(
            go.Scatter(
                x=[x for x, _ in pts],
                y=ys,
                mode="lines+markers" if kind == "heuristic" else "markers",
                marker=dict(symbol=_SYMBOL[kind], size=11, color=colour, line=dict(width=1.5)),
                line=dict(color=colour, width=2, dash="dot"),
                error_y=err,
                meta=kind,
                name=name,
                customdata=[[b.epsilon, b.detail] for _, b in pts],
                hovertemplate=f"{label}<br>accountant ε = %{{x:.3g}}<br>ε %{{customdata[0]:.3g}}"
                "<br>%{customdata[1]}<extra></extra>",
            )
        )
    style.base_layout(
        fig, f"Promise and proof across ε (δ = {claims.delta(delta)})", "", "ε (log scale)", height=height
    )
    style.epsilon_axis(
        fig, title="the accountant's ε (promise, log scale)", range=[math.log10(lo_axis), math.log10(hi)]
    )
    style.log_axis(fig, "y", lo=lo_axis, hi=hi)
    fig.update_layout(legend={**style.legend_below(font_size=10), "traceorder": "normal"})
    return fig


# --- builders from what dpcore stores -------------------------------------------------------------------------


def _get(m: Mapping[str, Any], key: str) -> Any:
    nested = m.get("audit")
    return m.get(key) if m.get(key) is not None else (nested.get(key) if isinstance(nested, Mapping) else None)


def heuristic_bound(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> Bound:
    h = last_iterate.heuristic_epsilon(float(noise_multiplier), float(sample_rate), int(steps), float(delta))
    return Bound(
        "last-iterate heuristic",
        "heuristic",
        h,
        detail="Steinke et al. 2025: linear-loss model of the final iterate",
    )


def run_bounds(m: Mapping[str, Any]) -> tuple[Bound, ...]:
    """A DP-SGD run's figures (its metrics as stored; see the module docstring for the audit keys)."""
    eps, delta = m.get("epsilon"), m.get("delta")
    if eps is None or not delta:
        raise DPError("a promise-and-proof chart needs a DP run's ε and δ")
    acc = str(m.get("accountant") or "accountant").upper()
    out = [Bound(f"accountant ({acc})", "promise", float(eps), detail="upper bound, every attack")]
    if m.get("noise_multiplier") and m.get("sample_rate") and m.get("steps"):
        out.append(heuristic_bound(m["noise_multiplier"], m["sample_rate"], m["steps"], delta))
    one = _get(m, "one_run")
    if one and one.get("lower_bound") is not None:
        out.append(
            Bound(
                "one-run audit (Steinke et al.)",
                "measurement",
                float(one["lower_bound"]),
                confidence=float(one.get("confidence") or 0.95),
                detail=f"{one.get('correct')} of {one.get('guesses')} guesses right, {one.get('n_canaries')} canaries",
            )
        )
    f = _get(m, "one_run_fdp")
    if f:
        a = f if isinstance(f, fdp.FdpAudit) else fdp.FdpAudit.from_dict(f)
        if a.epsilon_gaussian is not None:
            out.append(
                _fdp_bound(a.epsilon_gaussian, a.confidence, f"μ ≥ {claims.down(a.mu)}, {a.n_canaries} canaries")
            )
    g = _get(m, "gdp")
    if g:
        ga = g if isinstance(g, gdp.GdpAudit) else gdp.GdpAudit.from_dict(g)
        out.append(_gdp_bound(ga.epsilon, ga.confidence, f"μ ≥ {claims.down(ga.mu)}, {ga.members} members audited"))
    return tuple(out)


def _fdp_bound(eps: float, conf: float, detail: str, low: float | None = None, high: float | None = None) -> Bound:
    return Bound(
        "f-DP one-run audit (Gaussian curve)",
        "measurement",
        float(eps) if math.isfinite(eps) else 0.0,
        low=low,
        high=high,
        confidence=conf,
        detail=f"Mahloujifar et al. 2024; {detail}; a lower bound if the curve is Gaussian-shaped",
    )


def _gdp_bound(eps: float, conf: float, detail: str, low: float | None = None, high: float | None = None) -> Bound:
    return Bound(
        "scores audit (records)",
        "measurement",
        float(eps),
        low=low,
        high=high,
        confidence=conf,
        detail=f"Clopper–Pearson on a held-out half; {detail}",
    )


def point_bounds(ps: Sequence[Mapping[str, Any]], confidence: float = 0.95) -> RunBounds | None:
    """The seeds of one ε of a sweep as one :class:`RunBounds`: the promise (the largest accountant ε), the heuristic
    at the first seed's (σ, q, T), and each audit combined over seeds at ``confidence`` (Bonferroni) with the spread
    of the seeds' own bounds as its interval. None without a DP-SGD point."""
    ps = [p for p in ps if p.get("epsilon") is not None and p.get("noise_multiplier") and p.get("steps")]
    if not ps:
        return None
    delta = float(ps[0]["delta"])
    promise = max(float(p.get("epsilon_spent") or p["epsilon"]) for p in ps)
    out = [Bound("accountant", "promise", promise, detail=f"largest over {len(ps)} seed(s)")]
    out.append(heuristic_bound(ps[0]["noise_multiplier"], ps[0]["sample_rate"], ps[0]["steps"], delta))
    row = sweep_summary.summary_row({"points": list(ps)}, ps[0]["epsilon"]) or {}
    mains = [p.get("empirical_epsilon") or {} for p in ps]
    canary = [a for a in mains if a.get("n_canaries")]
    if canary and row.get("empirical_epsilon") is not None:
        own = [float(a["lower_bound"]) for a in canary]
        out.append(
            Bound(
                "one-run audit (Steinke et al.)",
                "measurement",
                float(row["empirical_epsilon"]),
                low=min(own),
                high=max(own),
                confidence=confidence,
                detail=f"{len(canary)} seed(s) combined",
            )
        )
    f_audits = [a for a in (fdp.from_one_run(c) for c in canary) if a is not None]
    if f_audits:
        c = fdp.combine(f_audits, confidence)
        own = [a.epsilon_gaussian or 0.0 for a in f_audits]
        mu = c["mu"]
        out.append(
            _fdp_bound(
                fdp.epsilon_from_mu(mu, delta) if mu > 0 else 0.0,
                confidence,
                f"μ ≥ {claims.down(mu)} over {c['k']} seed(s)",
                low=min(own),
                high=max(own),
            )
        )
    found = [a.get("records") or (a if not a.get("n_canaries") else None) for a in mains]
    records: list[Mapping[str, Any]] = [r for r in found if r and r.get("tp") is not None]
    combined = row.get("records_epsilon") if canary else row.get("empirical_epsilon")
    if records and combined is not None:
        own = [float(r["lower_bound"]) for r in records]
        mus = [gdp.mu_from_split_audit(r, 1 - (1 - confidence) / len(records)) or 0.0 for r in records]
        out.append(
            _gdp_bound(
                float(combined),
                confidence,
                f"μ ≥ {claims.down(max(mus))} over {len(records)} seed(s)",
                low=min(own),
                high=max(own),
            )
        )
    return RunBounds(promise, delta, tuple(out))


def sweep_bounds(result: Mapping[str, Any]) -> list[RunBounds]:
    """One :class:`RunBounds` per ε of a sweep (size-control points left out: another question)."""
    groups: dict[float, list[Mapping[str, Any]]] = {}
    for p in result.get("points") or []:
        if float(p.get("train_fraction", 1.0)) < 1.0:
            continue
        groups.setdefault(float(p["epsilon"]), []).append(p)
    runs = [point_bounds(ps) for _, ps in sorted(groups.items())]
    return [r for r in runs if r is not None]
