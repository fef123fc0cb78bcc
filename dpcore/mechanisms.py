"""Noise mechanisms: one class per mechanism — Laplace, Gaussian (analytic and classic), Geometric for counts.

Each class (:class:`Laplace`, :class:`GaussianAnalytic`, :class:`GaussianClassic`, :class:`Geometric`) is a
frozen, keyword-only calibration in the spirit of diffprivlib's ``mechanisms/base.py``: built once with
``epsilon``, ``delta`` and ``sensitivity`` (validated, a :class:`~dpcore.errors.DPError` saying what to do next),
it knows its noise ``scale`` (b or σ), exact ``density``, ``expected_abs_error``, ``halfwidth`` at any level,
``privacy_loss``, its :class:`~dpcore.charge.Charge` (ε, δ, ρ, neighbour relation), and how to draw:

* :meth:`Mechanism.release` — the **secure** sample: diffprivlib's floating-point-safe samplers (secure random
  source when ``random_state`` is None; the analytic Gaussian with OUR exact σ, never diffprivlib's smaller one;
  counts through the integer geometric mechanism). :mod:`dpcore.release` is the release path's public face.
* :meth:`Mechanism.simulate` — a seeded plain-numpy **teaching simulation** for histograms: not a DP release.

``if mechanism == "laplace"`` lives only in the class table :data:`CLASSES`; callers name a mechanism by its
string (widgets, CLI, stored answers) and get the class from :func:`get` / :func:`for_release`.

The rest of the module is the noise page's teaching view: :func:`query` (a replace-one query model with a public
number of rows n — see :class:`QueryAnswer` for why it differs from :mod:`dpcore.queries`), :func:`noise_view`,
the ε curve and table. Over ~400 lines because the four classes and the page view share one vocabulary; a
later step moves this into a ``noise/`` package.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy import optimize, special

from . import limits
from .charge import Neighbour
from .errors import DPError
from .validation import check_bounds, check_delta, check_epsilon, check_positive_int, check_sensitivity

#: Real-valued mechanisms a user can pick (noise page, CLI noise command).
MECHANISMS = ("laplace", "gaussian", "gaussian-classic")
#: Mechanisms a query console / ledger answer may use (the classic Gaussian is valid only for ε < 1).
QUERY_MECHANISMS = ("laplace", "gaussian")

# The grids and limits live in dpcore.limits; these names stay importable from here.
EPSILON_GRID = limits.NOISE_EPSILON_GRID
DELTA_GRID = limits.NOISE_DELTA_GRID
COMPARE_EPSILONS = limits.NOISE_COMPARE_EPSILONS
TABLE_EPSILONS = limits.NOISE_TABLE_EPSILONS
MAX_SIMULATED_DRAWS = limits.SIMULATED_DRAWS_MAX
MAX_RELEASE_DRAWS = limits.RELEASE_DRAWS_MAX


def _level(level) -> float:
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
                      "use the analytic Gaussian ('gaussian') instead, which is valid for every ε and needs less "
                      "noise")
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

    The app's one σ solver: root of :func:`gaussian_delta` (decreasing in σ) found with Brent's method on log σ
    at Δ = 1 (cached), then scaled by Δ. Releases use it too (never diffprivlib's solver, which lands slightly
    below the exact σ at extreme settings).
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
    return math.exp(u)


# --- one class per mechanism ---------------------------------------------------------------------------


def _finite(value, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise DPError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise DPError(f"{name} must be a finite number, got {value!r}")
    return v


def _rng(seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


@dataclass(frozen=True, kw_only=True)
class Mechanism:
    """A calibrated noise mechanism: (ε, δ), sensitivity Δ and its noise ``scale`` (b or σ). Abstract.

    Build a subclass with keywords (``Laplace(epsilon=1.0, sensitivity=2.0)``) or by name with :func:`get`.
    """

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    scale_name: ClassVar[str] = "b"  # "b" or "σ" for display
    scale_ascii: ClassVar[str] = "b"  # "b" or "sigma" for JSON
    pure: ClassVar[bool] = True  # pure ε-DP (δ = 0)
    max_epsilon: ClassVar[float] = math.inf  # calibration valid only for ε below this

    epsilon: float
    delta: float | None = None  # None: 0 for a pure mechanism; a Gaussian refuses it ("needs δ")
    sensitivity: float = 1.0
    scale: float = field(init=False)

    def __post_init__(self):
        if type(self) is Mechanism:
            raise DPError("Mechanism is abstract; use Laplace, GaussianAnalytic, GaussianClassic or Geometric")
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity))
        if self.pure:
            if self.delta not in (None, 0, 0.0):
                raise DPError(f"the {self.label} mechanism is pure ε-DP: δ must be 0, got {self.delta!r}; "
                              "drop δ, or choose the Gaussian mechanism")
            object.__setattr__(self, "delta", 0.0)
        else:
            if self.delta is None:
                raise DPError("the Gaussian mechanism needs δ; try 1e-5 (well below 1/n)")
            object.__setattr__(self, "delta", check_delta(self.delta))
        object.__setattr__(self, "scale", float(self._calibrate()))

    # --- what subclasses define -----------------------------------------------------------------------

    def _calibrate(self) -> float:
        raise NotImplementedError

    def _density(self, z: np.ndarray) -> np.ndarray:  # z = (x − centre) / scale
        raise NotImplementedError

    def _sampler(self, random_state):
        """The diffprivlib mechanism that draws a release (the secure path when ``random_state`` is None)."""
        raise NotImplementedError

    def _simulate(self, rng: np.random.Generator, value: float, n: int) -> np.ndarray:
        raise NotImplementedError

    # --- common facts ---------------------------------------------------------------------------------

    @property
    def mechanism(self) -> str:
        """The mechanism's name ("laplace", "gaussian", "gaussian-classic", "geometric")."""
        return self.name

    def _require_noise(self) -> None:
        if self.scale <= 0:
            raise DPError("sensitivity Δ is 0: the answer does not depend on any one person, so no noise is needed; "
                          "set Δ > 0 to see a mechanism")

    def density(self, x, center: float = 0.0) -> np.ndarray:
        """Exact density (pmf for Geometric) of a released answer when the true answer is ``center``."""
        self._require_noise()
        return self._density((np.asarray(x, dtype=float) - center) / self.scale)

    def expected_abs_error(self) -> float:
        """E|released − true|."""
        raise NotImplementedError

    def halfwidth(self, level: float = 0.95) -> float:
        """Half-width t with P(|noise| <= t) >= ``level`` (0 when Δ = 0: no noise)."""
        raise NotImplementedError

    def interval(self, value: float, level: float = 0.95) -> tuple[float, float]:
        """Central interval holding ``level`` of released answers around the true value."""
        h = self.halfwidth(level)
        return (float(value) - h, float(value) + h)

    def privacy_loss(self, z, value: float = 0.0) -> np.ndarray:
        """ln p_D(z) / p_D'(z) where D has true answer ``value`` and D' has ``value + Δ``."""
        raise NotImplementedError

    def loss_exceeds_mass(self) -> float:
        """P_{z ~ M(D)}[privacy loss > ε]: the mass where the loss leaves the ±ε band (0 for pure ε-DP)."""
        self._require_noise()
        return 0.0

    def actual_delta(self) -> float:
        """The δ actually achieved at ε (0 for pure ε-DP). Never above the requested δ."""
        self._require_noise()
        return 0.0

    @property
    def rho(self) -> float:
        """zCDP cost of one release (Bun & Steinke 2016): ε²/2 for pure ε-DP."""
        from .charge import pure_rho

        return pure_rho(self.epsilon)

    def charge(self, *, neighbour=None):
        """The :class:`~dpcore.charge.Charge` of one release under ``neighbour`` (default add/remove one).
        The mechanism itself is relation-free: Δ must have been computed for the relation named here."""
        from .charge import Charge, Neighbour

        return Charge(self.epsilon, self.delta, self.rho, neighbour or Neighbour.ADD_REMOVE)

    # --- drawing --------------------------------------------------------------------------------------

    def release(self, value, *, random_state=None):
        """ONE released answer through diffprivlib (secure random source when ``random_state`` is None).

        A seeded ``random_state`` makes it reproducible, so not a DP release: tests and labelled demos only.
        Each call costs :meth:`charge`."""
        v = _finite(value, "true value")
        return float(self._sampler(random_state).randomise(v))

    def release_many(self, value, draws: int, *, random_state=None) -> list:
        """``draws`` independent releases of one value (k of them cost k charges by basic composition)."""
        n = check_positive_int(draws, "number of draws")
        if n > MAX_RELEASE_DRAWS:
            raise DPError(f"number of draws through the release path must be at most {MAX_RELEASE_DRAWS:,}, "
                          f"got {n:,}")
        v = _finite(value, "true value")
        s = self._sampler(random_state)
        return [self._cast(s.randomise(self._cast(v))) for _ in range(n)]

    def _cast(self, x):
        return float(x)

    def simulate(self, value, draws: int, seed=0) -> np.ndarray:
        """TEACHING SIMULATION, NOT A DP RELEASE: ``draws`` vectorised numpy draws from a seeded generator, for
        histograms and checks only."""
        n = check_positive_int(draws, "number of draws")
        if n > MAX_SIMULATED_DRAWS:
            raise DPError(f"number of draws must be at most {MAX_SIMULATED_DRAWS:,}, got {n:,}")
        v = _finite(value, "true value")
        return self._simulate(_rng(seed), v, n)


