"""The release path: every noisy value a user sees as *released* is drawn here, by OpenDP's exact samplers.

**Only whole numbers get noise.** Counts and histogram bins are whole already; a bounded SUM or MEAN and a value
typed on the noise page are first put on a public grid (:mod:`dpcore.noise.grid`: the grid, the rounding and the
sensitivity K in grid units, with its proof). Under Laplace the noise is the discrete Laplace (two-sided geometric,
:class:`~dpcore.noise.mechanisms.Geometric`) of scale K/ε, rounded up; under the Gaussian it is the discrete
Gaussian (:class:`~dpcore.noise.mechanisms.DiscreteGaussian`) whose σ starts from Balle & Wang's exact σ and is
raised until the discrete mechanism's own δ(ε), summed over its support, holds (:mod:`dpcore.noise.discrete`).
OpenDP 0.16 draws both exactly (rational arithmetic, no float in the noise) from a cryptographically secure source;
whatever follows — units × grid step, a division by a noisy count, clamping to public bounds — is post-processing
of whole numbers. So no output bit separates neighbours beyond what ε and δ allow (the floating-point attacks of
Mironov 2012 and diffprivlib's issue #94 need noise added in floating point; tests/dpcore/noise/test_release_bits.py).
The 95% interval of a release is the same mechanism's own: the smallest whole t with P(|noise| > t) ≤ 5%.

**Quantiles** (:func:`release_quantile`) are a selection, not a sum: OpenDP scores each public candidate against the
data (``make_quantile_score_candidates``: whole numbers, how far the candidate is from splitting the rows α : 1 − α)
and picks the candidate with the smallest score after exponential noise (``make_noisy_max``, report-noisy-max
with exponential noise, i.e. permute-and-flip; Smith 2011, McKenna & Sheldon 2020). The scores are integers and the
candidates public, so no float is perturbed. ε is OpenDP's own privacy map of that measurement; its 95% bound is on
the *score*: with probability at least 95% the released candidate's score exceeds the best candidate's by at most
T = S·ln((|C| − 1)/0.05) (S the noise scale in score units; union bound over the other candidates, each of which
beats the best with probability at most e^(−gap/S)).

**Reproducible mode** (``random_state``: a seed or a numpy generator) draws the same discrete distributions from
numpy, for tests and labelled teaching only: callers label it :data:`NOT_DP` and the ledger refuses it. It exists
where it existed before: the console's ``Prepared.release(seed)`` in tests, the differencing page's example
release, the linkage module's seeded count in tests.

**One way.** calibration, discrete (maths) → charge → mechanisms, grid → release → queries, attacks, pages, CLI: this
module imports nothing above it, nothing imports it from below (tests/dpcore/noise/test_layers.py). diffprivlib is
no longer on this path (its continuous samplers are not safe against low-bit attacks, its issue #94); it stays for
its scikit-learn-style models (:mod:`dpcore.training.dplib`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .. import limits
from ..errors import DPError
from ..validation import check_positive_int
from . import grid as _grid
from . import mechanisms as _m

NOT_DP = "reproducible noise: not a DP release"
SECURE_SOURCE = "OpenDP's exact discrete samplers, cryptographically secure random source (not reproducible)"
MAX_RELEASE_DRAWS = limits.RELEASE_DRAWS_MAX
#: None: OpenDP's secure sampler (a DP release); a seed or a numpy generator: reproducible noise, NOT_DP.
RandomState = int | np.random.Generator | np.random.RandomState | None


# --- the samplers ---------------------------------------------------------------------------------------------


def noise_for(mechanism: str, *, epsilon: float, delta: float = 0.0, sensitivity: int = 1) -> _m.Mechanism:
    """The whole-number mechanism of a release at whole sensitivity K: "laplace" → Geometric (discrete Laplace),
    "gaussian" → DiscreteGaussian; "gaussian-classic" → the discrete Gaussian with at least the classic σ at K (only
    for ε < 1), so its noise is never below what the noise page states."""
    if mechanism == "gaussian-classic":
        classic = _m.GaussianClassic(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
        return _m.DiscreteGaussian(epsilon=epsilon, delta=delta, sensitivity=sensitivity, min_scale=classic.scale)
    return _m.for_release(mechanism, epsilon=epsilon, delta=delta, sensitivity=sensitivity, integer=True)


def _laplace_scale(noise: _m.Geometric) -> float:
    """K/ε as a float never below the real K/ε (so the noise is never below the calibration)."""
    k, eps = Fraction(int(noise.sensitivity)), Fraction(noise.epsilon)
    t = float(k / eps)
    while Fraction(t) * eps < k:
        t = math.nextafter(t, math.inf)
    return t


@functools.lru_cache(maxsize=256)
def _measurement(kind: str, scale: float) -> Callable[[list[int]], list[int]]:
    """OpenDP's measurement adding discrete Laplace (``kind`` "laplace") or discrete Gaussian noise of ``scale`` to
    a vector of 64-bit whole numbers. Imported here, not at the top: only a release pays for loading OpenDP."""
    # lazy: OpenDP loads a native library (~1 s)
    from opendp import domains, measurements, metrics, mod

    # OpenDP 0.16 puts make_laplace and make_gaussian behind its "contrib" feature flag: their proofs are written
    # (linked from their docs) but not yet through OpenDP's own vetting. We rely on their exact samplers and test
    # them ourselves (statistical DP tests, tests/dpcore/noise/test_release_dp.py). The flag is process-wide and
    # only unlocks these constructors; we use integer domains only, so the "floating-point" flag stays off.
    mod.enable_features("contrib")
    space = domains.vector_domain(domains.atom_domain(T="i64"))
    if kind == "laplace":
        return measurements.make_laplace(space, metrics.l1_distance(T="i64"), scale=scale)
    return measurements.make_gaussian(space, metrics.l2_distance(T="i64"), scale=scale)


def opendp_scale(noise: _m.Mechanism) -> float:
    """The scale OpenDP's measurement is built with for ``noise`` (discrete Laplace: K/ε rounded up)."""
    return _laplace_scale(noise) if isinstance(noise, _m.Geometric) else float(noise.scale)


