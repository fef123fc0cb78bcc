"""The HTML report's section for an audit of your own model (the "Audit your model" page and ``python -m dpcore
audit``): what the scores prove, the counts the bounds rest on, the stated claim and its ceiling, and the ROC.
Kept beside :mod:`dpcore.report.document` (whose other sections change in parallel) and rendered by its :func:`render`.
:func:`audit_section` is the one builder of that section: the page's own download (:func:`audit_report`) and the
whole report (:func:`dpcore.report.document.build` with ``audits``: Home's *Prepare report*, ``report --audit``) both use
it."""

from __future__ import annotations

import pandas as pd

from dpcore import claims
from dpcore.attacks import model_audit
from dpcore.figures import audit as audit_figs
from dpcore.report.document import Section, render


def audit_section(result: dict, name: str | None = None) -> Section:
    """:func:`dpcore.attacks.model_audit.audit_model`'s result as a report section. ``name``: the scores file's own
    name (user text: it goes only in the escaped title and tables)."""
    conf = result["confidence"]
    rows = []
    for label, a in (
        ("split audit, ordinary records", result.get("split_audit")),
        ("one-run audit, canaries", result.get("one_run")),
    ):
        if not a:
            continue
        counts = (
            f"{a['tp']} of {a['members']} members and {a['fp']} of {a['nonmembers']} non-members flagged "
            f"(threshold chosen on {a['selection_members']} + {a['selection_nonmembers']} other rows)"
            if "tp" in a
            else f"{a['correct']} of {a['guesses']} guesses right on {a['n_canaries']} canaries"
        )
        rows.append(
            {
                "audit": label,
                "proved ε ≥": claims.down(a["lower_bound"]),
                "confidence": f"{conf:.0%}",
                "at δ": claims.delta(result["delta"]),
                "what it rests on": counts,
                "most it could prove": claims.down(a.get("max_certifiable"))
                if a.get("max_certifiable") is not None
                else "—",
            }
        )
    g, f = result.get("gdp"), result.get("one_run_fdp")
    if g:  # the same scores read as a trade-off curve: each its own measurement (dpcore.attacks.gdp, .fdp)
        rows.append(
            {
                "audit": "Gaussian-DP audit, ordinary records (Nasr et al. 2023)",
                "proved ε ≥": claims.down(g["epsilon"]),
                "confidence": f"{conf:.0%}",
                "at δ": claims.delta(result["delta"]),
                "what it rests on": f"μ ≥ {claims.down(g['mu'])} from {len(g['points'])} tests fixed on the "
                f"selection half, bounded on {g['members']} + {g['nonmembers']} other rows",
                "most it could prove": "—",
            }
        )
    if f:
        rows.append(
            {
                "audit": "f-DP one-run audit, canaries (Mahloujifar et al. 2024)",
                "proved ε ≥": claims.down(f["epsilon"]),
                "confidence": f"{conf:.0%}",
                "at δ": claims.delta(result["delta"]),
                "what it rests on": f"μ ≥ {claims.down(f['mu'])} from the guesses on {f['n_canaries']} canaries",
                "most it could prove": "—",
            }
        )
    tables = [pd.DataFrame(rows)] if rows else []
    roc = []
    for label, c in (("ordinary records", result.get("attack")), ("canaries", result.get("canary_attack"))):
        if c:
            roc.append(
                {
                    "scores": label,
                    "AUC": f"{c['auc']:.3f}",
                    "TPR at 1% FPR": f"{c['tpr_at_1pct_fpr']:.1%}",
                    "TPR at 0.1% FPR": f"{c['tpr_at_0.1pct_fpr']:.1%}",
                    "members / non-members": f"{c['n_members']:,} / {c['n_nonmembers']:,}",
                }
            )
    if roc:
        tables.append(pd.DataFrame(roc))
    paras = [
        f"{result['rows']:,} scored records. Every ε below is a *lower* bound at {conf:.0%} confidence for "
        f"datasets that differ by adding or removing one record, at δ = {claims.delta(result['delta'])}: what "
        "these scores prove, not that the model is private."
    ]
    mech = result.get("mechanism")
    if mech:
        stated = (
            f"ε = {mech['epsilon']:g}, δ = {claims.delta(mech['delta'])}"
            if mech["kind"] == "epsilon"
            else f"DP-SGD with noise multiplier {mech['noise_multiplier']:g}, sample rate {mech['sample_rate']:g} "
            f"and {mech['steps']:,} steps"
        )
        ceiling = result["ceiling"]
        paras.append(
            f"The stated mechanism ({stated}) claims ε ≤ {claims.up(result['claimed_epsilon'])} at δ = "
            f"{claims.delta(result['delta'])}; the worst case it allows: TPR ≤ "
            f"{claims.percent(ceiling['tpr_at_1pct_fpr'], up=True)} at 1% FPR and "
            f"{claims.percent(ceiling['tpr_at_0.1pct_fpr'], up=True)} at 0.1%, both rounded up ({ceiling['source']})."
        )
        paras.append(result["verdict"]["words"])
    title = "Audit of your model" + (f": {name}" if name else "")
    return Section(
        title,
        paras,
        [audit_figs.roc_chart(result)],
        tables,
        {"verdict": result.get("verdict"), "audit": summary(result, name)},
    )


def summary(result: dict, name: str | None = None) -> str:
    """The audit in one sentence for a report's executive summary: the largest proved lower bound with its
    confidence, δ and relation, and with a stated mechanism whether it contradicts the claim."""
    # the page's headline and the verdict's number (model_audit.proved): the larger of two bounds each at 95% is
    # not a 95% bound (it said 4.09 on the example beside the verdict's 3.93)
    proved = (result.get("proved") or model_audit.proved(result))["epsilon"]
    what = f"your model's membership scores{f' ({name})' if name else ''}"
    text = (
        f"An audit of {what} proves ε ≥ **{claims.down(proved)}** at {model_audit.proved_words(result)} "
        f"(δ = {claims.delta(result['delta'])}, adding or removing one record): a lower bound, not a guarantee"
        if proved > 0
        else f"An audit of {what} proves no leak (ε ≥ 0) at {result['confidence']:.0%} confidence"
    )
    verdict = result.get("verdict")
    if verdict is not None:
        text += (
            f"; it **contradicts** the claimed ε = {claims.up(result['claimed_epsilon'])}"
            if verdict["contradicts"]
            else f"; it does not contradict the claimed ε = {claims.up(result['claimed_epsilon'])}"
        )
    return text + "."


def audit_report(result: dict, name: str | None = None) -> str:
    """A self-contained HTML report of one audit (the page's download)."""
    settings = {
        "scores file": name or "—",
        "δ": claims.delta(result["delta"]),
        "confidence": f"{result['confidence']:.0%}",
        "neighbouring datasets": "add or remove one record",
    }
    return render([audit_section(result, name)], settings, title="DP Explorer: audit of your model")
