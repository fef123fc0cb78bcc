"""Noise mechanisms: Laplace and Gaussian calibration, exact densities, errors, privacy loss, simulation.

Everything here is *maths for explaining* mechanisms: calibration (how much noise for a given ε, δ and
sensitivity Δ), exact densities, expected error, 95% intervals, the privacy-loss curve, and fast
vectorised **simulations** with a seeded ``numpy.random.Generator`` for histograms. A released answer
that a user sees as *released* is never drawn here: it goes through :mod:`dpcore.release`
(diffprivlib's floating-point-safe samplers).

Neighbouring datasets are "replace one record" with a public number of rows n, so a count has
sensitivity 1, a sum of values clamped to public bounds [L, U] has sensitivity U − L, and a mean of
such values has sensitivity (U − L) / n.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, special

from . import limits
from .errors import DPError
from .validation import check_bounds, check_delta, check_epsilon, check_positive_int, check_sensitivity

MECHANISMS = ("laplace", "gaussian", "gaussian-classic")
MECHANISM_LABELS = {
    "laplace": "Laplace",
    "gaussian": "Gaussian (analytic, Balle & Wang 2018)",
    "gaussian-classic": "Gaussian (classic calibration, ε < 1 only)",
}

# The grids and limits live in dpcore.limits; these names stay importable from here.
EPSILON_GRID = limits.NOISE_EPSILON_GRID
DELTA_GRID = limits.NOISE_DELTA_GRID
COMPARE_EPSILONS = limits.NOISE_COMPARE_EPSILONS
TABLE_EPSILONS = limits.NOISE_TABLE_EPSILONS
MAX_SIMULATED_DRAWS = limits.SIMULATED_DRAWS_MAX
Z95 = float(special.ndtri(0.975))  # 1.959964...
LAPLACE_Q95 = math.log(20.0)  # P(|Lap(b)| > b ln 20) = 5%


# --- calibration -----------------------------------------------------------------------------------


def laplace_scale(epsilon, sensitivity) -> float:
    """Laplace scale b = Δ / ε (pure ε-DP)."""
    return check_sensitivity(sensitivity) / check_epsilon(epsilon)


def gaussian_classic_sigma(epsilon, delta, sensitivity) -> float:
    """Classic Gaussian calibration σ = Δ·√(2 ln(1.25/δ)) / ε (Dwork & Roth, Thm A.1): valid only for ε < 1."""
    eps = check_epsilon(epsilon)
    d = check_delta(delta)
    sens = check_sensitivity(sensitivity)
    if eps >= 1:
        raise DPError(f"the classic Gaussian calibration is only valid for ε < 1 (got ε = {eps:g}); "
                      "use the analytic Gaussian instead, which is valid for every ε and needs less noise")
    return sens * math.sqrt(2.0 * math.log(1.25 / d)) / eps


def gaussian_delta(sigma, epsilon, sensitivity) -> float:
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
    a = sens / (2 * s)
    b = eps * s / sens
    return float(special.ndtr(a - b) - math.exp(eps + special.log_ndtr(-a - b)))


def gaussian_analytic_sigma(epsilon, delta, sensitivity) -> float:
    """Smallest σ whose Gaussian mechanism is (ε, δ)-DP (analytic calibration, Balle & Wang 2018).

    Root of :func:`gaussian_delta` (decreasing in σ) found with Brent's method on log σ.
    """
    eps = check_epsilon(epsilon)
    d = check_delta(delta)
    sens = check_sensitivity(sensitivity)
    if sens == 0:
        return 0.0

    # Work with unit sensitivity (σ scales linearly with Δ): f(u) = δ(σ = e^u) − δ.
    def f(u):
        return gaussian_delta(math.exp(u), eps, 1.0) - d

    lo, hi = -1.0, 1.0
    while f(lo) < 0:  # δ(σ) too small already: go to smaller σ
        lo -= 2.0
        if lo < -60:
            break
    while f(hi) > 0:
        hi += 2.0
        if hi > 60:
            raise DPError(f"could not calibrate the analytic Gaussian for ε = {eps:g}, δ = {d:g}; "
                          "choose a larger δ (e.g. 1e-5)")
    u = optimize.brentq(f, lo, hi, xtol=1e-12, rtol=1e-12, maxiter=200)
    # The root is only known to ~1e-12: step up until δ(σ) ≤ δ holds, so σ is never below the exact one.
    for _ in range(100):
        if f(u) <= 0:
            break
        u += 1e-12 + 1e-12 * abs(u)
    return sens * math.exp(u)


@dataclass(frozen=True)
class NoiseSpec:
    """A calibrated mechanism: which one, its (ε, δ), sensitivity Δ and noise scale (b or σ)."""

    mechanism: str
    epsilon: float
    delta: float
    sensitivity: float
    scale: float

    @property
    def scale_name(self) -> str:
        return "b" if self.mechanism == "laplace" else "σ"

    @property
    def label(self) -> str:
        return MECHANISM_LABELS[self.mechanism]


def calibrate(mechanism: str, epsilon, delta=None, sensitivity=1.0) -> NoiseSpec:
    """Check inputs and compute the noise scale. Laplace ignores δ (it is pure ε-DP: δ = 0)."""
    if mechanism not in MECHANISMS:
        raise DPError(f"unknown mechanism {mechanism!r}; choose one of {', '.join(MECHANISMS)}")
    eps = check_epsilon(epsilon)
    sens = check_sensitivity(sensitivity)
    if mechanism == "laplace":
        return NoiseSpec(mechanism, eps, 0.0, sens, laplace_scale(eps, sens))
    if delta is None:
        raise DPError("the Gaussian mechanism needs δ; try 1e-5 (well below 1/n)")
    d = check_delta(delta)
    if mechanism == "gaussian":
        return NoiseSpec(mechanism, eps, d, sens, gaussian_analytic_sigma(eps, d, sens))
    return NoiseSpec(mechanism, eps, d, sens, gaussian_classic_sigma(eps, d, sens))


def _require_noise(spec: NoiseSpec) -> None:
    if spec.scale <= 0:
        raise DPError("sensitivity Δ is 0: the answer does not depend on any one person, so no noise is needed; "
                      "set Δ > 0 to see a mechanism")


# --- exact distribution facts ------------------------------------------------------------------------


def density(spec: NoiseSpec, x, center: float = 0.0) -> np.ndarray:
    """Exact density of a released answer when the true answer is ``center``."""
    _require_noise(spec)
    z = (np.asarray(x, dtype=float) - center) / spec.scale
    if spec.mechanism == "laplace":
        return np.exp(-np.abs(z)) / (2 * spec.scale)
    return np.exp(-0.5 * z * z) / (spec.scale * math.sqrt(2 * math.pi))


def expected_abs_error(spec: NoiseSpec) -> float:
    """E|released − true|: b for Laplace, σ·√(2/π) for Gaussian."""
    if spec.mechanism == "laplace":
        return spec.scale
    return spec.scale * math.sqrt(2 / math.pi)


def ci95_halfwidth(spec: NoiseSpec) -> float:
    """Half-width h with P(|noise| ≤ h) = 95%: b·ln 20 for Laplace, 1.96σ for Gaussian."""
    return spec.scale * (LAPLACE_Q95 if spec.mechanism == "laplace" else Z95)


def ci95(spec: NoiseSpec, value: float) -> tuple[float, float]:
    """Central 95% interval of released answers around the true value."""
    h = ci95_halfwidth(spec)
    return (float(value) - h, float(value) + h)


def privacy_loss(spec: NoiseSpec, z, value: float = 0.0) -> np.ndarray:
    """ln p_D(z) / p_D'(z) where D has true answer ``value`` and D' has ``value + Δ``.

    Laplace: (|z − v − Δ| − |z − v|)/b, always within ±Δ/b = ±ε. Gaussian: (Δ² − 2Δ(z − v)) / (2σ²),
    unbounded (linear in z): it leaves the ±ε band in the tails, and that is what δ pays for.
    """
    _require_noise(spec)
    z = np.asarray(z, dtype=float) - value
    d = spec.sensitivity
    if spec.mechanism == "laplace":
        return (np.abs(z - d) - np.abs(z)) / spec.scale
    return (d * d - 2 * d * z) / (2 * spec.scale ** 2)


def loss_exceeds_mass(spec: NoiseSpec) -> float:
    """P_{z ~ M(D)}[privacy loss > ε]: the probability mass where the loss leaves the ±ε band (0 for Laplace)."""
    _require_noise(spec)
    if spec.mechanism == "laplace":
        return 0.0
    # loss > ε  <=>  z − v < Δ/2 − εσ²/Δ ; under D, z − v ~ N(0, σ²)
    t = spec.sensitivity / 2 - spec.epsilon * spec.scale ** 2 / spec.sensitivity
    return float(special.ndtr(t / spec.scale))


def actual_delta(spec: NoiseSpec) -> float:
    """The δ actually achieved at ε: ∫ max(0, p_D − e^ε p_D') (0 for Laplace). Never above the requested δ."""
    _require_noise(spec)
    if spec.mechanism == "laplace":
        return 0.0
    return max(0.0, gaussian_delta(spec.scale, spec.epsilon, spec.sensitivity))


# --- simulation (plain numpy: for pictures only) ---------------------------------------------------------


def _rng(seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def simulate(spec: NoiseSpec, value: float, draws: int, seed=0) -> np.ndarray:
    """``draws`` simulated releases (vectorised numpy; NOT a safe release path — for histograms only)."""
    n = check_positive_int(draws, "number of draws")
    if n > MAX_SIMULATED_DRAWS:
        raise DPError(f"number of draws must be at most {MAX_SIMULATED_DRAWS:,}, got {n:,}")
    v = _finite(value, "true value")
    rng = _rng(seed)
    if spec.mechanism == "laplace":
        return rng.laplace(v, spec.scale, n)
    return rng.normal(v, spec.scale, n)


def _finite(value, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise DPError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise DPError(f"{name} must be a finite number, got {value!r}")
    return v


CURVE_EPSILONS = tuple(float(e) for e in np.logspace(-2, math.log10(20), 60))


@functools.lru_cache(maxsize=64)
def _unit_curve(mechanism: str, delta) -> pd.DataFrame:
    return _epsilon_curve(mechanism, delta, 1.0, CURVE_EPSILONS)


def epsilon_curve(mechanism: str, delta, sensitivity, epsilons=CURVE_EPSILONS) -> pd.DataFrame:
    """Expected |error| and 95% half-width over a grid of ε (NaN where a calibration is not valid).

    Every scale is linear in Δ, so the default grid is computed once per (mechanism, δ) for Δ = 1 and scaled.
    """
    if tuple(float(e) for e in epsilons) == CURVE_EPSILONS:
        sens = check_sensitivity(sensitivity)
        if delta is not None and mechanism != "laplace":
            delta = check_delta(delta)
        out = _unit_curve(mechanism, None if mechanism == "laplace" else delta).copy()
        out[["expected_abs_error", "ci95_halfwidth", "scale"]] *= sens
        return out
    return _epsilon_curve(mechanism, delta, sensitivity, epsilons)


def _epsilon_curve(mechanism: str, delta, sensitivity, epsilons) -> pd.DataFrame:
    rows = []
    for e in epsilons:
        try:
            spec = calibrate(mechanism, e, delta, sensitivity)
            rows.append((float(e), expected_abs_error(spec), ci95_halfwidth(spec), spec.scale))
        except DPError:
            if mechanism == "gaussian-classic" and e >= 1:  # outside the classic bound's validity
                rows.append((float(e), math.nan, math.nan, math.nan))
            else:
                raise
    return pd.DataFrame(rows, columns=["epsilon", "expected_abs_error", "ci95_halfwidth", "scale"])


# --- queries on the medical data --------------------------------------------------------------------------

QUERY_KINDS = ("count", "sum", "mean")


@dataclass(frozen=True)
class QueryAnswer:
    """The true (NOT private) answer of a query and its sensitivity under replace-one neighbours."""

    kind: str
    column: str
    true_value: float
    sensitivity: float
    n: int
    lower: float | None
    upper: float | None
    clamped: int  # rows whose value was outside [L, U] and was clamped
    description: str
    integer: bool  # a count: released through the integer (geometric) mechanism


def bounded_sum_sensitivity(lower, upper) -> float:
    lo, hi = check_bounds(lower, upper)
    return hi - lo


def bounded_mean_sensitivity(lower, upper, n) -> float:
    lo, hi = check_bounds(lower, upper)
    rows = check_positive_int(n, "n (number of rows)")
    return (hi - lo) / rows


def clamp(values, lower, upper) -> np.ndarray:
    lo, hi = check_bounds(lower, upper)
    return np.clip(np.asarray(values, dtype=float), lo, hi)


def query(df: pd.DataFrame, kind: str, column: str = "has_rare_disease", lower=None, upper=None) -> QueryAnswer:
    """Count / bounded sum / bounded mean on a data frame (the true answer: NOT private).

    count: rows where ``column`` is true (Δ = 1). sum / mean: values clamped to the *public* bounds
    [lower, upper] (Δ = U − L and (U − L)/n, n public).
    """
    if kind not in QUERY_KINDS:
        raise DPError(f"unknown query {kind!r}; choose one of {', '.join(QUERY_KINDS)}")
    if column not in df.columns:
        raise DPError(f"unknown column {column!r}; available: {', '.join(map(str, df.columns))}")
    n = check_positive_int(len(df), "n (number of rows)")
    col = df[column]
    if kind == "count":
        if not (pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col)):
            raise DPError(f"a count needs a yes/no column; {column!r} is not")
        true = int(col.astype(bool).sum())
        return QueryAnswer("count", column, float(true), 1.0, n, None, None, 0,
                           f"number of patients with {column} = yes", True)
    if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        raise DPError(f"a {kind} needs a numeric column; {column!r} is not")
    lo, hi = check_bounds(lower, upper)
    raw = col.to_numpy(dtype=float)
    clamped_n = int(np.sum((raw < lo) | (raw > hi)))
    vals = np.clip(raw, lo, hi)
    if kind == "sum":
        return QueryAnswer("sum", column, float(vals.sum()), hi - lo, n, lo, hi, clamped_n,
                           f"sum of {column} clamped to [{lo:g}, {hi:g}]", False)
    return QueryAnswer("mean", column, float(vals.mean()), bounded_mean_sensitivity(lo, hi, n), n, lo, hi,
                       clamped_n, f"mean of {column} clamped to [{lo:g}, {hi:g}] over n = {n:,} rows", False)


# --- everything one page view needs, computed at once --------------------------------------------------------


@dataclass(frozen=True)
class NoiseView:
    spec: NoiseSpec
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
    compare: tuple  # ((epsilon, x, pdf, lo, hi) ...) for COMPARE_EPSILONS
    loss_z: np.ndarray
    loss: np.ndarray
    pdf_d: np.ndarray
    pdf_d2: np.ndarray
    curve: pd.DataFrame


def noise_view(mechanism: str, epsilon, delta, sensitivity, value, *, draws: int = 100_000, seed: int = 0,
               bins: int = 120, grid_points: int = 601) -> NoiseView:
    """All numbers and arrays for the noise page at one setting (exact curves + a seeded simulation)."""
    spec = calibrate(mechanism, epsilon, delta, sensitivity)
    _require_noise(spec)
    v = _finite(value, "true value")
    h = ci95_halfwidth(spec)
    half = 2.2 * h
    x = np.linspace(v - half, v + half, grid_points)
    sims = simulate(spec, v, draws, seed)
    counts, edges = np.histogram(sims, bins=bins, range=(v - half, v + half))
    width = edges[1] - edges[0]
    hist_density = counts / (len(sims) * width)
    lo, hi = v - h, v + h
    coverage = float(np.mean((sims >= lo) & (sims <= hi)))
    mae = float(np.mean(np.abs(sims - v)))

    compare = []
    for e in COMPARE_EPSILONS:
        try:
            s = calibrate(mechanism, e, delta, sensitivity)
        except DPError:
            continue
        hh = ci95_halfwidth(s)
        xs = np.linspace(v - 2.2 * hh, v + 2.2 * hh, 401)
        compare.append((e, xs, density(s, xs, v), v - hh, v + hh))

    # Neighbouring datasets: true answers v (D) and v + Δ (D').
    d = spec.sensitivity
    span = max(3.5 * h, 3 * d)
    lz = np.linspace(v + d / 2 - span, v + d / 2 + span, grid_points)
    curve = epsilon_curve(mechanism, delta, sensitivity)
    return NoiseView(
        spec=spec, value=v, expected_abs_error=expected_abs_error(spec), ci95=(lo, hi),
        loss_exceeds_mass=loss_exceeds_mass(spec), actual_delta=actual_delta(spec),
        x=x, pdf=density(spec, x, v), hist_edges=edges, hist_density=hist_density, draws=len(sims), seed=seed,
        sim_mean_abs_error=mae, sim_coverage=coverage, compare=tuple(compare),
        loss_z=lz, loss=privacy_loss(spec, lz, v), pdf_d=density(spec, lz, v), pdf_d2=density(spec, lz, v + d),
        curve=curve,
    )


def _geometric_p(epsilon: float, sensitivity: float) -> float:
    return math.exp(-epsilon / max(1.0, math.ceil(sensitivity)))


def epsilon_table(mechanism: str, delta, sensitivity, value=None, *, integer: bool = False, seed: int | None = None,
                  epsilons=TABLE_EPSILONS) -> pd.DataFrame:
    """ε | noise scale | typical (expected) |error| | ±range holding 95% of releases | privacy level.

    Exact numbers, no random draw: one seeded example per row made ε = 0.1 look accurate when the draw
    happened to land near the truth (issue 13). Counts under Laplace (``integer``) use the geometric
    mechanism's own figures (E|X| = 2p/(1 − p²), p = e^(−ε/Δ)). ``value`` and ``seed`` are accepted for
    callers of the old signature and not used.
    """
    from .interpret import privacy_level

    rows = []
    for e in epsilons:
        try:
            spec = calibrate(mechanism, e, delta, sensitivity)
        except DPError:
            if mechanism == "gaussian-classic" and e >= 1:
                rows.append({"epsilon": e, "noise scale": None, "expected |error|": None, "95% within ±": None,
                             "privacy level": "n/a: classic Gaussian needs ε < 1"})
                continue
            raise
        if integer and mechanism == "laplace" and spec.sensitivity > 0:
            p = _geometric_p(spec.epsilon, spec.sensitivity)
            err = 2 * p / (1 - p * p)
            # smallest whole t with P(|X| > t) = 2 p^(t+1) / (1 + p) ≤ 5%
            half = max(0.0, math.ceil(math.log(0.025 * (1 + p)) / math.log(p) - 1 - 1e-12))
        else:
            err, half = expected_abs_error(spec), ci95_halfwidth(spec)
        rows.append({"epsilon": e, "noise scale": spec.scale, "expected |error|": err, "95% within ±": half,
                     "privacy level": privacy_level(e)})
    return pd.DataFrame(rows)
