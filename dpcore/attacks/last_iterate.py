"""The last-iterate heuristic of Steinke, Nasr, Ganesh, Balle, Choquette-Choo, Jagielski, Hayes, Thakurta, Smith &
Terzis (ICLR 2025, arXiv 2410.06186), "The Last Iterate Advantage: Empirical Auditing and Principled Heuristic
Analysis of Differentially Private SGD": what auditing only the *final* model of a DP-SGD run can be expected to show.

The accountant's ε assumes the attacker sees every intermediate model. When only the last one is released and the
loss is *linear* (every gradient of the canary is the same unit vector, the worst case for clipping norm 1), the
final model moves along the canary's direction by the number of steps that sampled it plus the summed noise of all
steps. With Poisson sampling rate q, T steps and noise multiplier σ, the audited output is therefore a draw of

    P = Binomial(T, q) + N(0, σ²T)   (canary in)   against   Q = N(0, σ²T)   (canary out),

and the heuristic ε at δ is the smallest ε with max(H_{e^ε}(P‖Q), H_{e^ε}(Q‖P)) ≤ δ, H_γ(A‖B) = sup_E A(E) − γ·B(E)
the hockey-stick divergence (their Theorem 1: this is exactly the privacy of DP-SGD's last iterate for linear
losses, both neighbour orders). The privacy loss log(p/q)(y) = log Σ_k w_k·exp((2ky − k²)/(2σ²T)), w_k the binomial
weights, rises with y, so each divergence is a tail difference at the point where the loss crosses ±ε:
H_{e^ε}(P‖Q) = P[Y > y₊] − e^ε·Q[Y > y₊] with loss(y₊) = ε, and H_{e^ε}(Q‖P) = Q[Y < y₋] − e^ε·P[Y < y₋] with
loss(y₋) = −ε (0 when the loss never falls that low: e^−ε < (1 − q)^T). Both are computed exactly here (sums of
normal tails over the binomial weights that carry all but 1e-30 of the mass).

What it means: a **heuristic**, not a bound. It is at most the accountant's ε (the last iterate is a
post-processing of all of them), equals it for T = 1 or full batches (q = 1), and the paper shows audits of real
models stay below it, while contrived non-linear losses can exceed it. It is the honest middle on the chart between
the promise (the accountant's upper bound) and what an attack proved (a lower bound).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from ..errors import DPError
from ..training.accounting import TRADEOFF_FPR
from ..validation import check_delta, check_positive_int
from .gdp import hull_tpr

FloatArray = npt.NDArray[np.float64]
#: Binomial weights below this fraction of the total are dropped (their mass changes δ by less than it).
_MASS_CUT = 1e-30
#: FPR grid of the heuristic's trade-off curve (as the accountant's: dpcore.training.accounting.TRADEOFF_FPR).
_TAIL_POINTS = 400


def _check(noise_multiplier: float, sample_rate: float, steps: int) -> tuple[float, float, int]:
    s, q = float(noise_multiplier), float(sample_rate)
    if not (math.isfinite(s) and s > 0):
        raise DPError(f"noise multiplier must be a number > 0, got {noise_multiplier!r}; try 0.5–5")
    if not (0 < q <= 1):
        raise DPError(f"sample rate must be in (0, 1], got {sample_rate!r}; it is batch size / rows")
    return s, q, check_positive_int(steps, "steps")


@lru_cache(maxsize=256)
def _weights(q: float, steps: int) -> tuple[FloatArray, FloatArray]:
    """(k, w_k) of Binomial(T, q) where w_k ≥ _MASS_CUT·max (log-space: T can be a million)."""
    from scipy import stats  # lazy: scipy costs ~0.3 s to import; pages import this module before any run

    k = np.arange(steps + 1, dtype=float)
    logw = stats.binom.logpmf(k, steps, q)
    keep = logw >= logw.max() + math.log(_MASS_CUT)
    return k[keep], np.exp(logw[keep])


_LOG2 = math.log(2.0)


class _Pair:
    """P and Q of the module docstring for one (σ, q, T): the privacy loss and the tails of both."""

    def __init__(self, sigma: float, q: float, steps: int) -> None:
        from scipy.special import log_ndtr, ndtr  # lazy: see _weights

        self.k, self.w = _weights(q, steps)
        self.s = sigma * math.sqrt(steps)
        self.logw = np.log(self.w)
        self.log_w0 = steps * math.log1p(-q) if q < 1 else -math.inf
        self._ndtr = ndtr
        self._log_ndtr = log_ndtr

    def loss(self, y: float) -> float:
        """log p(y)/q(y) = logsumexp_k(log w_k + (2ky − k²)/(2s²))."""
        a = self.logw + (2 * self.k * y - self.k**2) / (2 * self.s**2)
        top = float(a.max())
        return top + math.log(float(np.exp(a - top).sum()))

    def p_above(self, y: float) -> float:
        return float(np.dot(self.w, self._ndtr((self.k - y) / self.s)))

    def q_above(self, y: float) -> float:
        return float(self._ndtr(-y / self.s))

    def log_q_above(self, y: float) -> float:
        return float(self._log_ndtr(-y / self.s))

    def log_p_below(self, y: float) -> float:
        a = self.logw + self._log_ndtr((y - self.k) / self.s)
        top = float(a.max())
        return top if top == -math.inf else top + math.log(float(np.exp(a - top).sum()))

    def p_below(self, y: float) -> float:
        return float(np.dot(self.w, self._ndtr((y - self.k) / self.s)))

    def q_below(self, y: float) -> float:
        return float(self._ndtr(y / self.s))

    def crossing(self, level: float) -> float:
        """The y where the (increasing) loss equals ``level``."""
        from scipy.optimize import brentq  # lazy: see _weights

        lo, hi = -self.s, self.s + float(self.k.max())
        while self.loss(lo) > level:
            lo = 2 * lo - 1.0
        while self.loss(hi) < level:
            hi = 2 * hi + 1.0
        return float(brentq(lambda y: self.loss(y) - level, lo, hi, xtol=1e-12 * max(1.0, self.s), maxiter=200))

    def delta(self, eps: float) -> float:
        """max(H_{e^ε}(P‖Q), H_{e^ε}(Q‖P)), each ≥ 0."""
        # e^ε·B(E) from log B(E), capped at 2 (the difference is then < 0): a small σ puts the heuristic ε past
        # e^ε's overflow, and B(E) below the smallest float there
        y = self.crossing(eps)
        up = self.p_above(y) - math.exp(min(eps + self.log_q_above(y), _LOG2))
        down = 0.0
        if -eps > self.log_w0:
            y2 = self.crossing(-eps)
            down = self.q_below(y2) - math.exp(min(eps + self.log_p_below(y2), _LOG2))
        return min(max(up, down, 0.0), 1.0)


def heuristic_delta(noise_multiplier: float, sample_rate: float, steps: int, epsilon: float) -> float:
    """δ(ε) of the last-iterate heuristic (module docstring) at ``epsilon`` ≥ 0."""
    s, q, t = _check(noise_multiplier, sample_rate, steps)
    e = float(epsilon)
    if not (math.isfinite(e) and e >= 0):
        raise DPError(f"ε must be a number >= 0, got {epsilon!r}")
    return _Pair(s, q, t).delta(e)


@lru_cache(maxsize=1024)
def heuristic_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float = 1e-5) -> float:
    """The last-iterate heuristic ε at ``delta`` for DP-SGD with noise multiplier σ, Poisson sample rate q and T
    steps (module docstring): the smallest ε whose δ(ε) ≤ ``delta`` (to 1e-6 relative). What auditing the final
    model can be expected to show — a heuristic, not a privacy guarantee."""
    from scipy.optimize import brentq  # lazy: see _weights

    s, q, t = _check(noise_multiplier, sample_rate, steps)
    d = check_delta(delta)
    pair = _Pair(s, q, t)
    if pair.delta(0.0) <= d:
        return 0.0
    hi = 1.0
    while pair.delta(hi) > d:
        hi *= 2
        if hi > 1e4:
            raise DPError("the heuristic ε is above 10,000 at this δ; add noise or train fewer steps")
    return float(brentq(lambda e: pair.delta(e) - d, 0.0, hi, xtol=1e-9, rtol=1e-7, maxiter=200))


def heuristic_tradeoff(
    noise_multiplier: float, sample_rate: float, steps: int, fpr: npt.ArrayLike | None = None
) -> dict[str, list[float]]:
    """The heuristic's ROC ceiling: the highest TPR a membership test on the final model can reach at each FPR
    under the heuristic, both neighbour orders (thresholds on y are the optimal tests, the privacy loss being
    monotone). {"fpr", "tpr"} on the accountant's FPR grid unless ``fpr`` is given."""
    s, q, t = _check(noise_multiplier, sample_rate, steps)
    grid = np.asarray(TRADEOFF_FPR if fpr is None else fpr, dtype=float)
    if grid.ndim != 1 or grid.size == 0 or np.any(~np.isfinite(grid)) or np.any((grid < 0) | (grid > 1)):
        raise DPError("FPR values must be numbers in [0, 1]")
    pair = _Pair(s, q, t)
    # thresholds from far below Q's bulk to far above P's: every ROC point of both tests
    from scipy.special import ndtr  # lazy: see _weights

    span = 40 * pair.s
    ys = np.linspace(-span, float(pair.k.max()) + span, 4000)
    qa = ndtr(-ys / pair.s)
    pa = (pair.w[None, :] * ndtr((pair.k[None, :] - ys[:, None]) / pair.s)).sum(axis=1)
    # test 1 flags y above a threshold: (FPR, TPR) = (Q[Y > y], P[Y > y]); test 2 (the other neighbour order)
    # flags y below it with the roles swapped: (P[Y < y], Q[Y < y])
    xs = np.r_[qa, 1.0 - pa]
    tp = np.r_[pa, 1.0 - qa]
    corners = list(zip(xs.tolist(), tp.tolist()))
    return {"fpr": grid.tolist(), "tpr": hull_tpr(corners, grid).tolist()}
