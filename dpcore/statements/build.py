"""Privacy statements an auditor can check: for a finished training run, a sweep, or a dataset's query history.

A statement names the dataset (by its name, never a server path) and the unit of privacy that fits it (an image
for digits, a patient for the medical data, a record for an upload), the neighbour relation with what is treated
as public beside it (the number of training rows n and the list of classes), the sampling assumption, the
mechanism's own parameters and the run's public settings, the accountant with its ε at δ = 1e-5, 1e-6 and the
run's own δ, μ where it applies, the worst-case trade-off curve, the probability that the privacy loss exceeds ε
(where the posterior reading of ε fails), the audit with its confidence, and every leak its run warned about
(preprocessing from private rows, δ ≥ 1/n, reproducible noise, diagnostics on private rows). Diagnostics (test
accuracy) are labelled "not covered by ε" and rounded to what a chart needs.

Statements leave the server signed (:func:`issue`, :mod:`dpcore.statements.signing`); ``python -m dpcore statement --verify
FILE`` checks the signature and recomputes every figure from the recorded settings (:mod:`dpcore.statements.verify`).

A little over 400 lines, one idea: building statements — the three kinds (a run, a sweep, a dataset's query
history) share their blocks (DP-SGD ε at each δ, the loss tail, the leaks, the public settings); signing and
checking already live apart.
"""

from __future__ import annotations

import math

from dpcore import claims
from dpcore.errors import DPError
from dpcore.training.config import N_PUBLIC_NOTE
from dpcore.training.config import NOT_DP_NOTE as DIAGNOSTICS_NOTE

STANDARD_DELTAS = (1e-5, 1e-6)
UNIT = "one patient's record (one row of the data)"
ADD_REMOVE = "add/remove one record"
#: The relation of every training run and sweep: n and the list of classes are released exactly (they fix the
#: sample rate and the step count; a naive Bayes model's class counts sum to n), so they are treated as public.
ADD_REMOVE_N_PUBLIC = "add/remove one record; the number of training rows n and the list of classes are public"


def issue(st: dict) -> dict:
    """A statement as it leaves the server: signed with the home's key (:func:`dpcore.statements.signing.sign`)."""
    from dpcore.statements import signing

    return signing.sign(st)


def _deltas(own: float | None = None) -> list[float]:
    """The δ a statement states ε at: 1e-5, 1e-6 and the run's own δ (never 1/n: a mechanism that publishes one
    row outright meets δ = 1/n, so an ε there guarantees nothing)."""
    out = list(STANDARD_DELTAS)
    if own and not any(math.isclose(float(own), d) for d in out):
        out.append(float(own))
    return sorted(out, reverse=True)


def dpsgd_block(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    deltas,
    *,
    accountant: str | None = None,
    tradeoff: dict | None = None,
) -> dict:
    """ε at each δ (PLD, and the run's own accountant), μ (CLT, an approximation) and the trade-off curve."""
    from dpcore.attacks import audit
    from dpcore.training import accounting

    s, q, t = float(noise_multiplier), float(sample_rate), int(steps)
    rows = []
    for d in deltas:
        row = {"delta": float(d), "epsilon_pld": accounting.pld_epsilon(s, q, t, d)}
        if accountant in accounting.ACCOUNTANTS:
            row[f"epsilon_{accountant}"] = accounting.epsilon(s, q, t, d, accountant)
        rows.append(row)
    curve = tradeoff if tradeoff and tradeoff.get("fpr") else accounting.dpsgd_tradeoff(s, q, t)
    return {
        "mechanism": {
            "name": "DP-SGD: Poisson-subsampled Gaussian",
            "noise_multiplier": s,
            "sample_rate": q,
            "steps": t,
        },
        "sampling": {
            "scheme": "Poisson",
            "sample_rate": q,
            "assumption": "each record joins each batch independently with probability q",
        },
        "epsilon_at_delta": rows,
        "mu": {
            "value": audit.gdp_mu(s, q, t) if t > 0 else 0.0,
            "kind": "Gaussian-DP μ by the central limit theorem (Bu et al. 2020): an approximation, not a bound",
        },
        "tradeoff": {
            "fpr": list(curve["fpr"]),
            "tpr": list(curve["tpr"]),
            "source": "dp_accounting PLD (pessimistic): no attack's ROC lies above it",
        },
        "recompute": {
            "epsilon_pld": "dpcore.training.accounting.pld_epsilon(noise_multiplier, sample_rate, steps, delta)",
            "tradeoff": "dpcore.training.accounting.dpsgd_tradeoff(noise_multiplier, sample_rate, steps, fpr)",
            "loss_tail": "dpcore.advisor.dpsgd.dpsgd_loss_tail(noise_multiplier, sample_rate, steps, epsilon)",
            "inputs": {"noise_multiplier": s, "sample_rate": q, "steps": t},
        },
    }


