"""e^ε arithmetic that holds for every ε the app accepts.

``math.exp`` overflows past ε ≈ 709.78, and the app takes stated and explained ε up to
:data:`dpcore.limits.EPSILON_MAX` (1,000): ``audit --epsilon 800`` and ``report --epsilon 800`` ended in
OverflowError. Bounds of the form min(cap, e^ε·x) are computed here in log space, so they are exact where a float
holds e^ε and still right (the cap) where it does not.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import numpy.typing as npt

#: Largest x with math.exp(x) finite (log of the largest double, 709.78).
EXP_MAX = math.log(sys.float_info.max)


def exp_times(epsilon: float, x: npt.ArrayLike, cap: float = 1.0) -> float | npt.NDArray[np.float64]:
    """min(cap, e^ε · x) for x >= 0 (a number or an array), never overflowing: e^800 · 1e-9 is capped at 1.

    Returns a float for a number, an array for an array."""
    eps = float(epsilon)
    arr = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):  # log(0) = -inf: e^ε · 0 = 0
        log_x = np.log(np.maximum(arr, 0.0))
    out: npt.NDArray[np.float64] = np.exp(np.minimum(eps + log_x, math.log(cap)))
    return float(out) if out.ndim == 0 else out


def exp_or_inf(x: float) -> float:
    """e^x, or infinity where a float cannot hold it (an upper bound stays an upper bound)."""
    return math.exp(x) if x <= EXP_MAX else math.inf
