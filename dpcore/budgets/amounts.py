"""Privacy amounts as integers: ε in micro-ε (1 ε = 10⁶), δ in atto-δ (1 δ = 10¹⁸).

A charge is rounded *up*, a total or a cap *down*, so float rounding can never let ε or δ overspend. δ has two
ceilings tied to the data's n rows: one query's δ must stay below 1/n, and so must any δ total (a quota or a
dataset's cap) — a δ of 1/n allows releasing a whole record. Stdlib only.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation
from typing import Any, overload

from .. import claims, limits
from ..errors import DPError

# What a caller hands in: a number, or its text as typed (a form field, a CLI argument, a JSON value).
Amount = float | int | str

MICRO = 1_000_000
ATTO = 10**18


def _decimal(value: Any, name: str) -> Decimal:  # Any: whatever was typed; refused unless a number
    if isinstance(value, bool):
        raise DPError(f"{name} must be a number, not {value!r}")
    try:
        d = Decimal(str(value).strip()) if isinstance(value, str) else Decimal(repr(float(value)))
    except (InvalidOperation, TypeError, ValueError, OverflowError):
        raise DPError(f"{name} must be a number, got {value!r}") from None
    if not d.is_finite():
        raise DPError(f"{name} must be finite, got {value!r}")
    return d


def to_micro(epsilon: Amount, *, name: str = "epsilon", rounding: str = ROUND_CEILING) -> int:
    """ε -> integer micro-ε (rounded up by default: a charge never falls below the ε used)."""
    d = _decimal(epsilon, name)
    if d <= 0:
        raise DPError(f"{name} must be > 0, got {epsilon}; try 0.1–10")
    if d > Decimal(repr(limits.BUDGET_EPSILON_MAX)):
        raise DPError(f"{name} must be at most {limits.BUDGET_EPSILON_MAX:g}, got {epsilon}")
    m = int(d.scaleb(6).to_integral_value(rounding=rounding))
    if m <= 0:
        raise DPError(f"{name} must be at least 0.000001 (one micro-ε), got {epsilon}")
    return m


def total_micro(epsilon: Amount, *, name: str) -> int:
    """A total or a cap in micro-ε, rounded down (never more than was granted)."""
    return to_micro(epsilon, name=name, rounding=ROUND_FLOOR)


def to_atto(delta: Amount, *, name: str = "delta", rounding: str = ROUND_CEILING) -> int:
    """δ -> integer atto-δ (10⁻¹⁸), rounded up by default (a charge never falls below the δ used)."""
    d = _decimal(delta, name)
    if d < 0 or d >= 1:
        raise DPError(f"{name} must be in [0, 1), got {delta}; typical values are 1e-6 to 1e-9 (below 1/n)")
    return int(d.scaleb(18).to_integral_value(rounding=rounding))


# An amount read back: None (no cap, no quota) stays None, an integer is always a float.
@overload
def from_micro(m: int) -> float: ...
@overload
def from_micro(m: None) -> None: ...
def from_micro(m: int | None) -> float | None:
    return None if m is None else m / MICRO


@overload
def from_atto(a: int) -> float: ...
@overload
def from_atto(a: None) -> None: ...
def from_atto(a: int | None) -> float | None:
    return None if a is None else a / ATTO


def default_delta_atto(n_rows: int, *, public_n: bool = True) -> int:
    """The default δ total on n rows: 1/(10·n), rounded down. When n is not public (analysts read the δ cap and
    their quota's δ) the largest power of ten at or below that: it tells n's order of magnitude, not n."""
    exact = ATTO // (10 * max(int(n_rows), 1))
    if public_n or exact <= 0:
        return exact
    return int(10 ** (len(str(exact)) - 1))


def default_delta_total(n_rows: int) -> float:
    return from_atto(default_delta_atto(n_rows))


def max_delta_atto(n_rows: int) -> int:
    """The largest δ (one query's, or a total) allowed on n rows: strictly below 1/n."""
    return (ATTO - 1) // max(int(n_rows), 1)


def max_query_delta(n_rows: int) -> float:
    """The largest δ one query may use on ``n_rows`` rows (below 1/n; the δ left may be less)."""
    return max_delta_atto(n_rows) / ATTO


def delta_total_atto(delta_total: Amount | None, n_rows: int, *, name: str = "δ total", public_n: bool = True) -> int:
    """A δ total (a quota or a cap) in atto-δ: the default 1/(10·n) when None (a power of ten below it when n is
    not public: :func:`default_delta_atto`); always below 1/n."""
    if delta_total is None:
        return default_delta_atto(n_rows, public_n=public_n)
    a = to_atto(delta_total, name=name, rounding=ROUND_FLOOR)
    if a > max_delta_atto(n_rows):
        raise DPError(
            f"{name} {delta_total} is not below 1/n = {1 / n_rows:.3g} for this dataset of {n_rows:,} rows: "
            f"such a δ allows releasing a whole record; use less than {claims.down(1 / n_rows)} (default "
            f"{claims.delta(default_delta_total(n_rows), 3)})"
        )
    return a
