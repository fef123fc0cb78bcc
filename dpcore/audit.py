"""Empirical ε: what an attack *proves* about a model's privacy, and the ceiling DP puts on any attack.

An (ε, δ)-DP training algorithm makes every membership test obey FPR + e^ε·FNR ≥ 1 − δ and
FNR + e^ε·FPR ≥ 1 − δ (Kairouz et al. 2015). Measured rates are noisy, so, following Jagielski et al.
(2020, "Auditing Differentially Private Machine Learning"), we take 95% Clopper–Pearson upper limits on
FPR and FNR and report

    ε_lb = max over thresholds (and the reversed decisions) of
           max( log((1 − δ − FNR_hi) / FPR_hi), log((1 − δ − FPR_hi) / FNR_hi) ), floored at 0.

Caveats shown with the number: it is a *lower* bound for this attack on these rows — a small value does
not mean the model is private; the maximum over thresholds makes the 95% level per threshold, not
family-wise (the bound is still far below the claimed ε in practice because the CP limits are
conservative). With n members and n non-members even a perfect attack cannot certify more than
:func:`max_certifiable_epsilon`.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import DPError
from .validation import check_delta, check_epsilon


def clopper_pearson(k, n, alpha: float = 0.05):
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


def _eps_from_rates(fpr_hi, fnr_hi, delta):
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1 - delta - fnr_hi, 0.0) / fpr_hi)
        b = np.log(np.maximum(1 - delta - fpr_hi, 0.0) / fnr_hi)
    return np.nan_to_num(np.fmax(a, b), nan=-np.inf)


def epsilon_lower_bound(tp, fp, n_pos: int, n_neg: int, delta: float, alpha: float = 0.05) -> dict:
    """Empirical ε lower bound from an attack's counts at each threshold (arrays tp, fp).

    Returns {lower_bound, tpr, fpr, fpr_hi, fnr_hi} at the threshold that gives the largest bound.
    """
    delta = check_delta(delta, allow_zero=True)
    tp = np.atleast_1d(np.asarray(tp, dtype=float))
    fp = np.atleast_1d(np.asarray(fp, dtype=float))
    # Also the reversed decision (flag the rows *not* flagged): an attack pointing the wrong way still
    # tells members apart.
    tp = np.r_[tp, n_pos - tp]
    fp = np.r_[fp, n_neg - fp]
    _, fpr_hi = clopper_pearson(fp, n_neg, alpha)
    _, fnr_hi = clopper_pearson(n_pos - tp, n_pos, alpha)
    eps = _eps_from_rates(fpr_hi, fnr_hi, delta)
    i = int(np.argmax(eps))
    best = float(max(eps[i], 0.0))
    return {"lower_bound": best, "tpr": float(tp[i] / n_pos), "fpr": float(fp[i] / n_neg),
            "fpr_hi": float(fpr_hi[i]), "fnr_hi": float(fnr_hi[i]), "alpha": alpha}


def max_certifiable_epsilon(n_pos: int, n_neg: int, delta: float, alpha: float = 0.05) -> float:
    """The largest ε any attack could certify with these counts: a perfect attack (TPR 1, FPR 0)."""
    res = epsilon_lower_bound([n_pos], [0], n_pos, n_neg, delta, alpha)
    return res["lower_bound"]


def audit_roc(roc, delta: float, alpha: float = 0.05) -> dict:
    """Lower bound and the certifiable maximum for one attack's ROC (a :class:`dpcore.mia.Roc`)."""
    res = epsilon_lower_bound(roc.tp, roc.fp, roc.n_pos, roc.n_neg, delta, alpha)
    res["max_certifiable"] = max_certifiable_epsilon(roc.n_pos, roc.n_neg, delta, alpha)
    return res


def audit_attacks(rocs: dict, delta: float, alpha: float = 0.05) -> dict:
    """Best lower bound over several attacks: {lower_bound, max_certifiable, attack, per_attack}."""
    if not rocs:
        raise DPError("no attack results to audit; run at least one attack")
    per = {name: audit_roc(r, delta, alpha) for name, r in rocs.items()}
    best = max(per, key=lambda k: per[k]["lower_bound"])
    return {"lower_bound": per[best]["lower_bound"], "max_certifiable": per[best]["max_certifiable"],
            "attack": best, "confidence": 1 - alpha,
            "per_attack": {k: v["lower_bound"] for k, v in per.items()}}


# --- theoretical ceilings on the ROC --------------------------------------------------------------------


def dp_roc_ceiling(epsilon: float, delta: float, fpr) -> np.ndarray:
    """Highest TPR any membership test can reach at this FPR against an (ε, δ)-DP algorithm.

    TPR ≤ min(1, e^ε·FPR + δ, 1 − e^−ε·(1 − δ − FPR)) — the (ε, δ) trade-off curve, tighter than the
    often-quoted e^ε·FPR + δ alone.
    """
    eps = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=True)
    f = np.asarray(fpr, dtype=float)
    return np.clip(np.minimum.reduce([np.ones_like(f), math.exp(eps) * f + delta,
                                      1 - math.exp(-eps) * (1 - delta - f)]), 0.0, 1.0)


def simple_roc_ceiling(epsilon: float, delta: float, fpr) -> np.ndarray:
    """The looser line TPR ≤ e^ε·FPR + δ (capped at 1)."""
    eps = check_epsilon(epsilon)
    return np.minimum(1.0, math.exp(eps) * np.asarray(fpr, dtype=float) + delta)


def gdp_mu(noise_multiplier: float, sample_rate: float, steps: int) -> float:
    """μ of μ-GDP for Poisson-subsampled DP-SGD by the central limit theorem (Bu et al. 2020):
    μ = q·√(T·(e^{1/σ²} − 1)). An *approximation* (accurate for many steps), not a certified bound."""
    if noise_multiplier <= 0 or not 0 < sample_rate <= 1 or steps < 1:
        raise DPError("GDP needs noise multiplier > 0, sample rate in (0, 1] and at least one step")
    return float(sample_rate * math.sqrt(steps * math.expm1(1.0 / noise_multiplier ** 2)))


def gdp_roc_ceiling(mu: float, fpr) -> np.ndarray:
    """TPR ≤ Φ(Φ⁻¹(FPR) + μ): the f-DP (Gaussian) trade-off curve."""
    f = np.clip(np.asarray(fpr, dtype=float), 1e-300, 1.0)
    from scipy.special import ndtr, ndtri

    return ndtr(ndtri(f) + mu)
