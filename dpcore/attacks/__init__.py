"""Attacks on data and models, each tied to the page that shows it, and what DP does about them.

* :mod:`dpcore.attacks.uniqueness` -- how unique people are on a few quasi-identifiers: equivalence
  classes, k-anonymity, l-diversity, prosecutor risk (vectorised, beside the loop it is tested against).
* :mod:`dpcore.attacks.linkage` -- "find your neighbour" from a few known facts, linkage of a release to a
  public register, and the attacker's success against noisy counts at epsilon (a simulation).
* :mod:`dpcore.attacks.generalise` -- the classic defence: age bands, zip prefixes, salary bands (no
  guarantee; shown beside DP).
* :mod:`dpcore.attacks.reidentification` -- the re-identification story computed once for the page and the
  HTML report, from the two modules above.
* :mod:`dpcore.attacks.differencing` -- the differencing attack on an aggregates-only interface (exact answers);
  :mod:`dpcore.attacks.differencing_dp` -- the same attack against a noisy interface (the release through
  :mod:`dpcore.noise.release`, its cost, the simulated estimates).
* :mod:`dpcore.attacks.mia` -- membership inference on a trained model (threshold, loss, LiRA-style
  attacks); :mod:`dpcore.attacks.audit` -- the empirical epsilon an attack proves (Clopper-Pearson bounds,
  one-run audits) and the ceiling DP puts on any attack.
* Audits as measurements beside the accountant's promise (docs/audits.md): :mod:`dpcore.attacks.one_run` (one-run
  (ε, δ) audit), :mod:`dpcore.attacks.fdp` (its f-DP reading), :mod:`dpcore.attacks.gdp` (Gaussian-DP and the proved
  trade-off curve from scores), :mod:`dpcore.attacks.last_iterate` (what auditing the final model can show).

Import the modules, not this package: ``from dpcore.attacks import linkage, uniqueness``.
"""
