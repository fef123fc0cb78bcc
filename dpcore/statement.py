"""Privacy statements an auditor can check: for a finished training run, a sweep, or a query-ledger history.

A statement names the unit of privacy, the neighbour relation, the sampling assumption, the mechanism's own
parameters, the accountant with its ε at several δ (1e-5, 1e-6 and 1/n), μ where it applies, the worst-case
trade-off curve, the audit result with its confidence, and whether any part used reproducible noise. Every
number is recomputable from the statement alone: ``recompute`` names the dpcore function and its inputs, and
:func:`verify` re-derives them (a test does, and ``python -m dpcore statement --verify FILE`` too).
"""

from __future__ import annotations

import math

from . import claims
from .errors import DPError

STANDARD_DELTAS = (1e-5, 1e-6)
UNIT = "one patient's record (one row of the data)"
ADD_REMOVE = "add/remove one record"
_TOL = 1e-6


def _deltas(n: int | None) -> list[float]:
    out = list(STANDARD_DELTAS)
    if n:
        out.append(1.0 / int(n))
    return out


def dpsgd_block(noise_multiplier: float, sample_rate: float, steps: int, deltas, *, accountant: str | None = None,
                tradeoff: dict | None = None) -> dict:
    """ε at each δ (PLD, and the run's own accountant), μ (CLT, an approximation) and the trade-off curve."""
    from .attacks import audit
    from .training import accounting

    s, q, t = float(noise_multiplier), float(sample_rate), int(steps)
    rows = []
    for d in deltas:
        row = {"delta": float(d), "epsilon_pld": accounting.pld_epsilon(s, q, t, d)}
        if accountant in accounting.ACCOUNTANTS:
            row[f"epsilon_{accountant}"] = accounting.epsilon(s, q, t, d, accountant)
        rows.append(row)
    curve = tradeoff if tradeoff and tradeoff.get("fpr") else accounting.dpsgd_tradeoff(s, q, t)
    return {
        "mechanism": {"name": "DP-SGD: Poisson-subsampled Gaussian", "noise_multiplier": s, "sample_rate": q,
                      "steps": t},
        "sampling": {"scheme": "Poisson", "sample_rate": q,
                     "assumption": "each record joins each batch independently with probability q"},
        "epsilon_at_delta": rows,
        "mu": {"value": audit.gdp_mu(s, q, t) if t > 0 else 0.0,
               "kind": "Gaussian-DP μ by the central limit theorem (Bu et al. 2020): an approximation, not a bound"},
        "tradeoff": {"fpr": list(curve["fpr"]), "tpr": list(curve["tpr"]),
                     "source": "dp_accounting PLD (pessimistic): no attack's ROC lies above it"},
        "recompute": {"epsilon_pld": "dpcore.training.accounting.pld_epsilon(noise_multiplier, sample_rate, steps, delta)",
                      "tradeoff": "dpcore.training.accounting.dpsgd_tradeoff(noise_multiplier, sample_rate, steps, fpr)",
                      "inputs": {"noise_multiplier": s, "sample_rate": q, "steps": t}},
    }


def _noise(result: dict) -> dict:
    if "reproducible_noise" in result:
        rep = bool(result["reproducible_noise"])
        return {"reproducible_noise": rep, "noise_source": result.get("noise_source"),
                "dp_release": bool(result.get("dp_release", not rep))}
    return {"reproducible_noise": True, "dp_release": False,
            "noise_source": "not recorded: runs made before the noise source was recorded seeded sampling and noise "
                            "from the public seed (reproducible: not a DP release)"}


def for_job(job_id: str, *, caller) -> dict:
    """Statement for a finished training run (a background job of target ``"train"``), for a caller who may read
    it (``caller``: a :class:`dpcore.jobs.owners.Caller`; someone else's run is NotYours)."""
    from .jobs import store
    from .training.results import TrainMetrics

    job = store.get(job_id, caller=caller, history=False)
    m = TrainMetrics.from_job(job) if job["status"] == "done" else None
    if m is None:
        raise DPError(f"job {job_id} is {job['status']}: a statement needs a finished run")
    # the noise source from the stored dict: a result written before it was recorded lacks the key (seeded)
    out = {"kind": "training_run", "subject": job_id, "label": job.get("label"),
           "unit_of_privacy": UNIT, "neighbour_relation": ADD_REMOVE,
           "dataset": m.dataset or None, "model": m.model or None, "rows": m.n_train, **_noise(job["result"])}
    if not m.private:
        out.update(private=False, epsilon=None,
                   summary="not private: trained without DP; no ε bounds what it reveals about a record")
        return out
    out["private"] = True
    if m.noise_multiplier is None:  # diffprivlib: pure ε, no sampling
        out.update(accountant={"name": m.accountant, "epsilon": m.epsilon, "delta": 0.0},
                   epsilon_at_delta=[{"delta": 0.0, "epsilon": m.epsilon}],
                   sampling={"scheme": "none (the whole data set in one pass)"},
                   summary=f"ε = {m.epsilon:g} (pure, δ = 0), add/remove one record")
        return out
    block = dpsgd_block(m.noise_multiplier, m.sample_rate, m.steps, _deltas(m.n_train), accountant=m.accountant)
    out.update(block)
    out["mechanism"]["clip"] = m.clip
    out["accountant"] = {"name": m.accountant, "epsilon": m.epsilon, "delta": m.delta,
                         "note": "the run's own accountant (PRV or RDP), an upper bound"}
    out["audit"] = None
    out["audit_note"] = ("no membership audit was run for this training run; a privacy–utility sweep audits each "
                         "of its points (python -m dpcore statement --sweep ID)")
    out["summary"] = _summary(out)
    return out


