"""Queries: the budget-limited query console's library.

* :mod:`~dpcore.queries.model` — the frozen :class:`~dpcore.queries.model.Query`, :func:`make_query`, its
  canonical text, neighbour relation and Charge.
* :mod:`~dpcore.queries.answering` — :func:`prepare` (true answer and sensitivity, no noise),
  :meth:`Prepared.release` (the noise, through :mod:`dpcore.noise.release` only) and :func:`ask` (charged to the
  dataset's cap and the asker's quota).
* :mod:`~dpcore.queries.fingerprint` — the content fingerprint a registered dataset is keyed by, and what
  recognises the same people under renamed, rescaled or added columns and with rows dropped.
* :mod:`~dpcore.queries.caution` — near-exact answers and ε above "weak", flagged before they are spent.

The budgets they are charged to live in :mod:`dpcore.budgets`.

Nothing is re-exported here: import each name from its module.
"""
