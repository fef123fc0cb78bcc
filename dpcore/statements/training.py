"""The statement of a finished training run (:func:`for_job`) and its recomputation (:func:`check`).

It names the dataset (by its name, never a server path) and the unit of privacy that fits it (an image for
digits, a patient for the medical data, a record for an upload), the neighbour relation with what is treated as
public beside it (the number of training rows n and the list of classes), the sampling assumption, the
mechanism's own parameters and the run's public settings, the accountant with its ε at δ = 1e-5, 1e-6 and the
run's own δ, μ where it applies, the worst-case trade-off curve, the probability that the privacy loss exceeds ε,
and every leak its run warned about. A release ships it with the weights, each covered by SHA-256
(:func:`dpcore.statements.release.release_files`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dpcore import claims, nist
from dpcore.attacks import fdp, last_iterate, one_run
from dpcore.budgets import gate
from dpcore.errors import DPError
from dpcore.jobs import registry, store
from dpcore.statements import dpsgd
from dpcore.statements.checks import Checker, get, num, obj
from dpcore.statements.common import (
    ADD_REMOVE,
    ADD_REMOVE_N_PUBLIC,
    N_PUBLIC_NOTE,
    check_noise,
    deltas,
    leak_kinds,
    leaks,
    noise,
    public,
    public_settings,
)
from dpcore.training import accounting
from dpcore.training.bounds import preprocessing as _preprocessing
from dpcore.training.config import dataset_kind, dataset_name, unit_of_privacy
from dpcore.training.results import TrainMetrics

Json = dict[str, Any]
KIND = "training_run"


def for_job(job_id: str, *, caller: Any) -> Json:
    """Statement for a finished training run (a background job of target ``"train"``), for a caller who may read
    it (``caller``: a :class:`dpcore.jobs.owners.Caller`; someone else's run is NotYours), with NIST SP 800-226's
    checks. Unsigned: :func:`dpcore.statements.release.signed_statement` signs it with the files it ships with."""
    out = _for_job(job_id, caller=caller)
    out["nist"] = nist.for_statement(out)
    return out


def _for_job(job_id: str, *, caller: Any) -> Json:
    job = store.get(job_id, caller=caller, history=False)
    registry.check_kind(job, registry.TRAIN)
    m = TrainMetrics.from_job(dict(job)) if job["status"] == "done" else None
    if m is None:
        raise DPError(f"job {job_id} is {job['status']}: a statement needs a finished run")
    result = job["result"] or {}
    nz = noise(result)
    out: Json = {
        "kind": KIND,
        "subject": job_id,
        "label": job.get("label"),
        "dataset": public_settings(None, m.dataset)["dataset"],
        "dataset_kind": dataset_kind(m.dataset),
        "unit_of_privacy": unit_of_privacy(m.dataset),
        "neighbour_relation": ADD_REMOVE_N_PUBLIC,
        "public": public(m.n_train, m.n_classes),
        "model": m.model or None,
        "rows": m.n_train,
        "settings": public_settings(result.get("config"), m.dataset),
        **nz,
        "preprocessing": _preprocessing((job.get("params") or {}).get("bounds"), m.bounds_note, m.leaks),
        "budget": gate.statement_block(job=job_id, uploaded=dataset_kind(m.dataset) in ("csv", "upload")),
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
    out["leaks"] = leaks(preprocessing=m.leaks, warnings=m.warnings, reproducible=nz["reproducible_noise"])
    if m.noise_multiplier is None:  # diffprivlib: pure ε, no sampling
        out.update(
            accountant={"name": m.accountant, "epsilon": m.epsilon, "delta": 0.0},
            epsilon_at_delta=[{"delta": 0.0, "epsilon": m.epsilon}],
            sampling={"scheme": "none (the whole data set in one pass)"},
        )
        out["summary"] = summary(out)
        return out
    s, q, t = float(m.noise_multiplier), float(m.sample_rate or 0), int(m.steps or 0)
    if m.epsilon is None or m.delta is None:
        raise DPError(f"job {job_id}'s result has no ε and δ: run it again to state it")
    out.update(dpsgd.block(s, q, t, deltas(m.delta), accountant=m.accountant))
    out["mechanism"]["clip"] = m.clip
    out["accountant"] = {
        "name": m.accountant,
        "epsilon": m.epsilon,
        "delta": m.delta,
        "note": "the run's own accountant (PRV or RDP), an upper bound",
    }
    out["loss_tail"] = dpsgd.loss_tail(s, q, t, m.epsilon, m.delta)
    out["audit"] = audit_block(m)
    if out["audit"] is None:
        out["audit_note"] = (
            "no canary audit was run for this training run (too few training rows, or none asked for); a "
            "privacy–utility sweep audits each of its points (python -m dpcore statement --sweep ID)"
        )
    if m.accounting_check:  # only that it passed: what it observed is a function of the secret noise and sampling
        out["accounting_check"] = {"passed": bool(m.accounting_check.get("passed")), "note": ACCOUNTING_CHECK_NOTE}
    out["summary"] = summary(out)
    return out


#: What the statement's audit is, in its own words: a measurement, and why ε covers it.
AUDIT_LABEL = (
    "measurement: what this run's own canaries prove at 95%, a lower bound on ε, never a guarantee (a better attack "
    "could prove more). Computed from the released model and the canaries alone — public inputs with labels at "
    "random, each put in training by a secret fair coin — so it is covered by ε like the model"
)
HEURISTIC_LABEL = "heuristic: what auditing only the final model can be expected to show; not a bound"
ACCOUNTING_CHECK_NOTE = (
    "the batches drawn, the records in them and the noise added were counted during training and matched the "
    "accountant's steps, sample rate and noise multiplier (dpcore.training.accounting_check); ε is claimed only then"
)


def audit_block(m: TrainMetrics) -> Json | None:
    """The run's own canary audit as its statement states it (labelled a measurement): the one-run (ε, δ) bound with
    every guess count it tried (so that it is recomputed), the f-DP audit of the same guesses, the last-iterate
    heuristic. None without canaries. The scores audit on private records stays in the diagnostics."""
    a = m.audit or {}
    one = obj(a.get("one_run"))
    if one.get("lower_bound") is None:
        return None
    f = obj(a.get("one_run_fdp"))
    h = obj(a.get("heuristic"))
    out: Json = {
        "label": AUDIT_LABEL,
        **{k: one.get(k) for k in dpsgd.AUDIT_FIELDS if k in one},
        "tried": one.get("tried"),
        "within_claim": bool(m.epsilon is not None and one["lower_bound"] <= m.epsilon + 1e-9),
    }
    if f.get("mu") is not None:  # the whole f-DP audit: its guess counts recompute every figure
        out["fdp"] = {k: v for k, v in f.items() if k != "max_provable"}
    if h.get("epsilon") is not None:
        out["heuristic"] = {"epsilon": h["epsilon"], "label": HEURISTIC_LABEL, "method": h.get("method")}
    return out


def _fdp_again(f: Mapping[str, Any]) -> fdp.FdpAudit:
    try:
        return fdp.rebound(dict(f), float(f["confidence"]))
    except (KeyError, TypeError) as err:
        raise DPError(f"the f-DP audit is incomplete ({err})") from None


def check_audit(c: Checker, st: Mapping[str, Any]) -> None:
    """A run's audit recomputed from the guess counts it records: the one-run bound (Steinke et al.), the f-DP μ and ε
    (Mahloujifar et al.), whether it is within the claim, and the heuristic from σ, q and T."""
    a = obj(st.get("audit"))
    if not a:
        return
    m: Any = a.get("n_canaries")
    d: Any = a.get("delta")
    conf: Any = a.get("confidence")
    tried: Any = a.get("tried")
    if not (c.need("audit.n_canaries", m) and c.need("audit.delta", d) and c.need("audit.confidence", conf)):
        return
    if not isinstance(tried, list) or not tried:
        c.fail("audit.tried", "audit.tried is missing: the guess counts the bound is recomputed from")
        return
    pairs = tuple((int(g), int(k)) for g, k in tried)
    got = c.run("audit.tried", one_run.bound_at, int(m), pairs, float(d), 1.0 - float(conf))
    if got is not None:
        c.same("audit.lower_bound", a.get("lower_bound"), got[0])
    eps = get(st, "accountant.epsilon")
    if num(a.get("lower_bound")) and num(eps):
        c.same("audit.within_claim", a.get("within_claim"), a["lower_bound"] <= eps + 1e-9, 0)
    f = obj(a.get("fdp"))
    if f:
        re = c.run("audit.fdp", _fdp_again, f)
        if re is not None:
            for k in ("mu", "epsilon", "epsilon_gaussian"):
                c.same(f"audit.fdp.{k}", f.get(k), getattr(re, k))
    h = obj(a.get("heuristic"))
    mech = obj(st.get("mechanism"))
    if h and all(num(mech.get(k)) for k in ("noise_multiplier", "sample_rate", "steps")) and num(d):
        c.same(
            "audit.heuristic.epsilon",
            h.get("epsilon"),
            c.run(
                "audit.heuristic",
                last_iterate.heuristic_epsilon,
                mech["noise_multiplier"],
                mech["sample_rate"],
                int(mech["steps"]),
                float(d),
            ),
        )


def summary(st: Mapping[str, Any]) -> str:
    """The statement in one line, from its figures: ε at each δ, the relation, the unit and what ε misses."""
    a = obj(st.get("accountant"))
    parts = (
        [f"ε = {claims.up(a['epsilon'])} at δ = {claims.delta(a['delta'])} ({a.get('name')})"]
        if a.get("epsilon") is not None
        else []
    )
    rows: Iterable[Any] = st.get("epsilon_at_delta") or []
    parts += [
        f"ε = {claims.up(r['epsilon_pld'])} at δ = {claims.delta(r['delta'])} (PLD)"
        for r in rows
        if isinstance(r, dict) and "epsilon_pld" in r
    ]
    text = "; ".join(parts) + f"; {st['neighbour_relation']}; unit: {st['unit_of_privacy']}"
    pre = obj(st.get("preprocessing"))
    if pre.get("declared_public"):
        text += "; preprocessing bounds declared public by the data owner"
    elif pre.get("leaks"):
        text += "; preprocessing partly read from the rows (not covered by ε)"
    if st.get("reproducible_noise"):
        text += "; REPRODUCIBLE NOISE: not a DP release"
    return text


def check(c: Checker, st: Mapping[str, Any]) -> None:
    """A training run's statement: its wording for its dataset, its leaks, and every figure recomputed (the sample
    rate and steps from n, batch size and epochs; the accountants' ε, the curve, μ and the loss tail)."""
    kind = st.get("dataset_kind")
    c.same("dataset", st.get("dataset"), dataset_name(kind), 0)
    c.same("unit_of_privacy", st.get("unit_of_privacy"), unit_of_privacy(kind), 0)
    if st.get("private") is not True:
        c.same("neighbour_relation", st.get("neighbour_relation"), ADD_REMOVE, 0)
        if st.get("private") is not False:
            c.fail("private", "private is missing (true for a DP run, false for a baseline)")
        return
    c.same("neighbour_relation", st.get("neighbour_relation"), ADD_REMOVE_N_PUBLIC, 0)
    c.same("public.rows", get(st, "public.rows"), st.get("rows"), 0)
    c.same("public.note", get(st, "public.note"), N_PUBLIC_NOTE, 0)
    check_noise(c, st)
    kinds = leak_kinds(st)
    for k, what in (("diagnostics", "diagnostics on private rows"), ("public_n", "n treated as public")):
        if k not in kinds:
            c.fail("leaks", f"leaks does not list the {what}")
    settings = obj(st.get("settings"))
    n: Any = st.get("rows")
    d: Any = settings.get("delta")
    if num(n) and num(d) and n > 0 and d >= 1 / n and "delta" not in kinds:
        c.fail("leaks", f"leaks does not list δ = {d:g} ≥ 1/n = 1/{n}, which its run warned about")
    if obj(st.get("mechanism")).get("noise_multiplier") is not None:
        b: Any = settings.get("batch_size")
        e: Any = settings.get("epochs")
        if c.need("rows", n) and c.need("settings.batch_size", b) and c.need("settings.epochs", e):
            q = c.run("settings.batch_size", accounting.sample_rate_for, int(n), int(b))
            if q is not None:
                c.same("mechanism.sample_rate", get(st, "mechanism.sample_rate"), q)
                c.same("mechanism.steps", get(st, "mechanism.steps"), int(e) * accounting.steps_per_epoch(q), 0)
        c.same("accountant.delta", get(st, "accountant.delta"), d)
        dpsgd.check(c, st, "")
        check_audit(c, st)
    else:  # diffprivlib: pure ε at δ = 0
        eps = get(st, "accountant.epsilon")
        c.same("accountant.epsilon", eps, settings.get("target_epsilon"))
        c.same("accountant.delta", get(st, "accountant.delta"), 0.0, 0)
        c.same("epsilon_at_delta[0].epsilon", get(st, "epsilon_at_delta[0].epsilon"), eps)
    if not c.problems:  # the words, from figures that check out
        c.same("summary", st.get("summary"), c.run("summary", summary, st), 0)
