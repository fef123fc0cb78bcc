"""Noise: what one private answer costs and how it is drawn.

* :mod:`~dpcore.noise.calibration` — b and σ for (ε, δ) at sensitivity Δ (the one analytic-Gaussian solver),
  quantiles.
* :mod:`~dpcore.noise.discrete` — the discrete Gaussian's exact δ(ε) over its support, its calibrated σ, quantiles.
* :mod:`~dpcore.noise.grid` — the release grid (real answers as whole numbers), the sensitivity in grid steps with
  its proof, and the one check of what a release can represent.
* :mod:`~dpcore.noise.charge` — the one frozen :class:`~dpcore.noise.charge.Charge` (ε, δ, ρ, neighbour relation).
* :mod:`~dpcore.noise.mechanisms` — one class per mechanism (Laplace, Gaussian analytic/classic, Geometric,
  DiscreteGaussian): scale, density, half-width, privacy loss, ρ, its Charge and a labelled teaching simulation.
* :mod:`~dpcore.noise.release` — the one path that draws a released number: whole numbers plus OpenDP's exact
  discrete Laplace or discrete Gaussian noise (secure source).

Imports go one way (tests/dpcore/noise/test_layers.py): calibration, discrete, grid → charge → composition,
interpret → mechanisms → release → view, teaching.
* :mod:`~dpcore.noise.composition` — what k releases cost together (basic, advanced, zCDP, RDP).
* :mod:`~dpcore.noise.interpret` — ε in plain words (deployments, posterior bounds, privacy levels).
* :mod:`~dpcore.noise.view` / :mod:`~dpcore.noise.teaching` — the noise page's numbers and its replace-one
  teaching query.

Nothing is re-exported here: import each name from its module (one home per concept). Importing this package
imports nothing heavy.
"""
