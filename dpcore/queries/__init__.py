"""Queries: the budget-limited query console's library.

* :mod:`~dpcore.queries.model` — the frozen :class:`~dpcore.queries.model.Query`, :func:`make_query`, its
  canonical text, neighbour relation and Charge.
* :mod:`~dpcore.queries.answering` — :func:`prepare` (true answer and sensitivity, no noise),
  :meth:`Prepared.release` (the noise, through :mod:`dpcore.noise.release` only) and :func:`ask` (through the ledger).
* :mod:`~dpcore.queries.fingerprint` — the content fingerprint and sketches a registered dataset is keyed by.
* :mod:`~dpcore.queries.ledger` — the SQLite budget ledger (invariants in its docstring).

Nothing is re-exported here: import each name from its module.
"""
