"""The one-run audit of Steinke, Nasr & Jagielski (2023), "Privacy auditing with one (1) training run".

m canaries, each put in training independently with probability 1/2 by a secret coin; after training the auditor
guesses "in" for the highest-scored canaries and "out" for the lowest, and the number of right guesses bounds ε
from below (:func:`one_run_lower_bound`). :func:`bound_at` re-bounds a stored audit at another level (several
models combined by :func:`dpcore.attacks.audit.combine_bounds`). Split from :mod:`dpcore.attacks.audit` (the
split audit on members and non-members, the combining of seeds, and the ceilings DP puts on any attack).
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import DPError
from ..validation import check_confidence, check_delta

#: Guess fractions tried when k_pos/k_neg are not given: k_pos = k_neg = f·m for each f; the confidence is
#: Bonferroni-corrected for trying them all.
ONE_RUN_FRACTIONS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5)


def _binom_cdf(k, n, p):
    """P[Binomial(n, p) ≤ k] for whole k and n (arrays): scipy's ``bdtr`` ufunc (as ``scipy.stats.binom.cdf``, to
    ~1e-13, without its per-call argument checks: a tenth of a millisecond a call, dozens of calls an audit),
    with 0 below 0 and 1 from n up where ``bdtr`` gives NaN."""
    # lazy: scipy takes ~0.4 s to import
    from scipy.special import bdtr

    k, n, p = np.broadcast_arrays(np.floor(k), np.asarray(n, dtype=float), p)
    inside = (k >= 0) & (k < n)
    with np.errstate(invalid="ignore"):
        mid = bdtr(np.where(inside, k, 0), np.where(inside, n, 1).astype(np.int64), p)
    return np.where(inside, mid, np.where(k < 0, 0.0, 1.0))


def _binom_sf(k, n, p):
    """P[Binomial(n, p) > k]: ``1 −`` :func:`_binom_cdf` computed as scipy's ``bdtrc`` (no cancellation)."""
    # lazy: scipy takes ~0.4 s to import
    from scipy.special import bdtrc

    k, n, p = np.broadcast_arrays(np.floor(k), np.asarray(n, dtype=float), p)
    inside = (k >= 0) & (k < n)
    with np.errstate(invalid="ignore"):
        mid = bdtrc(np.where(inside, k, 0), np.where(inside, n, 1).astype(np.int64), p)
    return np.where(inside, mid, np.where(k < 0, 1.0, 0.0))


def _one_run_pvalue(m: int, r, v, eps, delta: float):
    """An upper bound on P[≥ v of r guesses correct] under (ε, δ)-DP (Steinke, Nasr & Jagielski 2023,
    Theorem 3.1): P[Binomial(r, e^ε/(1+e^ε)) ≥ v] plus, for δ > 0, their δ term 2mδ·max_i P[v > B ≥ v − i]/i
    (as in the paper's reference code). Vectorised over r, v, eps."""
    r = np.asarray(r, dtype=float)
    v = np.asarray(v, dtype=float)
    q = 1.0 / (1.0 + np.exp(-np.asarray(eps, dtype=float)))
    beta = _binom_sf(v - 1, r, q)
    if delta == 0:
        return np.minimum(beta, 1.0)
    # the δ term for every element at once: window[j, i-1] = P[v_j > B_j >= v_j - i], i = 1..v_j
    shape = np.broadcast(r, v, q).shape
    rb, vb, qb, bb = (np.broadcast_to(x, shape).ravel() for x in (r, v, q, beta))
    i = np.arange(1, int(vb.max(initial=0)) + 1)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        window = _binom_cdf(vb[:, None] - 1, rb[:, None], qb[:, None]) - _binom_cdf(
            vb[:, None] - i - 1, rb[:, None], qb[:, None]
        )
        ratio = np.where(i <= vb[:, None], window / i, -np.inf)
    a = np.where(vb > 0, ratio.max(axis=1, initial=-np.inf), 0.0)
    return np.minimum((bb + a * delta * 2 * m).reshape(shape), 1.0)


def _one_run_eps(m: int, r, v, alpha: float, delta: float, iters: int = 50):
    """Largest ε with p-value(ε) ≤ alpha (bisection, vectorised over (r, v)); 0 if even ε = 0 is not rejected."""
    r = np.asarray(r, dtype=float)
    v = np.asarray(v, dtype=float)
    lo = np.zeros(np.broadcast(r, v).shape)
    ok0 = _one_run_pvalue(m, r, v, lo, delta) <= alpha
    if not ok0.any():  # not even ε = 0 is rejected (the usual case under DP): nothing to search
        return lo
    hi = np.full(lo.shape, 1.0)
    for _ in range(12):  # grow hi until rejected no more (p-value grows with ε)
        grow = _one_run_pvalue(m, r, v, hi, delta) <= alpha
        if not grow.any():
            break
        hi = np.where(grow, hi * 2, hi)
    for _ in range(iters):
        if np.all(hi - lo <= 1e-6):  # lo stays the rejected end: a valid bound, finer than any digit shown
            break
        mid = 0.5 * (lo + hi)
        rej = _one_run_pvalue(m, r, v, mid, delta) <= alpha
        lo = np.where(rej, mid, lo)
        hi = np.where(rej, hi, mid)
    return np.where(ok0, lo, 0.0)


