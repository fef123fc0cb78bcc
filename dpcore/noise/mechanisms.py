"""Noise mechanisms: one class per mechanism — Laplace, Gaussian (analytic and classic), and for whole numbers
Geometric (discrete Laplace) and DiscreteGaussian.

Each class (:class:`Laplace`, :class:`GaussianAnalytic`, :class:`GaussianClassic`, :class:`Geometric`,
:class:`DiscreteGaussian`) is a frozen, keyword-only calibration in the spirit of diffprivlib's
``mechanisms/base.py``: built once with ``epsilon``, ``delta`` and ``sensitivity`` (validated, a
:class:`~dpcore.errors.DPError` saying what to do next), it knows its noise ``scale`` (b or σ, from
:mod:`dpcore.noise.calibration` and :mod:`dpcore.noise.discrete`), exact ``density``, ``expected_abs_error``,
``halfwidth`` at any level, ``privacy_loss``, its :class:`~dpcore.noise.charge.Charge` (ε, δ, ρ, neighbour
relation), and :meth:`Mechanism.simulate` — a seeded plain-numpy **teaching simulation** for histograms: not a DP
release.

These classes are maths: they never draw a release. Released answers are whole numbers plus Geometric or
DiscreteGaussian noise drawn by OpenDP's exact samplers in :mod:`dpcore.noise.release` (the layer above), which
uses these classes for the scale, the interval and the charge. Imports go one way: calibration and discrete (maths)
→ charge → mechanisms → release.

``if mechanism == "laplace"`` lives only in the class table :data:`CLASSES`; callers name a mechanism by its
string (widgets, CLI, stored answers) and get the class from :func:`get` / :func:`for_release`.

The noise page's view (curves, tables) is :mod:`dpcore.noise.view`; its teaching query :mod:`dpcore.noise.teaching`.

Why one module over 400 lines: it holds one idea, the class per mechanism and the one table that names them;
the discrete Gaussian's own maths (its δ(ε) and quantiles) already lives apart, in :mod:`dpcore.noise.discrete`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from .. import limits
from ..errors import DPError
from ..safe_math import EXP_MAX
from ..validation import check_delta, check_epsilon, check_positive_int, check_sensitivity
from . import discrete
from .calibration import (
    _level,
    gaussian_analytic_sigma,
    gaussian_classic_sigma,
    gaussian_delta,
    laplace_quantile,
    laplace_scale,
    normal_quantile,
)
from .charge import Charge, Neighbour, gaussian_rho, pure_rho
from .grid import check_release

#: Real-valued mechanisms a user can pick (noise page, CLI noise command).
MECHANISMS = ("laplace", "gaussian", "gaussian-classic")
#: Mechanisms a query console / ledger answer may use (the classic Gaussian is valid only for ε < 1); each has its
#: charge in :meth:`dpcore.noise.charge.Charge.of_release`.
QUERY_MECHANISMS = ("laplace", "gaussian")

MAX_SIMULATED_DRAWS = limits.SIMULATED_DRAWS_MAX


# --- one class per mechanism ---------------------------------------------------------------------------


def _finite(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise DPError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise DPError(f"{name} must be a finite number, got {value!r}")
    return v


def _rng(seed: int | np.random.Generator | None) -> np.random.Generator:
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

    def __post_init__(self) -> None:
        if type(self) is Mechanism:
            raise DPError(
                "Mechanism is abstract; use Laplace, GaussianAnalytic, GaussianClassic, Geometric or DiscreteGaussian"
            )
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if self.epsilon > limits.EPSILON_MAX:  # 1e308 broke the σ solver: a traceback, not a message
            raise DPError(
                f"epsilon must be at most {limits.EPSILON_MAX:g} for one release, got {self.epsilon:g}: "
                "an ε this large protects nobody; try 0.1–10"
            )
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity))
        check_release(sensitivity=self.sensitivity)  # Δ = 1e308 gave null draws
        if self.pure:
            if self.delta not in (None, 0, 0.0):
                raise DPError(
                    f"the {self.label} mechanism is pure ε-DP: δ must be 0, got {self.delta!r}; "
                    "drop δ, or choose the Gaussian mechanism"
                )
            object.__setattr__(self, "delta", 0.0)
        else:
            if self.delta is None:
                raise DPError("the Gaussian mechanism needs δ; try 1e-5 (well below 1/n)")
            object.__setattr__(self, "delta", check_delta(self.delta))
        object.__setattr__(self, "scale", float(self._calibrate()))

    @property
    def _delta(self) -> float:
        """δ once built: a float (0 for a pure mechanism; __post_init__ refuses a Gaussian without one)."""
        return cast(float, self.delta)

    # --- what subclasses define -----------------------------------------------------------------------

    def _calibrate(self) -> float:
        raise NotImplementedError

    def _density(self, z: np.ndarray) -> np.ndarray:  # z = (x − centre) / scale
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
            raise DPError(
                "sensitivity Δ is 0: the answer does not depend on any one person, so no noise is needed; "
                "set Δ > 0 to see a mechanism"
            )

    def density(self, x: ArrayLike, center: float = 0.0) -> np.ndarray:
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

    def privacy_loss(self, z: ArrayLike, value: float = 0.0) -> np.ndarray:
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
        return pure_rho(self.epsilon)

    def charge(self, *, neighbour: Neighbour | None = None) -> Charge:
        """The :class:`~dpcore.noise.charge.Charge` of one release under ``neighbour`` (default add/remove one).
        The mechanism itself is relation-free: Δ must have been computed for the relation named here."""
        return Charge(self.epsilon, self._delta, self.rho, neighbour or Neighbour.ADD_REMOVE)

    # --- pictures -------------------------------------------------------------------------------------

    def simulate(self, value: float, draws: int, seed: int | np.random.Generator | None = 0) -> np.ndarray:
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

    def _density(self, z: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.exp(-np.abs(z)) / (2 * self.scale)
        return out

    def expected_abs_error(self) -> float:
        return self.scale

    def halfwidth(self, level: float = 0.95) -> float:
        return self.scale * laplace_quantile(level)

    def privacy_loss(self, z: ArrayLike, value: float = 0.0) -> np.ndarray:
        """(|z − v − Δ| − |z − v|)/b: always within ±Δ/b = ±ε."""
        self._require_noise()
        z = np.asarray(z, dtype=float) - value
        return (np.abs(z - self.sensitivity) - np.abs(z)) / self.scale

    def _simulate(self, rng: np.random.Generator, value: float, n: int) -> np.ndarray:
        return rng.laplace(value, self.scale, n)


@dataclass(frozen=True, kw_only=True)
class _Gaussian(Mechanism):
    """Common facts of the Gaussian mechanisms (the calibration of σ differs)."""

    scale_name: ClassVar[str] = "σ"
    scale_ascii: ClassVar[str] = "sigma"
    pure: ClassVar[bool] = False

    def _density(self, z: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.exp(-0.5 * z * z) / (self.scale * math.sqrt(2 * math.pi))
        return out

    def expected_abs_error(self) -> float:
        return self.scale * math.sqrt(2 / math.pi)

    def halfwidth(self, level: float = 0.95) -> float:
        return self.scale * normal_quantile(level)

    def privacy_loss(self, z: ArrayLike, value: float = 0.0) -> np.ndarray:
        """(Δ² − 2Δ(z − v)) / (2σ²): unbounded (linear in z); it leaves the ±ε band in the tails, and that is
        what δ pays for."""
        self._require_noise()
        z = np.asarray(z, dtype=float) - value
        d = self.sensitivity
        return (d * d - 2 * d * z) / (2 * self.scale**2)

    def loss_exceeds_mass(self) -> float:
        self._require_noise()
        # loss > ε  <=>  z − v < Δ/2 − εσ²/Δ ; under D, z − v ~ N(0, σ²)
        t = self.sensitivity / 2 - self.epsilon * self.scale**2 / self.sensitivity
        return float(special.ndtr(t / self.scale))

    def actual_delta(self) -> float:
        self._require_noise()
        return max(0.0, gaussian_delta(self.scale, self.epsilon, self.sensitivity))

    @property
    def rho(self) -> float:
        """zCDP cost Δ²/(2σ²) with this mechanism's σ (0 when Δ = 0: nothing released)."""
        return 0.0 if self.sensitivity == 0 else gaussian_rho(self.scale, self.sensitivity)

    def _simulate(self, rng: np.random.Generator, value: float, n: int) -> np.ndarray:
        return rng.normal(value, self.scale, n)


