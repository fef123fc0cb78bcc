"""Model training: DP-SGD (Opacus, or our verified fused step) and the non-private twin.

* :mod:`~dpcore.training.config` — :class:`~dpcore.training.config.TrainConfig` (validated once, where it is
  built), model/dataset names, recommended settings, the one batch-size check, result labels.
* :mod:`~dpcore.training.data` — loading, the seeded split, scaling with public bounds, uploads, MNIST files.
* :mod:`~dpcore.training.models` — the torch models and their size limit.
* :mod:`~dpcore.training.fused` — the fused DP-SGD step for the built-in logreg, MLP and CNN (tested equal to Opacus's).
* :mod:`~dpcore.training.loop` — :func:`~dpcore.training.loop.train`: plan, set up, run epochs, finish.
* :mod:`~dpcore.training.dplib` — the diffprivlib path (pure ε).
* :mod:`~dpcore.training.results` — typed :class:`~dpcore.training.results.TrainMetrics` and
  :class:`~dpcore.training.results.TrainResult`.
* :mod:`~dpcore.training.job` — preflight before a job, the job target ``"train"``, the in-job wrapper sweeps share.
* :mod:`~dpcore.training.accounting` — DP-SGD accountants (PRV, RDP), PLD, trade-off curves, noise calibration.

Nothing is re-exported here: import each name from its module. Importing this package imports nothing heavy.
"""