def loss_tail_block(noise_multiplier: float, sample_rate: float, steps: int, epsilon: float, delta: float) -> dict:
    """P[privacy loss > ε] at the stated ε (an upper bound from the PLD): where the posterior reading of ε fails.
    δ bounds something else (the hockey-stick divergence); this probability can be many times δ."""
    from dpcore.advisor.dpsgd import dpsgd_loss_tail

    p = dpsgd_loss_tail(noise_multiplier, sample_rate, steps, epsilon)
    return {
        "epsilon": float(epsilon),
        "delta": float(delta),
        "probability": p,
        "meaning": f"with probability at most {claims.up(p, 2)} the privacy loss exceeds ε = {claims.up(epsilon)}: "
        "on those outputs an attacker's belief may move further than ε allows; δ is not this "
        "probability",
    }


def _noise(result: dict) -> dict:
    if "reproducible_noise" in result:
        rep = bool(result["reproducible_noise"])
        out = {
            "reproducible_noise": rep,
            "noise_source": result.get("noise_source"),
            "dp_release": bool(result.get("dp_release", not rep)),
        }
        if rep:
            from dpcore.training.config import REPRODUCIBLE_LABEL

            out["release_label"] = result.get("release_label") or REPRODUCIBLE_LABEL
        return out
    return {
        "reproducible_noise": True,
        "dp_release": False,
        "release_label": "reproducible noise: not a DP release",
        "noise_source": "not recorded: runs made before the noise source was recorded seeded sampling and noise "
        "from the public seed (reproducible: not a DP release)",
    }


def leaks(
    *, preprocessing=(), warnings=(), reproducible: bool = False, diagnostics: bool = True, public_n: bool = True
) -> list[dict]:
    """Everything a run warned about that ε does not cover, one entry each: preprocessing from private rows,
    δ ≥ 1/n, reproducible noise, diagnostics on private rows, and n (with the classes) treated as public."""
    from dpcore.training.config import REPRODUCIBLE_LABEL

    out = [{"kind": "preprocessing", "text": str(x)} for x in preprocessing]
    out += [{"kind": "delta", "text": str(x)} for x in warnings]
    if reproducible:
        out.append(
            {
                "kind": "reproducible_noise",
                "text": REPRODUCIBLE_LABEL + ": sampling and noise were drawn "
                "from the public seed, so anyone can re-run them; no ε holds",
            }
        )
    if diagnostics:
        out.append({"kind": "diagnostics", "text": DIAGNOSTICS_NOTE + "; they are not part of the release"})
    if public_n:
        out.append({"kind": "public_n", "text": N_PUBLIC_NOTE})
    return out


def _public(n, n_classes) -> dict:
    return {"rows": n, "classes": n_classes, "note": N_PUBLIC_NOTE}


#: Settings of a run that are public (chosen by whoever trains; the seed fixes only the split and initial weights).
PUBLIC_SETTINGS = (
    "model",
    "target",
    "epochs",
    "batch_size",
    "lr",
    "lr_schedule",
    "clip",
    "optimizer",
    "accountant",
    "seed",
    "train_size",
    "test_size",
    "hidden",
    "epsilon",
    "delta",
    "noise_multiplier",
)


def public_settings(config: dict | None, dataset: str | None) -> dict:
    """The run's settings as released: the dataset by name (an upload's server path never leaves), the rest as
    given (target ε, δ, epochs, batch size, learning rate, clip, optimiser, seed …)."""
    from dpcore.training.config import dataset_kind, dataset_name

    cfg = dict(config or {})
    out = {"dataset": dataset_name(dataset_kind(dataset if dataset is not None else cfg.get("dataset")))}
    out.update({k: cfg[k] for k in PUBLIC_SETTINGS if k in cfg})
    if "epsilon" in out:
        out["target_epsilon"] = out.pop("epsilon")
    return out


