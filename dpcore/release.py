"""The release path: how a DP answer that a user *sees as released* is drawn.

Released answers never come from plain numpy. They are drawn by diffprivlib's mechanisms (which use a
cryptographically secure random source when ``random_state`` is None), or by an integer mechanism
(geometric = discrete Laplace) for counts. Plain numpy is only for *simulated* histograms.

Pass ``random_state`` (an int seed) only in tests and reproducible demos: a seeded release is
reproducible and therefore must never be labelled as a secure release.
"""

from __future__ import annotations

import math

from diffprivlib import mechanisms as _dpl

from .errors import DPError
from .validation import check_delta, check_epsilon, check_sensitivity

MECHANISMS = ("laplace", "gaussian", "gaussian-classic")


def _mechanism(mechanism: str, epsilon: float, delta: float, sensitivity: float, random_state):
    eps = check_epsilon(epsilon)
    sens = check_sensitivity(sensitivity)
    if mechanism == "laplace":
        return _dpl.Laplace(epsilon=eps, delta=0.0, sensitivity=sens, random_state=random_state)
    if mechanism == "gaussian":
        return _dpl.GaussianAnalytic(epsilon=eps, delta=check_delta(delta), sensitivity=sens,
                                     random_state=random_state)
    if mechanism == "gaussian-classic":
        if eps >= 1:
            raise DPError(f"the classic Gaussian calibration is only valid for ε < 1 (got {eps:g}); "
                          "use the analytic Gaussian ('gaussian') instead")
        return _dpl.Gaussian(epsilon=eps, delta=check_delta(delta), sensitivity=sens, random_state=random_state)
    raise DPError(f"unknown mechanism {mechanism!r}; choose one of {', '.join(MECHANISMS)}")


def release_value(value: float, *, mechanism: str, epsilon: float, delta: float = 0.0,
                  sensitivity: float, random_state=None) -> float:
    """One released real-valued answer through diffprivlib."""
    v = float(value)
    if not math.isfinite(v):
        raise DPError(f"true value must be finite, got {value!r}")
    return float(_mechanism(mechanism, epsilon, delta, sensitivity, random_state).randomise(v))


def release_count(count: int, *, epsilon: float, sensitivity: int = 1, random_state=None) -> int:
    """One released integer count: geometric (discrete Laplace) mechanism, no floating point involved."""
    eps = check_epsilon(epsilon)
    if int(sensitivity) != sensitivity or sensitivity < 1:
        raise DPError(f"count sensitivity must be a whole number >= 1, got {sensitivity!r}")
    if int(count) != count:
        raise DPError(f"count must be a whole number, got {count!r}")
    mech = _dpl.Geometric(epsilon=eps, sensitivity=int(sensitivity), random_state=random_state)
    return int(mech.randomise(int(count)))
