"""Planned releases: several statistics on one budget, as a data steward lays them out (issue 35).

* :mod:`~dpcore.plan.model` — the plan as typed, frozen values (:class:`~dpcore.plan.model.Plan`: statistics, the
  unit of privacy, public keys, how ε is split) and its file form (JSON or YAML).
* :mod:`~dpcore.plan.forms` — the plan as a page's editor rows, and the example plans.
* :mod:`~dpcore.plan.design` — what each statistic's noise is and the error it gives, from public numbers alone (the
  preview: nothing is read, nothing spent); the three ways to split ε (by hand, the same relative error for all,
  or from target accuracies: accuracy in, ε out); ε per person and per row.
* :mod:`~dpcore.plan.bounding` — people, not rows: at most k rows per person, the sensitivity that follows.
* :mod:`~dpcore.plan.compute` — the true values (private) and their release through :mod:`dpcore.noise.release`
  (OpenDP's exact samplers), as one table with each value's 95% interval.
* :mod:`~dpcore.plan.run` — one release through the dataset's budget: one charge for the whole plan.
* :mod:`~dpcore.plan.registry` — OpenDP's deployments registry beside a plan's ε, and a registry-schema draft.
* :mod:`~dpcore.plan.compare` — an upload beside a DP synthetic table of it (computed on the uploader's rows: not
  covered by ε, shown to them only).

The statement of a planned release is built and checked in :mod:`dpcore.statements.plan`; NIST SP 800-226's checks
live in :mod:`dpcore.nist`; the notebook and script in :mod:`dpcore.export`.
"""