def for_job(job_id: str, *, caller) -> dict:
    """Statement for a finished training run (a background job of target ``"train"``), for a caller who may read
    it (``caller``: a :class:`dpcore.jobs.owners.Caller`; someone else's run is NotYours)."""
    from dpcore.jobs import registry, store
    from dpcore.training.config import dataset_kind, unit_of_privacy
    from dpcore.training.results import TrainMetrics

    job = store.get(job_id, caller=caller, history=False)
    registry.check_kind(job, registry.TRAIN)
    m = TrainMetrics.from_job(job) if job["status"] == "done" else None
    if m is None:
        raise DPError(f"job {job_id} is {job['status']}: a statement needs a finished run")
    result = job["result"] or {}
    noise = _noise(result)
    out = {
        "kind": "training_run",
        "subject": job_id,
        "label": job.get("label"),
        "dataset": public_settings(None, m.dataset)["dataset"],
        "dataset_kind": dataset_kind(m.dataset),
        "unit_of_privacy": unit_of_privacy(m.dataset),
        "neighbour_relation": ADD_REMOVE_N_PUBLIC,
        "public": _public(m.n_train, m.n_classes),
        "model": m.model or None,
        "rows": m.n_train,
        "settings": public_settings(result.get("config"), m.dataset),
        **noise,
        "preprocessing": _preprocessing((job.get("params") or {}).get("bounds"), m.bounds_note, m.leaks),
    }
    if not m.private:
        out.update(
            private=False,
            epsilon=None,
            neighbour_relation=ADD_REMOVE,
            leaks=leaks(preprocessing=m.leaks, reproducible=False, public_n=False),
            summary="not private: trained without DP; no ε bounds what it reveals about a record",
        )
        return out
    out["private"] = True
    out["leaks"] = leaks(preprocessing=m.leaks, warnings=m.warnings, reproducible=noise["reproducible_noise"])
    if m.noise_multiplier is None:  # diffprivlib: pure ε, no sampling
        out.update(
            accountant={"name": m.accountant, "epsilon": m.epsilon, "delta": 0.0},
            epsilon_at_delta=[{"delta": 0.0, "epsilon": m.epsilon}],
            sampling={"scheme": "none (the whole data set in one pass)"},
        )
        out["summary"] = _summary(out)
        return out
    block = dpsgd_block(m.noise_multiplier, m.sample_rate, m.steps, _deltas(m.delta), accountant=m.accountant)
    out.update(block)
    out["mechanism"]["clip"] = m.clip
    out["accountant"] = {
        "name": m.accountant,
        "epsilon": m.epsilon,
        "delta": m.delta,
        "note": "the run's own accountant (PRV or RDP), an upper bound",
    }
    out["loss_tail"] = loss_tail_block(m.noise_multiplier, m.sample_rate, m.steps, m.epsilon, m.delta)
    out["audit"] = None
    out["audit_note"] = (
        "no membership audit was run for this training run; a privacy–utility sweep audits each "
        "of its points (python -m dpcore statement --sweep ID)"
    )
    out["summary"] = _summary(out)
    return out


def _preprocessing(bounds, note, leaks) -> dict:
    from dpcore.training.bounds import preprocessing

    return preprocessing(bounds, note, leaks)


def _summary(st: dict) -> str:
    a = st.get("accountant") or {}
    parts = (
        [f"ε = {claims.up(a['epsilon'])} at δ = {claims.delta(a['delta'])} ({a.get('name')})"]
        if a.get("epsilon") is not None
        else []
    )
    parts += [
        f"ε = {claims.up(r['epsilon_pld'])} at δ = {claims.delta(r['delta'])} (PLD)"
        for r in st.get("epsilon_at_delta", [])
        if "epsilon_pld" in r
    ]
    text = "; ".join(parts) + f"; {st['neighbour_relation']}; unit: {st['unit_of_privacy']}"
    if (st.get("preprocessing") or {}).get("declared_public"):
        text += "; preprocessing bounds declared public by the data owner"
    elif (st.get("preprocessing") or {}).get("leaks"):
        text += "; preprocessing partly read from the rows (not covered by ε)"
    if st.get("reproducible_noise"):
        text += "; REPRODUCIBLE NOISE: not a DP release"
    return text


