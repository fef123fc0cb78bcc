"""f-DP audited in one training run: Mahloujifar, Melis & Chaudhuri (2024, arXiv 2410.22235), "Auditing
f-Differential Privacy in One Run".

The experiment is the one-run design of :mod:`dpcore.attacks.one_run`: m canaries, each put in training by its own
fair coin; after training the auditor guesses "in" for the k highest-scored canaries, "out" for the k lowest and
abstains on the rest, and counts the correct guesses. Steinke, Nasr & Jagielski (2023) bound that count with a
binomial tail and an (ε, δ) hypothesis; Mahloujifar et al. test a whole trade-off curve f, which is tighter.

**The test** (their Algorithm "audit_rh_with_cap", k = 2 alphabet). Let the mechanism be f-DP with respect to each
canary (its inclusion moves the output by one record, add/remove), write f̄(x) = 1 − f(x) for the most a test can
detect at false-positive rate x (the "blow-up") and f̄⁻¹ for its inverse. Fix c′ guesses; let N be the number
correct. For every level i the f-DP inequality, averaged over the canaries, gives

    E[(c′ − N)·1{N ≥ i − 1}] / m  ≥  f̄⁻¹( E[N·1{N ≥ i}] / m ),

and Σ over levels of (N + wrong guesses) = c′. If P[N ≥ c] ≥ τ, the least probability mass consistent with all
these inequalities is found greedily from the top level down (r: correct-guess mass, h: wrong-guess mass):

    r_c = τ·c/m,  h_c = τ·(c′ − c)/m;
    for i = c − 1 … 0:  h_i = max(h_{i+1}, f̄⁻¹(r_{i+1})),  r_i = r_{i+1} + i/(c′ − i)·(h_i − h_{i+1}),

and r_0 + h_0 > c′/m means that mass exceeds 1: no f-DP mechanism makes c or more correct guesses with probability τ
— observing them rejects f at level τ. Curves tested here:

* **Gaussian DP**, μ-GDP: f̄⁻¹(y) = Φ(Φ⁻¹(y) − μ) (Dong, Roth & Su 2019). :func:`mu_lower_bound`: the largest μ the
  guesses reject — the mechanism is not μ′-GDP for any μ′ below it.
* **(ε, δ)-DP**: f̄(x) = min(1, e^ε·x + δ, 1 − e^−ε·(1 − δ − x)), so f̄⁻¹(y) = max(0, e^−ε·(y − δ),
  1 − δ − e^ε·(1 − y)). :func:`epsilon_lower_bound`: the largest ε whose (ε, δ)-DP the guesses reject — a lower
  bound on ε at δ for any mechanism, like Steinke et al.'s, from the same guesses.

Rejection only gets easier as μ or ε falls (f̄⁻¹ grows), so each bound is found by a search over the parameter.
Several guess counts are tried (:data:`FDP_FRACTIONS`), each at level (1 − confidence)/(counts tried) (Bonferroni),
so the stated confidence holds for the largest. The number of guesses must be fixed in advance: ties among scores
are broken by a public random permutation (:data:`TIE_SEED`, independent of the coins and of the rows' order), never
by the rows' order. Each bound is a *measurement*: what these guesses prove at 95%, not a guarantee of anything.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..errors import DPError
from ..validation import check_confidence, check_delta
from .one_run import ONE_RUN_FRACTIONS

Family = Literal["gdp", "epsilon"]
FloatArray = npt.NDArray[np.float64]

#: Guess fractions tried: k = round(f·m) "in" guesses and k "out" guesses for each f (the one-run audit's own).
FDP_FRACTIONS = ONE_RUN_FRACTIONS
#: The public permutation that orders canaries of equal score (fixed before any score is seen).
TIE_SEED = 0
#: Search ranges: no count of guesses rejects μ or ε beyond these (1,000,000 canaries all guessed right prove
#: μ ≈ 11 and ε ≈ 14).
MU_MAX = 40.0
EPSILON_MAX = 60.0
#: Width of the final bracket of each search (the bound returned is its lower, rejected, end).
_TOLERANCE = 1e-4
_GRID = 33


def _inverse_blowup(family: Family, param: FloatArray, delta: float, y: FloatArray) -> FloatArray:
    """f̄⁻¹(y) of the curve with parameter ``param`` (μ, or e^ε for the (ε, δ) curve), elementwise, y ≤ 1."""
    if family == "gdp":
        # lazy: scipy costs ~0.3 s to import, and pages that list sweeps import this module without auditing
        from scipy.special import ndtr, ndtri

        out: FloatArray = ndtr(ndtri(y) - param)
        return out
    res: FloatArray = np.maximum(np.maximum((y - delta) / param, 1.0 - delta - param * (1.0 - y)), 0.0)
    return res


def rejects(
    family: Family,
    param: npt.ArrayLike,
    m: int,
    guesses: npt.ArrayLike,
    correct: npt.ArrayLike,
    alpha: float,
    delta: float = 0.0,
) -> npt.NDArray[np.bool_]:
    """Whether ``correct`` right guesses out of ``guesses`` (each of shape (k,)) reject the curve ``param`` (μ or
    ε; shape (k, g): g parameters per count) at level ``alpha``: the recursion of the module docstring, run for
    every count and parameter at once. Each count starts at its own top level; a recursion that stops moving is
    dropped (the next level would not move it either)."""
    p = np.asarray(param, dtype=float)
    g = np.broadcast_to(np.asarray(guesses, dtype=float)[:, None], p.shape).ravel()
    c = np.broadcast_to(np.asarray(correct, dtype=np.int64)[:, None], p.shape).ravel()
    flat = p.ravel()
    if family == "epsilon":
        with np.errstate(over="ignore"):
            flat = np.exp(flat)
    order = np.argsort(-c, kind="stable")  # highest count first: the live ones are always a prefix
    idx, cc, gg, pp = order, c[order], g[order], flat[order]
    r = alpha * cc / m
    h = alpha * (gg - cc) / m
    out_r = np.empty(flat.size)
    out_h = np.empty(flat.size)
    moving = np.ones(idx.size, dtype=bool)
    top = int(cc[0]) if cc.size else 0
    for n, i in enumerate(range(top - 1, -1, -1)):
        live = int(np.searchsorted(-cc, -i, side="left"))  # counts with c > i
        if live:
            sl = slice(0, live)
            new_h = np.maximum(h[sl], _inverse_blowup(family, pp[sl], delta, r[sl]))
            step = new_h - h[sl]
            moved = step > 0
            moving[sl] &= moved
            r[sl] = np.minimum(r[sl] + (i / (gg[sl] - i)) * step, 1.0)
            h[sl] = new_h
        if n % 16 == 15 or live == idx.size:  # drop the recursions that stopped (the rest keep their order)
            stop = ~moving  # a count not yet started has not stopped
            if stop.any():
                out_r[idx[stop]], out_h[idx[stop]] = r[stop], h[stop]
                keep = ~stop
                idx, cc, gg, pp, r, h, moving = idx[keep], cc[keep], gg[keep], pp[keep], r[keep], h[keep], moving[keep]
            if idx.size == 0:
                break
    out_r[idx], out_h[idx] = r, h
    g_all = np.broadcast_to(np.asarray(guesses, dtype=float)[:, None], p.shape).ravel()
    res: npt.NDArray[np.bool_] = (out_r + out_h > g_all / m * (1 + 1e-12)).reshape(p.shape)
    return res


def _largest_rejected(
    family: Family, m: int, guesses: FloatArray, correct: FloatArray, alpha: float, delta: float, top: float
) -> FloatArray:
    """For each count, the largest parameter in [0, ``top``] the guesses reject (0 when none is): a grid search,
    refined in the bracket where rejection stops (rejection is monotone in the parameter)."""
    k = guesses.size
    lo, hi = np.zeros(k), np.full(k, top)
    found = np.zeros(k, dtype=bool)
    while True:
        grid = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, _GRID)[None, :]
        rej = rejects(family, grid, m, guesses, correct, alpha, delta)
        found |= rej[:, 0]
        last = np.where(rej.any(axis=1), _GRID - 1 - np.argmax(rej[:, ::-1], axis=1), 0)
        width = (hi - lo) / (_GRID - 1)
        lo = np.where(rej.any(axis=1), grid[np.arange(k), last], lo)
        hi = np.where(last < _GRID - 1, lo + width, hi)
        if np.all(hi - lo <= _TOLERANCE * np.maximum(1.0, lo)):
            break
    return np.where(found, lo, 0.0)


def _check_counts(m: int, guesses: Sequence[int] | int, correct: Sequence[int] | int) -> tuple[FloatArray, FloatArray]:
    g = np.atleast_1d(np.asarray(guesses, dtype=float))
    c = np.atleast_1d(np.asarray(correct, dtype=float))
    if g.shape != c.shape or g.ndim != 1:
        raise DPError("give one number of correct guesses per number of guesses")
    if m < 1 or np.any(g < 1) or np.any(g > m) or np.any(c < 0) or np.any(c > g):
        raise DPError(f"need 0 <= correct <= guesses <= canaries ({m}) and at least one guess")
    if np.any(g != np.round(g)) or np.any(c != np.round(c)):
        raise DPError("guesses and correct guesses are whole numbers")
    return g, c


def mu_lower_bound(m: int, guesses: Sequence[int] | int, correct: Sequence[int] | int, alpha: float) -> float:
    """The largest μ whose μ-GDP ``correct`` of ``guesses`` right guesses (on ``m`` canaries) reject at level
    ``alpha``; with several counts, the largest over them (give each its own share of alpha: the caller corrects
    for trying several). 0 when even μ = 0 is not rejected."""
    g, c = _check_counts(m, guesses, correct)
    return float(_largest_rejected("gdp", m, g, c, alpha, 0.0, MU_MAX).max())


def epsilon_lower_bound(
    m: int, guesses: Sequence[int] | int, correct: Sequence[int] | int, alpha: float, delta: float
) -> float:
    """The largest ε whose (ε, δ)-DP the guesses reject at level ``alpha`` (see :func:`mu_lower_bound`)."""
    g, c = _check_counts(m, guesses, correct)
    return float(_largest_rejected("epsilon", m, g, c, alpha, check_delta(delta, allow_zero=True), EPSILON_MAX).max())


@dataclass(frozen=True)
class FdpAudit:
    """What one run's canary guesses prove about its trade-off curve at ``confidence`` (a measurement, not a
    guarantee): ``mu`` — it is not μ′-GDP for any μ′ < mu; ``epsilon`` — it is not (ε′, δ)-DP for any ε′ < epsilon
    (any mechanism; Steinke et al.'s bound from the same guesses is usually as large); ``epsilon_gaussian`` — the ε at
    δ of the Gaussian curve of ``mu`` (:func:`epsilon_from_mu`), the paper's "empirical ε": every Gaussian-shaped
    curve with a smaller ε is ruled out, a lower bound on ε when the run's curve is Gaussian-shaped (DP-SGD's is
    close to one over many steps), not for every mechanism (None at δ = 0, where every μ > 0 has ε = ∞). Each holds at ``confidence`` on its own (over the
    ``candidates`` guess counts tried, Bonferroni). ``tried``: (guesses, correct) of every count, what
    :func:`rebound` re-bounds at another level; ``mu_guesses``/``mu_correct``: the count behind ``mu``."""

    mu: float
    epsilon: float
    epsilon_gaussian: float | None
    delta: float
    confidence: float
    n_canaries: int
    n_included: int | None
    mu_guesses: int
    mu_correct: int
    candidates: int
    tried: tuple[tuple[int, int], ...]
    method: str = (
        "one-run f-DP audit (Mahloujifar, Melis & Chaudhuri 2024): Gaussian-DP and (ε, δ) curves tested on the "
        "canary guesses, Bonferroni over the guess counts tried"
    )
    kind: str = "one_run_fdp"

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["tried"] = [list(t) for t in self.tried]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FdpAudit:
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        kw["tried"] = tuple((int(a), int(b)) for a, b in d.get("tried") or ())
        return cls(**kw)


def _bounds(m: int, tried: Sequence[tuple[int, int]], alpha: float, delta: float) -> tuple[FloatArray, FloatArray]:
    g, c = _check_counts(m, [t[0] for t in tried], [t[1] for t in tried])
    a = alpha / len(tried)
    return (
        _largest_rejected("gdp", m, g, c, a, 0.0, MU_MAX),
        _largest_rejected("epsilon", m, g, c, a, delta, EPSILON_MAX),
    )


def _gaussian_epsilon(mu: float, delta: float) -> float | None:
    if mu == 0:
        return 0.0
    return epsilon_from_mu(mu, delta) if delta > 0 else None  # at δ = 0 every μ > 0 has ε = ∞: no figure


def _audit(m: int, n_in: int | None, tried: Sequence[tuple[int, int]], delta: float, confidence: float) -> FdpAudit:
    mus, eps = _bounds(m, tried, 1.0 - confidence, delta)
    i = int(np.argmax(mus))
    return FdpAudit(
        mu=float(mus[i]),
        epsilon=float(eps.max()),
        epsilon_gaussian=_gaussian_epsilon(float(mus[i]), delta),
        delta=delta,
        confidence=confidence,
        n_canaries=m,
        n_included=n_in,
        mu_guesses=int(tried[i][0]),
        mu_correct=int(tried[i][1]),
        candidates=len(tried),
        tried=tuple((int(a), int(b)) for a, b in tried),
    )


def counts(m: int) -> list[int]:
    """The guesses made each way for each fraction tried: k = max(1, round(f·m)) with 2k ≤ m (at least one)."""
    ks = sorted({max(1, round(f * m)) for f in FDP_FRACTIONS if 2 * max(1, round(f * m)) <= m})
    return ks or [1]


def one_run_fdp_audit(
    scores: npt.ArrayLike,
    included: npt.ArrayLike,
    *,
    delta: float = 1e-5,
    confidence: float = 0.95,
    tie_seed: int = TIE_SEED,
) -> FdpAudit:
    """The one-run f-DP audit of ``m`` canaries: ``scores`` (higher = "more likely in") and ``included`` (1 = the
    canary's coin put it in training, each with probability 1/2, independently). For each count k in
    :func:`counts`, "in" is guessed for the k highest scores and "out" for the k lowest (ties ordered by the
    public permutation of ``tie_seed``); every (2k, correct) is tested as in the module docstring. ``delta``: the δ
    of the (ε, δ) curve tested."""
    d = check_delta(delta, allow_zero=True)
    conf = check_confidence(confidence)
    s = np.asarray(scores, dtype=float).ravel()
    inc_raw = np.asarray(included).ravel()
    if s.size != inc_raw.size:
        raise DPError(f"got {s.size} scores but {inc_raw.size} inclusion flags; give one of each per canary")
    if s.size < 2:
        raise DPError("the one-run f-DP audit needs at least 2 canaries (hundreds for a useful bound)")
    if not np.isfinite(s).all():
        raise DPError("canary scores contain NaN or infinity; check the model's outputs")
    if not np.isin(inc_raw, (0, 1, True, False)).all():
        raise DPError("included must be 1 (canary in training) or 0 (left out) for every canary")
    inc = inc_raw.astype(bool)
    m = int(s.size)
    key = np.random.default_rng([int(tie_seed), 0xFD9]).permutation(m)
    order = np.lexsort((key, -s))  # by score, highest first; equal scores by the public permutation
    top = np.r_[0, np.cumsum(inc[order])]
    bottom = np.r_[0, np.cumsum(~inc[order][::-1])]
    tried = [(2 * k, int(top[k] + bottom[k])) for k in counts(m)]
    return _audit(m, int(inc.sum()), tried, d, conf)


def rebound(a: FdpAudit | dict[str, Any], confidence: float) -> FdpAudit:
    """A stored f-DP audit re-bounded at another confidence (above 0.95: a correction for several audits). Valid
    at any level: the counts were fixed before the coins were looked at."""
    audit = a if isinstance(a, FdpAudit) else FdpAudit.from_dict(a)
    return _audit(audit.n_canaries, audit.n_included, audit.tried, audit.delta, check_confidence(confidence))


def from_one_run(stored: dict[str, Any], confidence: float = 0.95) -> FdpAudit | None:
    """The f-DP audit of a stored one-run audit (:func:`dpcore.attacks.one_run.one_run_lower_bound`'s dict, which
    keeps every count's (guesses, correct)) — when its guesses are the fixed counts of :func:`counts`: then no
    tie moved a count, and the guesses are those a fixed-count auditor would have made. None when ties moved a
    count or the counts are missing (re-run the audit on the scores with :func:`one_run_fdp_audit`)."""
    m = stored.get("n_canaries")
    tried = stored.get("tried")
    if not m or not tried or stored.get("delta") is None:
        return None
    m = int(m)
    pairs = [(int(g), int(c)) for g, c in tried]
    if sorted(g for g, _ in pairs) != [2 * k for k in counts(m)]:
        return None
    n_in = stored.get("n_included")
    return _audit(
        m,
        None if n_in is None else int(n_in),
        pairs,
        check_delta(stored["delta"], allow_zero=True),
        check_confidence(confidence),
    )


def combine(audits: Sequence[FdpAudit | dict[str, Any]], confidence: float = 0.95) -> dict[str, Any]:
    """One bound over several models' f-DP audits (seeds) at ``confidence``: each re-bounded at
    1 − (1 − confidence)/k and the largest taken (Bonferroni; the largest of k bounds at 95% is not one).
    Returns {mu, epsilon, k, per_audit_confidence, mus, epsilons (each seed's corrected bound)}."""
    conf = check_confidence(confidence)
    items = [a if isinstance(a, FdpAudit) else FdpAudit.from_dict(a) for a in audits if a]
    if not items:
        raise DPError("no f-DP audits to combine; audit at least one model's canaries")
    level = 1.0 - (1.0 - conf) / len(items)
    each = [rebound(a, level) for a in items]
    return {
        "mu": max(a.mu for a in each),
        "epsilon": max(a.epsilon for a in each),
        "k": len(items),
        "per_audit_confidence": level,
        "mus": [a.mu for a in each],
        "epsilons": [a.epsilon for a in each],
    }


def max_provable(m: int, delta: float = 1e-5, confidence: float = 0.95) -> tuple[float, float]:
    """(μ, ε) that these counts could prove at most, every guess right: a ceiling of the audit, not of the model."""
    conf = check_confidence(confidence)
    tried = [(2 * k, 2 * k) for k in counts(m)]
    mus, eps = _bounds(m, tried, 1.0 - conf, check_delta(delta, allow_zero=True))
    return float(mus.max()), float(eps.max())


def epsilon_from_mu(mu: float, delta: float) -> float:
    """ε at δ of μ-GDP (Dong, Roth & Su 2019, Cor. 2.13: δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2)). Read with care
    beside an audit: a mechanism that is not μ-GDP may still be (ε, δ)-DP at this ε — only :attr:`FdpAudit.epsilon`
    is a lower bound on ε for every mechanism."""
    # lazy: the calibration module loads scipy (see _inverse_blowup)
    from ..noise.calibration import gaussian_epsilon

    m = float(mu)
    if not (math.isfinite(m) and m >= 0):
        raise DPError(f"μ must be a finite number >= 0, got {mu!r}")
    return 0.0 if m == 0 else gaussian_epsilon(1.0 / m, check_delta(delta))