@dataclass(frozen=True, kw_only=True)
class Laplace(Mechanism):
    """Laplace mechanism, b = Δ/ε: pure ε-DP (Dwork et al. 2006)."""

    name: ClassVar[str] = "laplace"
    label: ClassVar[str] = "Laplace"

    def _calibrate(self) -> float:
        return laplace_scale(self.epsilon, self.sensitivity)

    def _density(self, z):
        return np.exp(-np.abs(z)) / (2 * self.scale)

    def expected_abs_error(self) -> float:
        return self.scale

    def halfwidth(self, level: float = 0.95) -> float:
        return self.scale * laplace_quantile(level)

    def privacy_loss(self, z, value: float = 0.0) -> np.ndarray:
        """(|z − v − Δ| − |z − v|)/b: always within ±Δ/b = ±ε."""
        self._require_noise()
        z = np.asarray(z, dtype=float) - value
        return (np.abs(z - self.sensitivity) - np.abs(z)) / self.scale

    def _sampler(self, random_state):
        from diffprivlib import mechanisms as dpl

        return dpl.Laplace(epsilon=self.epsilon, delta=0.0, sensitivity=self.sensitivity, random_state=random_state)

    def _simulate(self, rng, value, n):
        return rng.laplace(value, self.scale, n)


@dataclass(frozen=True, kw_only=True)
class _Gaussian(Mechanism):
    """Common facts of the Gaussian mechanisms (the calibration of σ differs)."""

    scale_name: ClassVar[str] = "σ"
    scale_ascii: ClassVar[str] = "sigma"
    pure: ClassVar[bool] = False

    def _density(self, z):
        return np.exp(-0.5 * z * z) / (self.scale * math.sqrt(2 * math.pi))

    def expected_abs_error(self) -> float:
        return self.scale * math.sqrt(2 / math.pi)

    def halfwidth(self, level: float = 0.95) -> float:
        return self.scale * normal_quantile(level)

    def privacy_loss(self, z, value: float = 0.0) -> np.ndarray:
        """(Δ² − 2Δ(z − v)) / (2σ²): unbounded (linear in z); it leaves the ±ε band in the tails, and that is
        what δ pays for."""
        self._require_noise()
        z = np.asarray(z, dtype=float) - value
        d = self.sensitivity
        return (d * d - 2 * d * z) / (2 * self.scale ** 2)

    def loss_exceeds_mass(self) -> float:
        self._require_noise()
        # loss > ε  <=>  z − v < Δ/2 − εσ²/Δ ; under D, z − v ~ N(0, σ²)
        t = self.sensitivity / 2 - self.epsilon * self.scale ** 2 / self.sensitivity
        return float(special.ndtr(t / self.scale))

    def actual_delta(self) -> float:
        self._require_noise()
        return max(0.0, gaussian_delta(self.scale, self.epsilon, self.sensitivity))

    @property
    def rho(self) -> float:
        """zCDP cost Δ²/(2σ²) with this mechanism's σ (0 when Δ = 0: nothing released)."""
        from .charge import gaussian_rho

        return 0.0 if self.sensitivity == 0 else gaussian_rho(self.scale, self.sensitivity)

    def _simulate(self, rng, value, n):
        return rng.normal(value, self.scale, n)


