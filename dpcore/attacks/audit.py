"""Empirical ε: what an attack *proves* about a model's privacy, and the ceiling DP puts on any attack.

An (ε, δ)-DP training algorithm makes every membership test obey FPR + e^ε·FNR ≥ 1 − δ and
FNR + e^ε·FPR ≥ 1 − δ (Kairouz et al. 2015). Measured rates are noisy, so, following Jagielski et al.
(2020, "Auditing Differentially Private Machine Learning"), we take Clopper–Pearson upper limits on
FPR and FNR (jointly at the stated confidence) and report

    ε_lb = max( log((1 − δ − FNR_hi) / FPR_hi), log((1 − δ − FPR_hi) / FNR_hi) ), floored at 0,

for ONE test fixed before its rows are looked at. :func:`audit_scores` is the audit to use: it picks the
attack, threshold and direction on a random half of the rows and bounds on the other half, so its
"95% bound" exceeds the true ε in at most 5% of audits (maximising over thresholds on the audited rows,
as this module did before, overclaimed in 25–49% of audits). :func:`epsilon_lower_bound` is the
per-threshold primitive (its maximum is NOT a 95% bound). :func:`dpcore.attacks.one_run.one_run_lower_bound` is
the one-run audit of Steinke, Nasr & Jagielski (2023) for canaries included at random (its own module). :func:`combine_bounds`
gives one bound over several models (seeds) at the same confidence. Each is a *lower* bound for
this attack on these rows — a small value does not mean the model is private. With n members and n
non-members even a perfect attack cannot certify more than :func:`max_certifiable_epsilon`.

Ceilings: :func:`dp_roc_ceiling` (any (ε, δ)-DP algorithm), :func:`gaussian_tradeoff` and
:func:`laplace_tradeoff` (exact, one release), :func:`roc_from_privacy_profile` (exact from a PLD's δ(ε);
DP-SGD's is :func:`dpcore.training.accounting.dpsgd_tradeoff`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import limits
from ..errors import DPError
from ..safe_math import exp_times
from ..validation import check_confidence, check_delta, check_epsilon
from . import one_run
from .mia import roc


def clopper_pearson(k: npt.ArrayLike, n: npt.ArrayLike, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided (1 − alpha) Clopper–Pearson interval for a binomial proportion k/n (vectorised)."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    if np.any(n <= 0) or np.any(k < 0) or np.any(k > n):
        raise DPError("Clopper–Pearson needs 0 ≤ successes ≤ trials and trials > 0")
    if not 0 < alpha < 1:
        raise DPError(f"alpha must be in (0, 1), got {alpha}; 0.05 gives a 95% interval")
    from scipy.special import betaincinv  # imported here: listing sweeps (Home) must not pay for scipy

    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, betaincinv(k, n - k + 1, alpha / 2), 0.0)
        hi = np.where(k < n, betaincinv(k + 1, n - k, 1 - alpha / 2), 1.0)
    return lo, hi


def _eps_from_rates(fpr_hi: npt.ArrayLike, fnr_hi: npt.ArrayLike, delta: float) -> npt.NDArray[np.float64]:
    fpr, fnr = np.asarray(fpr_hi, dtype=float), np.asarray(fnr_hi, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1 - delta - fnr, 0.0) / fpr)
        b = np.log(np.maximum(1 - delta - fpr, 0.0) / fnr)
    out: npt.NDArray[np.float64] = np.nan_to_num(np.fmax(a, b), nan=-np.inf)
    return out


def epsilon_lower_bound(
    tp: npt.ArrayLike, fp: npt.ArrayLike, n_pos: int, n_neg: int, delta: float, alpha: float = 0.05
) -> dict[str, float]:
    """Empirical ε lower bound from an attack's counts at each threshold (arrays tp, fp).

    Returns {lower_bound, tpr, fpr, fpr_hi, fnr_hi} at the threshold that gives the largest bound.
    """
    delta = check_delta(delta, allow_zero=True)
    tp1 = np.atleast_1d(np.asarray(tp, dtype=float))
    fp1 = np.atleast_1d(np.asarray(fp, dtype=float))
    # Also the reversed decision (flag the rows *not* flagged): an attack pointing the wrong way still
    # tells members apart.
    tps = np.r_[tp1, n_pos - tp1]
    fps = np.r_[fp1, n_neg - fp1]
    _, fpr_hi = clopper_pearson(fps, n_neg, alpha)
    _, fnr_hi = clopper_pearson(n_pos - tps, n_pos, alpha)
    eps = _eps_from_rates(fpr_hi, fnr_hi, delta)
    i = int(np.argmax(eps))
    best = float(max(eps[i], 0.0))
    return {
        "lower_bound": best,
        "tpr": float(tps[i] / n_pos),
        "fpr": float(fps[i] / n_neg),
        "fpr_hi": float(fpr_hi[i]),
        "fnr_hi": float(fnr_hi[i]),
        "alpha": alpha,
    }


def max_certifiable_epsilon(n_pos: int, n_neg: int, delta: float, alpha: float = 0.05) -> float:
    """The largest ε any attack could certify with these counts: a perfect attack (TPR 1, FPR 0)."""
    res = epsilon_lower_bound([n_pos], [0], n_pos, n_neg, delta, alpha)
    return float(res["lower_bound"])


# --- a bound that holds at its stated confidence ------------------------------------------------------------


def _one_test_bound(
    tp: npt.ArrayLike, fp: npt.ArrayLike, n_pos: float, n_neg: float, delta: float, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ε lower bound for ONE test fixed in advance (no maximum over thresholds or directions).

    FPR ≤ FPR_hi and FNR ≤ FNR_hi hold together with probability ≥ 1 − alpha (each a one-sided
    Clopper–Pearson limit at alpha/2, union bound); on that event every ε for which the algorithm is
    (ε, δ)-DP satisfies both trade-off inequalities, so the returned ε_lb is below every such ε.
    Vectorised over tp, fp (counts may be fractional: used to *plan* with the selection half's rates).
    """
    tp = np.asarray(tp, dtype=float)
    fp = np.asarray(fp, dtype=float)
    _, fpr_hi = clopper_pearson(fp, n_neg, alpha)
    _, fnr_hi = clopper_pearson(n_pos - tp, n_pos, alpha)
    return np.maximum(_eps_from_rates(fpr_hi, fnr_hi, delta), 0.0), fpr_hi, fnr_hi


