"""The report's sections for signed statements: a privacy statement (training run, sweep, query ledger) and the
advisor's decision record, each as its facts in a table (every cell escaped), its words and its worst-case chart.

Apart from :mod:`dpcore.report.document` (the report's frame and its story sections), which calls these from ``build``.
"""

from __future__ import annotations

import pandas as pd

from dpcore import claims
from dpcore.report.document import Section
from dpcore.training.config import accountant_name, dataset_name, model_name


def _fmt(x, spec=".3g") -> str:
    return "—" if x is None else format(float(x), spec)


def _noise_fact(st: dict) -> str:
    if st.get("reproducible_noise"):
        return f"REPRODUCIBLE (seeded) noise: not a DP release. {st.get('noise_source') or ''}".strip()
    return st.get("noise_source") or "secure random source (never stored or shown)"


def _eps_table(rows: list[dict]) -> pd.DataFrame:
    """ε at each δ of a statement, one row per distinct guarantee (a ledger of pure-ε answers gives the same
    δ = 0 row at every δ′: it is shown once)."""
    out = []
    for r in rows:
        row = {"δ": claims.delta(r["delta"], 3)}
        if "epsilon_pld" in r:
            row[f"ε, {accountant_name('pld')}"] = _fmt(r["epsilon_pld"])
            row.update(
                {
                    f"ε, {accountant_name(k.removeprefix('epsilon_'))}": _fmt(v)
                    for k, v in r.items()
                    if k.startswith("epsilon_") and k != "epsilon_pld"
                }
            )
        else:
            row["ε"] = _fmt(r.get("epsilon"))
            row["composition rule"] = r.get("rule") or ""
        if row not in out:
            out.append(row)
    return pd.DataFrame(out)


def _audit_fact(a: dict | None) -> str:
    if not a:
        return "no membership audit"
    return (
        f"empirical ε ≥ {claims.down(a.get('lower_bound'))} with {_fmt(a.get('confidence'), '.0%')} confidence "
        f"({_audit_counts(a)}, {'within' if a.get('within_claim') else 'ABOVE'} the claimed ε)"
    )


def _audit_counts(a: dict) -> str:
    if a.get("n_canaries") is not None:  # the one-run canary audit has guesses, not members / non-members
        return (
            f"one-run canary audit, {a.get('correct')} of {a.get('guesses')} guesses right on "
            f"{a.get('n_canaries')} canaries"
        )
    return f"{a.get('attack')} attack, {a.get('members')} members / {a.get('nonmembers')} non-members"


