"""The statement of a registered dataset's query history (:func:`for_ledger`) and its recomputation (:func:`check`):
what the dataset as a whole released — every answer by anyone, never reset — composed by basic composition and by
the best rule at each δ, with its trade-off envelope and the viewer's quota's share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpcore import claims, nist
from dpcore.attacks import audit
from dpcore.budgets import quotas
from dpcore.noise import composition
from dpcore.queries import answering
from dpcore.statements.checks import Checker, close, get, num, obj
from dpcore.statements.common import ADD_REMOVE, UNIT, deltas
from dpcore.training.accounting import TRADEOFF_FPR

Json = dict[str, Any]
KIND = "ledger"


def for_ledger(
    dataset: str, *, viewer: Any, analyst: str | None = None, n_rows: int | None = None, path: Any = None
) -> Json:
    """Statement for a registered dataset's query history: what the dataset **as a whole** released — every answer
    by anyone, never reset: the guarantee to each person in it, under any number of names — and, beside it, the
    share of the viewer's quota (an admin: ``analyst``'s) since its last reset.

    ``viewer``: a checked :class:`~dpcore.budgets.identities.Identity`; a visitor or an analyst without a quota on
    the dataset is refused. Only an admin sees the other askers' query texts; everyone sees each answer's ε, δ and
    ρ, which is what the guarantee composes. ``n_rows`` is accepted for older callers and not stated: the
    number of rows is the data owner's to publish. With NIST SP 800-226's checks (:mod:`dpcore.nist`).
    """
    out = _for_ledger(dataset, viewer=viewer, analyst=analyst, path=path)
    out["nist"] = nist.for_statement(out)
    return out


def _for_ledger(dataset: str, *, viewer: Any, analyst: str | None = None, path: Any = None) -> Json:
    status = quotas.status(viewer, dataset, analyst=analyst, path=path)
    spends = quotas.released(viewer, status["fingerprint"], path=path)
    mine = {e["id"] for e in status["spends"]} if status["quota"] else set()
    entries: list[Json] = []
    replace_one, seeded = False, False
    for e in spends:
        ans = obj(e.get("answer"))
        kind = e.get("release") or "answer"  # a training run, sweep or synthetic table is charged to the cap too
        mech = ans.get("mechanism") or (
            kind if kind != "answer" else ("gaussian" if float(e.get("delta") or 0) > 0 else "laplace")
        )
        replace_one |= "PUBLIC N" in str(e.get("query") or "").upper()
        seeded |= ans.get("secure") is False
        (charge,) = answering.composition_entries([e])  # ε and δ as charged, ρ of the release
        entries.append(
            {
                "epsilon": charge.epsilon,
                "delta": charge.delta,
                "rho": charge.rho,
                "mechanism": mech,
                "release": kind,
                "query": e["query"] if (viewer.is_admin or e["id"] in mine) else None,
                "by_this_quota": e["id"] in mine,
            }
        )
    quota = status["quota"]
    out: Json = {
        "kind": KIND,
        "subject": {
            "dataset": status["dataset"],
            "fingerprint": status["fingerprint"],
            "analyst": quota["analyst"] if quota else None,
        },
        "unit_of_privacy": UNIT,
        "neighbour_relation": ADD_REMOVE + (" (MEAN with public n: replace one record)" if replace_one else ""),
        "sampling": {"scheme": "none: every query reads the whole (filtered) data"},
        "scope": "every release ever charged on this dataset and not refunded — console answers, DP training runs, "
        "sweeps, synthetic tables — by every analyst and visitor (never reset): the guarantee to each person in it",
        "number_of_rows": status["number_of_rows"],
        "cap": status["cap"],
        "queries": entries,
        "reproducible_noise": seeded,
        "noise_source": "OpenDP's exact samplers, a secure random source"
        if not seeded
        else "some answers were drawn with a seed: reproducible, not a DP release",
    }
    own = [x for x in entries if x["by_this_quota"]]
    if quota:
        e_own, d_own = composition.basic([x["epsilon"] for x in own], [x["delta"] for x in own]) if own else (0.0, 0.0)
        out["quota_share"] = {
            "analyst": quota["analyst"],
            "answers": len(own),
            "epsilon": e_own,
            "delta": d_own,
            "note": "this quota's answers since its last reset: part of the dataset's total, not a separate guarantee",
        }
    if not entries:
        out.update(epsilon_at_delta=[], summary=f"no answers released on {status['dataset']!r} yet: nothing spent")
        return out
    basic = composition.basic([x["epsilon"] for x in entries], [x["delta"] for x in entries])
    rows = [best_at(entries, d) for d in deltas()]  # 1e-5 and 1e-6: never ε at δ = 1/n
    out["accountant"] = {
        "name": "basic composition of every answer on the dataset (what the cap is charged)",
        "epsilon": basic[0],
        "delta": basic[1],
    }
    out["epsilon_at_delta"] = rows
    profile = [(basic[0], basic[1])] + [(r["epsilon"], r["delta"]) for r in rows if r["epsilon"] is not None]
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


def best_at(entries: Sequence[Mapping[str, Any]], d: float) -> Json:
    """The smallest ε among the composition rules whose total δ is at most d (δ′ = d for zCDP/RDP)."""
    ok = [r for r in composition.ledger_costs(entries, d) if r["delta"] <= d * (1 + 1e-12)]
    if not ok:
        return {"delta_prime": d, "delta": d, "epsilon": None, "rule": "none: the queries' own δ exceed this δ"}
    best = min(ok, key=lambda r: r["epsilon"])
    return {"delta_prime": d, "delta": best["delta"], "epsilon": best["epsilon"], "rule": best["rule"]}


def check(c: Checker, st: Mapping[str, Any]) -> None:
    """A ledger statement's totals recomputed from its recorded charges: basic composition, the best rule at each
    δ, the trade-off envelope, the quota's share; a μ of Gaussian DP is refused."""
    q = st.get("queries")
    if not isinstance(q, list):
        c.fail("queries", "queries is missing (a ledger statement lists every answer it covers)")
        return
    for i, x in enumerate(q):
        if not (isinstance(x, dict) and num(x.get("epsilon")) and num(x.get("delta"))):
            c.fail(f"queries[{i}]", f"queries[{i}] needs its epsilon and delta")
            return
    if not q:
        return
    e, d = composition.basic([x["epsilon"] for x in q], [x["delta"] for x in q])
    c.same("accountant.epsilon", get(st, "accountant.epsilon"), e)
    c.same("accountant.delta", get(st, "accountant.delta"), d)
    raw_rows = st.get("epsilon_at_delta")
    rows: list[Any] = raw_rows if isinstance(raw_rows, list) else []
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not c.need(f"epsilon_at_delta[{i}].delta_prime", r.get("delta_prime")):
            continue
        best = c.run(f"epsilon_at_delta[{i}]", best_at, q, r["delta_prime"])
        if best is not None:
            c.same(f"epsilon_at_delta[{i}].epsilon", r.get("epsilon"), best["epsilon"])
            c.same(f"epsilon_at_delta[{i}].delta", r.get("delta"), best["delta"])
    tr = st.get("tradeoff")
    if isinstance(tr, dict) and isinstance(tr.get("tpr"), list):
        profile = [(e, d)] + [
            (r["epsilon"], r["delta"])
            for r in rows
            if isinstance(r, dict) and num(r.get("epsilon")) and num(r.get("delta"))
        ]
        fpr = np.asarray(tr.get("fpr") or TRADEOFF_FPR, float)
        want = audit.roc_from_privacy_profile([p[0] for p in profile], [p[1] for p in profile], fpr)
        bad = [i for i, (a, z) in enumerate(zip(tr["tpr"], want)) if not close(a, float(z), 1e-6)]
        if bad or len(tr["tpr"]) != len(want):
            i = bad[0] if bad else 0
            c.fail(
                "tradeoff",
                f"tradeoff.tpr[{i}] is {tr['tpr'][i] if i < len(tr['tpr']) else None!r}, recomputed "
                f"{float(want[i])!r} from the (ε, δ) totals",
            )
        else:
            c.passed("tradeoff", f"tradeoff: the envelope at {len(want)} FPRs, as recomputed from the (ε, δ) totals")
    share, own = st.get("quota_share"), [x for x in q if x.get("by_this_quota")]
    if isinstance(share, dict) and share:  # the quota's share: its own answers, composed the same way
        e_own, d_own = composition.basic([x["epsilon"] for x in own], [x["delta"] for x in own]) if own else (0.0, 0.0)
        c.same("quota_share.answers", share.get("answers"), len(own), 0)
        c.same("quota_share.epsilon", share.get("epsilon"), e_own)
        c.same("quota_share.delta", share.get("delta"), d_own)
    if "mu" in st:  # answers are drawn from the discrete Gaussian: ρ-zCDP, but no μ-GDP follows from ρ
        c.fail(
            "mu",
            "mu: a ledger's Gaussian answers are drawn from the discrete Gaussian, which is not "
            "μ-Gaussian-DP with μ = √(2ρ) (its trade-off curve rises above that μ's): the claim does not "
            "hold; the zCDP and RDP rows of epsilon_at_delta are what ρ gives",
        )