@dataclass(frozen=True, kw_only=True)
class GaussianAnalytic(_Gaussian):
    """Gaussian mechanism with the exact analytic σ (Balle & Wang 2018): (ε, δ)-DP for every ε."""

    name: ClassVar[str] = "gaussian"
    label: ClassVar[str] = "Gaussian (analytic, Balle & Wang 2018)"

    def _calibrate(self) -> float:
        return gaussian_analytic_sigma(self.epsilon, self.delta, self.sensitivity)

    def _sampler(self, random_state):
        from .release import ExactGaussian

        return ExactGaussian(epsilon=self.epsilon, delta=self.delta, sensitivity=self.sensitivity,
                             random_state=random_state)


@dataclass(frozen=True, kw_only=True)
class GaussianClassic(_Gaussian):
    """Gaussian mechanism with the classic σ = Δ√(2 ln(1.25/δ))/ε (Dwork & Roth, Thm A.1): only for ε < 1."""

    name: ClassVar[str] = "gaussian-classic"
    label: ClassVar[str] = "Gaussian (classic calibration, ε < 1 only)"
    max_epsilon: ClassVar[float] = 1.0

    def _calibrate(self) -> float:
        return gaussian_classic_sigma(self.epsilon, self.delta, self.sensitivity)

    def _sampler(self, random_state):
        from diffprivlib import mechanisms as dpl

        return dpl.Gaussian(epsilon=self.epsilon, delta=self.delta, sensitivity=self.sensitivity,
                            random_state=random_state)