def for_point(p: dict, *, rows: int | None = None, accountant: bool = False) -> dict:
    """One DP-SGD point of a sweep: ε at δ = 1e-5, 1e-6 and its own δ (PLD; with ``accountant`` also the run's
    own accountant recomputed), μ, the worst-case ROC it stored (``p["tradeoff"]``, the PLD of what was run), the
    run's own claim, the privacy-loss tail, its audit, and its test accuracy as a diagnostic (not covered by ε).
    ``n`` is the rows the point trained on (canaries included), else ``rows``."""
    from dpcore.training.config import delta_warning

    if not (p.get("noise_multiplier") and p.get("sample_rate") and p.get("steps")):
        raise DPError("this model has no DP-SGD noise multiplier, sample rate and steps to state")
    n = p.get("n_train") or rows
    blk = dpsgd_block(
        p["noise_multiplier"],
        p["sample_rate"],
        p["steps"],
        _deltas(p.get("delta")),
        accountant=p.get("accountant") if accountant else None,
        tradeoff=p.get("tradeoff"),
    )
    e = p.get("empirical_epsilon") or {}
    noise = _noise(p)
    blk.update(
        {
            "target_epsilon": p["epsilon"],
            "seed": p.get("seed"),
            "rows": n,
            "diagnostics": {
                "not_covered_by_epsilon": True,
                "note": DIAGNOSTICS_NOTE,
                "test_accuracy": claims.diagnostic(p.get("test_accuracy")),
            },
            "accountant": {"name": p.get("accountant"), "epsilon": p.get("epsilon_spent"), "delta": p.get("delta")},
            "audit": None
            if not e
            else {
                k: e.get(k)
                for k in (
                    "lower_bound",
                    "confidence",
                    "delta",
                    "attack",
                    "members",
                    "nonmembers",
                    "tp",
                    "fp",
                    "n_canaries",
                    "guesses",
                    "correct",
                    "max_certifiable",
                    "within_claim",
                    "method",
                )
            },
            "leaks": leaks(
                preprocessing=p.get("leaks") or (),
                warnings=delta_warning(p.get("delta"), n),
                reproducible=noise["reproducible_noise"],
                public_n=False,
            ),
            **noise,
        }
    )
    if p.get("preprocessing"):
        blk["preprocessing"] = p["preprocessing"]
    if p.get("epsilon_spent") is not None and p.get("delta"):
        blk["loss_tail"] = loss_tail_block(
            p["noise_multiplier"], p["sample_rate"], p["steps"], p["epsilon_spent"], p["delta"]
        )
    return blk


