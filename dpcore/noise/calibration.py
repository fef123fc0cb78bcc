"""Calibration: how much noise a mechanism needs for (ε, δ) at sensitivity Δ, and its quantiles.

Pure functions, no sampling: the Laplace scale b = Δ/ε, the classic Gaussian σ (ε < 1 only), the exact δ(ε) of a
Gaussian with noise σ and the app's ONE analytic-Gaussian σ solver (Balle & Wang 2018), used by the mechanism
classes (:mod:`dpcore.noise.mechanisms`), releases (the discrete Gaussian's σ starts from it,
:mod:`dpcore.noise.discrete`), ρ of a Gaussian charge and the advisor. Two-sided quantiles give every half-width in the app (``Z95``, ``LAPLACE_Q95``).
"""

from __future__ import annotations

import functools
import math

from scipy import optimize, special

from ..errors import DPError
from ..validation import check_delta, check_epsilon, check_sensitivity


def _level(level: float) -> float:
    try:
        lv = float(level)
    except (TypeError, ValueError):
        raise DPError(f"interval level must be a number in (0, 1), got {level!r}; try 0.95") from None
    if not 0 < lv < 1:
        raise DPError(f"interval level must be in (0, 1), got {level!r}; try 0.95")
    return lv


def normal_quantile(level: float) -> float:
    """z with P(|N(0, 1)| <= z) = level (two-sided)."""
    return float(special.ndtri(1.0 - (1.0 - _level(level)) / 2.0))


def laplace_quantile(level: float) -> float:
    """t/b with P(|Lap(b)| <= t) = level: ln(1/(1 − level))."""
    return -math.log1p(-_level(level))


Z95 = normal_quantile(0.95)  # 1.959964...
LAPLACE_Q95 = laplace_quantile(0.95)  # ln 20: P(|Lap(b)| > b ln 20) = 5%


# --- calibration formulas ----------------------------------------------------------------------------


def laplace_scale(epsilon: float, sensitivity: float) -> float:
    """Laplace scale b = Δ / ε (pure ε-DP)."""
    return check_sensitivity(sensitivity) / check_epsilon(epsilon)


def gaussian_classic_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Classic Gaussian calibration σ = Δ·√(2 ln(1.25/δ)) / ε (Dwork & Roth, Thm A.1): valid only for ε < 1."""
    eps = check_epsilon(epsilon)
    d = check_delta(delta)
    sens = check_sensitivity(sensitivity)
    if eps >= 1:
        raise DPError(
            f"the classic Gaussian calibration is only valid for ε < 1 (got ε = {eps:g}); "
            "use the analytic Gaussian ('gaussian') instead, which is valid for every ε and needs less "
            "noise"
        )
    return sens * math.sqrt(2.0 * math.log(1.25 / d)) / eps


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism with noise σ (Balle & Wang 2018, Theorem 8).

    δ = Φ(Δ/(2σ) − εσ/Δ) − e^ε · Φ(−Δ/(2σ) − εσ/Δ); the second term is computed in log space.
    """
    eps = check_epsilon(epsilon)
    sens = check_sensitivity(sensitivity)
    s = float(sigma)
    if not (s > 0) or not math.isfinite(s):
        raise DPError(f"σ must be a finite number > 0, got {sigma!r}")
    if sens == 0:
        return 0.0
    return _gaussian_delta(sens, s, eps)


def _gaussian_delta(sens: float, sigma: float, eps: float) -> float:
    """The formula of :func:`gaussian_delta`, for any ε ≥ 0 (no checks; the second term in log space)."""
    a = sens / (2 * sigma)
    b = eps * sigma / sens
    return float(special.ndtr(a - b) - math.exp(eps + special.log_ndtr(-a - b)))


def gaussian_epsilon(sigma: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest ε (an upper bound, to 1e-9 relative) at which Gaussian noise σ is (ε, δ)-DP: the inverse of
    :func:`gaussian_delta` in ε (Balle & Wang 2018). 0 when δ(0), the total-variation distance, is ≤ δ already."""
    d = check_delta(delta)
    s = float(sigma)
    if not (s > 0 and math.isfinite(s)):
        raise DPError(f"σ must be a finite number > 0, got {sigma!r}")
    sens = check_sensitivity(sensitivity)
    mu = sens / s
    if mu == 0 or _gaussian_delta(sens, s, 0.0) <= d:
        return 0.0

    def f(e: float) -> float:  # δ(ε) − target: decreasing in ε
        return _gaussian_delta(sens, s, e) - d

    hi = max(1.0, mu * mu)
    while f(hi) > 0:
        hi *= 2
        if hi > 1e7:
            raise DPError(f"σ = {s:g} is far too small for δ = {d:g} (ε would exceed 10⁷); add noise")
    e = optimize.brentq(f, 0.0, hi, xtol=1e-12, rtol=1e-10, maxiter=200)
    while f(e) > 0:  # never below the exact ε
        e = e * (1 + 1e-9) + 1e-15
    return float(e)


def gaussian_loss_tail(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """P[privacy loss > ε] for Gaussian noise σ: Φ(μ/2 − ε/μ) with μ = Δ/σ (where the posterior bound may fail)."""
    mu = sensitivity / sigma
    return float(special.ndtr(mu / 2 - epsilon / mu))


def gaussian_analytic_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest σ whose Gaussian mechanism is (ε, δ)-DP (analytic calibration, Balle & Wang 2018).

    The app's one σ solver: root of :func:`gaussian_delta` (decreasing in σ) found with Brent's method on log σ
    at Δ = 1 (cached), then scaled by Δ. Releases start from it (never diffprivlib's solver, which lands slightly
    below the exact σ at extreme settings) and raise it for the discrete Gaussian where needed.
    """
    eps = check_epsilon(epsilon)
    d = check_delta(delta)
    sens = check_sensitivity(sensitivity)
    if sens == 0:
        return 0.0
    return sens * _unit_analytic_sigma(eps, d)


@functools.lru_cache(maxsize=1024)
def _unit_analytic_sigma(eps: float, d: float) -> float:
    # Work with unit sensitivity (σ scales linearly with Δ): f(u) = δ(σ = e^u) − δ.
    def f(u: float) -> float:
        return gaussian_delta(math.exp(u), eps, 1.0) - d

    lo, hi = -1.0, 1.0
    while f(lo) < 0:  # δ(σ) too small already: go to smaller σ
        lo -= 2.0
        if lo < -60:
            break
    while f(hi) > 0:
        hi += 2.0
        if hi > 60:
            raise DPError(
                f"could not calibrate the analytic Gaussian for ε = {eps:g}, δ = {d:g}; choose a larger δ (e.g. 1e-5)"
            )
    u = optimize.brentq(f, lo, hi, xtol=1e-12, rtol=1e-12, maxiter=200)
    # The root is only known to ~1e-12: step up until δ(σ) ≤ δ holds, so σ is never below the exact one.
    for _ in range(100):
        if f(u) <= 0:
            break
        u += 1e-12 + 1e-12 * abs(u)
    return math.exp(u)