def _summary(st: dict) -> str:
    a = st.get("accountant") or {}
    parts = [f"ε = {claims.up(a['epsilon'])} at δ = {claims.delta(a['delta'])} ({a.get('name')})"] if a.get("epsilon") is not None else []
    parts += [f"ε = {claims.up(r['epsilon_pld'])} at δ = {claims.delta(r['delta'])} (PLD)" for r in st.get("epsilon_at_delta", [])
              if "epsilon_pld" in r]
    text = "; ".join(parts) + f"; {st['neighbour_relation']}; unit: {st['unit_of_privacy']}"
    if st.get("reproducible_noise"):
        text += "; REPRODUCIBLE NOISE: not a DP release"
    return text


def for_point(p: dict, *, rows: int | None = None, accountant: bool = False) -> dict:
    """One DP-SGD point of a sweep: ε at δ = 1e-5, 1e-6 and 1/n (PLD; with ``accountant`` also the run's own
    accountant recomputed), μ, the worst-case ROC it stored (``p["tradeoff"]``, the PLD of what was run), the
    run's own claim and its audit. ``n`` is the rows the point trained on (canaries included), else ``rows``."""
    if not (p.get("noise_multiplier") and p.get("sample_rate") and p.get("steps")):
        raise DPError("this model has no DP-SGD noise multiplier, sample rate and steps to state")
    n = p.get("n_train") or rows
    blk = dpsgd_block(p["noise_multiplier"], p["sample_rate"], p["steps"], _deltas(n),
                      accountant=p.get("accountant") if accountant else None, tradeoff=p.get("tradeoff"))
    e = p.get("empirical_epsilon") or {}
    blk.update({"target_epsilon": p["epsilon"], "seed": p.get("seed"), "test_accuracy": p.get("test_accuracy"),
                "rows": n,
                "accountant": {"name": p.get("accountant"), "epsilon": p.get("epsilon_spent"),
                               "delta": p.get("delta")},
                "audit": None if not e else {k: e.get(k) for k in (
                    "lower_bound", "confidence", "delta", "attack", "members", "nonmembers", "tp", "fp",
                    "n_canaries", "guesses", "correct", "max_certifiable", "within_claim", "method")},
                **_noise(p)})
    return blk


def ceiling_tpr(blk: dict, fpr: float) -> float:
    """The worst-case TPR at ``fpr`` on a block's trade-off curve (interpolated in log FPR; the curve is
    concave, so this under-states the ceiling by at most the grid's spacing: for words, not for proofs)."""
    import numpy as np

    f = np.asarray(blk["tradeoff"]["fpr"], float)
    t = np.asarray(blk["tradeoff"]["tpr"], float)
    keep = f > 0
    return float(np.interp(np.log(fpr), np.log(f[keep]), t[keep]))