def statement_section(st: dict, name: str | None = None) -> Section:
    """A privacy statement (:mod:`dpcore.statements`) as a report section: its facts and ε at several δ as
    tables (every cell escaped), its summary, and its worst-case trade-off curve. Names that came from users
    (run labels, analysts, datasets) go in tables and the escaped title only, never through inline markdown.
    ``name``: what the section calls its subject (a sweep is named by what it is, never by its id)."""
    from dpcore.figures import advisor as adv_figs

    kind = st.get("kind")
    facts = {"unit of privacy": st.get("unit_of_privacy"), "neighbour relation": st.get("neighbour_relation")}
    tables: list[pd.DataFrame] = []
    paras = []
    if kind == "training_run":
        title = f"Privacy statement: training run {st.get('label') or st.get('subject')}"
        facts.update(
            {
                "run": st.get("subject"),
                "dataset": dataset_name(st.get("dataset")),
                "model": model_name(st.get("model")),
                "training rows": st.get("rows"),
            }
        )
    elif kind == "sweep":
        title = f"Privacy statement: sweep {name or st.get('name') or dataset_name(st.get('dataset'))}"
        facts.update(
            {
                "dataset": dataset_name(st.get("dataset")),
                "model": model_name(st.get("model")),
                "training rows": st.get("rows"),
                "sampling": "Poisson (each record joins each batch independently with probability q)",
            }
        )
    else:  # the dataset by its name (a 64-hex fingerprint titled it once), every answer by anyone
        subj, share = st.get("subject") or {}, st.get("quota_share") or {}
        title = f"Privacy statement: dataset {subj.get('dataset')}, every answer by anyone"
        facts.update(
            {"dataset": subj.get("dataset"), "answers released (everyone, never reset)": len(st.get("queries") or [])}
        )
        if share:
            facts[f"of which {share.get('analyst')}'s quota (since its last reset)"] = (
                f"{share.get('answers')} answers, ε = {_fmt(share.get('epsilon'))}"
            )
    if kind != "sweep":
        samp = st.get("sampling") or {}
        facts["sampling"] = (
            str(samp.get("scheme")) + (f", q = {samp['sample_rate']:.4g}" if samp.get("sample_rate") else "")
            if samp
            else "—"
        )
        mech = st.get("mechanism") or {}
        if mech.get("noise_multiplier") is not None:
            facts["mechanism"] = (
                f"{mech.get('name')}: noise multiplier {mech['noise_multiplier']:.4g}, "
                f"q = {mech['sample_rate']:.4g}, {mech['steps']} steps, clip {mech.get('clip')}"
            )
        acc = st.get("accountant") or {}
        if acc:
            facts["accountant"] = (
                f"{accountant_name(acc.get('name'))}: ε = {_fmt(acc.get('epsilon'))} at "
                f"δ = {claims.delta(acc.get('delta'))}"
            )
        if (st.get("mu") or {}).get("value") is not None:
            facts["μ (Gaussian DP)"] = f"{st['mu']['value']:.4g} — {st['mu']['kind']}"
        facts["audit"] = (
            _audit_fact(st.get("audit")) if st.get("audit") else (st.get("audit_note") or "no membership audit")
        )
    pre = st.get("preprocessing") or {}
    if pre:  # bounds declared public, or what the scaling read from the rows (not covered by ε)
        facts["preprocessing"] = pre.get("bounds", "") + ("; " + "; ".join(pre["leaks"]) if pre.get("leaks") else "")
    facts["noise"] = _noise_fact(st)
    if st.get("leaks"):  # what the run warned about: not covered by ε
        facts["not covered by ε"] = " · ".join(lk["text"] for lk in st["leaks"])
    facts["how to check"] = (
        "every number is recomputed from the statement's own inputs by python -m dpcore statement --verify FILE.json"
    )
    tables.append(pd.DataFrame({"": list(facts), "statement": ["—" if v is None else str(v) for v in facts.values()]}))
    if kind == "training_run" and not st.get("private"):
        paras.append("Not private: this run trained without DP, so no ε bounds what the model reveals about a record.")
        return Section(title, paras, [], tables)
    if kind == "sweep":
        pts = st.get("points") or []
        deltas = sorted({float(r["delta"]) for p in pts for r in p["epsilon_at_delta"]}, reverse=True)
        tables.append(
            pd.DataFrame(
                [
                    {
                        "target ε": f"{p.get('target_epsilon', 0):g}",
                        "seed": p.get("seed"),
                        "noise multiplier": _fmt(p["mechanism"]["noise_multiplier"], ".4g"),
                        "q": _fmt(p["mechanism"]["sample_rate"], ".4g"),
                        "steps": p["mechanism"]["steps"],
                        "ε (run's accountant)": f"{claims.up((p.get('accountant') or {}).get('epsilon'))} at δ = "
                        f"{claims.delta((p.get('accountant') or {}).get('delta'))}",
                        **{
                            f"ε at δ = {claims.delta(d)} (PLD)": next(
                                (claims.up(r.get("epsilon_pld")) for r in p["epsilon_at_delta"] if r["delta"] == d), "—"
                            )
                            for d in deltas
                        },
                        "μ (CLT, approx.)": _fmt((p.get("mu") or {}).get("value")),
                        "test accuracy (not covered by ε)": _fmt((p.get("diagnostics") or {}).get("test_accuracy")),
                        "audit": _audit_fact(p.get("audit")),
                        "noise": "reproducible: not a DP release" if p.get("reproducible_noise") else "secure",
                    }
                    for p in pts
                ]
            )
        )
        paras.append(
            f"{len(st.get('points') or [])} DP point(s). Each point's ε is an upper bound from its own "
            "accountant and from a privacy-loss distribution (PLD, Google's dp-accounting library) at "
            "several δ; the audit is a lower bound measured by membership attacks on held-out rows."
        )
    elif st.get("epsilon_at_delta"):
        tables.append(_eps_table(st["epsilon_at_delta"]))
        paras.append(
            "ε at several δ, each an upper bound for the neighbour relation above (δ = 1e-5 and 1e-6, and "
            "the run's own δ; never δ = 1/n, which a mechanism publishing one row outright would meet)."
        )
    else:
        paras.append("Nothing spent: no queries were answered since the last reset.")
        return Section(title, paras, [], tables)
    if st.get("reproducible_noise"):
        paras.append(
            "**Warning:** some noise behind this statement was drawn from a seed (reproducible), so that "
            "part is not a DP release."
        )
    paras.append(
        "The chart is the worst-case ROC of a membership attacker: no attack's true- and false-positive "
        "rates lie above the curve."
    )
    return Section(title, paras, [adv_figs.statement_tradeoff_chart(st)], tables)


def advice_section(st: dict) -> Section:
    """The advisor's decision record (:mod:`dpcore.advisor.decision`) as a report section: the decision in words
    for a data-protection officer, its facts as a table, the feasible ε band and the worst-case ROC at the setting."""
    from dpcore.figures import advisor as adv_figs

    a = st["advice"]
    facts = {
        "question the risk limit bounds": st.get("question"),
        "neighbour relation": st.get("neighbour_relation"),
        "mechanism": a.get("mechanism_label"),
        "risk limit": a["risk"]["text"],
        "utility target": (a.get("utility") or {}).get("text") or "none",
        "recommended ε": f"{st['decision']['epsilon_text']} at δ = {claims.delta(a['delta'])}"
        if a["delta"]
        else f"{st['decision']['epsilon_text']} (δ = 0)",
        "feasible": "yes" if a["feasible"] else "no: the two conflict",
        "P[privacy loss > ε]": (a.get("privacy_loss_tail") or {}).get("text") or "— (pure ε-DP: never)",
        "accountant": a.get("accountant"),
        "how to check": "python -m dpcore statement --verify FILE.json solves the advice again from its inputs",
    }
    table = pd.DataFrame({"": list(facts), "decision record": ["—" if v is None else str(v) for v in facts.values()]})
    return Section(
        "Decision record: choosing ε from a risk limit",
        list(st.get("words") or []),
        [adv_figs.feasible_band_chart(a), adv_figs.advice_tradeoff_chart(a)],
        [table],
    )