@dataclass(frozen=True, kw_only=True)
class GaussianAnalytic(_Gaussian):
    """Gaussian mechanism with the exact analytic σ (Balle & Wang 2018): (ε, δ)-DP for every ε."""

    name: ClassVar[str] = "gaussian"
    label: ClassVar[str] = "Gaussian (analytic, Balle & Wang 2018)"

    def _calibrate(self) -> float:
        return gaussian_analytic_sigma(self.epsilon, self._delta, self.sensitivity)


@dataclass(frozen=True, kw_only=True)
class GaussianClassic(_Gaussian):
    """Gaussian mechanism with the classic σ = Δ√(2 ln(1.25/δ))/ε (Dwork & Roth, Thm A.1): only for ε < 1."""

    name: ClassVar[str] = "gaussian-classic"
    label: ClassVar[str] = "Gaussian (classic calibration, ε < 1 only)"
    max_epsilon: ClassVar[float] = 1.0

    def _calibrate(self) -> float:
        return gaussian_classic_sigma(self.epsilon, self._delta, self.sensitivity)


def _whole_sensitivity(s: object) -> None:
    if (
        isinstance(s, bool)
        or not isinstance(s, (int, float, np.integer, np.floating))
        or not math.isfinite(s)
        or int(s) != s
        or s < 1
    ):
        raise DPError(f"count sensitivity must be a whole number >= 1, got {s!r}")


