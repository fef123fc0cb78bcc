"""The spend transaction: one answer charged against the dataset's cap and the asker's quota, atomically.

In one ``BEGIN IMMEDIATE`` transaction (:func:`dpcore.budgets.store.immediate`): the dataset is looked up, the
asker's quota chosen (:func:`dpcore.budgets.quotas.quota_key`), an identical earlier question answered again for
free, and otherwise the per-query ε cap, the dataset's cap (ε and δ, everyone together) and the quota (ε and δ)
checked; only when all three allow it is the noise drawn (``compute``), and the answer is stored with both
charges. A refusal is recorded and raised after the commit (:class:`~dpcore.errors.BudgetExceededError`, exit 3):
nothing drawn, nothing spent.
"""

from __future__ import annotations

import json

from .. import claims
from ..errors import BudgetExceededError, DPError
from ..noise.charge import Charge, require_ledger_relation
from . import amounts, quotas, registry, store
from .identities import VISITORS, Identity
from .quotas import NEIGHBOUR


def spend(
    who: Identity, dataset, query: str, charge, compute, *, delta=0.0, description: str | None = None, path=None
) -> dict:
    """Check, draw with ``compute()`` and record — atomically.

    ``who``: a checked :class:`~dpcore.budgets.identities.Identity`. ``dataset``: a registered dataset's
    fingerprint or name. ``query``: the canonical query text (without ε). ``charge``: a
    :class:`~dpcore.noise.charge.Charge` (add/remove one record, else refused before anything is touched) or a
    bare ε with ``delta`` beside it. ``compute`` is called at most once, inside the transaction, only when the
    per-query cap, the dataset's cap and the quota all allow the charge; it returns a JSON-able answer.

    Returns ``answer``, ``reused``, ``epsilon_spent`` / ``delta_spent_now`` (charged now), ``epsilon_charged``, the
    quota's ``spent`` / ``total`` / ``remaining`` / ``delta_*``, the dataset's ``dataset_spent`` / ``dataset_cap``
    / ``dataset_remaining`` / ``dataset_delta_*``, ``visitors`` (asked from the visitors' quota), ``event_id``,
    ``dataset_name``, ``neighbour``.
    """
    if not isinstance(who, Identity):
        raise DPError("who asks must be a checked identity (sign in first); a typed name is not one")
    if isinstance(charge, Charge):
        if delta not in (0, 0.0, None) and delta != charge.delta:
            raise DPError("pass δ inside the Charge, not beside it")
        epsilon, delta = charge.epsilon, charge.delta
        require_ledger_relation(charge)
    else:
        epsilon = charge
    if not isinstance(query, str) or not query:
        raise DPError("query is empty")
    eps = amounts.to_micro(epsilon)
    d_atto = amounts.to_atto(delta or 0.0)
    refused = None
    with store.immediate(path) as conn:
        d = registry.require(conn, dataset)
        fp, n = d["fingerprint"], d["n_rows"]
        if d_atto > amounts.max_delta_atto(n):
            raise DPError(
                f"δ = {claims.delta(delta, 6)} is not below 1/n = {1 / n:.3g} for this dataset of {n:,} rows:"
                f" one query could then release a whole record; use δ ≤ "
                f"{claims.down(amounts.max_query_delta(n))} (or Laplace, δ = 0)"
            )
        key = quotas.quota_key(conn, who, d)
        if key is None:
            raise quotas.no_quota(who, d)
        q = conn.execute("SELECT * FROM quotas WHERE analyst = ? AND dataset = ?", (key, fp)).fetchone()
        ds = conn.execute("SELECT * FROM datasets WHERE fingerprint = ?", (fp,)).fetchone()
        qdt = q["delta_total_atto"] if q["delta_total_atto"] is not None else amounts.default_delta_atto(n)
        prior = conn.execute(
            "SELECT id, answer, cost_micro FROM events WHERE kind = 'spend' AND analyst = ? AND "
            "dataset = ? AND query = ? AND eps_micro = ? ORDER BY id LIMIT 1",
            (key, fp, query, eps),
        ).fetchone()
        base = {"q": q, "ds": ds, "qdt": qdt}
        if prior is not None:
            eid = registry.event(
                conn,
                "reuse",
                dataset=fp,
                analyst=key,
                query=query,
                description=description,
                eps_micro=eps,
                delta_atto=d_atto,
                note=f"same question as event {prior['id']}: stored answer returned, free",
            )
            result = _result(json.loads(prior["answer"]), True, 0, 0, prior["cost_micro"], eid, **base)
        else:
            why = _refusal(who, key, d, eps, d_atto, q, qdt, ds)
            if why is not None:
                registry.event(
                    conn,
                    "refused",
                    dataset=fp,
                    analyst=key,
                    query=query,
                    description=description,
                    eps_micro=eps,
                    delta_atto=d_atto,
                    note=f"{why[0]}; no noise drawn",
                )
                refused = BudgetExceededError(why[1])
            else:
                answer = compute()
                json.dumps(answer)  # must be storable; fails before anything is committed
                eid = registry.event(
                    conn,
                    "spend",
                    dataset=fp,
                    analyst=key,
                    query=query,
                    description=description,
                    eps_micro=eps,
                    delta_atto=d_atto,
                    cost_micro=eps,
                    answer=answer,
                )
                conn.execute(
                    "UPDATE quotas SET spent_micro = spent_micro + ?, delta_spent_atto = delta_spent_atto + ? "
                    "WHERE analyst = ? AND dataset = ?",
                    (eps, d_atto, key, fp),
                )
                conn.execute(
                    "UPDATE datasets SET spent_micro = spent_micro + ?, delta_spent_atto = delta_spent_atto "
                    "+ ? WHERE fingerprint = ?",
                    (eps, d_atto, fp),
                )
                base = {
                    "q": conn.execute("SELECT * FROM quotas WHERE analyst = ? AND dataset = ?", (key, fp)).fetchone(),
                    "ds": conn.execute("SELECT * FROM datasets WHERE fingerprint = ?", (fp,)).fetchone(),
                    "qdt": qdt,
                }
                result = _result(answer, False, eps, d_atto, eps, eid, **base)
    if refused is not None:
        raise refused
    result.update(dataset_name=d["name"], dataset=fp, visitors=key == VISITORS)
    return result


