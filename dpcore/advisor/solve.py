"""Choose ε from risk: solve a risk limit and a utility target for the ε range that meets both.

A *risk limit* bounds what a membership attacker can do against ONE person's record (add/remove one
person, except MEAN with a public n: replace one), read off the mechanism's worst-case trade-off curve
f(α) = the highest TPR any test reaches at FPR α:

* ``tpr``: f(α) ≤ T at FPR α. Gaussian with μ = Δ/σ: f(α) = Φ(Φ⁻¹(α) + μ) (Dong, Roth & Su 2019), so
  σ ≥ Δ / (Φ⁻¹(T) − Φ⁻¹(α)); any pure ε-DP mechanism (Laplace, geometric): f(α) = min(e^ε·α, 1 − e^−ε·(1 − α)),
  so ε ≤ max(ln(T/α), ln((1 − α)/(1 − T))); DP-SGD: the PLD trade-off curve of
  :func:`dpcore.training.accounting.privacy_profile`.
* ``advantage``: max_α f(α) − α ≤ A. That maximum is the total-variation distance δ(0):
  2Φ(μ/2) − 1 (Gaussian), tanh(ε/2) (pure ε-DP), δ(ε = 0) of the PLD (DP-SGD).
* ``posterior``: an attacker with prior p ends at most at P. Pure ε-DP: P ≤ e^ε·p/(1 − p + e^ε·p), so
  ε ≤ ln(P(1 − p)/(p(1 − P))). With δ > 0 (Gaussian, DP-SGD) the same bound applies to ε at the chosen δ and
  holds except when the privacy loss exceeds ε; that probability is reported (``posterior_fails_with``), and for every
  Gaussian and DP-SGD advice as ``privacy_loss_tail`` (it is not δ: 16 × δ for the Gaussian at ε = 1, δ = 1e-5).

A *utility target*: a COUNT, SUM or MEAN within ±k with probability ``confidence`` (Gaussian: σ ≤ k/z;
Laplace: b = Δ/ε ≤ k/ln(1/(1 − confidence)), conservative for the geometric mechanism of counts), or a
model accuracy of at least X read from a stored sweep at the *lower end* of its spread over seeds
(min over seeds and mean − sd), at the sweep's own sample rate and steps.

:func:`advise` returns the range, the recommended setting (the most private one that meets the utility
target; the risk limit's edge when there is no target), and — when the two conflict — how far apart they
are and what would reconcile them, with numbers. Every ε returned is an upper bound at the stated δ.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri

from .. import claims, limits
from ..errors import DPError
from ..noise.calibration import gaussian_epsilon, gaussian_loss_tail
from ..validation import check_delta, check_sensitivity
from .advice import loss_tail_entry, question, set_range
from .dpsgd import advise_dpsgd
from .risk import (
    achieved_pure,
    conf_z,
    gaussian_advantage,
    gaussian_mu_max,
    laplace_k,
    pure_epsilon_max,
    pure_posterior,
    risk_at,
)
from .targets import DEFAULT_DELTA, MECHANISM_LABELS, MECHANISMS, RiskLimit, UtilityTarget


def advise(
    mechanism: str,
    risk: RiskLimit,
    utility: UtilityTarget | None = None,
    *,
    delta: float | None = None,
    sensitivity: float | None = None,
    sample_rate: float | None = None,
    steps: int | None = None,
) -> dict:
    """Solve ``risk`` and ``utility`` for ``mechanism``; see the module docstring. Returns a JSON-able dict with
    at least ``epsilon`` (at ``delta``), ``epsilon_range``, ``feasible``, and ``sigma`` (Gaussian), ``scale_b``
    (Laplace) or ``noise_multiplier`` (DP-SGD)."""
    mech = str(mechanism).strip().lower()
    if mech not in MECHANISMS:
        raise DPError(f"unknown mechanism {mechanism!r}; choose one of {', '.join(MECHANISMS)}")
    risk = risk.checked()
    utility = utility.checked() if utility is not None else None
    if mech == "laplace":
        d = 0.0
    else:
        d = check_delta(DEFAULT_DELTA if delta is None else delta)
    if utility is not None and (utility.kind == "accuracy") != (mech == "dpsgd"):
        raise DPError(
            "an accuracy target goes with --mechanism dpsgd (read from a stored sweep); COUNT/SUM/MEAN "
            "targets go with gaussian or laplace"
        )
    out: dict[str, Any] = {
        "mechanism": mech,
        "mechanism_label": MECHANISM_LABELS[mech],
        "delta": d,
        "risk": {"kind": risk.kind, "limit": risk.value, "at": risk.at, "text": risk.text()},
        "utility": None
        if utility is None
        else {
            "kind": utility.kind,
            "text": utility.text(),
            "n": utility.n,
            "bounds": None if utility.bounds is None else [float(b) for b in utility.bounds],
        },
        "accountant": {
            "gaussian": "exact Gaussian trade-off (Balle & Wang 2018; Dong, Roth & Su 2019)",
            "laplace": "pure ε-DP trade-off (Kairouz et al. 2015)",
            "dpsgd": "dp_accounting PLD (pessimistic: an upper bound)",
        }[mech],
        "notes": [],
    }
    if mech == "dpsgd":
        return advise_dpsgd(out, risk, utility, d, sample_rate, steps)
    if utility is not None:
        sens = utility.query_sensitivity if sensitivity is None else check_sensitivity(sensitivity)
        if (
            sensitivity is not None
            and abs(sens - utility.query_sensitivity) > 1e-12 * max(sens, 1)
            and (utility.bounds is not None or utility.kind == "count")
        ):
            raise DPError(
                f"--sensitivity {sens:g} disagrees with the query's own Δ = {utility.query_sensitivity:g}; drop one of them"
            )
    else:
        sens = check_sensitivity(1.0 if sensitivity is None else sensitivity)
    if sens == 0:
        raise DPError("sensitivity Δ is 0: no noise is needed, nothing to advise; give the query's Δ (count: 1)")
    if sens > limits.RELEASE_MAGNITUDE_MAX:
        raise DPError(
            f"sensitivity Δ must be at most {limits.RELEASE_MAGNITUDE_MAX:g}, got {sens:g}; it is how far one "
            "record can move the answer"
        )
    out["sensitivity"] = sens
    out["neighbour_relation"] = utility.neighbour_relation() if utility is not None else "add/remove one record"
    out["question"] = question(out["neighbour_relation"])
    if mech == "laplace":
        return _advise_laplace(out, risk, utility, sens)
    return _advise_gaussian(out, risk, utility, sens, d)


#: μ = Δ/σ of a Gaussian release whose ε lies within the app's range at any δ it offers: below MU_MIN ε < 1e-6,
#: above MU_MAX ε > 1000 (ε grows like μ²/2); outside them the calibration is not even attempted.
MU_MIN, MU_MAX = 1e-7, 1e3


def check_range(e_min, e_max, utility=None, risk=None) -> None:
    """The ε each side asks for lies where the app's maths and pages work (:data:`dpcore.limits.EPSILON_MIN` to
    :data:`~dpcore.limits.EPSILON_MAX`), or a message says which side to change (``--within 1e-320`` needed an
    infinite ε, ``--max-advantage 1e-300`` allowed ε = 0 and divided by it)."""
    if e_max is not None and not (math.isfinite(e_max) and e_max >= limits.EPSILON_MIN):
        raise DPError(
            f"the risk limit ({risk.text() if risk else 'as given'}) allows ε ≤ {e_max:.3g}, below the "
            f"smallest ε the app works with ({limits.EPSILON_MIN:g}): no release here is that private; "
            "loosen the limit"
        )
    if e_min is None:
        return
    if not math.isfinite(e_min) or e_min > limits.EPSILON_MAX:
        raise DPError(
            f"the utility target ({utility.text() if utility else 'as given'}) needs ε ≥ "
            f"{'∞' if not math.isfinite(e_min) else f'{e_min:.3g}'}, above the largest ε the app works "
            f"with ({limits.EPSILON_MAX:g}): allow a larger error ±k"
        )
    if e_min < limits.EPSILON_MIN:
        raise DPError(
            f"the utility target ({utility.text() if utility else 'as given'}) is met at every ε from "
            f"{limits.EPSILON_MIN:g} on (it needs only ε ≥ {e_min:.3g}): give a tighter ±k, or no "
            "utility target"
        )


def _advise_laplace(out, risk, utility, sens):
    e_max = pure_epsilon_max(risk)
    e_min = None
    if utility is not None:
        with np.errstate(over="ignore"):
            e_min = float(np.float64(sens) * math.log(1 / (1 - utility.confidence)) / np.float64(utility.within))
        out["utility"].update(epsilon_min=e_min, within=utility.within, confidence=utility.confidence)
    check_range(e_min, e_max, utility, risk)
    out["risk"].update(epsilon_max=e_max, scale_b_min=sens / e_max)
    set_range(out, e_min, e_max)
    eps = e_min if (e_min is not None and out["feasible"]) else e_max
    out.update(epsilon=eps, scale_b=sens / eps, achieved=achieved_pure(eps, risk, utility, sens))
    if not out["feasible"]:
        out["conflict"] = _conflict(out, risk, utility, e_min, e_max, sens, "laplace")
    return out


def _advise_gaussian(out, risk, utility, sens, d):
    mu_max = gaussian_mu_max(risk, d)
    if not mu_max > MU_MIN:  # μ = Δ/σ so small that its ε is below the app's smallest
        check_range(None, 0.0, utility, risk)
    sigma_min = sens / mu_max
    e_max = gaussian_epsilon(sigma_min, d, sens)
    check_range(None, e_max, utility, risk)
    out["risk"].update(epsilon_max=e_max, sigma_min=sigma_min, mu_max=mu_max)
    sigma_max = e_min = None
    if utility is not None:
        sigma_max = utility.within / conf_z(utility.confidence)
        mu_need = sens / sigma_max if sigma_max > 0 else math.inf
        e_min = math.inf if not mu_need < MU_MAX else 0.0 if mu_need < MU_MIN else gaussian_epsilon(sigma_max, d, sens)
        check_range(e_min, e_max, utility, risk)
        out["utility"].update(
            epsilon_min=e_min, sigma_max=sigma_max, within=utility.within, confidence=utility.confidence
        )
    set_range(out, e_min, e_max)
    if sigma_max is not None:
        out["feasible"] = sigma_min <= sigma_max
        out["sigma_range"] = [sigma_min, sigma_max]
    sigma = sigma_max if (sigma_max is not None and out["feasible"]) else sigma_min
    eps = gaussian_epsilon(sigma, d, sens)
    mu = sens / sigma
    out.update(epsilon=eps, sigma=sigma, mu=mu)
    ach = {}
    if risk.kind == "tpr":
        ach["tpr_at_fpr"] = float(ndtr(ndtri(risk.level) + mu))
    elif risk.kind == "advantage":
        ach["advantage"] = gaussian_advantage(mu)
    else:
        ach["posterior"] = pure_posterior(max(eps, 1e-12), risk.level)
        ach["posterior_fails_with"] = gaussian_loss_tail(sigma, eps, sens)
    out["privacy_loss_tail"] = loss_tail_entry(eps, d, gaussian_loss_tail(sigma, eps, sens))
    if utility is not None:
        ach["within"] = conf_z(utility.confidence) * sigma
    out["achieved"] = ach
    if not out["feasible"]:
        out["conflict"] = _conflict(
            out, risk, utility, e_min, e_max, sens, "gaussian", sigma_min=sigma_min, sigma_max=sigma_max
        )
    return out


def _conflict(out, risk, utility, e_min, e_max, sens, mech, *, sigma_min=None, sigma_max=None) -> dict:
    """How far apart the two sides are, and three ways to reconcile them, with numbers."""
    d = out["delta"]
    ratio = e_min / e_max
    c = {
        "epsilon_needed_by_utility": e_min,
        "epsilon_allowed_by_risk": e_max,
        "ratio": ratio,
        "text": f"the utility target needs ε ≥ {claims.up(e_min)} but the risk limit allows at most ε ≤ {claims.down(e_max)} "
        f"({ratio:.2g}× apart)",
    }
    opts = []
    # 1. a weaker limit: what the attacker gets at the utility's setting
    at = risk_at(mech, e_min if mech == "laplace" else sigma_max, risk, sens, d)
    ((key, val),) = [(k, v) for k, v in at.items() if k != "within"][:1]
    opts.append(
        {
            "kind": "weaker_limit",
            key: val,
            "text": f"accept a weaker risk limit: {risk.text().split(' ≤')[0]} ≤ {claims.up(val)}"
            + (f" at FPR {risk.level:g}" if risk.kind == "tpr" else "")
            + (f" from prior {risk.level:g}" if risk.kind == "posterior" else ""),
        }
    )
    # 2. a coarser answer: the tolerance reachable at the risk's setting
    k_at = laplace_k(e_max, sens, utility.confidence) if mech == "laplace" else conf_z(utility.confidence) * sigma_min
    opts.append(
        {
            "kind": "coarser_answer",
            "within": k_at,
            "text": f"accept a coarser answer: ±{claims.up(k_at, 4)} instead of ±{utility.within:g} "
            f"at {utility.confidence:.0%}",
        }
    )
    scale = k_at / utility.within  # how much Δ must shrink for the same noise to fit
    if utility.kind == "mean" and utility.n is not None and utility.bounds is not None:
        n_need = math.ceil(utility.n * scale)
        opts.append(
            {
                "kind": "more_rows",
                "n": n_need,
                "text": f"more rows: n ≥ {n_need:,} (now {utility.n:,}) gives ±{utility.within:g} within the "
                "risk limit",
            }
        )
    elif utility.kind == "sum" and utility.bounds is not None:
        lo, hi = utility.bounds
        opts.append(
            {
                "kind": "narrower_bounds",
                "bounds": [lo / scale, hi / scale],
                "text": f"clamp to narrower public bounds [{lo / scale:.4g}, {hi / scale:.4g}] (sensitivity "
                f"{sens / scale:.4g} instead of {sens:g})",
            }
        )
    elif utility.kind == "count":
        opts.append(
            {
                "kind": "coarser_query",
                "sensitivity": sens / scale,
                "text": f"a coarser question: report the count rounded to ±{k_at:.3g} (e.g. in bands), or ask "
                "fewer counts so that each may use more ε under the same limit",
            }
        )
    else:
        opts.append(
            {
                "kind": "coarser_query",
                "sensitivity": sens / scale,
                "text": f"a coarser query whose sensitivity is at most {claims.down(sens / scale, 4)} (now {sens:g}), e.g. "
                "tighter public bounds or fewer records per person",
            }
        )
    c["reconcile"] = opts
    return c