def privacy_map(kind: str, scale: float, d_in: int) -> float:
    """OpenDP's own privacy map of the whole-number measurement ``kind`` ("laplace": ε; "gaussian": ρ) of ``scale``
    at an L1 (L2) distance ``d_in`` between neighbouring inputs: what a statement's ε is checked against."""
    if kind not in ("laplace", "gaussian"):
        raise DPError(f"unknown measurement {kind!r}")
    m: Any = _measurement(kind, float(scale))  # an OpenDP Measurement: its map is not in the Callable type
    return float(m.map(int(d_in)))


def _generator(random_state: RandomState) -> np.random.Generator:
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):  # one seeded stream, as the callers' tests expect
        return np.random.default_rng(int(random_state.randint(0, 2**31 - 1)))
    return np.random.default_rng(limits.check_int_range(random_state, 0, 2**63 - 1, "release seed"))


def _whole(values: Iterable[Any]) -> list[int]:
    out = []
    for v in values:
        try:
            ok = not isinstance(v, bool) and float(v) == int(v)
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise DPError(f"noise is added to whole numbers only, got {v!r}")
        out.append(int(v))
    return out


def draw(values: Iterable[Any], noise: _m.Mechanism, random_state: RandomState = None) -> list[int]:
    """``values`` (whole numbers) + independent noise from ``noise`` (a Geometric or DiscreteGaussian), one draw
    each: through OpenDP when ``random_state`` is None (each draw costs noise.charge()), else from numpy (NOT_DP)."""
    if not isinstance(noise, (_m.Geometric, _m.DiscreteGaussian)):
        raise DPError(f"a release adds whole-number noise; {type(noise).__name__} is not")
    ints = _whole(values)
    if not ints:
        return []
    if len(ints) > MAX_RELEASE_DRAWS:
        raise DPError(
            f"number of draws through the release path must be at most {MAX_RELEASE_DRAWS:,}, got {len(ints):,}"
        )
    if random_state is None:
        kind = "laplace" if isinstance(noise, _m.Geometric) else "gaussian"
        scale = _laplace_scale(noise) if isinstance(noise, _m.Geometric) else noise.scale
        return [int(v) for v in _measurement(kind, scale)(ints)]
    rng = _generator(random_state)
    extra = noise._simulate(rng, 0.0, len(ints))
    return [v + int(e) for v, e in zip(ints, extra)]


# --- quantiles: OpenDP's score-and-select ---------------------------------------------------------------------


@dataclass(frozen=True)
class QuantileNoise:
    """The public design of one quantile release: the candidates, α, the noise scale S in score units, ε (OpenDP's
    privacy map at ``contributions`` rows added or removed), the score's unit (scores count rows × ``unit``) and
    the 95% bound on the score gap (in score units)."""

    candidates: tuple[float, ...]
    alpha: float
    contributions: int
    scale: float
    epsilon: float
    unit: int
    gap: float

    @property
    def rows(self) -> float:
        """The 95% score gap in rows: how far (in rows of rank balance) the release may sit from the best candidate."""
        return self.gap / self.unit