@dataclass(frozen=True, kw_only=True)
class Geometric(Mechanism):
    """Two-sided geometric (discrete Laplace) mechanism for whole numbers: P(k) ∝ α^|k|, α = e^(−ε/Δ), whole
    Δ >= 1. Pure ε-DP with no floating point in the release. ``scale`` is Δ/ε (the matching Laplace b; OpenDP's
    discrete Laplace scale)."""

    name: ClassVar[str] = "geometric"
    label: ClassVar[str] = "Geometric (discrete Laplace, whole numbers)"

    def __post_init__(self) -> None:
        _whole_sensitivity(self.sensitivity)
        super().__post_init__()

    @property
    def alpha(self) -> float:
        return math.exp(-self.epsilon / self.sensitivity)

    def _calibrate(self) -> float:
        return laplace_scale(self.epsilon, self.sensitivity)

    def density(self, x: ArrayLike, center: float = 0.0) -> np.ndarray:
        """Probability mass at whole offsets x − centre (0 between them)."""
        k = np.asarray(x, dtype=float) - center
        a = self.alpha
        return np.where(k == np.round(k), (1 - a) / (1 + a) * a ** np.abs(k), 0.0)

    def expected_abs_error(self) -> float:
        r = self.epsilon / self.sensitivity  # 2α/(1 − α²) = 1/sinh(ε/Δ): no cancellation for a small ε/Δ
        return 1.0 / math.sinh(r) if r <= EXP_MAX else 2.0 * math.exp(-r)  # sinh overflows past ε/Δ ≈ 710

    def _tail(self, t: int) -> float:
        """P(|X| > t) = 2α^(t+1)/(1 + α)."""
        r = self.epsilon / self.sensitivity
        return 2.0 * math.exp(-(t + 1) * r) / (1.0 + math.exp(-r))

    def halfwidth(self, level: float = 0.95) -> float:
        """The smallest whole t with P(|X| > t) = 2α^(t+1)/(1+α) <= 1 − level."""
        tail = 1.0 - _level(level)
        r = self.epsilon / self.sensitivity
        t = max(0, math.ceil((math.log(2.0 / (1.0 + math.exp(-r))) - math.log(tail)) / r - 1))
        while self._tail(t) > tail:  # the closed form is rounded: check it, both ways
            t += 1
        while t > 0 and self._tail(t - 1) <= tail:
            t -= 1
        return float(t)

    def privacy_loss(self, z: ArrayLike, value: float = 0.0) -> np.ndarray:
        z = np.asarray(z, dtype=float) - value
        return (np.abs(z - self.sensitivity) - np.abs(z)) * (self.epsilon / self.sensitivity)

    def _simulate(self, rng: np.random.Generator, value: float, n: int) -> np.ndarray:
        p = -math.expm1(-self.epsilon / self.sensitivity)  # 1 − α without cancellation
        # the difference of two geometric(p) counts is two-sided geometric with ratio α
        return value + (rng.geometric(p, n) - rng.geometric(p, n)).astype(float)