def gap_words(blk: dict, mia: dict | None = None, *, labels: dict | None = None) -> str:
    """The gap between the proven ε (the accountant's upper bound) and the measured one (the audit's lower
    bound) of one :func:`for_point` block, in words; with the point's ``mia`` results, also at 1% FPR: the
    worst-case TPR against the best measured attack's."""
    a = blk.get("accountant") or {}
    claimed, d = a.get("epsilon"), a.get("delta")
    if claimed is None:
        row = blk["epsilon_at_delta"][0]
        claimed, d = row["epsilon_pld"], row["delta"]
    name = str(a.get("name") or "PLD").upper()
    text = f"**Proven:** ε ≤ {claims.up(claimed)} at δ = {claims.delta(d)} (add/remove one record; {name} accountant)."
    au = blk.get("audit")
    if not au or au.get("lower_bound") is None:
        return text + " No audit was run on this model, so nothing was measured."
    lb, conf = float(au["lower_bound"]), au.get("confidence") or 0.95
    who = "the canary audit" if au.get("attack") == "canary" else "the audit"
    if lb > claimed + 1e-9:
        return text + (f" **Measured:** {who} proves ε ≥ {claims.down(lb)} ({conf:.0%} confidence) — *above* the proven ε: "
                       f"a bug in training or accounting (or the {1 - conf:.0%} chance that a {conf:.0%} bound is wrong); "
                       "please report it.")
    if lb <= 0:
        text += (f" **Measured:** {who} proves nothing (ε ≥ 0 at {conf:.0%} confidence). The whole gap of "
                 f"{claims.up(claimed)} is unmeasured")
    else:
        text += (f" **Measured:** {who} proves ε ≥ {claims.down(lb)} ({conf:.0%} confidence). The gap, {claimed - lb:.2f}, "
                 f"means the attacks showed {lb / claimed:.0%} of what the accountant allows")
    text += (": either attackers on this model are weaker than the worst case the accountant allows for, or "
             "these attacks are not the strongest — the proven bound is what holds against every attacker.")
    cert = au.get("max_certifiable")
    if cert is not None and cert < claimed:
        text += (f" This audit could not have proved more than ε ≈ {cert:.1f} even with every guess right, "
                 "so it cannot close the gap.")
    measured = {k: v["tpr_at_1pct_fpr"] for k, v in (mia or {}).items() if v.get("tpr_at_1pct_fpr") is not None}
    if measured and blk.get("tradeoff", {}).get("fpr"):
        best = max(measured, key=measured.get)
        name = (labels or {}).get(best, best)
        text += (f" At 1% false positives the worst case lets an attacker catch {claims.percent(ceiling_tpr(blk, 0.01), up=True)} of "
                 f"members; the best attack measured caught {measured[best]:.1%} ({name}).")
    return text


def for_sweep(sweep_id: str, *, caller) -> dict:
    """Statement for a stored privacy–utility sweep: one block per DP point, with its audit (for a caller who
    may read the sweep)."""
    from .sweep import runs as sweep_runs

    rec = sweep_runs.load(sweep_id, caller=caller)
    result = rec.get("result")
    if not result or not result.get("points"):
        raise DPError(f"sweep {sweep_id!r} has no finished points yet; a statement needs finished points")
    cfg = rec.get("config") or {}
    points = [for_point(p, rows=cfg.get("train_size"), accountant=True) for p in result["points"]
              if p.get("noise_multiplier") and p.get("sample_rate") and p.get("steps")]
    if not points:
        raise DPError(f"sweep {sweep_id!r} has no DP-SGD points to state (only a baseline or diffprivlib models)")
    return {"kind": "sweep", "subject": sweep_id, "name": rec.get("name"), "unit_of_privacy": UNIT,
            "neighbour_relation": ADD_REMOVE, "dataset": cfg.get("dataset"), "model": cfg.get("model"),
            "rows": cfg.get("train_size"), "points": points,
            "reproducible_noise": any(pt["reproducible_noise"] for pt in points),
            "summary": f"{len(points)} DP point(s); each bounded by its own accountant and audited on held-out "
                       "rows (lower bound at the stated confidence)"}


