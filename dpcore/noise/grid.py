"""The release grid: how a real-valued answer becomes whole numbers before any noise is added, and the one check of
what a release can represent.

**Why a grid.** Noise added to a float *in floating point* leaks through the low bits of the result (Mironov 2012;
Haney et al. 2022; diffprivlib's open issue #94): the floats that x + noise can produce depend on x, so an event
such as "the output is below x/2 and not a multiple of ulp(x)/2" happens for one neighbour and never for the other.
Here every real-valued answer (a bounded SUM or MEAN, a value typed on the noise page) is released as z·g: z is a
whole number — the answer in grid units plus discrete Laplace or discrete Gaussian noise drawn exactly by OpenDP
(:mod:`dpcore.noise.release`) — and g is a public grid step. Everything after the noise (z·g, a division by a
noisy count, clamping to the bounds) is post-processing of whole numbers, so no bit of the output depends on the
data except through z.

**The grid** (:func:`for_sensitivity`). g = 10^e with e = ⌊log10 Δ⌋ − :data:`GRID_DIGITS`, Δ the sensitivity of the
released quantity in its own unit: Δ spans 10^6 to 10^7 grid steps, so rounding moves each value by at most
g/2 ≤ 5·10⁻⁷·Δ — far below the noise, whose scale is Δ/ε with ε ≤ 1,000. The grid depends on public numbers only
(the bounds, or a typed Δ).

**Rounding.** :meth:`Grid.units` is r(x) = rint(x / g) in float64 (nearest whole number, ties to even). Division by
a positive constant (correctly rounded) and rint never decrease, so r never decreases: lo ≤ x ≤ hi ⇒
r(lo) ≤ r(x) ≤ r(hi), with r(lo) and r(hi) computed by the very same code. Whole numbers are then summed exactly
in int64 (:func:`exact_sum` checks that no sum can overflow).

**Sensitivity in grid units (proof).**

* SUM over values clamped to public [lo, hi], one record added or removed: S = Σ r(clamp(xᵢ)). One record adds or
  removes one term r(clamp(x)) ∈ [r(lo), r(hi)], so |S − S'| ≤ K = max(|r(lo)|, |r(hi)|). The bound holds exactly:
  no floating-point sum is involved (a float sum of the values themselves can move by more than the clamped
  bound, Casacuberta et al. 2022).
* MEAN's centred sum: terms r(clamp(x)) − C with the whole number C = ⌊(r(lo) + r(hi)) / 2⌋ lie in
  [r(lo) − C, r(hi) − C], so K = max(C − r(lo), r(hi) − C) (:func:`centre_and_k`).
* One record replaced, n public (a MEAN with public n): a term moves anywhere in [r(lo), r(hi)]: K = r(hi) − r(lo).
* One typed value v and a claimed Δ (the noise page's custom value, the CLI's ``noise --secure``): z = round(v/g)
  is computed exactly (:meth:`Grid.exact_units`, rational arithmetic). For any v' with |v − v'| ≤ Δ each rounding
  moves its value by at most ½, so |round(v/g) − round(v'/g)| ≤ Δ/g + 1, a whole number: K = ⌊Δ/g⌋ + 1
  (:meth:`Grid.value_k`).

**What a release can represent** (:func:`check_release`, the one place): every value and bound at most
:data:`dpcore.limits.RELEASE_MAGNITUDE_MAX` in size, Δ as well and, unless 0, at least
:data:`dpcore.limits.RELEASE_SENSITIVITY_MIN` and :data:`dpcore.limits.RELEASE_RESOLUTION` × the largest of them (a float near 10⁹ cannot hold differences of
10⁻⁹, and noise that small would vanish in the sum). Within these, every number in grid units is below 10¹⁶
(exact in int64), every noise scale in grid units below 10¹⁵, and every released value finite.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from .. import limits
from ..errors import DPError

#: Grid steps per unit of Δ: Δ spans 10^GRID_DIGITS to 10^(GRID_DIGITS + 1) steps.
GRID_DIGITS = 6
_SUM_MAX = 2**62  # an int64 sum of terms is exact while it stays below this


def _num(x: float) -> str:
    """1e15, 1e-12, −3.5 (as claims writes numbers: no "e+", no leading zeros in the exponent)."""
    short = f"{abs(x):g}"
    if float(short) != abs(x):  # "1e15" for 1000000000000000.5 would read as within the limit
        short = repr(abs(float(x)))
    text = re.sub(r"e([+-])0*(\d)", lambda m: "e" + ("-" if m.group(1) == "-" else "") + m.group(2), short)
    return ("−" if x < 0 else "") + text


def check_release(
    *,
    magnitude: float = 0.0,
    sensitivity: float | None = None,
    what: str = "the value",
    spread: str = "sensitivity Δ",
    spread_max: float | None = None,
) -> None:
    """Refuse what the samplers and the grid cannot represent: one rule for the noise page, the console, the CLI.

    ``magnitude``: the largest |value| or |bound| involved; ``sensitivity``: the spread the noise must resolve (Δ,
    or a histogram's bin width), named ``spread`` in messages; ``spread_max``: its largest value (default
    :data:`dpcore.limits.RELEASE_MAGNITUDE_MAX`; bounds within ±that may spread twice as far)."""
    top = limits.RELEASE_MAGNITUDE_MAX
    try:
        m = float(magnitude)
    except (TypeError, ValueError):
        raise DPError(f"{what} must be a number, got {magnitude!r}") from None
    if not math.isfinite(m) or abs(m) > top:
        raise DPError(
            f"{what} must lie between −{_num(top)} and {_num(top)}, got {_num(m)}: larger numbers cannot "
            "be released exactly (change the unit, e.g. thousands)"
        )
    if sensitivity is None:
        return
    try:
        d = float(sensitivity)
    except (TypeError, ValueError):
        raise DPError(f"{spread} must be a number, got {sensitivity!r}") from None
    most = top if spread_max is None else spread_max
    if not math.isfinite(d) or d < 0 or d > most:
        raise DPError(
            f"{spread} must be a number from 0 to {_num(most)}, got {_num(d)}; change the unit (e.g. "
            "thousands) for larger ones"
        )
    if 0 < d < limits.RELEASE_SENSITIVITY_MIN:
        raise DPError(
            f"{spread} must be 0 or at least {_num(limits.RELEASE_SENSITIVITY_MIN)}, got {_num(d)}; "
            "change the unit (e.g. millionths) for smaller ones"
        )
    if 0 < d < limits.RELEASE_RESOLUTION * abs(m):
        raise DPError(
            f"{spread} ({_num(d)}) is too small beside {what} ({_num(m)}): numbers that size cannot "
            f"hold differences below {_num(limits.RELEASE_RESOLUTION * abs(m))}; make {spread} larger, "
            "or shift the values nearer 0 (subtract a public constant)"
        )


@dataclass(frozen=True)
class Grid:
    """The public grid of multiples of g = 10^exponent."""

    exponent: int

    @property
    def step(self) -> float:
        return float(10.0**self.exponent)

    def text(self) -> str:
        """The step as people read it: "0.00001", "10", "1e-12"."""
        e = self.exponent
        if 0 <= e <= 6:
            return f"{10**e:,}"
        if -8 <= e < 0:
            return "0." + "0" * (-e - 1) + "1"
        return f"1e{e}"

    def units(self, x: ArrayLike) -> np.ndarray:
        """r(x) = rint(x / g) as int64: non-decreasing in x (see the module's proof). Bounds and values must go
        through this same function."""
        u = np.rint(np.asarray(x, dtype=np.float64) / self.step)
        if u.size and not np.all(np.abs(u) < _SUM_MAX):
            raise DPError("a value is too large for the release grid; check the bounds")  # check_release prevents it
        return u.astype(np.int64)

    def exact_units(self, value: float) -> int:
        """round(value / g) in exact rational arithmetic (ties to even)."""
        return round(Fraction(float(value)) / Fraction(10) ** self.exponent)

    def value_k(self, sensitivity: float) -> int:
        """K = ⌊Δ/g⌋ + 1 for a single value rounded by :meth:`exact_units` (exact)."""
        return math.floor(Fraction(float(sensitivity)) / Fraction(10) ** self.exponent) + 1

    def value(self, units: int) -> float:
        """units·g as the nearest float (post-processing of a whole number)."""
        return float(Fraction(int(units)) * Fraction(10) ** self.exponent)


def for_sensitivity(sensitivity: float) -> Grid:
    """The grid for a release whose sensitivity (in the answer's unit) is Δ > 0: g = 10^(⌊log10 Δ⌋ − 6)."""
    d = float(sensitivity)
    if not (d > 0 and math.isfinite(d)):
        raise DPError(f"the release grid needs a sensitivity > 0, got {sensitivity!r}")
    e = math.floor(math.log10(d))
    if 10.0**e > d:  # log10 rounded up across a power of ten
        e -= 1
    return Grid(e - GRID_DIGITS)


def bounded_sum_k(grid: Grid, lo: float, hi: float) -> int:
    """K = max(|r(lo)|, |r(hi)|): a SUM over values clamped to [lo, hi], one record added or removed."""
    a, b = grid.units([lo, hi])
    return int(max(abs(int(a)), abs(int(b))))


def centre_and_k(grid: Grid, lo: float, hi: float, *, replace_one: bool = False) -> tuple[int, int]:
    """(C, K) for centred terms r(clamp(x)) − C: C = ⌊(r(lo) + r(hi))/2⌋ and K = max(C − r(lo), r(hi) − C), or, when
    one record is replaced (n public), K = r(hi) − r(lo)."""
    a, b = (int(v) for v in grid.units([lo, hi]))
    c = (a + b) // 2
    return c, (b - a if replace_one else max(c - a, b - c))


def exact_sum(units: np.ndarray, bound: int) -> int:
    """Σ units, exact: refused when len × bound could overflow int64 (terms are known to lie within ±bound)."""
    n = int(np.asarray(units).size)
    if n and n * max(int(bound), 1) >= _SUM_MAX:
        raise DPError(f"{n:,} values this large cannot be summed exactly; use narrower bounds or fewer rows")
    return int(np.sum(units, dtype=np.int64))


@dataclass(frozen=True)
class GridSum:
    """A sum of clamped values in grid units, ready for whole-number noise. Released: g·(centre + (units + noise)
    / divide_by), where divide_by is 1 for a sum and the public n for a mean with public n."""

    grid: Grid
    units: int  # Σ (r(clamp(x)) − centre), exact
    k: int  # its sensitivity in grid units (the module's proof)
    centre: int = 0
    count: int = 0  # terms summed (private unless n is public)

    def value(self, units: int, divide_by: int = 1) -> float:
        """g·(centre + units/divide_by), rounded once to the nearest float."""
        return float(
            (Fraction(self.centre) + Fraction(int(units), int(divide_by))) * Fraction(10) ** self.grid.exponent
        )


def _bounds(lo: float, hi: float, spread: float, what: str) -> None:
    check_release(
        magnitude=max(abs(lo), abs(hi)),
        sensitivity=spread,
        what=what,
        spread="the bounds' spread",
        spread_max=2 * limits.RELEASE_MAGNITUDE_MAX,
    )


def clamped_sum(values: ArrayLike, lo: float, hi: float, *, what: str = "the bounds") -> GridSum:
    """SUM over values clamped to public [lo, hi], one record added or removed: K = max(|r(lo)|, |r(hi)|)."""
    delta = max(abs(lo), abs(hi))
    _bounds(lo, hi, delta, what)
    grid = for_sensitivity(delta)
    x = np.clip(np.asarray(values, dtype=np.float64), lo, hi)
    k = bounded_sum_k(grid, lo, hi)
    return GridSum(grid, exact_sum(grid.units(x), k), k, 0, int(x.size))


def centred_sum(
    values: ArrayLike, lo: float, hi: float, *, replace_one: bool = False, what: str = "the bounds"
) -> GridSum:
    """Σ (r(clamp(x)) − C) over values clamped to [lo, hi]: K = max(C − r(lo), r(hi) − C) (add/remove), or
    r(hi) − r(lo) when one record is replaced and n is public. The grid follows the spread (hi − lo)/2 or hi − lo."""
    spread = (hi - lo) if replace_one else (hi - lo) / 2
    _bounds(lo, hi, spread, what)
    grid = for_sensitivity(spread)
    x = np.clip(np.asarray(values, dtype=np.float64), lo, hi)
    c, k = centre_and_k(grid, lo, hi, replace_one=replace_one)
    return GridSum(grid, exact_sum(grid.units(x) - c, k), k, c, int(x.size))
