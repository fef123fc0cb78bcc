"""What an analyst does through the front door, for a checked identity: the same functions the query console and
the command line call (:mod:`dpcore.budgets`, :mod:`dpcore.queries`), so the same gate, the same exact samplers and
the same free repeats apply. Nothing here speaks HTTP (:mod:`dpcore.api.app` does).

What never leaves through here: a server path, the registered rows, another analyst's queries or answers, and the
exact number of rows unless the data owner declared it public (``public_n``: :func:`dpcore.budgets.registry.shown`
decides, for this list and the command line's alike).
"""

from __future__ import annotations

from typing import Any

from ..budgets import quotas, registry, visitors
from ..budgets.identities import Identity
from ..errors import DPError
from ..queries import answering, model, views
from ..statements import ledger as ledger_statement
from ..statements import signing

Json = dict[str, Any]

QUERY_KINDS = ("count", "sum", "mean", "histogram")


def whoami(who: Identity) -> Json:
    return {"analyst": who.display, "asked_as": who.describe()}


def datasets(who: Identity) -> list[Json]:
    """The registered datasets ``who`` may query: the built-in ones and those with a quota of theirs."""
    return registry.listing(who)


def status(who: Identity, dataset: str) -> Json:
    """``who``'s quota on ``dataset`` and the dataset's cap: spent and left (ε and δ), no history."""
    return quotas.status(who, _name(dataset), with_history=False)


def history(who: Identity, dataset: str, *, latest: int | None = None) -> Json:
    """``who``'s history on ``dataset`` (their quota's events, each released answer with it), with the status."""
    out = quotas.status(who, _name(dataset), latest=latest)
    out["history"] = [views.history_entry(e) for e in out["history"]]
    out["spends"] = [views.history_entry(e) for e in out["spends"]]
    return out


def statement(who: Identity, dataset: str) -> Json:
    """The signed statement of what ``dataset`` released as a whole, with ``who``'s quota's share."""
    return signing.issue(ledger_statement.for_ledger(_name(dataset), viewer=who))


def ask(who: Identity, req: Json) -> Json:
    """One answer, as the query console gives it: checked first (bad input costs nothing), charged to the
    dataset's cap and ``who``'s quota in one transaction, drawn from OpenDP's exact samplers; the same question
    again is the stored answer, free. ``req``: the fields of :class:`dpcore.api.app.QueryRequest`."""
    info = visitors.resolve(_name(req.get("dataset")))
    key = info["fingerprint"]
    quotas.status(who, key, with_history=False)  # who has no quota here: refused before the data is read
    kind = req.get("kind")
    if kind not in QUERY_KINDS:
        raise DPError(f"kind must be one of {', '.join(QUERY_KINDS)}; got {str(kind)[:40]!r}")
    delta = req.get("delta")
    q = model.make_query(
        kind,
        epsilon=req.get("epsilon"),
        condition=req.get("condition"),
        column=req.get("column"),
        bounds=req.get("bounds"),
        where=list(req.get("where") or []),
        mechanism=req.get("mechanism") or "laplace",
        delta=delta or 0.0,
        bins=req.get("bins") or 10,
        categories=req.get("categories"),
    )
    df = registry.load(info)
    return views.answer(answering.ask(df, who, q, dataset=key), who, key)


def _name(dataset: Any) -> str:
    if not isinstance(dataset, str) or not dataset.strip():
        raise DPError("dataset is empty; give a dataset's name (GET /v1/datasets lists those you may query)")
    return dataset