def one_run_lower_bound(
    scores, included, *, delta: float = 0.0, confidence: float = 0.95, k_pos=None, k_neg=None
) -> dict:
    """One-run audit of Steinke, Nasr & Jagielski (2023), "Privacy auditing with one (1) training run".

    m canaries, each included in training independently with probability 1/2 (``included``, 1/0); after
    training, ``scores`` (higher = "more likely in"). The auditor guesses "in" for the k_pos highest scores
    and "out" for the k_neg lowest, and counts correct guesses v of r = k_pos + k_neg. Under (ε, δ)-DP
    the number correct is stochastically dominated by Binomial(r, e^ε/(1 + e^ε)) (plus a δ term), so
    ε_lb = the largest ε whose p-value for ≥ v correct is ≤ 1 − confidence. With k_pos/k_neg not given,
    k_pos = k_neg = f·m for each f in :data:`ONE_RUN_FRACTIONS` is tried at confidence
    1 − (1 − confidence)/(candidates tried) (Bonferroni), so the stated confidence still holds. Guesses depend on the
    scores alone: a group of tied scores is guessed whole or not at all (each count moves to the nearest ends of
    tied groups, below and above f·m: with no ties, f·m itself), never ordered by the rows' order.

    Returns {lower_bound, confidence, delta, guesses, correct, k_pos, k_neg, n_canaries, candidates,
    tried ([guesses, correct] of every candidate: what :func:`combine_bounds` re-bounds at another level)}.
    """
    d = check_delta(delta, allow_zero=True)
    conf = check_confidence(confidence)
    s = np.asarray(scores, dtype=float).ravel()
    inc = np.asarray(included).ravel()
    if s.size != inc.size:
        raise DPError(f"got {s.size} scores but {inc.size} inclusion flags; give one of each per canary")
    if s.size < 2:
        raise DPError("the one-run audit needs at least 2 canaries (hundreds for a useful bound)")
    if not np.isfinite(s).all():
        raise DPError("canary scores contain NaN or infinity; check the model's outputs")
    if not np.isin(inc, (0, 1, True, False)).all():
        raise DPError("included must be 1 (canary in training) or 0 (left out) for every canary")
    inc = inc.astype(bool)
    m = s.size
    if (k_pos is None) != (k_neg is None):
        raise DPError("give both k_pos and k_neg, or neither (then several are tried with a correction)")
    # The guesses must be a function of the scores alone (the theorem's T = A(output)). Sorting alone would break
    # ties by the rows' order, which a file may share with the coins (the included canaries listed first): guesses
    # therefore take whole groups of tied scores, or none of a group (abstaining is a guess of 0).
    order = np.argsort(-s, kind="mergesort")
    ss, inc_sorted = s[order], inc[order]
    edges = np.r_[0, np.nonzero(np.diff(ss))[0] + 1, m]  # k at an edge: the top k rows are whole tie groups
    if k_pos is None:
        cands = sorted(
            {
                pair
                for f in ONE_RUN_FRACTIONS
                if 2 * max(1, round(f * m)) <= m
                for pair in _at_edges(edges, m, max(1, int(round(f * m))))
            }
        )
        if not cands:
            cands = sorted(set(_at_edges(edges, m, 1)))
    else:
        kp, kn = int(k_pos), int(k_neg)
        if kp != k_pos or kn != k_neg or kp < 0 or kn < 0 or kp + kn < 1 or kp + kn > m:
            raise DPError(f"k_pos and k_neg must be whole numbers >= 0 with 1 <= k_pos + k_neg <= {m} canaries")
        if kp not in edges or m - kn not in edges:
            raise DPError(
                f"k_pos = {kp} and k_neg = {kn} split a group of tied scores: a guess inside it would "
                "depend on the rows' order, not on the scores; choose counts at the ends of tied groups "
                "(or leave them out)"
            )
        cands = [(kp, kn)]
    alpha = (1 - conf) / len(cands)
    top = np.r_[0, np.cumsum(inc_sorted)]  # included among the k highest
    bottom = np.r_[0, np.cumsum(~inc_sorted[::-1])]  # left out among the k lowest
    r = np.array([kp + kn for kp, kn in cands])
    v = np.array([top[kp] + bottom[kn] for kp, kn in cands])
    eps = _one_run_eps(m, r, v, alpha, d)
    i = int(np.argmax(eps))
    return {
        "lower_bound": float(eps[i]),
        "confidence": conf,
        "delta": d,
        "guesses": int(r[i]),
        "correct": int(v[i]),
        "k_pos": int(cands[i][0]),
        "k_neg": int(cands[i][1]),
        "n_canaries": int(m),
        "candidates": len(cands),
        "tried": [[int(a), int(b)] for a, b in zip(r, v)],
    }


def _at_edges(edges: np.ndarray, m: int, t: int) -> list[tuple[int, int]]:
    """(k_pos, k_neg) pairs near t guesses each way, every count at an end of a group of tied scores: the nearest
    such count at or below t and at or above it, for the top and for the bottom; pairs that guess nothing or
    overlap are left out. Without ties this is (t, t)."""
    below = edges[edges <= t].max()
    above = edges[edges >= t].min()
    from_bottom = m - edges
    nb = from_bottom[from_bottom <= t].max()
    na = from_bottom[from_bottom >= t].min()
    return [(int(kp), int(kn)) for kp in {below, above} for kn in {nb, na} if 1 <= kp + kn <= m]


@functools.lru_cache(maxsize=4096)
def bound_at(m: int, tried: tuple, delta: float, alpha: float) -> tuple[float, float]:
    """A one-run audit's bound re-computed at level ``alpha`` from its candidates' (guesses, correct), with the
    same Bonferroni over candidates as :func:`one_run_lower_bound`; and the most it could prove (every guess
    right). Cached: a page draws the same sweep's figures several times per rerun."""
    r = np.array([t[0] for t in tried], float)
    v = np.array([t[1] for t in tried], float)
    a = alpha / len(tried)
    got = _one_run_eps(m, r, v, a, delta)
    best = got if np.array_equal(r, v) else _one_run_eps(m, r, r, a, delta)  # every guess right: the same search
    return float(got.max()), float(best.max())
