"""The console's spend: one answer charged against the dataset's cap and the asker's quota, through the one gate.

:func:`spend` is :func:`dpcore.budgets.gate.charge` for an answer: in one ``BEGIN IMMEDIATE`` transaction the
dataset is looked up, the asker's quota chosen (:func:`dpcore.budgets.quotas.quota_key`), an identical earlier
question answered again for free, and otherwise the per-query ε cap, the dataset's cap (ε and δ, everyone together,
every kind of release) and the quota (ε and δ) checked; only when all three allow it is the noise drawn
(``compute``), and the answer is stored with both charges. A refusal is recorded and raised after the commit
(:class:`~dpcore.errors.BudgetExceededError`, exit 3): nothing drawn, nothing spent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import DPError
from ..noise.charge import Charge
from . import amounts, gate
from .identities import Identity


def spend(
    who: Identity,
    dataset: str,
    query: str,
    charge: Charge | float,
    compute: Callable[[], Any],
    *,
    delta: float | None = 0.0,
    description: str | None = None,
    path: gate.PathLike = None,
) -> dict[str, Any]:
    """Check, draw with ``compute()`` and record — atomically (see :func:`dpcore.budgets.gate.charge`).

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
        priced = charge
    else:
        amounts.to_micro(charge)  # a bad ε or δ is one message before anything is touched
        amounts.to_atto(delta or 0.0)
        priced = Charge(float(charge), float(delta or 0.0))
    if not isinstance(query, str) or not query:
        raise DPError("query is empty")
    return gate.charge(who, dataset, priced, description=description or query, query=query, compute=compute, path=path)