@dataclass(frozen=True, kw_only=True)
class DiscreteGaussian(Mechanism):
    """Discrete Gaussian N_Z(0, σ²) for whole numbers (Canonne, Kamath & Steinke 2020), whole Δ >= 1: (ε, δ)-DP
    with σ from Balle & Wang's exact continuous σ, raised until the discrete mechanism's own δ(ε) — summed over its
    support (:mod:`dpcore.noise.discrete`) — is at most δ. Its zCDP cost is Δ²/(2σ²) (CKS20, Theorem 4)."""

    name: ClassVar[str] = "discrete-gaussian"
    label: ClassVar[str] = "Discrete Gaussian (whole numbers)"
    scale_name: ClassVar[str] = "σ"
    scale_ascii: ClassVar[str] = "sigma"
    pure: ClassVar[bool] = False

    min_scale: float = 0.0  # a larger σ asked for (the classic calibration's): more noise, never less

    def __post_init__(self) -> None:
        _whole_sensitivity(self.sensitivity)
        super().__post_init__()

    def _calibrate(self) -> float:
        return max(discrete.calibrate_sigma(self.epsilon, self._delta, int(self.sensitivity)), float(self.min_scale))

    def density(self, x: ArrayLike, center: float = 0.0) -> np.ndarray:
        """Probability mass at whole offsets x − centre (0 between them)."""
        return discrete.pmf(np.asarray(x, dtype=float) - center, self.scale)

    def expected_abs_error(self) -> float:
        return discrete.expected_abs(self.scale)

    def halfwidth(self, level: float = 0.95) -> float:
        return float(discrete.halfwidth(self.scale, level))

    def privacy_loss(self, z: ArrayLike, value: float = 0.0) -> np.ndarray:
        """(Δ² − 2Δ(z − v)) / (2σ²) at whole z, as for the continuous Gaussian."""
        z = np.asarray(z, dtype=float) - value
        d = self.sensitivity
        return (d * d - 2 * d * z) / (2 * self.scale**2)

    def loss_exceeds_mass(self) -> float:
        t = self.sensitivity / 2 - self.epsilon * self.scale**2 / self.sensitivity
        return discrete.cdf_bounds(math.ceil(t) - 1, self.scale)[1]  # P(X < t), an upper bound

    def actual_delta(self) -> float:
        return discrete.delta_upper(self.scale, self.epsilon, int(self.sensitivity))

    @property
    def rho(self) -> float:
        return gaussian_rho(self.scale, self.sensitivity)

    def _simulate(self, rng: np.random.Generator, value: float, n: int) -> np.ndarray:
        """CKS20 Algorithm 3 with a numpy generator (a picture or a labelled reproducible example, never a release):
        Y ~ discrete Laplace of scale t = ⌊σ⌋ + 1, kept with probability exp(−(|Y| − σ²/t)²/(2σ²))."""
        s = self.scale
        t = math.floor(s) + 1
        p = -math.expm1(-1.0 / t)
        out = np.empty(n, dtype=float)
        todo = np.arange(n)
        while todo.size:
            y = (rng.geometric(p, todo.size) - rng.geometric(p, todo.size)).astype(float)
            keep = rng.random(todo.size) < np.exp(-((np.abs(y) - s * s / t) ** 2) / (2 * s * s))
            out[todo[keep]] = y[keep]
            todo = todo[~keep]
        return value + out


#: The class table: the one place a mechanism's name picks its behaviour.
CLASSES: dict[str, type[Mechanism]] = {
    c.name: c for c in (Laplace, GaussianAnalytic, GaussianClassic, Geometric, DiscreteGaussian)
}
MECHANISM_LABELS = {name: CLASSES[name].label for name in MECHANISMS}


def mechanism_class(name: str) -> type[Mechanism]:
    try:
        return CLASSES[str(name)]
    except KeyError:
        raise DPError(f"unknown mechanism {name!r}; choose one of {', '.join(MECHANISMS)}") from None


def get(name: str, *, epsilon: float, delta: float | None = None, sensitivity: float = 1.0) -> Mechanism:
    """The mechanism called ``name``, calibrated. A pure mechanism (Laplace, Geometric) ignores ``delta``."""
    cls = mechanism_class(name)
    return cls(epsilon=epsilon, delta=0.0 if cls.pure else delta, sensitivity=sensitivity)


def for_release(
    name: str, *, epsilon: float, delta: float | None = None, sensitivity: float = 1.0, integer: bool = False
) -> Mechanism:
    """The mechanism that really releases a whole-number answer (``integer``: a count, or a sum in grid units): the
    geometric (discrete Laplace) mechanism under Laplace, the discrete Gaussian under the analytic Gaussian, with Δ
    rounded up to a whole number. Otherwise :func:`get` (the continuous curve a picture draws)."""
    cls = mechanism_class(name)
    if integer and cls in (Laplace, GaussianAnalytic):
        whole = max(1, int(math.ceil(check_sensitivity(sensitivity))))
        if cls is Laplace:
            return Geometric(epsilon=epsilon, sensitivity=whole)
        return DiscreteGaussian(epsilon=epsilon, delta=delta, sensitivity=whole)
    return get(name, epsilon=epsilon, delta=delta, sensitivity=sensitivity)


def halfwidth(kind: str, *, epsilon: float, sensitivity: float, delta: float = 0.0, level: float = 0.95) -> float:
    """Half-width t with P(|noise| <= t) >= level of mechanism ``kind`` (0 when Δ = 0)."""
    if sensitivity == 0:
        return 0.0
    return get(kind, epsilon=epsilon, delta=delta, sensitivity=sensitivity).halfwidth(level)
