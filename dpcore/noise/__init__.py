"""Noise: what one private answer costs and how it is drawn.

* :mod:`~dpcore.noise.calibration` — b and σ for (ε, δ) at sensitivity Δ (the one analytic-Gaussian solver),
  quantiles.
* :mod:`~dpcore.noise.mechanisms` — one class per mechanism (Laplace, Gaussian analytic/classic, Geometric):
  scale, density, half-width, privacy loss, ρ, its Charge, the secure sample and a labelled teaching simulation.
* :mod:`~dpcore.noise.release` — the release path by mechanism name (diffprivlib's secure samplers, our exact σ).
* :mod:`~dpcore.noise.charge` — the one frozen :class:`~dpcore.noise.charge.Charge` (ε, δ, ρ, neighbour relation).
* :mod:`~dpcore.noise.composition` — what k releases cost together (basic, advanced, zCDP, RDP).
* :mod:`~dpcore.noise.interpret` — ε in plain words (deployments, posterior bounds, privacy levels).
* :mod:`~dpcore.noise.view` / :mod:`~dpcore.noise.teaching` — the noise page's numbers and its replace-one
  teaching query.

Nothing is re-exported here: import each name from its module (one home per concept). Importing this package
imports nothing heavy.
"""
