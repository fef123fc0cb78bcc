"""The advisor's risk maths in closed form: what an attacker can do against one release of the Gaussian mechanism
(μ = Δ/σ) or of any pure ε-DP mechanism, read off their worst-case trade-off curves, the largest ε or μ a risk limit
allows, the privacy-loss tail P[L > ε] (where the posterior reading of ε fails), and a utility target's noise."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri

from ..attacks.audit import dp_roc_ceiling, roc_from_privacy_profile
from ..noise.calibration import gaussian_analytic_sigma, gaussian_epsilon
from ..noise.discrete import composed_delta_upper, epsilon_at, tpr_at_fpr
from ..noise.interpret import posterior_bound
from .targets import RiskLimit


def gaussian_advantage(mu: float) -> float:
    """Best attacker advantage (TV distance) against one Gaussian release with μ = Δ/σ: 2Φ(μ/2) − 1."""
    return float(2 * ndtr(mu / 2) - 1)


def pure_tpr(epsilon: float, alpha: float) -> float:
    """Highest TPR at FPR α against any ε-DP mechanism: min(e^ε·α, 1 − e^−ε·(1 − α))."""
    return float(dp_roc_ceiling(epsilon, 0.0, [alpha])[0])


def pure_advantage(epsilon: float) -> float:
    """Best advantage against an ε-DP mechanism: (e^ε − 1)/(e^ε + 1) = tanh(ε/2)."""
    return float(math.tanh(epsilon / 2))


def pure_posterior(epsilon: float, prior: float) -> float:
    """Posterior bound e^ε·p/(1 − p + e^ε·p) (:func:`dpcore.noise.interpret.posterior_bound`)."""
    return float(posterior_bound(prior, epsilon))


def pure_epsilon_max(risk: RiskLimit) -> float:
    if risk.kind == "tpr":
        return max(math.log(risk.value / risk.level), math.log((1 - risk.level) / (1 - risk.value)))
    if risk.kind == "advantage":
        return math.log((1 + risk.value) / (1 - risk.value))  # 2·artanh(A)
    p, big = risk.level, risk.value
    # in logs: a posterior near 1 from a tiny prior overflowed the ratio to inf ("allows ε ≤ inf")
    return math.log(big) + math.log1p(-p) - math.log(p) - math.log1p(-big)


def gaussian_mu_max(risk: RiskLimit, delta: float) -> float:
    """Largest μ = Δ/σ that meets the limit (posterior: via the ε at δ)."""
    if risk.kind == "tpr":
        return float(ndtri(risk.value) - ndtri(risk.level))
    if risk.kind == "advantage":
        return float(2 * ndtri((1 + risk.value) / 2))

    return 1.0 / gaussian_analytic_sigma(pure_epsilon_max(risk), delta, 1.0)


def conf_z(conf: float) -> float:
    return float(ndtri((1 + conf) / 2))


def laplace_k(epsilon: float, sens: float, conf: float) -> float:
    return sens / epsilon * math.log(1 / (1 - conf))


def achieved_pure(eps, risk, utility, sens):
    a = {
        "tpr_at_fpr" if risk.kind == "tpr" else risk.kind: pure_tpr(eps, risk.level)
        if risk.kind == "tpr"
        else (pure_advantage(eps) if risk.kind == "advantage" else pure_posterior(eps, risk.level))
    }
    if utility is not None:
        a["within"] = laplace_k(eps, sens, utility.confidence)
    return a


def risk_at(mech, eps_or_sigma, risk, sens, d):
    """The attack quantity at a setting (Laplace: ε; Gaussian: σ)."""
    if mech == "laplace":
        return achieved_pure(eps_or_sigma, risk, None, sens)
    mu = sens / eps_or_sigma
    if risk.kind == "tpr":
        return {"tpr_at_fpr": float(ndtr(ndtri(risk.level) + mu))}
    if risk.kind == "advantage":
        return {"advantage": gaussian_advantage(mu)}
    return {"posterior": pure_posterior(max(gaussian_epsilon(eps_or_sigma, d, sens), 1e-12), risk.level)}


def discrete_gaussian_risk(risk: RiskLimit, parts, delta: float, epsilon_max: float) -> dict:
    """The attack quantity of ``risk`` against releases drawn with *discrete* Gaussian noise (what the noise page
    and the query console release), as an upper bound: ``parts`` = [(σ, K)] of the releases one record shifts by K
    (one, or a MEAN's two). Read off their privacy profile δ(ε) (:func:`dpcore.noise.discrete.composed_delta_upper`,
    itself an upper bound), never off μ = K/σ: the discrete Gaussian's trade-off curve rises above that Gaussian's.

    tpr: one release, its exact ROC (:func:`dpcore.noise.discrete.tpr_at_fpr`); else the trade-off envelope min over
    ε of the (ε, δ(ε)) bounds (:func:`dpcore.attacks.audit.roc_from_privacy_profile`) on a grid of ε in
    [0, ``epsilon_max``] (a grid can only raise it); advantage: δ(0), the total-variation distance;
    posterior: the posterior bound at the smallest ε whose δ(ε) ≤ ``delta`` (bisection, rounded up)."""

    def d(e: float) -> float:
        return composed_delta_upper(parts, e)

    if risk.kind == "advantage":
        return {"advantage": d(0.0)}
    if risk.kind == "posterior" and len(parts) == 1:
        return {
            "posterior": pure_posterior(
                max(epsilon_at(parts[0][0], parts[0][1], delta, epsilon_max), 1e-12), risk.level
            )
        }
    if risk.kind == "posterior":
        lo, hi = 0.0, max(float(epsilon_max), 1e-9)
        if d(lo) <= delta:
            return {"posterior": pure_posterior(1e-12, risk.level)}
        while d(hi) > delta and hi < 1e4:
            hi *= 2
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if d(mid) <= delta else (mid, hi)
        return {"posterior": pure_posterior(hi, risk.level)}
    if len(parts) == 1:  # one release: its exact ROC, summed (None for a σ too large to sum)
        exact = tpr_at_fpr(parts[0][0], parts[0][1], risk.level)
        if exact is not None:
            return {"tpr_at_fpr": exact}

    eps = np.r_[0.0, np.geomspace(1e-3, max(float(epsilon_max), 1e-2), 300)]
    deltas = [d(float(e)) for e in eps]
    return {"tpr_at_fpr": float(roc_from_privacy_profile(eps, deltas, [risk.level])[0])}