def _check_pair(name: str, pair: Any) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    try:
        pos, neg = pair
    except (TypeError, ValueError):
        raise DPError(f"attack {name!r}: give (member_scores, nonmember_scores)") from None
    pos = np.asarray(pos, dtype=float).ravel()
    neg = np.asarray(neg, dtype=float).ravel()
    if pos.size < 2 or neg.size < 2:
        raise DPError(
            f"attack {name!r}: the audit needs at least 2 members and 2 non-members (half of each "
            "chooses the threshold, the other half is audited); score more rows"
        )
    if not (np.isfinite(pos).all() and np.isfinite(neg).all()):
        raise DPError(f"attack {name!r}: scores contain NaN or infinity; check the model's probabilities")
    return pos, neg


def split_halves(
    n_pos: int, n_neg: int, split_seed: int = 0
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(selection members, audit members, selection non-members, audit non-members): index arrays of a random
    split of each side into halves, from ``split_seed`` alone (the split only has to be independent of the scores;
    the audit half gets the odd row)."""
    rng = np.random.default_rng([limits.check_seed(split_seed, "split seed"), 0xA0D1])
    perm_p, perm_n = rng.permutation(n_pos), rng.permutation(n_neg)
    return perm_p[: n_pos // 2], perm_p[n_pos // 2 :], perm_n[: n_neg // 2], perm_n[n_neg // 2 :]


def audit_scores(
    per_attack: dict[str, Any], delta: float, confidence: float = 0.95, *, split_seed: int = 0
) -> dict[str, Any]:
    """Empirical-ε lower bound that holds at ``confidence`` although the attack, threshold and direction
    are chosen to make it large.

    ``per_attack``: {attack name: (member_scores, nonmember_scores)}, higher score = "more likely a member";
    every attack scores the same rows in the same order. The rows are split at random (``split_seed``; the
    split only has to be independent of the scores) into a *selection* half and an *audit* half, the same
    split for every attack. On the selection half we pick the (attack, threshold, direction) whose bound
    would be largest if the audit half showed the same rates; on the audit half that one fixed test gets
    the Clopper–Pearson bound of :func:`_one_test_bound`. Nothing about the audit half is looked at
    before the test is fixed, so the bound exceeds the true ε in at most 1 − confidence of audits (tested
    by simulation against a mechanism of known ε). The price: only half the rows certify
    (``max_certifiable`` is for the audit half). Maximising over seeds (several models) needs the same
    care: :func:`combine_bounds`.

    Returns {lower_bound, confidence, delta, attack, threshold, direction, tp, fp, tpr, fpr, members,
    nonmembers, selection_members, selection_nonmembers, max_certifiable, method}.
    """
    delta = check_delta(delta, allow_zero=True)
    conf = check_confidence(confidence)
    alpha = 1.0 - conf
    if not per_attack:
        raise DPError("no attack scores to audit; run at least one attack")
    pairs = {name: _check_pair(name, pair) for name, pair in per_attack.items()}
    sizes = {(p.size, n.size) for p, n in pairs.values()}
    if len(sizes) != 1:
        raise DPError("every attack must score the same members and non-members (got different counts)")
    n_pos, n_neg = sizes.pop()
    sel_p, aud_p, sel_n, aud_n = split_halves(n_pos, n_neg, split_seed)
    na_pos, na_neg = aud_p.size, aud_n.size

    best: tuple[float, str, float, str] | None = None
    for name, (pos, neg) in pairs.items():
        r = roc(pos[sel_p], neg[sel_n])
        # plan: the bound the audit half would give at the selection half's rates, in both directions
        for direction, tpr, fpr in (("higher", r.tpr, r.fpr), ("lower", 1 - r.tpr, 1 - r.fpr)):
            plan, _, _ = _one_test_bound(tpr * na_pos, fpr * na_neg, na_pos, na_neg, delta, alpha)
            i = int(np.argmax(plan))
            if best is None or plan[i] > best[0]:
                best = (float(plan[i]), name, float(r.thresholds[i]), direction)
    assert best is not None  # per_attack has at least one attack
    _, name, thr, direction = best
    pos, neg = pairs[name][0][aud_p], pairs[name][1][aud_n]
    if direction == "higher":
        tp, fp = int(np.sum(pos >= thr)), int(np.sum(neg >= thr))
    else:
        tp, fp = int(np.sum(pos < thr)), int(np.sum(neg < thr))
    lb, fpr_hi, fnr_hi = _one_test_bound(tp, fp, na_pos, na_neg, delta, alpha)
    return {
        "lower_bound": float(lb),
        "confidence": conf,
        "delta": delta,
        "attack": name,
        "threshold": thr if math.isfinite(thr) else None,
        "direction": direction,
        "tp": tp,
        "fp": fp,
        "tpr": tp / na_pos,
        "fpr": fp / na_neg,
        "fpr_hi": float(fpr_hi),
        "fnr_hi": float(fnr_hi),
        "members": int(na_pos),
        "nonmembers": int(na_neg),
        "selection_members": int(sel_p.size),
        "selection_nonmembers": int(sel_n.size),
        "max_certifiable": max_certifiable_epsilon(na_pos, na_neg, delta, alpha),
        "method": "attack, threshold and direction chosen on a random half of the rows; "
        "Clopper–Pearson bound on the other half",
    }


# --- several models (seeds): a bound over all of them that keeps its confidence ----------------------------


def _is_one_run(a: dict[str, Any]) -> bool:
    return a.get("n_canaries") is not None and a.get("tp") is None


def _check_stored(a: Any) -> None:
    if not isinstance(a, dict) or a.get("delta") is None:
        raise DPError(
            "combine_bounds takes the dicts returned by audit_scores or one_run_lower_bound (with "
            "their counts and delta); re-run the audit"
        )
    need = (
        (("n_canaries",) + (("tried",) if a.get("tried") else ("guesses", "correct")))
        if _is_one_run(a)
        else ("tp", "fp", "members", "nonmembers")
    )
    if any(a.get(key) is None for key in need):
        raise DPError(
            "combine_bounds takes the dicts returned by audit_scores (tp, fp, members, nonmembers) or "
            "one_run_lower_bound (n_canaries, tried); re-run the audit with one of them"
        )


def stored_bound(a: dict[str, Any], confidence: float) -> tuple[float, float]:
    """(lower bound, max certifiable) of one stored audit — :func:`audit_scores`' fixed test or
    :func:`~dpcore.attacks.one_run.one_run_lower_bound`'s guesses — re-computed from its counts at ``confidence`` (which may be
    above 0.95: a correction for several audits). Valid whatever level the audit was planned at: what was
    chosen was chosen without looking at the counts it is bounded on."""
    _check_stored(a)
    alpha = 1.0 - float(confidence)
    delta = check_delta(a["delta"], allow_zero=True)
    if _is_one_run(a):
        if a.get("tried"):
            tried = tuple((int(g), int(c)) for g, c in a["tried"])
            return one_run.bound_at(int(a["n_canaries"]), tried, delta, alpha)
        # stored before the candidates were kept: the chosen one, still corrected for all that were tried
        k = max(int(a.get("candidates") or 1), 1)
        lb, cert = one_run.bound_at(int(a["n_canaries"]), ((int(a["guesses"]), int(a["correct"])),), delta, alpha / k)
        return lb, cert
    fixed = _one_test_bound(a["tp"], a["fp"], a["members"], a["nonmembers"], delta, alpha)[0]
    return float(fixed), max_certifiable_epsilon(a["members"], a["nonmembers"], delta, alpha)


def combine_bounds(audits: Any, confidence: float = 0.95) -> dict[str, Any]:
    """One lower bound on ε from audits of several models (seeds) of the same ε that still holds at
    ``confidence``: the largest of k bounds each at ``confidence`` does not (with k independent audits it
    exceeds the true ε in up to 1 − confidence^k of sweeps: 23% for five seeds).

    Each audit — :func:`audit_scores` (a fixed test chosen on its selection half) or
    :func:`~dpcore.attacks.one_run.one_run_lower_bound` (canary guesses) — is re-bounded from its stored counts at a corrected level
    (:func:`stored_bound`); the correction is a union bound, so it holds for any mix of the two:

    * ``lower_bound`` — the largest seed's bound, each at 1 − (1 − c)/k (Bonferroni: the union of k
      events of probability (1 − c)/k);
    * ``median_lower_bound`` — the j-th largest, j = ⌈k/2⌉ (the median seed), each at 1 − (1 − c)·j/k:
      at least j of k bounds exceed ε with probability ≤ k·α′/j = 1 − c (Markov; no independence
      assumed). Less correction, so often larger than ``lower_bound`` when the seeds agree. Each of the two
      holds at ``confidence`` on its own; the larger of them does not.

    Returns {lower_bound, median_lower_bound, confidence, k, per_audit_confidence,
    median_per_audit_confidence, bounds (each seed's Bonferroni bound, in the given order), best (index
    of the largest), max_certifiable (the most ``lower_bound`` could be with these counts), method}.
    """
    conf = check_confidence(confidence)
    audits = [a for a in (audits or []) if a is not None]
    if not audits:
        raise DPError("no audits to combine; run the membership audit on at least one model")
    for a in audits:
        _check_stored(a)
    k = len(audits)
    alpha = 1.0 - conf
    j = math.ceil(k / 2)
    bonf = [stored_bound(a, 1.0 - alpha / k) for a in audits]
    median = sorted((stored_bound(a, 1.0 - alpha * j / k)[0] for a in audits), reverse=True)[j - 1]
    bounds = [b for b, _ in bonf]
    return {
        "lower_bound": max(bounds),
        "median_lower_bound": float(median),
        "confidence": conf,
        "k": k,
        "per_audit_confidence": 1.0 - alpha / k,
        "median_per_audit_confidence": 1.0 - alpha * j / k,
        "bounds": bounds,
        "best": int(np.argmax(bounds)),
        "max_certifiable": max(c for _, c in bonf),
        "method": f"largest of {k} seeds' bounds, each at confidence 1 − (1 − {conf:g})/{k} (Bonferroni); "
        f"median: bound number {j} of {k} from the top, each at 1 − (1 − {conf:g})·{j}/{k}",
    }


# --- theoretical ceilings on the ROC --------------------------------------------------------------------


def dp_roc_ceiling(epsilon: float, delta: float, fpr: npt.ArrayLike) -> np.ndarray:
    """Highest TPR any membership test can reach at this FPR against an (ε, δ)-DP algorithm.

    TPR ≤ min(1, e^ε·FPR + δ, 1 − e^−ε·(1 − δ − FPR)) — the (ε, δ) trade-off curve, tighter than the
    often-quoted e^ε·FPR + δ alone.
    """
    eps = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=True)
    f = np.asarray(fpr, dtype=float)
    # e^ε·FPR in log space: ε may be up to limits.EPSILON_MAX, past where math.exp overflows
    out: np.ndarray = np.clip(
        np.minimum(np.minimum(np.ones_like(f), exp_times(eps, f) + delta), 1 - math.exp(-eps) * (1 - delta - f)),
        0.0,
        1.0,
    )
    return out


def simple_roc_ceiling(epsilon: float, delta: float, fpr: npt.ArrayLike) -> np.ndarray:
    """The looser line TPR ≤ e^ε·FPR + δ (capped at 1)."""
    eps = check_epsilon(epsilon)
    return np.minimum(1.0, exp_times(eps, np.asarray(fpr, dtype=float)) + delta)


def gdp_mu(noise_multiplier: float, sample_rate: float, steps: int) -> float:
    """μ of μ-GDP for Poisson-subsampled DP-SGD by the central limit theorem (Bu et al. 2020):
    μ = q·√(T·(e^{1/σ²} − 1)). An *approximation* (accurate for many steps), not a certified bound."""
    if noise_multiplier <= 0 or not 0 < sample_rate <= 1 or steps < 1:
        raise DPError("GDP needs noise multiplier > 0, sample rate in (0, 1] and at least one step")
    return float(sample_rate * math.sqrt(steps * math.expm1(1.0 / noise_multiplier**2)))


def gdp_roc_ceiling(mu: float, fpr: npt.ArrayLike) -> np.ndarray:
    """TPR ≤ Φ(Φ⁻¹(FPR) + μ): the f-DP (Gaussian) trade-off curve."""
    f = np.clip(np.asarray(fpr, dtype=float), 1e-300, 1.0)
    # lazy: scipy takes ~0.4 s to import
    from scipy.special import ndtr, ndtri

    out: np.ndarray = ndtr(ndtri(f) + mu)
    return out


def gaussian_tradeoff(mu: float, fpr: npt.ArrayLike) -> np.ndarray:
    """Exact worst-case ROC of one Gaussian release: TPR = Φ(Φ⁻¹(FPR) + μ) with μ = Δ/σ (Dong, Roth &
    Su 2019, μ-GDP). Same as :func:`gdp_roc_ceiling`, with μ checked."""
    m = float(mu)
    if not (math.isfinite(m) and m >= 0):
        raise DPError(f"μ = Δ/σ must be a finite number >= 0, got {mu!r}")
    return gdp_roc_ceiling(m, fpr)


def laplace_tradeoff(epsilon: float, fpr: npt.ArrayLike) -> np.ndarray:
    """Exact worst-case ROC of one Laplace release with b = Δ/ε (the ε-DP Laplace trade-off curve,
    Dong, Roth & Su 2019): TPR = e^ε·α for α < e^−ε/2; 1 − e^−ε/(4α) for α ≤ 1/2; 1 − e^−ε·(1 − α) above.
    It touches the pure ε-DP ceiling :func:`dp_roc_ceiling` (ε, 0) for α ≤ e^−ε/2 and α ≥ 1/2."""
    eps = check_epsilon(epsilon)
    a = np.clip(np.asarray(fpr, dtype=float), 0.0, 1.0)
    with np.errstate(divide="ignore"):
        mid = 1 - math.exp(-eps) / (4 * np.maximum(a, 1e-300))
    out = np.where(a < 0.5 * math.exp(-eps), exp_times(eps, a), np.where(a <= 0.5, mid, 1 - math.exp(-eps) * (1 - a)))
    clipped: np.ndarray = np.clip(out, 0.0, 1.0)
    return clipped


def roc_from_privacy_profile(epsilons: npt.ArrayLike, deltas: npt.ArrayLike, fpr: npt.ArrayLike) -> np.ndarray:
    """Worst-case ROC implied by a privacy profile: every (ε_j, δ_j) the algorithm satisfies (for both
    orders of the neighbouring pair) bounds any test by TPR ≤ e^ε·α + δ and TPR ≤ 1 − e^−ε·(1 − δ − α);
    the minimum over the profile is an upper envelope of every attack's ROC, and equals the exact
    trade-off curve when the profile is the full δ(ε) of the privacy-loss distribution (Dong, Roth & Su
    2019, Prop. 2.12). ε_j ≥ 0; any subset of a valid profile still gives a valid (looser) ceiling."""
    e = np.asarray(epsilons, dtype=float)[:, None]
    d = np.clip(np.asarray(deltas, dtype=float), 0.0, 1.0)[:, None]
    a = np.clip(np.asarray(fpr, dtype=float), 0.0, 1.0)[None, :]
    out = np.ones(a.shape[1])
    for k in range(0, e.shape[0], 512):  # chunks keep memory small for long profiles
        ek, dk = e[k : k + 512], d[k : k + 512]
        b1 = np.exp(np.minimum(ek, 700.0)) * a + dk
        b2 = 1 - np.exp(-ek) * (1 - dk - a)
        out = np.minimum(out, np.minimum(b1, b2).min(axis=0))
    clipped: np.ndarray = np.clip(np.maximum(out, a[0]), 0.0, 1.0)
    return clipped
