"""Small shared validators that turn bad numbers into clear :class:`DPError` messages."""

from __future__ import annotations

import math
from typing import Any

from .errors import DPError
from .limits import EPSILON_MIN, NOISE_MULTIPLIER_MAX, NOISE_MULTIPLIER_MIN


def _as_float(value: Any, name: str) -> float:
    if isinstance(value, bool):
        raise DPError(f"{name} must be a number, not {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise DPError(f"{name} must be a number, got {value!r}") from None
    if math.isnan(out):
        raise DPError(f"{name} must be a number, got NaN")
    return out


def check_nonnegative(value: Any, name: str, *, upper: float | None = None) -> float:
    """A finite number >= 0 (and <= ``upper`` when given): amounts such as a charge's ε, δ or ρ."""
    v = _as_float(value, name)
    if math.isinf(v) or v < 0 or (upper is not None and v > upper):
        rng = f"in [0, {upper:g}]" if upper is not None else "a finite number >= 0"
        raise DPError(f"{name} must be {rng}, got {value!r}")
    return v


def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    """epsilon must be finite and > 0."""
    eps = _as_float(epsilon, name)
    if math.isinf(eps):
        raise DPError(f"{name} must be finite (infinite {name} means no privacy); try 0.1–10")
    if eps <= 0:
        raise DPError(f"{name} must be > 0, got {eps:g}; try 0.1–10")

    if eps < EPSILON_MIN:  # 1e-320 overflowed the noise scale into null draws
        raise DPError(f"{name} must be at least {EPSILON_MIN:g}, got {eps:g}; try 0.1–10")
    return eps


def check_delta(delta: Any, name: str = "delta", allow_zero: bool = False) -> float:
    """delta must lie in (0, 1) ([0, 1) with allow_zero)."""
    d = _as_float(delta, name)
    low_ok = d >= 0 if allow_zero else d > 0
    if not (low_ok and d < 1):
        rng = "[0, 1)" if allow_zero else "(0, 1)"
        raise DPError(f"{name} must be in {rng}, got {d:g}; typical values are 1e-5 to 1e-7 (below 1/n)")
    return d


def check_confidence(confidence: Any, name: str = "confidence") -> float:
    """A confidence level for a bound: a number in [0.5, 1) (0.95 is usual)."""
    try:
        c = float(confidence)
    except (TypeError, ValueError):
        raise DPError(f"{name} must be a number in (0, 1), got {confidence!r}; 0.95 is usual") from None
    if not 0.5 <= c < 1:
        raise DPError(f"{name} must be in [0.5, 1), got {confidence!r}; 0.95 is usual")
    return c


def check_sensitivity(sensitivity: Any, name: str = "sensitivity") -> float:
    s = _as_float(sensitivity, name)
    if math.isinf(s) or s < 0:
        raise DPError(f"{name} must be a finite number >= 0, got {s:g}")
    return s


def check_bounds(lower: Any, upper: Any, name: str = "bounds") -> tuple[float, float]:
    lo = _as_float(lower, f"{name} lower")
    hi = _as_float(upper, f"{name} upper")
    if math.isinf(lo) or math.isinf(hi):
        raise DPError(f"{name} must be finite public bounds, got [{lo:g}, {hi:g}]")
    if lo >= hi:
        raise DPError(f"{name}: lower must be < upper, got [{lo:g}, {hi:g}]")
    return lo, hi


def check_positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise DPError(f"{name} must be a whole number > 0, got {value!r}")
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise DPError(f"{name} must be a whole number > 0, got {value!r}") from None
    if math.isnan(f) or math.isinf(f) or f != int(f) or f <= 0:
        raise DPError(f"{name} must be a whole number > 0, got {value!r}")
    return int(f)


def check_noise_multiplier(value: object, name: str = "noise multiplier") -> float:
    """A DP-SGD noise multiplier σ in [NOISE_MULTIPLIER_MIN, NOISE_MULTIPLIER_MAX] (:mod:`dpcore.limits`)."""
    s = _as_float(value, name)
    if not NOISE_MULTIPLIER_MIN <= s <= NOISE_MULTIPLIER_MAX:
        raise DPError(
            f"{name} must be from {NOISE_MULTIPLIER_MIN:g} to {NOISE_MULTIPLIER_MAX:,.0f}, got {value!r}; try 0.5–5"
        )
    return s