def _left(total: int, spent: int, unit) -> float:
    return unit(max(total - spent, 0))


def _refusal(who, key, d, eps, d_atto, q, qdt, ds) -> tuple[str, str] | None:
    """(history note, message) when the per-query cap, the dataset's cap or the quota refuses; else None."""
    cost = f"this query costs ε = {amounts.from_micro(eps):g}"
    nothing = "nothing was spent and no noise was drawn"
    if q["closed"] is not None:
        return ("the quota is closed", f"your quota on {d['name']!r} was closed by the admin; {nothing}")
    if ds["max_query_micro"] is not None and eps > ds["max_query_micro"]:
        cap = amounts.from_micro(ds["max_query_micro"])
        return (
            f"above the per-query cap ε = {cap:g}",
            f"budget exceeded: {cost} but dataset {d['name']!r} allows at most ε = {cap:g} per query (a larger ε "
            f"makes one answer nearly exact); {nothing} — ask with ε ≤ {cap:g}",
        )
    whose = (
        "the visitors' shared quota (everyone who has not signed in)"
        if key == VISITORS
        else f"analyst {who.display!r}'s quota"
    )
    for label, total, spent in (
        ("the dataset's cap (everyone's answers together)", ds["cap_micro"], ds["spent_micro"]),
        (whose, q["total_micro"], q["spent_micro"]),
    ):
        if spent + eps > total:
            left = amounts.from_micro(max(total - spent, 0))
            what = (
                f"only ε = {left:g} of {amounts.from_micro(total):g} is left"
                if left > 0
                else f"the whole ε = {amounts.from_micro(total):g} is spent"
            )
            step = f"ask with ε ≤ {left:g}, repeat" if left > 0 else "repeat"
            return (
                f"{label} would be exceeded",
                f"budget exceeded: {cost} but {what} in {label} on {d['name']!r}; {nothing} — {step} an earlier "
                "question (free) or ask the data owner",
            )
    for label, total, spent in (
        ("the dataset's δ cap (everyone's answers together)", ds["cap_delta_atto"], ds["delta_spent_atto"]),
        (f"the δ of {whose}", qdt, q["delta_spent_atto"]),
    ):
        if d_atto > 0 and spent + d_atto > total:
            left = amounts.from_atto(max(total - spent, 0))
            what = (
                f"only δ = {claims.down(left)} of {claims.delta(amounts.from_atto(total), 3)} is left"
                if left > 0
                else f"the whole δ of {claims.delta(amounts.from_atto(total), 3)} is spent"
            )
            return (
                f"{label} would be exceeded",
                f"budget exceeded: this query needs δ = {claims.delta(amounts.from_atto(d_atto), 3)} but {what} "
                f"in {label} on {d['name']!r}; {nothing} — ask with a smaller δ, use Laplace noise (δ = 0), or "
                "ask the data owner",
            )
    return None


def _result(answer, reused, now_micro, now_atto, charged_micro, eid, *, q, ds, qdt) -> dict:
    return {
        "answer": answer,
        "reused": reused,
        "epsilon_spent": amounts.from_micro(now_micro),
        "delta_spent_now": amounts.from_atto(now_atto),
        "epsilon_charged": amounts.from_micro(charged_micro),
        "spent": amounts.from_micro(q["spent_micro"]),
        "total": amounts.from_micro(q["total_micro"]),
        "remaining": _left(q["total_micro"], q["spent_micro"], amounts.from_micro),
        "delta_spent": amounts.from_atto(q["delta_spent_atto"]),
        "delta_total": amounts.from_atto(qdt),
        "delta_remaining": _left(qdt, q["delta_spent_atto"], amounts.from_atto),
        "dataset_spent": amounts.from_micro(ds["spent_micro"]),
        "dataset_cap": amounts.from_micro(ds["cap_micro"]),
        "dataset_remaining": _left(ds["cap_micro"], ds["spent_micro"], amounts.from_micro),
        "dataset_delta_spent": amounts.from_atto(ds["delta_spent_atto"]),
        "dataset_delta_cap": amounts.from_atto(ds["cap_delta_atto"]),
        "dataset_delta_remaining": _left(ds["cap_delta_atto"], ds["delta_spent_atto"], amounts.from_atto),
        "event_id": eid,
        "neighbour": NEIGHBOUR,
    }
