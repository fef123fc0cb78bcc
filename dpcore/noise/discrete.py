"""The discrete Gaussian N_Z(0, σ²) on the integers (Canonne, Kamath & Steinke 2020): exact privacy and quantiles.

Pure maths, no sampling (the sampler is OpenDP's, in :mod:`dpcore.noise.release`). P(x) = f(x)/Z with
f(x) = exp(−x²/(2σ²)) and Z = Σ_{x∈ℤ} f(x).

**δ(ε) for an integer sensitivity K.** Neighbours release Y = 0 + X and Y' = K + X. The privacy loss of an output
y is ln P(y)/P(y − K) = (K² − 2Ky)/(2σ²), above ε exactly when y < t = K/2 − εσ²/K, so

    δ(ε) = Σ_y max(0, P(y) − e^ε P(y − K)) = F(m) − e^ε F(m − K),   m = ⌈t⌉ − 1 (the largest integer below t),

with F the discrete Gaussian's CDF (the other direction is the same by the symmetry y → K − y).
:func:`delta_upper` returns a number never below this δ: it sums the terms directly for σ ≤
:data:`DIRECT_SIGMA_MAX` (over a window of ±40σ, the rest bounded by a Gaussian integral) and otherwise brackets
F between integrals (see :func:`cdf_bounds`). :func:`calibrate_sigma` starts from the exact continuous σ of
Balle & Wang for sensitivity K and raises it until this upper bound is ≤ δ, so the σ a release uses is never below
the exact calibration of the discrete mechanism it really runs.

**Quantiles.** :func:`halfwidth` is the smallest whole t with P(|X| > t) ≤ 1 − level, from the same bounds (an
interval that is never too narrow).

**Risk readings.** The discrete Gaussian is ρ-zCDP with ρ = K²/(2σ²) but not μ-Gaussian-DP with μ = K/σ: its
trade-off curve rises above the continuous Gaussian's (one COUNT at ε = 5, δ = 1e-6: TPR 0.70 at FPR 0.30 where
Φ(Φ⁻¹(0.30) + μ) = 0.69). What an attacker can do against a release is therefore read off its own δ(ε) at every ε
(:func:`composed_delta_upper`, also for a MEAN's two releases moved by one record), never off μ.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from ..errors import DPError
from .calibration import _level, gaussian_analytic_sigma

#: Up to this σ the terms are summed one by one (at most ~1.6 million); above it, integral bounds whose relative
#: gap is below 1e-8 where releases calibrate (the loss event deep in the tail) and below 1/σ elsewhere.
DIRECT_SIGMA_MAX = 2e4
_WINDOW_SIGMAS = 40  # terms beyond ±40σ weigh less than e^−800 of the peak: bounded, not summed
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _check_sigma(sigma: float) -> float:
    s = float(sigma)
    if not (s > 0 and math.isfinite(s)):
        raise DPError(f"σ must be a finite number > 0, got {sigma!r}")
    return s


def _log_gauss_integral(a: float, sigma: float) -> float:
    """ln ∫_{−∞}^{a} f(x) dx = ln(σ√(2π)) + ln Φ(a/σ)."""
    return math.log(sigma) + _LOG_SQRT_2PI + float(special.log_ndtr(a / sigma))


def _window(sigma: float) -> int:
    return int(math.ceil(_WINDOW_SIGMAS * sigma)) + 2


def _log_f(lo: int, hi: int, sigma: float) -> np.ndarray:
    x = np.arange(lo, hi + 1, dtype=np.float64)
    return -(x * x) / (2.0 * sigma * sigma)


@functools.lru_cache(maxsize=256)
def _log_z_bounds(sigma: float) -> tuple[float, float]:
    """ln of bounds on Z for σ ≤ DIRECT_SIGMA_MAX: the window's sum, and it plus the bound on both tails
    (Σ_{x < −W} f(x) ≤ ∫_{−∞}^{−W} f, f increasing up to 0)."""
    w = _window(sigma)
    log_z_low = float(special.logsumexp(_log_f(-w, w, sigma)))
    log_z_high = float(np.logaddexp(log_z_low, math.log(2.0) + _log_gauss_integral(-w, sigma)))
    return log_z_low, log_z_high


def _theta_high(sigma: float) -> float:
    """Z / (σ√(2π)) = Σ_k exp(−2π²σ²k²) (Poisson summation) is in [1, this]."""
    q = math.exp(-2 * math.pi**2 * sigma * sigma)
    return 1.0 + 2.0 * q / (1.0 - q) if q < 1 else math.inf


def cdf_bounds(m: int, sigma: float) -> tuple[float, float]:
    """(low, high) with low ≤ P(X ≤ m) ≤ high for X ~ N_Z(0, σ²).

    σ ≤ :data:`DIRECT_SIGMA_MAX`: the sum of f over [−W, m] (W = ⌈40σ⌉ + 2) over Z, each side widened by the
    bound on the terms left out. Larger σ, m ≤ −1 (f increases on (−∞, m + 1]): ∫_{−∞}^{m} f ≤ Σ_{x≤m} f(x) ≤
    ∫_{−∞}^{m+1} f; deep in the tail (m + 3/2 ≤ −√3·σ, where f is convex and f'' increases) the midpoint rule
    tightens this to ∫_{−∞}^{m+½} f − f'(m + 3/2)/24 ≤ Σ ≤ ∫_{−∞}^{m+½} f. Z lies in [σ√(2π), σ√(2π)·θ] by
    Poisson summation. m ≥ 0: 1 − the bounds of P(X ≤ −m − 1) (symmetry).
    """
    s = _check_sigma(sigma)
    m = int(m)
    if s <= DIRECT_SIGMA_MAX:
        w = _window(s)
        log_z_low, log_z_high = _log_z_bounds(s)
        if m >= w:  # P(X > m) = P(X ≤ −m − 1) ≤ ∫_{−∞}^{−m} f / Z
            return max(0.0, 1.0 - math.exp(_log_gauss_integral(-m, s) - log_z_low)), 1.0
        if m < -w:  # nothing of the window: Σ_{x ≤ m} f ≤ ∫_{−∞}^{m+1} f
            return 0.0, min(1.0, math.exp(_log_gauss_integral(m + 1, s) - log_z_low))
        log_s = float(special.logsumexp(_log_f(-w, m, s)))
        low = math.exp(log_s - log_z_high)
        high = math.exp(float(np.logaddexp(log_s, _log_gauss_integral(-w, s))) - log_z_low)
        return low, min(1.0, high)
    if m >= 0:
        lo, hi = cdf_bounds(-m - 1, s)
        return 1.0 - hi, 1.0 - lo
    log_norm = math.log(s) + _LOG_SQRT_2PI  # ln(σ√(2π)) ≤ ln Z
    theta = _theta_high(s)
    if m + 1.5 <= -math.sqrt(3.0) * s:
        log_mid = _log_gauss_integral(m + 0.5, s)
        y = m + 1.5
        log_fprime = math.log(-y) - 2 * math.log(s) - y * y / (2 * s * s)  # f'(y) = −y/σ² f(y) > 0 for y < 0
        correction = math.exp(log_fprime - math.log(24.0) - log_mid)
        high = math.exp(log_mid - log_norm)
        low = math.exp(log_mid - log_norm) * max(0.0, 1.0 - correction) / theta
        return low, min(1.0, high)
    low = math.exp(_log_gauss_integral(m, s) - log_norm) / theta
    high = math.exp(_log_gauss_integral(m + 1, s) - log_norm)
    return low, min(1.0, high)


def _check_k(sensitivity: float) -> int:
    if isinstance(sensitivity, bool) or not float(sensitivity).is_integer() or sensitivity < 1:
        raise DPError(f"the discrete Gaussian's sensitivity must be a whole number >= 1, got {sensitivity!r}")
    return int(sensitivity)


def delta_upper(sigma: float, epsilon: float, sensitivity: int) -> float:
    """An upper bound (exact up to the bounds of :func:`cdf_bounds`) on δ(ε) of N_Z(0, σ²) for integer
    sensitivity K: F(m) − e^ε F(m − K), m = ⌈K/2 − εσ²/K⌉ − 1. Never below the true δ."""
    s = _check_sigma(sigma)
    k = _check_k(sensitivity)
    eps = float(epsilon)
    if not (eps >= 0 and math.isfinite(eps)):
        raise DPError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    t = k / 2 - eps * s * s / k
    m = math.ceil(t) - 1
    _, hi = cdf_bounds(m, s)
    if hi == 0.0:
        return 0.0
    lo, _ = cdf_bounds(m - k, s)
    second = math.exp(eps + math.log(lo)) if lo > 0 else 0.0
    d = hi - second
    return max(0.0, d + 1e-9 * hi)  # rounding in the sums and the subtraction, on the safe side


@functools.lru_cache(maxsize=1024)
def calibrate_sigma(epsilon: float, delta: float, sensitivity: int) -> float:
    """The σ (grid units) of a discrete-Gaussian release with integer sensitivity K that is (ε, δ)-DP.

    Starts from Balle & Wang's exact σ for the continuous Gaussian at sensitivity K and raises it, in small
    steps and then by bisection, until :func:`delta_upper` ≤ δ: never below the exact calibration."""
    k = _check_k(sensitivity)
    sigma0 = gaussian_analytic_sigma(epsilon, delta, float(k))
    if delta_upper(sigma0, epsilon, k) <= delta:
        return sigma0
    bad, step = sigma0, 1e-9
    good = sigma0 * (1 + step)
    while delta_upper(good, epsilon, k) > delta:
        bad, step = good, step * 4
        good = sigma0 * (1 + step)
        if step > 1e6:
            raise DPError(
                f"could not calibrate the discrete Gaussian for ε = {epsilon:g}, δ = {delta:g}; "
                "choose a larger δ (e.g. 1e-5)"
            )
    for _ in range(60):  # bisection on σ: keep the side that is proved to hold
        mid = 0.5 * (bad + good)
        if mid in (bad, good):
            break
        if delta_upper(mid, epsilon, k) <= delta:
            good = mid
        else:
            bad = mid
    return good


@functools.lru_cache(maxsize=1024)
def halfwidth(sigma: float, level: float = 0.95) -> int:
    """The smallest whole t with P(|X| > t) = 2·P(X ≤ −t − 1) ≤ 1 − ``level`` (from the upper bound on the CDF)."""
    s = _check_sigma(sigma)
    tail = (1.0 - _level(level)) / 2
    hi_t = max(1, int(math.ceil(s * float(special.ndtri(1 - tail / 2)))) + 2)
    while cdf_bounds(-hi_t - 1, s)[1] > tail:
        hi_t *= 2
    lo_t = -1  # P(|X| > −1) = 1 > 1 − level
    while hi_t - lo_t > 1:
        mid = (lo_t + hi_t) // 2
        if cdf_bounds(-mid - 1, s)[1] <= tail:
            hi_t = mid
        else:
            lo_t = mid
    return hi_t


def expected_abs(sigma: float) -> float:
    """E|X| = 2 Σ_{x≥1} x f(x) / Z (summed for σ ≤ DIRECT_SIGMA_MAX; above, σ√(2/π), within O(1/σ²))."""
    s = _check_sigma(sigma)
    if s > DIRECT_SIGMA_MAX:
        return s * math.sqrt(2 / math.pi)
    w, log_z_low = _window(s), _log_z_bounds(s)[0]
    x = np.arange(1, w + 1, dtype=np.float64)
    return float(2 * np.sum(x * np.exp(-(x * x) / (2 * s * s) - log_z_low)))


def pmf(x: ArrayLike, sigma: float) -> np.ndarray:
    """P(X = x) at whole x (0 between whole numbers)."""
    s = _check_sigma(sigma)
    x = np.asarray(x, dtype=float)
    if s <= DIRECT_SIGMA_MAX:
        log_z = _log_z_bounds(s)[0]
    else:
        log_z = math.log(s) + _LOG_SQRT_2PI
    return np.where(x == np.round(x), np.exp(-(x * x) / (2 * s * s) - log_z), 0.0)


# --- what one record's change does to releases with this noise (risk readings) ---------------------------------


def delta_signed(sigma: float, epsilon: float, sensitivity: int) -> float:
    """An upper bound on δ(ε) = Σ_y max(0, P(y) − e^ε·Q(y)) for a shift of K, for any real ε (the composition below
    needs negative ε too): :func:`delta_upper` for ε ≥ 0; for ε < 0 the identity δ(ε) = 1 − e^ε + e^ε·δ(−ε) (the two
    directions are the same by symmetry)."""
    eps = float(epsilon)
    if eps >= 0:
        return delta_upper(sigma, eps, sensitivity)
    return min(1.0, -math.expm1(eps) + math.exp(eps) * delta_upper(sigma, -eps, sensitivity))


def tradeoff(sigma: float, sensitivity: int, fpr: ArrayLike) -> np.ndarray | None:
    """The highest TPR at each FPR α of any test between N_Z(0, σ²) and N_Z(K, σ²) — the exact worst-case ROC of
    one release shifted by K: Neyman–Pearson's "flag y ≥ t", randomised at the threshold, summed over the outputs
    (σ ≤ :data:`DIRECT_SIGMA_MAX`; None above, where a caller reads the privacy profile). The probabilities are
    over-estimated by one common factor (Z's lower bound), which only raises a concave ROC through 0; plus 1e-12
    for rounding: never below the true curve."""
    s = _check_sigma(sigma)
    k = _check_k(sensitivity)
    if s > DIRECT_SIGMA_MAX:
        return None
    w = _window(s)
    x = np.arange(-w, w + k + 1)
    f = np.r_[0.0, np.cumsum(pmf(x, s)[::-1])]
    t = np.r_[0.0, np.cumsum(pmf(x - k, s)[::-1])]
    return np.asarray(np.minimum(1.0, np.interp(np.asarray(fpr, dtype=float), f, t) + 1e-12))


def tpr_at_fpr(sigma: float, sensitivity: int, alpha: float) -> float | None:
    """:func:`tradeoff` at one FPR α (None for a σ too large to sum)."""
    out = tradeoff(sigma, sensitivity, [float(alpha)])
    return None if out is None else float(out[0])


def epsilon_at(sigma: float, sensitivity: int, delta: float, hi: float) -> float:
    """The smallest ε (to 1e-9 relative, rounded up) whose δ(ε) for a shift of K is at most ``delta``, given an ε
    ``hi`` where it already holds; bisection on the summed δ(ε) = Σ max(0, P₁ − e^ε·P₀) for σ ≤
    :data:`DIRECT_SIGMA_MAX` (one common over-estimate of the probabilities, as in :func:`tpr_at_fpr`, only raises
    it), else on :func:`delta_upper`."""
    s = _check_sigma(sigma)
    k = _check_k(sensitivity)
    if s <= DIRECT_SIGMA_MAX:
        w = _window(s)
        x = np.arange(-w, w + k + 1)
        p1, p0 = pmf(x - k, s), pmf(x, s)

        def d(e: float) -> float:
            return float(np.maximum(p1 - math.exp(e) * p0, 0.0).sum()) + 1e-300
    else:

        def d(e: float) -> float:
            return delta_upper(s, e, k)

    lo, top = 0.0, float(hi)
    if d(0.0) <= delta:
        return 0.0
    while d(top) > delta:
        lo, top = top, 2 * top + 1e-9
    while top - lo > 1e-9 * top:
        mid = 0.5 * (lo + top)
        lo, top = (lo, mid) if d(mid) <= delta else (mid, top)
    return top


#: Largest σ of the part :func:`composed_delta_upper` enumerates output by output (about 24σ outputs).
_COMPOSE_SIGMA_MAX = 500.0


def composed_delta_upper(parts: Iterable[tuple[float, float]], epsilon: float) -> float:
    """An upper bound on δ(ε) of one record's effect on several discrete-Gaussian releases at once: ``parts`` is a
    list of (σ, K) — one record shifts each release by K (one part, or two: a MEAN's count and centred sum).

    One part: :func:`delta_signed`. Two: exactly δ(ε) = Σ_y P₁(y)·δ₂(ε − ℓ₁(y)) over the first part's outputs y,
    ℓ₁(y) = ln P₁(y)/Q₁(y) = (2Ky − K²)/(2σ²) (the second part's δ₂ at a shifted ε), summed over y within ±12σ of
    the first part's mean and each tail bounded by its mass (δ₂ ≤ 1)."""
    checked = [(_check_sigma(s), _check_k(k)) for s, k in parts]
    eps = float(epsilon)
    if len(checked) == 1:
        return delta_signed(checked[0][0], eps, checked[0][1])
    if len(checked) != 2:
        raise DPError("the composed δ takes one or two releases")
    (s1, k1), (s2, k2) = sorted(checked)  # enumerate the part with the smaller σ
    if s1 > _COMPOSE_SIGMA_MAX:  # too many outputs to enumerate: basic composition, δ₁(e) + δ₂(ε − e), best e
        return min(
            1.0,
            min(delta_signed(s1, e, k1) + delta_signed(s2, eps - e, k2) for e in np.linspace(0.0, max(eps, 0.0), 65)),
        )
    w = int(math.ceil(12 * s1)) + 2
    ys = np.arange(k1 - w, k1 + w + 1)
    p = pmf(ys - k1, s1)  # P₁: the release with the record (shifted by K)
    loss = (2.0 * k1 * ys - k1 * k1) / (2.0 * s1 * s1)
    body = float(sum(pi * delta_signed(s2, eps - li, k2) for pi, li in zip(p, loss) if pi > 0))
    tails = cdf_bounds(-w - 1, s1)[1] * 2  # P₁ outside the window, both sides
    return min(1.0, body + tails + 1e-12)
