"""The noise page's view: everything one setting shows (exact curves + a seeded simulation), the ε curve and the
ε table. Numbers and arrays only; the Plotly figures are built from a :class:`NoiseView` in
:mod:`dpcore.figures.noise`. The simulation is a teaching picture, NOT a DP release.

The curves are the continuous mechanism's; the figures a reader quotes (typical error, the 95% range) are those of
the mechanism that really releases (:attr:`NoiseView.released`): for a count, the discrete Laplace or discrete
Gaussian, so the headline and the ε table agree. For a SUM or MEAN the release's grid is so fine (Δ is a million
grid steps or more) that its figures equal the continuous ones to six digits.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import limits
from ..errors import DPError
from ..validation import check_delta, check_sensitivity
from .grid import check_release
from .interpret import privacy_level
from .mechanisms import Mechanism, _finite, for_release, get, mechanism_class

# The page's grids (defined in dpcore.limits).
EPSILON_GRID = limits.NOISE_EPSILON_GRID
DELTA_GRID = limits.NOISE_DELTA_GRID
COMPARE_EPSILONS = limits.NOISE_COMPARE_EPSILONS
TABLE_EPSILONS = limits.NOISE_TABLE_EPSILONS


CURVE_EPSILONS = tuple(float(e) for e in np.logspace(-2, math.log10(20), 60))


@functools.lru_cache(maxsize=64)
def _unit_curve(mechanism: str, delta: float | None) -> pd.DataFrame:
    return _epsilon_curve(mechanism, delta, 1.0, CURVE_EPSILONS)


def epsilon_curve(
    mechanism: str, delta: float | None, sensitivity: float, epsilons: Iterable[float] = CURVE_EPSILONS
) -> pd.DataFrame:
    """Expected |error| and 95% half-width over a grid of ε (NaN where a calibration is not valid).

    Every scale is linear in Δ, so the default grid is computed once per (mechanism, δ) for Δ = 1 and scaled.
    """
    if tuple(float(e) for e in epsilons) == CURVE_EPSILONS:
        sens = check_sensitivity(sensitivity)
        pure = mechanism_class(mechanism).pure
        if delta is not None and not pure:
            delta = check_delta(delta)
        out = _unit_curve(mechanism, None if pure else delta).copy()
        out[["expected_abs_error", "ci95_halfwidth", "scale"]] *= sens
        return out
    return _epsilon_curve(mechanism, delta, sensitivity, epsilons)


def _epsilon_curve(mechanism: str, delta: float | None, sensitivity: float, epsilons: Iterable[float]) -> pd.DataFrame:
    rows = []
    for e in epsilons:
        try:
            spec = get(mechanism, epsilon=e, delta=delta, sensitivity=sensitivity)
            rows.append((float(e), spec.expected_abs_error(), spec.halfwidth(0.95), spec.scale))
        except DPError:
            if e >= mechanism_class(mechanism).max_epsilon:  # outside the calibration's validity
                rows.append((float(e), math.nan, math.nan, math.nan))
            else:
                raise
    return pd.DataFrame(rows, columns=["epsilon", "expected_abs_error", "ci95_halfwidth", "scale"])


# --- everything one page view needs, computed at once --------------------------------------------------------


@dataclass(frozen=True)
class NoiseView:
    spec: Mechanism  # the continuous mechanism the curves draw
    released: Mechanism  # what really releases it (a count: whole-number noise): the figures a reader quotes
    value: float
    expected_abs_error: float
    ci95: tuple[float, float]
    loss_exceeds_mass: float
    actual_delta: float
    x: np.ndarray  # grid for densities
    pdf: np.ndarray
    hist_edges: np.ndarray
    hist_density: np.ndarray
    draws: int
    seed: int
    sim_mean_abs_error: float  # from the simulation
    sim_coverage: float  # fraction of simulated draws inside ci95
    compare: tuple[tuple[float, np.ndarray, np.ndarray, float, float], ...]  # for COMPARE_EPSILONS
    loss_z: np.ndarray
    loss: np.ndarray
    pdf_d: np.ndarray
    pdf_d2: np.ndarray
    curve: pd.DataFrame


def noise_view(
    mechanism: str,
    epsilon: float,
    delta: float | None,
    sensitivity: float,
    value: float,
    *,
    draws: int = 100_000,
    seed: int = 0,
    bins: int = 120,
    grid_points: int = 601,
    integer: bool = False,
) -> NoiseView:
    """All numbers and arrays for the noise page at one setting (exact curves + a seeded simulation).
    ``integer``: a count, released with whole-number noise (:attr:`NoiseView.released`)."""
    spec = get(mechanism, epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    spec._require_noise()
    v = _finite(value, "true value")
    check_release(magnitude=abs(v), sensitivity=spec.sensitivity, what="the true value")
    released = (
        for_release(mechanism, epsilon=epsilon, delta=delta, sensitivity=spec.sensitivity, integer=True)
        if integer and mechanism != "gaussian-classic"
        else spec
    )
    h = spec.halfwidth(0.95)
    half = 2.2 * h
    x = np.linspace(v - half, v + half, grid_points)
    sims = spec.simulate(v, draws, seed)
    counts, edges = np.histogram(sims, bins=bins, range=(v - half, v + half))
    width = edges[1] - edges[0]
    hist_density = counts / (len(sims) * width)
    lo, hi = v - h, v + h
    coverage = float(np.mean((sims >= lo) & (sims <= hi)))
    mae = float(np.mean(np.abs(sims - v)))

    compare = []
    for e in COMPARE_EPSILONS:
        try:
            s = get(mechanism, epsilon=e, delta=delta, sensitivity=sensitivity)
        except DPError:
            continue
        hh = s.halfwidth(0.95)
        xs = np.linspace(v - 2.2 * hh, v + 2.2 * hh, 401)
        compare.append((e, xs, s.density(xs, v), v - hh, v + hh))

    # Neighbouring datasets: true answers v (D) and v + Δ (D').
    d = spec.sensitivity
    span = max(3.5 * h, 3 * d)
    lz = np.linspace(v + d / 2 - span, v + d / 2 + span, grid_points)
    curve = epsilon_curve(mechanism, delta, sensitivity)
    return NoiseView(
        spec=spec,
        released=released,
        value=v,
        expected_abs_error=spec.expected_abs_error(),
        ci95=(lo, hi),
        loss_exceeds_mass=spec.loss_exceeds_mass(),
        actual_delta=spec.actual_delta(),
        x=x,
        pdf=spec.density(x, v),
        hist_edges=edges,
        hist_density=hist_density,
        draws=len(sims),
        seed=seed,
        sim_mean_abs_error=mae,
        sim_coverage=coverage,
        compare=tuple(compare),
        loss_z=lz,
        loss=spec.privacy_loss(lz, v),
        pdf_d=spec.density(lz, v),
        pdf_d2=spec.density(lz, v + d),
        curve=curve,
    )


def epsilon_table(
    mechanism: str,
    delta: float | None,
    sensitivity: float,
    value: Any = None,
    *,
    integer: bool = False,
    seed: int | None = None,
    epsilons: Iterable[float] = TABLE_EPSILONS,
) -> pd.DataFrame:
    """ε | noise scale | typical (expected) |error| | ±range holding 95% of releases | privacy level.

    Exact numbers, no random draw: one seeded example per row made ε = 0.1 look accurate when the draw
    happened to land near the truth. Counts under Laplace (``integer``) use the geometric
    mechanism's own figures (E|X| = 2p/(1 − p²), p = e^(−ε/Δ)). ``value`` and ``seed`` are accepted for
    callers of the old signature and not used.
    """
    rows = []
    for e in epsilons:
        try:
            spec = get(mechanism, epsilon=e, delta=delta, sensitivity=sensitivity)
        except DPError:
            if e >= mechanism_class(mechanism).max_epsilon:
                rows.append(
                    {
                        "epsilon": e,
                        "noise scale": None,
                        "expected |error|": None,
                        "95% within ±": None,
                        "privacy level": "n/a: classic Gaussian needs ε < 1",
                    }
                )
                continue
            raise
        # what really releases it: a count under Laplace is the geometric mechanism (its own error figures)
        rel = (
            for_release(mechanism, epsilon=e, delta=delta, sensitivity=spec.sensitivity, integer=integer)
            if spec.sensitivity > 0
            else spec
        )
        err, half = rel.expected_abs_error(), rel.halfwidth(0.95)
        rows.append(
            {
                "epsilon": e,
                "noise scale": spec.scale,
                "expected |error|": err,
                "95% within ±": half,
                "privacy level": privacy_level(e),
            }
        )
    return pd.DataFrame(rows)