@dataclass(frozen=True, kw_only=True)
class Geometric(Mechanism):
    """Two-sided geometric (discrete Laplace) mechanism for counts: P(k) ∝ α^|k|, α = e^(−ε/Δ), whole Δ >= 1.
    Pure ε-DP with no floating point in the release. ``scale`` is Δ/ε (the matching Laplace b)."""

    name: ClassVar[str] = "geometric"
    label: ClassVar[str] = "Geometric (discrete Laplace, counts)"

    def __post_init__(self):
        s = self.sensitivity
        if isinstance(s, bool) or not isinstance(s, (int, float, np.integer, np.floating)) or not math.isfinite(s) \
                or int(s) != s or s < 1:
            raise DPError(f"count sensitivity must be a whole number >= 1, got {s!r}")
        super().__post_init__()

    @property
    def alpha(self) -> float:
        return math.exp(-self.epsilon / self.sensitivity)

    def _calibrate(self) -> float:
        return laplace_scale(self.epsilon, self.sensitivity)

    def density(self, x, center: float = 0.0) -> np.ndarray:
        """Probability mass at whole offsets x − centre (0 between them)."""
        k = np.asarray(x, dtype=float) - center
        a = self.alpha
        return np.where(k == np.round(k), (1 - a) / (1 + a) * a ** np.abs(k), 0.0)

    def expected_abs_error(self) -> float:
        a = self.alpha
        return 2 * a / (1 - a * a)

    def halfwidth(self, level: float = 0.95) -> float:
        """The smallest whole t with P(|X| > t) = 2α^(t+1)/(1+α) <= 1 − level."""
        tail = 1.0 - _level(level)
        a = self.alpha
        t = math.ceil(math.log(tail * (1 + a) / 2) / math.log(a) - 1 - 1e-12)
        return float(max(t, 0))

    def privacy_loss(self, z, value: float = 0.0) -> np.ndarray:
        z = np.asarray(z, dtype=float) - value
        return (np.abs(z - self.sensitivity) - np.abs(z)) * (self.epsilon / self.sensitivity)

    def release(self, value, *, random_state=None) -> int:
        """ONE released count (whole number in, whole number out); secure when ``random_state`` is None."""
        try:
            whole = int(value) == value
        except (TypeError, ValueError, OverflowError):
            whole = False
        if not whole:
            raise DPError(f"count must be a whole number, got {value!r}")
        return int(self._sampler(random_state).randomise(int(value)))

    def _cast(self, x):
        return int(round(float(x)))

    def _sampler(self, random_state):
        from diffprivlib import mechanisms as dpl

        return dpl.Geometric(epsilon=self.epsilon, sensitivity=int(self.sensitivity), random_state=random_state)

    def _simulate(self, rng, value, n):
        p = 1.0 - self.alpha  # difference of two geometric(p) counts is two-sided geometric with ratio α
        return value + (rng.geometric(p, n) - rng.geometric(p, n)).astype(float)


