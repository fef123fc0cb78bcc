"""Epsilon in plain language: real deployments, and what an epsilon lets an attacker learn.

Every reading names the question it bounds. Under add/remove one person, ε bounds *whether a person is in the
data*: belief p becomes at most e^ε·p / (1 − p + e^ε·p) (:func:`posterior_bound`). A *fact about a person known
to be in the data* (their diagnosis) is a replace-one question — their record with one value against another —
bounded by e^(2ε) (:func:`fact_bound`): at ε = 1, 50% becomes at most 73.2% for membership but 88.1% for a fact.
With δ > 0 a bound holds except on outputs where the privacy loss exceeds ε; how likely those are depends on the
mechanism and is not δ (:func:`delta_reading`: 1.6e-4, 16 × δ, for the Gaussian at ε = 1, δ = 1e-5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .. import claims
from ..errors import DPError
from ..safe_math import exp_times
from ..validation import check_epsilon


@dataclass(frozen=True)
class Deployment:
    name: str
    epsilon: float
    unit: str  # what one "person" is in the guarantee


#: Published epsilons of real deployments (as reported in public talks/papers; units differ!).
DEPLOYMENTS: tuple[Deployment, ...] = (
    Deployment("LinkedIn analytics", 1.0, "record level"),
    Deployment("Windows telemetry", 1.0, "every six hours"),
    Deployment("Facebook COVID mobility", 2.0, "per user"),
    Deployment("Apple emoji suggestions", 4.0, "per user per day"),
    Deployment("Apple QuickType", 8.0, "per user per day"),
    Deployment("Google Gboard", 8.9, "device level"),
    Deployment("Government birth-rate release", 9.98, "per person"),
    Deployment("US Census 2020", 12.2, "per person"),
)


def posterior_bound(prior: ArrayLike, epsilon: float) -> np.ndarray:
    """Highest belief that a person is *in the data* an attacker can reach after seeing an ε-DP output
    (add/remove one person).

    For prior belief p, Bayes with a likelihood ratio of at most e^eps gives p' <= e^eps p / (1 - p + e^eps p),
    written p / (p + (1 - p) e^-eps) so that no large ε overflows.
    """
    eps = check_epsilon(epsilon)
    p = np.asarray(prior, dtype=float)
    if np.any((p < 0) | (p > 1)) or np.any(np.isnan(p)):
        raise DPError("prior belief must be a probability in [0, 1]")
    with np.errstate(invalid="ignore", divide="ignore"):
        out = p / (p + (1 - p) * math.exp(-eps))
    return np.where(p == 0, 0.0, out)


def fact_bound(prior: ArrayLike, epsilon: float) -> np.ndarray:
    """Highest belief in a *fact about a person known to be in the data* (their diagnosis, their salary band)
    after an ε-DP output under add/remove: a replace-one question (their record with one value against another is
    a removal and an addition), so the likelihood ratio is at most e^(2ε)."""
    return posterior_bound(prior, 2 * check_epsilon(epsilon))


#: Privacy-level words, each tied to the membership bound it allows: an attacker who was 50% sure that a person
#: is in the data can become at most this sure (``posterior_bound(0.5, ε) <= limit``). The word shown beside a
#: bound can therefore never contradict it (no "moderate" next to "from 50% to 99% sure").
LEVELS: tuple[tuple[float, str], ...] = ((0.75, "strong"), (0.90, "moderate"), (0.99, "weak"), (1.0, "very weak"))


def level_edges() -> list[tuple[float, float, str]]:
    """(lowest ε, highest ε, word) of each privacy level: ε where the 50% → posterior bound hits its limit."""
    out, lo = [], 0.0
    for limit, word in LEVELS:
        hi = math.inf if limit >= 1.0 else math.log(limit / (1 - limit))
        out.append((lo, hi, word))
        lo = hi
    return out


def privacy_level(epsilon: float) -> str:
    """Plain-language word for an epsilon, from the posterior bound it allows (see :data:`LEVELS`)."""
    eps = check_epsilon(epsilon)
    for _lo, hi, word in level_edges():
        if eps <= hi * (1 + 1e-12):
            return word
    return LEVELS[-1][1]


def level_sentence(epsilon: float) -> str:
    """The word with the bound that earns it, each reading naming its question, e.g. "strong: an attacker 50% sure
    that a person is in the data ends at most 73.2% sure (a fact about someone known to be in it: 88.1%)".

    The bounds (e/(1 + e) = 73.106% at ε = 1) are written rounded up, so "at most" stays true."""
    post = float(posterior_bound(0.5, epsilon))
    fact = float(fact_bound(0.5, epsilon))
    return (
        f"{privacy_level(epsilon)}: an attacker 50% sure that a person is in the data ends at most "
        f"{claims.percent(post, up=True)} sure (50% sure of a fact about someone known to be in it: at most "
        f"{claims.percent(fact, up=True)})"
    )


def guess_ceiling(epsilon: float, prior_success: ArrayLike) -> np.ndarray:
    """Highest chance of guessing a person's value (e.g. a diagnosis) right after an ε-DP output.

    ``epsilon`` must be the guarantee for datasets that differ in that person's value (replace-one). For
    any guessing rule, P(right) = Σ_v π(v) P_v(guess v) ≤ e^ε Σ_v π(v) P_u(guess v) ≤ e^ε · max π: at most
    e^ε times the best guess without the output (``prior_success``), and never above 1.
    """
    eps = check_epsilon(epsilon)
    p = np.asarray(prior_success, dtype=float)
    if np.any((p < 0) | (p > 1)) or np.any(np.isnan(p)):
        raise DPError("prior chance of a right guess must be a probability in [0, 1]")
    return np.asarray(exp_times(eps, p))  # e^ε·p capped at 1, in log space (ε past 709 overflowed math.exp)


#: Where "whatever else they know" holds: nothing else about the data leaves outside ε — its exact number of rows
#: included (1,000 rows or 999 tells whoever knows every other record whether one more is there).
WHATEVER_ELSE = "whatever else they know, as long as nothing else about the data (its exact number of rows included) is released outside ε"
N_PUBLIC_READING = (
    "whatever else they know, except where the number of rows is public: whoever knows every other record "
    "then learns from it whether one more is there, and only the bound on a fact about a known person holds"
)


def reading(epsilon: float, prior: float = 0.5, delta: float | None = None, *, n_public: bool = False) -> str:
    """One sentence that reads the membership bound for a given epsilon (and what δ > 0 changes). The bound holds
    whatever else the attacker knows only while nothing else about the data is released outside ε; ``n_public``:
    the release states its number of rows (DP training, a dataset whose owner declared n public)."""
    post = float(posterior_bound(prior, epsilon))
    out = (
        f"With ε = {epsilon:g}, an attacker who was {prior:.0%} sure that a person is in the data "
        f"can become at most {claims.percent(post, up=True)} sure after seeing the output — "
        f"{N_PUBLIC_READING if n_public else WHATEVER_ELSE}."
    )
    if delta:
        out += " " + delta_reading(epsilon, delta)
    return out


def fact_reading(epsilon: float, prior: float = 0.5) -> str:
    """The sentence for a fact about a person known to be in the data: the replace-one question, e^(2ε)."""
    fact = float(fact_bound(prior, epsilon))
    return (
        f"About someone known to be in the data, a fact such as their diagnosis is a different question "
        f"(their record with one value or another), bounded by twice ε: {prior:.0%} sure becomes at most "
        f"{claims.percent(fact, up=True)}."
    )


#: The example every page quotes, (ε, δ, P[privacy loss > ε]) of the Gaussian mechanism: :func:`loss_tail`
#: computes it (a test checks this copy), kept here so that Home reads it without importing scipy (~0.4 s).
EXAMPLE_TAIL = (1.0, 1e-5, 1.612e-4)


def loss_tail(epsilon: float, delta: float) -> float:
    """P[privacy loss > ε] for the Gaussian mechanism calibrated to (ε, δ) (analytic, Balle & Wang): how often
    the e^ε reading fails for that mechanism. It is not δ (at ε = 1, δ = 1e-5: 1.6e-4)."""
    from .calibration import gaussian_analytic_sigma, gaussian_loss_tail  # lazy: scipy (~0.4 s); Home imports this

    return gaussian_loss_tail(gaussian_analytic_sigma(check_epsilon(epsilon), delta, 1.0), epsilon)


def release_tail_reading(tail: float, epsilon: float, delta: float) -> str:
    """What δ > 0 means for one released answer whose privacy loss exceeds ε with probability at most ``tail``
    (the discrete Gaussian's own, :meth:`dpcore.noise.mechanisms.DiscreteGaussian.loss_exceeds_mass`)."""
    ratio = f" ({tail / delta:,.0f} × δ)" if delta > 0 and tail >= delta else ""
    return (
        f"δ = {claims.delta(delta)} is not the chance that this answer's ε bound fails: its privacy loss exceeds "
        f"ε = {epsilon:g} with probability at most {claims.up(tail, 2)}{ratio}, and then an attacker may become "
        "surer than ε allows."
    )


def delta_reading(epsilon: float, delta: float) -> str:
    """What δ > 0 changes: the bound fails on outputs where the privacy loss exceeds ε, with a probability that
    depends on the mechanism — for the Gaussian at these (ε, δ), :func:`loss_tail` — and is not δ."""
    p = loss_tail(epsilon, delta)
    return (
        f"With δ = {claims.delta(delta)} this bound holds except on outputs where the privacy loss exceeds ε: "
        f"for the continuous Gaussian mechanism at this ε and δ that happens with probability {claims.up(p, 2)} "
        f"({p / delta:,.0f} × δ), and then the attacker may become surer."
    )


def patients(x: float) -> str:
    """A typical (not whole) number of patients as people read it, the same on the noise page and in the report:
    "0.9 patients", "1.4 patients", "1 patient", "10,000 patients" (never "1e+04", "0.06667" or "1.429")."""
    if x == 0:
        text = "0"
    elif abs(x) < 0.01:
        return "under 0.01 patients"
    elif abs(x) < 1:
        text = f"{x:.1g}"
    elif abs(x) < 10:
        text = f"{x:.1f}".removesuffix(".0")
    else:
        text = f"{x:,.0f}"
    return f"{text} {'patient' if text == '1' else 'patients'}"
