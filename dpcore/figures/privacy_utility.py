"""Privacy–utility figures: accuracy vs ε, attack success vs ε, empirical vs claimed ε, ROC with DP ceiling.

Every builder takes a sweep result ``{config, baseline, points}`` (partial results are fine) and returns a
Plotly figure; ε axes are log scale.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import claims
from ..attacks import audit
from ..sweep import summary as sweep_summary
from ..sweep.config import ATTACK_LABELS, CANARY_ATTACK
from . import style

_DASHES = ["solid", "dash", "dot", "dashdot"]


def _eps_range(result: dict) -> tuple[float, float]:
    eps = [p["epsilon"] for p in result.get("points", [])] or list(result["config"]["epsilons"])
    return min(eps) / 1.6, max(eps) * 1.6


def _attacks(result: dict) -> list[str]:
    for p in [result.get("baseline")] + list(result.get("points", [])):
        if p:
            return list(p["mia"])
    return []


def _chance(result: dict) -> float | None:
    for p in [result.get("baseline")] + list(result.get("points", [])):
        if p and p.get("chance_accuracy") is not None:
            return float(p["chance_accuracy"])
    return None


def accuracy_chart(result: dict) -> go.Figure:
    """Mean test accuracy per ε with ±1 SD error bars over seeds, every seed's model as a dot, the
    non-private baseline and the chance level (always guessing the most common class)."""
    rows = sweep_summary.by_epsilon(result)
    base = sweep_summary.baseline_summary(result)
    lo, hi = _eps_range(result)
    fig = go.Figure()
    if rows:
        seeds = "seed" if max(r["n"] for r in rows) == 1 else f"{max(r['n'] for r in rows)} seeds"
        fig.add_trace(
            go.Scatter(
                x=[r["epsilon"] for r in rows],
                y=[r["accuracy"] for r in rows],
                mode="lines+markers",
                name=f"DP-SGD (mean ± SD over {seeds})",
                line=dict(color=style.PRIVATE, width=3),
                error_y=dict(type="data", array=[r["accuracy_sd"] or 0 for r in rows], visible=True),
                hovertemplate="ε = %{x}<br>test accuracy %{y:.1%}<extra></extra>",
            )
        )
        pts = result.get("points", [])
        fig.add_trace(
            go.Scatter(
                x=[p["epsilon"] for p in pts],
                y=[p["test_accuracy"] for p in pts],
                mode="markers",
                name="each model",
                marker=dict(color=style.PRIVATE, size=5, opacity=0.45),
                hovertemplate="ε = %{x}<br>test accuracy %{y:.1%}<extra></extra>",
            )
        )
    if base:
        fig.add_trace(
            go.Scatter(
                x=[lo, hi],
                y=[base["accuracy"]] * 2,
                mode="lines",
                name="non-private baseline (no DP)",
                line=dict(color=style.NON_PRIVATE, dash="dash", width=2),
            )
        )
    chance = _chance(result)
    if chance is not None:
        fig.add_trace(
            go.Scatter(
                x=[lo, hi],
                y=[chance] * 2,
                mode="lines",
                name="chance (guess the commonest class)",
                line=dict(color=style.NEUTRAL, dash="dot", width=1.5),
            )
        )
    style.base_layout(fig, "Utility: test accuracy vs privacy budget", "", "test accuracy (% of test rows)")
    style.epsilon_axis(fig, range=[np.log10(lo), np.log10(hi)])
    fig.update_yaxes(tickformat=".0%", range=[0, 1.02])
    return fig


def size_chart(result: dict) -> go.Figure:
    """The training-set-size control: accuracy DP costs at one ε (baseline − DP, mean over seeds) per size."""
    rows = sweep_summary.size_control(result)
    fig = go.Figure()
    if rows:
        # what DP costs is written under each pair of bars, in the axis's own font and in lines short enough for a
        # third of a phone: as text above the bars it was crossed by the error bars and shrank to ~3 px there
        x = [f"{r['fraction']:.0%}<br>({r['n_train']:,} rows)<br><b>DP: −{r['cost'] * 100:.1f} pts</b>" for r in rows]
        fig.add_trace(
            go.Bar(
                x=x,
                y=[r["baseline_accuracy"] for r in rows],
                name="non-private baseline",
                marker_color=style.NON_PRIVATE,
                error_y=dict(type="data", array=[r["baseline_accuracy_sd"] or 0 for r in rows]),
            )
        )
        fig.add_trace(
            go.Bar(
                x=x,
                y=[r["dp_accuracy"] for r in rows],
                name=f"DP-SGD at ε = {rows[0]['epsilon']:g}",
                marker_color=style.PRIVATE,
                error_y=dict(type="data", array=[r["dp_accuracy_sd"] or 0 for r in rows]),
            )
        )
    style.base_layout(
        fig,
        "More data makes DP cheaper: accuracy by training-set size",
        "training rows used (under each: what DP costs, in accuracy points)",
        "test accuracy (% of test rows)",
        height=450,
    )
    fig.update_yaxes(tickformat=".0%", range=[0, 1.05])
    fig.update_layout(barmode="group")
    return fig


def attack_chart(result: dict, metric: str = "auc") -> go.Figure:
    """Attack success per attack vs ε (metric: auc, advantage, tpr_at_1pct_fpr, tpr_at_0.1pct_fpr)."""
    titles = {
        "auc": ("Attack AUC vs privacy budget", "attack AUC (0.5 = guessing)"),
        "advantage": ("Attacker advantage vs privacy budget", "advantage max(TPR − FPR)"),
        "tpr_at_1pct_fpr": ("Attack TPR at 1% FPR vs privacy budget", "TPR at 1% FPR (fraction)"),
        "tpr_at_0.1pct_fpr": ("Attack TPR at 0.1% FPR vs privacy budget", "TPR at 0.1% FPR (fraction)"),
    }
    rows = sweep_summary.by_epsilon(result)
    base = sweep_summary.baseline_summary(result)
    lo, hi = _eps_range(result)
    fig = go.Figure()
    # One legend entry per attack (its DP line and its baseline share a colour and toggle together); which
    # line is which is said once under the title: ten entries squeezed the plot to a sliver on a phone.
    for i, a in enumerate(_attacks(result)):
        colour = style.SEQUENCE[i % len(style.SEQUENCE)]
        label = ATTACK_LABELS.get(a, a)
        shown = False
        if rows:
            fig.add_trace(
                go.Scatter(
                    x=[r["epsilon"] for r in rows],
                    y=[r.get(f"{a}.{metric}") for r in rows],
                    mode="lines+markers",
                    name=label,
                    legendgroup=a,
                    line=dict(color=colour, width=2.5),
                    hovertemplate=f"{label} (DP), ε = %{{x:g}}: %{{y:.3g}}<extra></extra>",
                    error_y=dict(type="data", array=[r.get(f"{a}.{metric}_sd") or 0 for r in rows], visible=True),
                )
            )
            shown = True
        if base and base.get(f"{a}.{metric}") is not None:
            fig.add_trace(
                go.Scatter(
                    x=[lo, hi],
                    y=[base[f"{a}.{metric}"]] * 2,
                    mode="lines",
                    name=label,
                    legendgroup=a,
                    showlegend=not shown,
                    hovertemplate=f"{label}, non-private baseline: %{{y:.3g}}<extra></extra>",
                    line=dict(color=colour, dash="dash", width=1.5),
                )
            )
    ref = 0.5 if metric == "auc" else None
    if metric in ("tpr_at_1pct_fpr", "tpr_at_0.1pct_fpr"):
        ref = 0.01 if metric == "tpr_at_1pct_fpr" else 0.001
    if ref is not None:
        fig.add_hline(
            y=ref,
            line_color=style.NEUTRAL,
            line_dash="dot",
            annotation_text="random guessing",
            annotation_position="bottom left",
        )
    title, ytitle = titles[metric]
    key = style.subtitle("solid: DP-SGD, mean ± SD over seeds · dashed: the non-private baseline")
    style.base_layout(fig, f"{title}<br>{key}", "", ytitle, height=430)
    style.epsilon_axis(fig, range=[np.log10(lo), np.log10(hi)])
    fig.update_layout(legend=style.legend_below(font_size=10))
    return fig


_FLOOR = 0.01


def empirical_epsilon_chart(result: dict) -> go.Figure:
    """Empirical lower bound vs claimed ε (log–log) with the diagonal; bounds of 0 drawn at the floor."""
    pts = [p for p in result.get("points", []) if p.get("empirical_epsilon")]
    lo, hi = _eps_range(result)
    fig = go.Figure()
    diag = np.geomspace(lo, hi, 50)
    fig.add_trace(
        go.Scatter(
            x=diag,
            y=diag,
            mode="lines",
            name="lower bound = claimed ε (the most DP allows)",
            line=dict(color=style.BOUND, dash="dash"),
        )
    )
    if pts:
        claimed = [p.get("epsilon_spent") or p["epsilon"] for p in pts]
        lbs = [p["empirical_epsilon"]["lower_bound"] for p in pts]
        shown = [i for i, v in enumerate(lbs) if v >= _FLOOR]  # a bound of 0 has no place on a log axis
        fig.add_trace(
            go.Scatter(
                x=[claimed[i] for i in shown],
                y=[lbs[i] for i in shown],
                mode="markers",
                name="one model's empirical ε lower bound (95%)",
                marker=dict(color=style.PRIVATE, size=10),
                text=[
                    f"seed {pts[i]['seed']}, audit: {ATTACK_LABELS.get(pts[i]['empirical_epsilon'].get('attack'), '?')}"
                    for i in shown
                ],
                customdata=[lbs[i] for i in shown],
                hovertemplate="claimed ε = %{x:.2f}<br>proved ε ≥ %{customdata:.3f}<br>%{text}<extra></extra>",
            )
        )
        rows = [r for r in sweep_summary.by_epsilon(result) if (r.get("empirical_epsilon") or 0) >= _FLOOR]
        if rows:  # the seeds of each ε together: the bound that holds at 95% over all of them
            fig.add_trace(
                go.Scatter(
                    x=[r["epsilon_spent"] for r in rows],
                    y=[r["empirical_epsilon"] for r in rows],
                    mode="markers",
                    name="proved over all seeds of an ε (95% overall)",
                    marker=dict(color=style.PRIVATE, size=13, symbol="diamond-open", line=dict(width=2)),
                    customdata=[r["empirical_epsilon_k"] for r in rows],
                    hovertemplate="claimed ε = %{x:.2f}<br>proved ε ≥ %{y:.3f} over %{customdata} seeds "
                    "(95% overall)<extra></extra>",
                )
            )
        if len(shown) < len(lbs):
            fig.add_annotation(
                x=0,
                y=0,
                xref="paper",
                yref="paper",
                xanchor="left",
                yanchor="bottom",
                showarrow=False,
                font=dict(size=10, color=style.NEUTRAL),
                text=f"{len(lbs) - len(shown)} of {len(lbs)} runs proved nothing (ε ≥ 0; not drawn)",
            )
        cert = min(p["empirical_epsilon"]["max_certifiable"] or 0.0 for p in pts)
        if cert >= _FLOOR:
            style.mark_level(
                fig,
                cert,
                f"most any attack could prove with these rows (ε ≈ {cert:.1f})",
                log_y=True,
                dash="dot",
                font_size=10,
            )  # add_hline's label sat at 10^cert, off the chart
        else:  # too few audit rows for even a perfect attack to prove anything (a random half can be that small)
            fig.add_annotation(
                x=0,
                y=1,
                xref="paper",
                yref="paper",
                xanchor="left",
                yanchor="top",
                showarrow=False,
                font=dict(size=10, color=style.NEUTRAL),
                text="with these rows no attack, not even a perfect one, can prove an ε above 0",
            )
    style.base_layout(
        fig, "Audit: ε proved by the attacks vs ε claimed", "", "empirical ε lower bound (log scale)", height=430
    )
    fig.update_layout(legend=style.legend_below(font_size=10))
    style.epsilon_axis(fig, title="claimed ε (accountant, log scale)", range=[np.log10(lo), np.log10(hi)])
    style.log_axis(fig, "y", lo=_FLOOR / 1.5, hi=hi)
    return fig


def empirical_epsilon_note(result: dict) -> str:
    """The caption under :func:`empirical_epsilon_chart`, naming only the marks it draws (a caption once spoke of
    diamonds on a chart that had none)."""
    pts = [p for p in result.get("points", []) if p.get("empirical_epsilon")]
    dots = [p for p in pts if p["empirical_epsilon"]["lower_bound"] >= _FLOOR]
    diamonds = [r for r in sweep_summary.by_epsilon(result) if (r.get("empirical_epsilon") or 0) >= _FLOOR]
    words = []
    if dots:
        words.append("each dot: one model's 95% lower bound on ε from its audit")
    if diamonds:
        words.append("each open diamond: all seeds of an ε together, 95% overall")
    if len(dots) < len(pts):
        words.append(
            f"{len(pts) - len(dots)} of {len(pts)} models proved nothing (ε ≥ 0), so they have no mark on the log scale"
        )
    text = "; ".join(words)
    return (text[:1].upper() + text[1:] + ". " if text else "") + (
        "A low bound is not proof of safety; a bound above the claimed ε (the dashed line) would be a bug."
    )


def _attack_counts(mia: dict) -> str:
    """How many members and non-members each attack was scored on, once per distinct count (a note under the
    ROC's title: on each legend entry it made every entry two lines)."""
    seen: dict[tuple, list[str]] = {}
    for a, v in mia.items():
        n = (v.get("n_members", "?"), v.get("n_nonmembers", "?"))
        seen.setdefault(n, []).append("canaries" if a == CANARY_ATTACK else "records")
    parts = [f"{' and '.join(dict.fromkeys(who))}: {i} in / {o} out" for (i, o), who in seen.items()]
    return "scored on " + "; ".join(parts) if parts else ""


def ceiling_words(block: dict) -> str:
    """The worst-case curve's figures for the caption under :func:`roc_chart` (its legend entry stays one line): ε
    at each δ of ``block`` (:func:`dpcore.statements.sweep.for_point`, from the PLD) and μ."""
    rows = block["epsilon_at_delta"]
    parts = [f"ε ≤ {claims.up(r['epsilon_pld'])} at δ = {claims.delta(r['delta'])}" for r in rows]
    mu = (block.get("mu") or {}).get("value")
    if mu is not None:
        parts.append(f"μ ≈ {mu:.2f} (Gaussian DP by the central limit theorem: an estimate, not a bound)")
    return ", ".join(parts)


def roc_chart(point: dict, title_suffix: str = "") -> go.Figure:
    """ROC curves (log–log) of one model's attacks — the canary attack and the attacks on ordinary records —
    under one ceiling: for a DP-SGD point, its worst-case ROC from the privacy-loss distribution of what was
    actually run (``point["tradeoff"]``; no attack can go above it), one line in the legend (its ε at each δ and μ:
    :func:`ceiling_words`, for the caption). Older stored points without a trade-off curve show the looser (ε, δ)
    ceiling; the CLT/GDP curve is never drawn (it is an approximation, not an upper bound). Traces carry ``meta``:
    "ceiling", "chance", "attack:<name>"."""
    fig = go.Figure()
    n_neg = max((v.get("n_nonmembers") or 1) for v in point["mia"].values())
    floor = 1.0 / (2 * n_neg)
    grid = np.geomspace(floor, 1, 200)
    eps = point.get("epsilon_spent") or point.get("epsilon")
    t = point.get("tradeoff") if point.get("epsilon") is not None else None
    if t and t.get("fpr"):
        tf, tt = np.asarray(t["fpr"], float), np.asarray(t["tpr"], float)
        keep = tf >= floor
        fig.add_trace(
            go.Scatter(
                x=tf[keep],
                y=np.ones(int(keep.sum())),
                mode="lines",
                line=dict(width=0),
                showlegend=False,
                hoverinfo="skip",
            )
        )  # the shading's upper edge
        fig.add_trace(
            go.Scatter(
                x=tf[keep],
                y=tt[keep],
                mode="lines",
                meta="ceiling",
                **style.legend_group("promise"),
                fill="tonexty",
                customdata=[claims.up(v) for v in tt[keep]],
                fillcolor=style.rgba(style.BOUND, 0.08),
                line=dict(color=style.BOUND, width=3),
                name="worst case for this run (exact PLD)",
                hovertemplate="FPR %{x:.2g}<br>worst-case TPR %{customdata}<extra>ceiling</extra>",
            )
        )
    elif eps is not None:
        delta = point.get("delta") or 1e-5
        fig.add_trace(
            go.Scatter(
                x=grid,
                y=audit.dp_roc_ceiling(eps, delta, grid),
                mode="lines",
                meta="ceiling",
                **style.legend_group("promise"),
                name=f"(ε, δ) ceiling at ε = {claims.up(eps)}, δ = {claims.delta(delta)}: no attack above",
                line=dict(color=style.BOUND, width=3),
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
    for i, (a, v) in enumerate(point["mia"].items()):
        fpr = np.maximum(np.asarray(v["roc"]["fpr"], float), floor)
        tpr = np.maximum(np.asarray(v["roc"]["tpr"], float), floor)
        canary = a == CANARY_ATTACK
        fig.add_trace(
            go.Scatter(
                x=fpr,
                y=tpr,
                mode="lines",
                line_shape="hv",
                meta=f"attack:{a}",
                **style.legend_group("measured"),
                name=f"{ATTACK_LABELS.get(a, a)}: AUC {v['auc']:.2f}",
                line=dict(color=style.SEQUENCE[i % len(style.SEQUENCE)], width=3 if canary else 2),
                hovertemplate="FPR %{x:.2g}<br>TPR %{y:.3g}<extra></extra>",
            )
        )
    label = "non-private baseline" if point.get("epsilon") is None else f"ε = {point['epsilon']:g}"
    height = 600  # the legend below (phones) takes ~160 px; the plot keeps ~350
    title = f"Attack ROC, {label}{title_suffix}"
    counts = _attack_counts(point["mia"])
    style.base_layout(fig, f"{title}<br>{style.subtitle(counts)}" if counts else title, "", "", height=height)
    style.roc_axes(fig, floor)
    # legend below (phones); "normal": a filled trace would otherwise flip the order and put the ceiling last
    fig.update_layout(legend={**style.legend_below(font_size=10), "traceorder": "grouped"})
    return fig


def compare_chart(results: dict[str, dict], metric: str = "accuracy") -> go.Figure:
    """Several stored sweeps on one ε axis: accuracy (or the best attack AUC)."""
    fig = go.Figure()
    los, his = [], []
    for i, (name, res) in enumerate(results.items()):
        rows = sweep_summary.by_epsilon(res)
        if not rows:
            continue
        lo, hi = _eps_range(res)
        los.append(lo)
        his.append(hi)
        if metric == "accuracy":
            y = [r["accuracy"] for r in rows]
        else:
            atk = _attacks(res)
            y = [max((r.get(f"{a}.auc") or 0) for a in atk) for r in rows]
        fig.add_trace(
            go.Scatter(
                x=[r["epsilon"] for r in rows],
                y=y,
                mode="lines+markers",
                name=name,
                line=dict(color=style.SEQUENCE[i % len(style.SEQUENCE)], dash=_DASHES[i % len(_DASHES)]),
            )
        )
    ytitle = "test accuracy (fraction)" if metric == "accuracy" else "best attack AUC (0.5 = guessing)"
    style.base_layout(fig, "Stored sweeps compared", "", ytitle)
    if los:
        style.epsilon_axis(fig, range=[np.log10(min(los)), np.log10(max(his))])
    else:
        style.epsilon_axis(fig)
    return fig