#: The class table: the one place a mechanism's name picks its behaviour.
CLASSES: dict[str, type[Mechanism]] = {c.name: c for c in (Laplace, GaussianAnalytic, GaussianClassic, Geometric)}
MECHANISM_LABELS = {name: CLASSES[name].label for name in MECHANISMS}


def mechanism_class(name: str) -> type[Mechanism]:
    try:
        return CLASSES[str(name)]
    except KeyError:
        raise DPError(f"unknown mechanism {name!r}; choose one of {', '.join(MECHANISMS)}") from None


def get(name: str, *, epsilon, delta=None, sensitivity=1.0) -> Mechanism:
    """The mechanism called ``name``, calibrated. A pure mechanism (Laplace, Geometric) ignores ``delta``."""
    cls = mechanism_class(name)
    return cls(epsilon=epsilon, delta=0.0 if cls.pure else delta, sensitivity=sensitivity)


def for_release(name: str, *, epsilon, delta=None, sensitivity=1.0, integer: bool = False) -> Mechanism:
    """The mechanism that really releases an answer: a count (``integer``) under Laplace goes through the
    integer geometric mechanism with Δ rounded up to a whole number; everything else is :func:`get`."""
    if integer and mechanism_class(name) is Laplace:
        return Geometric(epsilon=epsilon, sensitivity=max(1, int(math.ceil(check_sensitivity(sensitivity)))))
    return get(name, epsilon=epsilon, delta=delta, sensitivity=sensitivity)


def halfwidth(kind: str, *, epsilon, sensitivity, delta=0.0, level: float = 0.95) -> float:
    """Half-width t with P(|noise| <= t) >= level of mechanism ``kind`` (0 when Δ = 0)."""
    if sensitivity == 0:
        return 0.0
    return get(kind, epsilon=epsilon, delta=delta, sensitivity=sensitivity).halfwidth(level)


# --- old function names over the classes (notebooks, the noise page, the CLI) ---------------------------------

NoiseSpec = Mechanism  # a calibrated mechanism (old name)


def calibrate(mechanism: str, epsilon, delta=None, sensitivity=1.0) -> Mechanism:
    """Check inputs and build the mechanism. Laplace ignores δ (it is pure ε-DP: δ = 0)."""
    return get(mechanism, epsilon=epsilon, delta=delta, sensitivity=sensitivity)


