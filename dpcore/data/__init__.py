"""The data every page works on, and the one rule for "rows where column op value".

* :mod:`dpcore.data.datasets` -- the synthetic medical extract (and its hidden population with names, the
  ground truth for linkage), the bundled scikit-learn sets, CSV uploads read within the upload limits.
* :mod:`dpcore.data.filters` -- the one :class:`~dpcore.data.filters.Condition`, its parsers and its
  vectorised mask, typed by the column; the checks that a table has rows and that a named column exists.
  The query console, the re-identification page and the differencing attack all filter rows through it.

Import the modules, not this package: ``from dpcore.data import datasets, filters``.
"""