def _score_space(candidates: tuple[float, ...], alpha: float) -> Any:
    """OpenDP's scoring transformation (an OpenDP Transformation: it maps data to scores and has a stability map)."""
    # lazy: OpenDP loads a native library (~1 s)
    from opendp import domains, metrics, mod, transformations

    mod.enable_features("contrib")  # see _measurement: proofs written, not yet vetted; we test them ourselves
    return transformations.make_quantile_score_candidates(
        domains.vector_domain(domains.atom_domain(T=float, nan=False)),
        metrics.symmetric_distance(),
        candidates=list(candidates),
        alpha=float(alpha),
    )


@functools.lru_cache(maxsize=128)
def _quantile_measurement(candidates: tuple[float, ...], alpha: float, scale: float) -> Any:
    """OpenDP's score-and-select measurement (an OpenDP Measurement: data to a candidate's index, with its map)."""
    # lazy: OpenDP loads a native library (~1 s)
    from opendp import measurements, measures

    return _score_space(candidates, alpha) >> measurements.then_noisy_max(
        measures.max_divergence(), scale=scale, negate=True
    )


def _candidates(candidates: Iterable[Any]) -> tuple[float, ...]:
    try:
        out = tuple(float(c) for c in candidates)
    except (TypeError, ValueError):
        raise DPError("quantile candidates must be numbers") from None
    if len(out) < 2 or len(out) > limits.QUANTILE_MAX_CANDIDATES:
        raise DPError(f"a quantile needs 2 to {limits.QUANTILE_MAX_CANDIDATES:,} public candidates, got {len(out):,}")
    if not all(math.isfinite(c) for c in out) or any(b <= a for a, b in zip(out, out[1:])):
        raise DPError("quantile candidates must be finite and strictly increasing")
    return out


@functools.lru_cache(maxsize=128)
def quantile_noise(
    candidates: tuple[float, ...], alpha: float, epsilon: float, contributions: int = 1
) -> QuantileNoise:
    """The smallest noise scale whose OpenDP privacy map at ``contributions`` rows is at most ``epsilon`` (public: no
    data read). ``alpha`` in (0, 1)."""
    cands = _candidates(candidates)
    a = float(alpha)
    if not 0 < a < 1:
        raise DPError(f"the quantile's α must be between 0 and 1 (0.5: the median), got {alpha!r}")
    eps = float(epsilon)
    if not (eps > 0 and math.isfinite(eps)):
        raise DPError(f"ε must be > 0, got {epsilon!r}")
    k = check_positive_int(contributions, "rows per person")
    t = _score_space(cands, a)
    sens = int(t.map(k))  # L∞ change of the scores when k rows are added or removed
    # the unit of a score: one row below every candidate scores (unit − num), one above scores num
    unit = int(t([cands[0] - 1.0])[0]) + int(t([cands[-1] + 1.0])[0])
    scale = float(Fraction(2 * sens) / Fraction(eps))  # noisy max (not monotone): ε = 2·Δ∞/S
    while True:
        m = _quantile_measurement(cands, a, scale)
        if float(m.map(k)) <= eps:
            break
        scale = math.nextafter(scale, math.inf)
    gap = scale * math.log((len(cands) - 1) / 0.05)
    return QuantileNoise(cands, a, k, scale, float(m.map(k)), unit, gap)


def quantile_scores(values: Iterable[Any], candidates: Iterable[Any], alpha: float) -> list[int]:
    """OpenDP's score of each candidate on ``values`` (private: tests and the reproducible mode only)."""
    x = [float(v) for v in values if v == v]
    return [int(s) for s in _score_space(_candidates(candidates), float(alpha))(x)]


def release_quantile(values: Iterable[Any], noise: QuantileNoise, random_state: RandomState = None) -> float:
    """One released quantile of ``values`` (missing values dropped): a candidate, through OpenDP when
    ``random_state`` is None, else the same selection with numpy's exponential noise (NOT_DP)."""
    x = [float(v) for v in values if v == v]
    if random_state is None:
        idx = int(_quantile_measurement(noise.candidates, noise.alpha, noise.scale)(x))
    else:
        rng = _generator(random_state)
        scores = np.asarray(quantile_scores(x, noise.candidates, noise.alpha), dtype=float)
        idx = int(np.argmax(-scores + rng.exponential(noise.scale, scores.size)))
    return noise.candidates[idx]


# --- releases by kind -------------------------------------------------------------------------------------------


def release_count(
    count: int,
    *,
    epsilon: float,
    sensitivity: int = 1,
    mechanism: str = "laplace",
    delta: float = 0.0,
    random_state: RandomState = None,
) -> int:
    """One released count: the count + discrete Laplace (or discrete Gaussian) noise, a whole number."""
    return draw([count], noise_for(mechanism, epsilon=epsilon, delta=delta, sensitivity=sensitivity), random_state)[0]