def for_ledger(analyst: str, dataset: str, *, n_rows: int | None = None, path=None) -> dict:
    """Statement for an analyst's query history on one dataset (the spends since the last reset)."""
    from .attacks import audit
    from .queries import answering, ledger
    from .noise import composition

    spends = ledger.spends_since_reset(analyst, dataset, path=path)
    entries, mechs, replace_one, seeded = [], set(), False, False
    for e in spends:
        ans = e.get("answer") if isinstance(e.get("answer"), dict) else {}
        mech = ans.get("mechanism") or ("gaussian" if float(e.get("delta") or 0) > 0 else "laplace")
        mechs.add(mech)
        replace_one |= "PUBLIC N" in str(e.get("query") or "").upper()
        seeded |= ans.get("secure") is False
        (charge,) = answering.composition_entries([e])  # ε and δ as charged, ρ of the release
        entries.append({"epsilon": charge.epsilon, "delta": charge.delta, "rho": charge.rho,
                        "query": e.get("query"), "mechanism": mech})
    out = {"kind": "ledger", "subject": {"analyst": analyst, "dataset": dataset}, "unit_of_privacy": UNIT,
           "neighbour_relation": ADD_REMOVE + (" (MEAN with public n: replace one record)" if replace_one else ""),
           "sampling": {"scheme": "none: every query reads the whole (filtered) data"},
           "queries": entries, "reproducible_noise": seeded,
           "noise_source": "secure random source (diffprivlib release path)" if not seeded else
                           "some answers were drawn with a seed: reproducible, not a DP release"}
    if not entries:
        out.update(epsilon_at_delta=[], summary="no queries answered since the last reset: nothing spent")
        return out
    basic = composition.basic([x["epsilon"] for x in entries], [x["delta"] for x in entries])
    rows = [_best_at(entries, d) for d in _deltas(n_rows)]
    out["accountant"] = {"name": "basic composition (what the ledger charges)", "epsilon": basic[0], "delta": basic[1]}
    out["epsilon_at_delta"] = rows
    profile = [(basic[0], basic[1])] + [(r["epsilon"], r["delta"]) for r in rows if r["epsilon"] is not None]
    import numpy as np

    from .training.accounting import TRADEOFF_FPR

    fpr = np.asarray(TRADEOFF_FPR)
    out["tradeoff"] = {"fpr": fpr.tolist(),
                       "tpr": audit.roc_from_privacy_profile([p[0] for p in profile], [p[1] for p in profile],
                                                             fpr).tolist(),
                       "source": "the (ε, δ) guarantees above, each a valid bound: an upper envelope"}
    if mechs == {"gaussian"} and all(x["rho"] is not None for x in entries):  # ρ = μ²/2 for Gaussian answers
        rho = sum(float(x["rho"]) for x in entries)
        out["mu"] = {"value": math.sqrt(2 * rho), "kind": "exact Gaussian DP: μ = √(Σ Δ²/σ²) of the Gaussian answers"}
    out["audit"] = None
    out["recompute"] = {"accountant": "dpcore.noise.composition.basic(epsilons, deltas)",
                        "epsilon_at_delta": "dpcore.noise.composition.ledger_costs(queries, delta_prime)",
                        "tradeoff": "dpcore.attacks.audit.roc_from_privacy_profile(profile epsilons, deltas, fpr)"}
    out["summary"] = (f"{len(entries)} answers: ε = {claims.up(basic[0])}, δ = {claims.delta(basic[1], 3)} by basic "
                      "composition; "
                      + "; ".join(f"ε = {claims.up(r['epsilon'])} at δ = {claims.delta(r['delta'])} ({r['rule']})" for r in rows
                                  if r["epsilon"] is not None))
    return out


def _best_at(entries, d: float) -> dict:
    """The smallest ε among the composition rules whose total δ is at most d (δ′ = d for zCDP/RDP)."""
    from .noise import composition

    ok = [r for r in composition.ledger_costs(entries, d) if r["delta"] <= d * (1 + 1e-12)]
    if not ok:
        return {"delta_prime": d, "delta": d, "epsilon": None, "rule": "none: the queries' own δ exceed this δ"}
    best = min(ok, key=lambda r: r["epsilon"])
    return {"delta_prime": d, "delta": best["delta"], "epsilon": best["epsilon"], "rule": best["rule"]}


# --- checking a statement --------------------------------------------------------------------------------------


def _close(a, b, rel=_TOL) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-12)


def verify(st: dict) -> list[str]:
    """Recompute every number of a statement from its own inputs; returns the mismatches (empty = checks out)."""
    from .training import accounting
    from .noise import composition

    bad = []
    blocks = st.get("points") if st.get("kind") == "sweep" else [st]
    if st.get("kind") in ("training_run", "sweep"):
        for i, b in enumerate(blocks):
            if "recompute" not in b:
                continue
            x = b["recompute"]["inputs"]
            for r in b["epsilon_at_delta"]:
                e = accounting.pld_epsilon(x["noise_multiplier"], x["sample_rate"], x["steps"], r["delta"])
                if not _close(e, r["epsilon_pld"]):
                    bad.append(f"block {i}: ε at δ = {r['delta']:g} is {r['epsilon_pld']}, recomputed {e}")
            curve = accounting.dpsgd_tradeoff(x["noise_multiplier"], x["sample_rate"], x["steps"], b["tradeoff"]["fpr"])
            if any(not _close(a, c, 1e-6) for a, c in zip(curve["tpr"], b["tradeoff"]["tpr"])):
                bad.append(f"block {i}: the trade-off curve does not match its inputs")
    elif st.get("kind") == "ledger" and st.get("queries"):
        q = st["queries"]
        e, d = composition.basic([x["epsilon"] for x in q], [x["delta"] for x in q])
        if not (_close(e, st["accountant"]["epsilon"]) and _close(d, st["accountant"]["delta"])):
            bad.append("basic composition does not match the queries")
        for r in st["epsilon_at_delta"]:
            best = _best_at(q, r["delta_prime"])
            if not _close(best["epsilon"], r["epsilon"]):
                bad.append(f"ε at δ′ = {r['delta_prime']:g} is {r['epsilon']}, recomputed {best['epsilon']}")
    return bad