def for_sweep(sweep_id: str, *, caller) -> dict:
    """Statement for a stored privacy–utility sweep: one block per DP point, with its audit (for a caller who
    may read the sweep)."""
    from dpcore.sweep import runs as sweep_runs
    from dpcore.training.config import dataset_kind, unit_of_privacy

    rec = sweep_runs.load(sweep_id, caller=caller)
    result = rec.get("result")
    if not result or not result.get("points"):
        raise DPError(f"sweep {sweep_id!r} has no finished points yet; a statement needs finished points")
    cfg = rec.get("config") or {}
    points = [
        for_point(p, rows=cfg.get("train_size"), accountant=True)
        for p in result["points"]
        if p.get("noise_multiplier") and p.get("sample_rate") and p.get("steps")
    ]
    if not points:
        raise DPError(f"sweep {sweep_id!r} has no DP-SGD points to state (only a baseline or diffprivlib models)")
    seen, all_leaks = set(), []
    for pt in points:
        for lk in pt["leaks"]:
            if (lk["kind"], lk["text"]) not in seen:
                seen.add((lk["kind"], lk["text"]))
                all_leaks.append(lk)
    all_leaks.append(
        {
            "kind": "diagnostics",
            "text": "each point's test accuracy and the membership attacks' results are " + DIAGNOSTICS_NOTE,
        }
    )
    all_leaks.append({"kind": "public_n", "text": N_PUBLIC_NOTE})
    return {
        "kind": "sweep",
        "subject": sweep_id,
        "name": rec.get("name"),
        "unit_of_privacy": unit_of_privacy(cfg.get("dataset")),
        "neighbour_relation": ADD_REMOVE_N_PUBLIC,
        "dataset": public_settings(None, cfg.get("dataset"))["dataset"],
        "dataset_kind": dataset_kind(cfg.get("dataset")),
        "model": cfg.get("model"),
        "rows": cfg.get("train_size"),
        "points": points,
        "leaks": all_leaks,
        **({"preprocessing": points[0]["preprocessing"]} if points[0].get("preprocessing") else {}),
        "reproducible_noise": any(pt["reproducible_noise"] for pt in points),
        "summary": f"{len(points)} DP point(s); each bounded by its own accountant and audited on held-out "
        "rows (lower bound at the stated confidence)",
    }


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
        return text + (
            f" **Measured:** {who} proves ε ≥ {claims.down(lb)} ({conf:.0%} confidence) — *above* the proven ε: "
            f"a bug in training or accounting (or the {1 - conf:.0%} chance that a {conf:.0%} bound is wrong); "
            "please report it."
        )
    if lb <= 0:
        text += (
            f" **Measured:** {who} proves nothing (ε ≥ 0 at {conf:.0%} confidence). The whole gap of "
            f"{claims.up(claimed)} is unmeasured"
        )
    else:
        text += (
            f" **Measured:** {who} proves ε ≥ {claims.down(lb)} ({conf:.0%} confidence). The gap, {claimed - lb:.2f}, "
            f"means the attacks showed {lb / claimed:.0%} of what the accountant allows"
        )
    text += (
        ": either attackers on this model are weaker than the worst case the accountant allows for, or "
        "these attacks are not the strongest — the proven bound is what holds against every attacker."
    )
    cert = au.get("max_certifiable")
    if cert is not None and cert < claimed:
        text += (
            f" This audit could not have proved more than ε ≈ {cert:.1f} even with every guess right, "
            "so it cannot close the gap."
        )
    measured = {k: v["tpr_at_1pct_fpr"] for k, v in (mia or {}).items() if v.get("tpr_at_1pct_fpr") is not None}
    if measured and blk.get("tradeoff", {}).get("fpr"):
        best = max(measured, key=measured.get)
        name = (labels or {}).get(best, best)
        ceiling = ceiling_tpr(blk, 0.01)
        text += (
            f" At 1% false positives the worst case lets an attacker catch {claims.percent(ceiling, up=True)} of "
            f"members; the best attack measured caught {measured[best]:.1%} ({name})."
        )
        if measured[best] > ceiling:  # the audit above already said whether anything is proved beyond the claim
            n = (mia or {}).get(best, {}).get("n_members")
            few = f"on {n:,} members one more caught moves it by {1 / n:.1%}" if n else "it is measured on a sample"
            text += (
                f" That is above the worst case only as a measured rate can be: {few}, so it is noisy, and "
                "one rate is no proof; the audit's bound, which allows for that noise, is the measurement that "
                "counts."
            )
    return text