def density(spec: Mechanism, x, center: float = 0.0) -> np.ndarray:
    return spec.density(x, center)


def expected_abs_error(spec: Mechanism) -> float:
    return spec.expected_abs_error()


def ci95_halfwidth(spec: Mechanism) -> float:
    """Half-width h with P(|noise| ≤ h) = 95%: b·ln 20 for Laplace, 1.96σ for Gaussian."""
    return spec.halfwidth(0.95)


def ci95(spec: Mechanism, value: float) -> tuple[float, float]:
    return spec.interval(value, 0.95)


def privacy_loss(spec: Mechanism, z, value: float = 0.0) -> np.ndarray:
    return spec.privacy_loss(z, value)


def loss_exceeds_mass(spec: Mechanism) -> float:
    return spec.loss_exceeds_mass()


def actual_delta(spec: Mechanism) -> float:
    return spec.actual_delta()


def simulate(spec: Mechanism, value: float, draws: int, seed=0) -> np.ndarray:
    """TEACHING SIMULATION (vectorised numpy; NOT a safe release path — for histograms only)."""
    return spec.simulate(value, draws, seed)


def _require_noise(spec: Mechanism) -> None:
    spec._require_noise()


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
        pure = mechanism_class(mechanism).pure
        if delta is not None and not pure:
            delta = check_delta(delta)
        out = _unit_curve(mechanism, None if pure else delta).copy()
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
            if e >= mechanism_class(mechanism).max_epsilon:  # outside the calibration's validity
                rows.append((float(e), math.nan, math.nan, math.nan))
            else:
                raise
    return pd.DataFrame(rows, columns=["epsilon", "expected_abs_error", "ci95_halfwidth", "scale"])


# --- queries on the medical data --------------------------------------------------------------------------

QUERY_KINDS = ("count", "sum", "mean")


@dataclass(frozen=True)
class QueryAnswer:
    """The true (NOT private) answer of a teaching query and its sensitivity under REPLACE-ONE neighbours.

    This is the noise page's teaching view, deliberately apart from :class:`dpcore.queries.Query` (the query
    console and its ledger, add/remove one row): here the number of rows n is public and neighbours swap one
    record, so a bounded SUM has Δ = U − L (add/remove: max(|L|, |U|)) and a MEAN Δ = (U − L)/n with all ε on
    it (add/remove: noisy sum / noisy count). Its answers are never charged to a ledger; ``neighbour`` says the
    relation so that a :class:`~dpcore.charge.Charge` built from it (:meth:`charge`) says it too, and the ledger
    refuses it.
    """

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
    neighbour: Neighbour = Neighbour.REPLACE_ONE  # the relation Δ is computed for (explicit, never the ledger's)

    def mechanism(self, name: str, epsilon, delta=None) -> Mechanism:
        """The mechanism that releases this answer (a count under Laplace: geometric)."""
        return for_release(name, epsilon=epsilon, delta=delta, sensitivity=self.sensitivity, integer=self.integer)

    def charge(self, name: str, epsilon, delta=None):
        """What one release of this answer costs, under :attr:`neighbour` (replace-one)."""
        return self.mechanism(name, epsilon, delta).charge(neighbour=self.neighbour)


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
            if e >= mechanism_class(mechanism).max_epsilon:
                rows.append({"epsilon": e, "noise scale": None, "expected |error|": None, "95% within ±": None,
                             "privacy level": "n/a: classic Gaussian needs ε < 1"})
                continue
            raise
        # what really releases it: a count under Laplace is the geometric mechanism (its own error figures)
        rel = (for_release(mechanism, epsilon=e, delta=delta, sensitivity=spec.sensitivity, integer=integer)
               if spec.sensitivity > 0 else spec)
        err, half = rel.expected_abs_error(), rel.halfwidth(0.95)
        rows.append({"epsilon": e, "noise scale": spec.scale, "expected |error|": err, "95% within ±": half,
                     "privacy level": privacy_level(e)})
    return pd.DataFrame(rows)