def release_counts(
    counts: Iterable[Any],
    *,
    epsilon: float,
    sensitivity: int = 1,
    mechanism: str = "laplace",
    delta: float = 0.0,
    random_state: RandomState = None,
) -> tuple[list[int], _m.Mechanism]:
    """Several counts released together (a histogram's bins; with disjoint bins Δ = 1 covers them all), and the
    mechanism that drew them (its halfwidth is each bin's interval)."""
    noise = noise_for(mechanism, epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    return draw(counts, noise, random_state), noise


def noise_name(noise: _m.Mechanism) -> str:
    """What drew a release, in words: "discrete Laplace" or "discrete Gaussian"."""
    return "discrete Laplace" if isinstance(noise, _m.Geometric) else "discrete Gaussian"


@dataclass(frozen=True)
class GridRelease:
    """Released values on a grid, the whole numbers they came from, the whole-number mechanism that drew them (in
    grid units) and their interval."""

    values: list[float]
    units: list[int]  # the released whole numbers (noise included)
    grid: _grid.Grid
    noise: _m.Mechanism
    halfwidth: float  # in the answer's unit, at the level asked
    halfwidth_units: int
    divide_by: int = 1

    def describe(self, unit: str = "") -> str:
        """The grid and the rounding, as the answer states them."""
        tail = f" {unit}" if unit else ""
        per = f", then divided by the public n = {self.divide_by:,}" if self.divide_by > 1 else ""
        return (
            f"rounded to a multiple of {self.grid.text()}{tail} (the public grid), {noise_name(self.noise)} "
            f"noise in whole grid steps (Δ = {int(self.noise.sensitivity):,} steps){per}"
        )


def release_sum(
    s: _grid.GridSum,
    *,
    mechanism: str,
    epsilon: float,
    delta: float = 0.0,
    divide_by: int = 1,
    level: float = 0.95,
    random_state: RandomState = None,
) -> GridRelease:
    """One release of a :class:`~dpcore.noise.grid.GridSum`: g·(centre + (units + noise)/divide_by)."""
    noise = noise_for(mechanism, epsilon=epsilon, delta=delta, sensitivity=max(1, s.k))
    z = draw([s.units], noise, random_state)[0]
    t = int(noise.halfwidth(level))
    half = float(Fraction(t, int(divide_by)) * Fraction(10) ** s.grid.exponent)
    return GridRelease([s.value(z, divide_by)], [z], s.grid, noise, half, t, int(divide_by))


def release_value(
    value: float,
    *,
    mechanism: str,
    epsilon: float,
    delta: float = 0.0,
    sensitivity: float,
    draws: int = 1,
    integer: bool = False,
    level: float = 0.95,
    random_state: RandomState = None,
) -> GridRelease:
    """``draws`` releases of one typed value v with a claimed Δ (the noise page, the CLI's ``noise --secure``).

    ``integer`` (a count): v must be whole, K = ⌈Δ⌉ and the grid is 1. Otherwise the grid follows Δ, v is rounded to
    it exactly and K = ⌊Δ/g⌋ + 1 (:mod:`dpcore.noise.grid`). Each draw costs the returned noise's charge."""
    n = check_positive_int(draws, "number of draws")
    v = _m._finite(value, "true value")
    d = _m._finite(sensitivity, "sensitivity Δ")
    _grid.check_release(magnitude=abs(v), sensitivity=d, what="the true value")
    if d == 0:
        raise DPError(
            "sensitivity Δ is 0: the answer does not depend on any one person, so no noise is needed; "
            "set Δ > 0 to release it"
        )
    if integer:
        g, units, k = _grid.Grid(0), _whole([v])[0], max(1, math.ceil(d))
    else:
        g = _grid.for_sensitivity(d)
        units, k = g.exact_units(v), g.value_k(d)
    noise = noise_for(mechanism, epsilon=epsilon, delta=delta, sensitivity=k)
    zs = draw([units] * n, noise, random_state)
    t = int(noise.halfwidth(level))
    return GridRelease([g.value(z) for z in zs], zs, g, noise, float(Fraction(t) * Fraction(10) ** g.exponent), t)


def release_answer(
    value: float,
    *,
    mechanism: str,
    epsilon: float,
    delta: float = 0.0,
    sensitivity: float,
    integer: bool = False,
    random_state: RandomState = None,
) -> int | float:
    """One released answer for a typed value (:func:`release_value`): an int for a count, else a float."""
    out = release_value(
        value,
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        sensitivity=sensitivity,
        integer=integer,
        random_state=random_state,
    ).values[0]
    return int(out) if integer else out
