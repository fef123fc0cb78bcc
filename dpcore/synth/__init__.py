"""DP synthetic data: a fake table with the real one's columns, fitted to noisy marginals, released instead of it.

* :mod:`dpcore.synth.schema` -- what the data owner declares public before a release: each column's
  categories, or its bounds and bin width (never read from the rows); the story's declaration.
* :mod:`dpcore.synth.release` -- one release with OpenDP's MST or AIM: the measurement (OpenDP's secure
  samplers, ε from OpenDP's privacy map) and the post-processing (rows drawn from the fitted model).
* :mod:`dpcore.synth.split` -- OpenDP's MST and AIM with their budget split so the parts fit OpenDP's own sums;
  :mod:`dpcore.synth.fit` -- the model fit and the row sampling (post-processing) in numpy;
  :mod:`dpcore.synth.search` -- OpenDP's noise-scale searches, bracketed; :mod:`dpcore.synth.failures` -- an
  unexpected error as one sentence for the user, its detail in the log.
* :mod:`dpcore.synth.statement` -- the release's privacy statement, one dict from one builder.
* :mod:`dpcore.synth.attack` -- the re-identification page's linkage, run against a synthetic table, and a
  one-run membership audit; :mod:`dpcore.synth.utility` -- marginal errors, the console's questions, a model
  trained on synthetic rows and tested on real ones.
* :mod:`dpcore.synth.job` -- one release of an upload as a background job (target ``"synth.release"``).
* :mod:`dpcore.synth.study` -- the page's study as a background job (target ``"synth.study"``): several ε,
  several releases each, attacked and measured; :mod:`dpcore.synth.timing` -- how long a study takes here, measured;
  :mod:`dpcore.synth.advise` -- which ε keeps the 2-way marginals within ±k%, read from a study.

Import the modules, not this package: ``from dpcore.synth import release, schema``.
"""