def for_ledger(dataset: str, *, viewer, analyst: str | None = None, n_rows: int | None = None, path=None) -> dict:
    """Statement for a registered dataset's query history: what the dataset **as a whole** released — every answer
    by anyone, never reset: the guarantee to each person in it, under any number of names — and, beside it, the
    share of the viewer's quota (an admin: ``analyst``'s) since its last reset.

    ``viewer``: a checked :class:`~dpcore.budgets.identities.Identity`; a visitor or an analyst without a quota on
    the dataset is refused. Only an admin sees the other askers' query texts; everyone sees each answer's ε, δ and
    ρ, which is what the guarantee composes.
    """
    from dpcore.attacks import audit
    from dpcore.budgets import quotas
    from dpcore.noise import composition
    from dpcore.queries import answering

    status = quotas.status(viewer, dataset, analyst=analyst, path=path)
    n_rows = n_rows or status["n_rows"]
    spends = quotas.released(viewer, status["fingerprint"], path=path)
    mine = {e["id"] for e in status["spends"]} if status["quota"] else set()
    entries, mechs, replace_one, seeded = [], set(), False, False
    for e in spends:
        ans = e.get("answer") if isinstance(e.get("answer"), dict) else {}
        mech = ans.get("mechanism") or ("gaussian" if float(e.get("delta") or 0) > 0 else "laplace")
        mechs.add(mech)
        replace_one |= "PUBLIC N" in str(e.get("query") or "").upper()
        seeded |= ans.get("secure") is False
        (charge,) = answering.composition_entries([e])  # ε and δ as charged, ρ of the release
        entries.append(
            {
                "epsilon": charge.epsilon,
                "delta": charge.delta,
                "rho": charge.rho,
                "mechanism": mech,
                "query": e["query"] if (viewer.is_admin or e["id"] in mine) else None,
                "by_this_quota": e["id"] in mine,
            }
        )
    quota = status["quota"]
    out = {
        "kind": "ledger",
        "subject": {
            "dataset": status["dataset"],
            "fingerprint": status["fingerprint"],
            "analyst": quota["analyst"] if quota else None,
        },
        "unit_of_privacy": UNIT,
        "neighbour_relation": ADD_REMOVE + (" (MEAN with public n: replace one record)" if replace_one else ""),
        "sampling": {"scheme": "none: every query reads the whole (filtered) data"},
        "scope": "every answer ever released on this dataset, by every analyst and visitor (never reset): the "
        "guarantee to each person in it",
        "cap": status["cap"],
        "queries": entries,
        "reproducible_noise": seeded,
        "noise_source": "OpenDP's exact samplers, a secure random source"
        if not seeded
        else "some answers were drawn with a seed: reproducible, not a DP release",
    }
    own = [x for x in entries if x["by_this_quota"]]
    if quota:
        e, d = composition.basic([x["epsilon"] for x in own], [x["delta"] for x in own]) if own else (0.0, 0.0)
        out["quota_share"] = {
            "analyst": quota["analyst"],
            "answers": len(own),
            "epsilon": e,
            "delta": d,
            "note": "this quota's answers since its last reset: part of the dataset's total, not a separate guarantee",
        }
    if not entries:
        out.update(epsilon_at_delta=[], summary=f"no answers released on {status['dataset']!r} yet: nothing spent")
        return out
    basic = composition.basic([x["epsilon"] for x in entries], [x["delta"] for x in entries])
    rows = [_best_at(entries, d) for d in _deltas()]  # 1e-5 and 1e-6: never ε at δ = 1/n
    out["accountant"] = {
        "name": "basic composition of every answer on the dataset (what the cap is charged)",
        "epsilon": basic[0],
        "delta": basic[1],
    }
    out["epsilon_at_delta"] = rows
    profile = [(basic[0], basic[1])] + [(r["epsilon"], r["delta"]) for r in rows if r["epsilon"] is not None]
    import numpy as np

    from dpcore.training.accounting import TRADEOFF_FPR

    fpr = np.asarray(TRADEOFF_FPR)
    out["tradeoff"] = {
        "fpr": fpr.tolist(),
        "tpr": audit.roc_from_privacy_profile([p[0] for p in profile], [p[1] for p in profile], fpr).tolist(),
        "source": "the (ε, δ) guarantees above, each a valid bound: an upper envelope",
    }
    # No μ (Gaussian DP) here: every Gaussian answer is drawn from the *discrete* Gaussian, which is ρ-zCDP with
    # ρ = Δ²/(2σ²) (what the zCDP and RDP rows compose) but not μ-GDP with μ = √(2ρ): its trade-off curve rises above
    # that μ's (one COUNT at ε = 5, δ = 1e-6: TPR 0.70 at FPR 0.30 against 0.69). verification refuses the claim.
    out["audit"] = None
    out["recompute"] = {
        "accountant": "dpcore.noise.composition.basic(epsilons, deltas)",
        "epsilon_at_delta": "dpcore.noise.composition.ledger_costs(queries, delta_prime)",
        "tradeoff": "dpcore.attacks.audit.roc_from_privacy_profile(profile epsilons, deltas, fpr)",
    }
    share = (
        f"; of these, {quota['analyst']!r} asked {len(own)} since the quota's last reset (ε = "
        f"{claims.up(out['quota_share']['epsilon'])})"
        if quota
        else ""
    )
    out["summary"] = (
        f"The dataset {status['dataset']!r} as a whole released {len(entries)} answers, by everyone "
        f"who asked: ε = {claims.up(basic[0])}, δ = {claims.delta(basic[1], 3)} by basic composition; "
        + "; ".join(
            f"ε = {claims.up(r['epsilon'])} at δ = {claims.delta(r['delta'])} ({r['rule']})"
            for r in rows
            if r["epsilon"] is not None
        )
        + share
    )
    return out


def _best_at(entries, d: float) -> dict:
    """The smallest ε among the composition rules whose total δ is at most d (δ′ = d for zCDP/RDP)."""
    from dpcore.noise import composition

    ok = [r for r in composition.ledger_costs(entries, d) if r["delta"] <= d * (1 + 1e-12)]
    if not ok:
        return {"delta_prime": d, "delta": d, "epsilon": None, "rule": "none: the queries' own δ exceed this δ"}
    best = min(ok, key=lambda r: r["epsilon"])
    return {"delta_prime": d, "delta": best["delta"], "epsilon": best["epsilon"], "rule": best["rule"]}
