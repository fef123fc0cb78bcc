"""What the analyst's front ends show the same way: the command line on the home (``python -m dpcore query``,
``budget status``) and the HTTP API (:mod:`dpcore.api`) — one released answer, one history entry.

Views only pick and name fields of what :func:`dpcore.queries.answering.ask` and
:func:`dpcore.budgets.quotas.status` return; nothing here computes or reads private rows.
"""

from __future__ import annotations

from typing import Any

from ..noise import interpret

Json = dict[str, Any]


def answer(r: Json, who: Any, fingerprint: str) -> Json:
    """One answer as released: the noisy value and its interval, what it spent of the quota and of the dataset's
    cap (ε and δ), whether it was a free repeat, the query as charged and the mechanism."""
    a = r["answer"]
    out: Json = {
        "answer": a["answer"],
        "interval": a["interval"],
        "interval_note": a["interval_note"],
        "epsilon_spent": r["epsilon_spent"],
        "remaining": r["remaining"],
        "total": r["total"],
        "spent": r["spent"],
        "delta_spent_now": r["delta_spent_now"],
        "delta_spent": r["delta_spent"],
        "delta_total": r["delta_total"],
        "delta_remaining": r["delta_remaining"],
        "reused": r["reused"],
        "epsilon_charged": r["epsilon_charged"],
        "query": a["query"],
        "epsilon": a["epsilon"],
        "delta": a["delta"],
        "mechanism": a["mechanism"],
        "neighbour": r["neighbour"],
        "cost_note": a["cost_note"],
        "secure": a["secure"],
        "asked_as": who.describe(),
        "visitors": r["visitors"],
        "dataset": r["dataset_name"],
        "fingerprint": fingerprint,
        "dataset_spent": r["dataset_spent"],
        "dataset_cap": r["dataset_cap"],
        "dataset_remaining": r["dataset_remaining"],
        "dataset_delta_remaining": r["dataset_delta_remaining"],
    }
    for field in ("labels", "grid", "noise"):  # the grid and rounding of a SUM or MEAN; the noise's name
        if field in a:
            out[field] = a[field]
    if a.get("loss_tail") is not None:  # δ > 0: how often this answer's privacy loss exceeds ε (not δ)
        out["loss_tail"] = a["loss_tail"]
        out["loss_tail_note"] = interpret.release_tail_reading(a["loss_tail"], a["epsilon"], a["delta"])
    return out


def history_entry(e: Json) -> Json:
    """A history entry as shown: what was released, not internals (the canonical query text, the stored noise
    parameters)."""
    e = dict(e)
    e.pop("canonical", None)
    if isinstance(e.get("answer"), dict):
        a = e["answer"]
        e["answer"] = {k: a[k] for k in ("answer", "interval", "labels") if k in a}
    return e
