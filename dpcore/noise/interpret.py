"""Epsilon in plain language: real deployments, and what an epsilon lets an attacker learn."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import claims
from ..errors import DPError
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


def posterior_bound(prior, epsilon) -> np.ndarray:
    """Highest posterior belief an attacker can reach after seeing an epsilon-DP output.

    For prior belief p that a person is in the data, Bayes with a likelihood ratio of at most e^eps
    gives p' <= e^eps p / (1 - p + e^eps p).
    """
    eps = check_epsilon(epsilon)
    p = np.asarray(prior, dtype=float)
    if np.any((p < 0) | (p > 1)) or np.any(np.isnan(p)):
        raise DPError("prior belief must be a probability in [0, 1]")
    r = np.exp(eps)
    return r * p / (1 - p + r * p)


#: Privacy-level words, each tied to the posterior bound it allows: an attacker who was 50% sure of a fact
#: about a person can become at most this sure (``posterior_bound(0.5, ε) <= limit``). The word shown
#: beside a bound can therefore never contradict it (no "moderate" next to "from 50% to 99% sure").
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
    """The word with the bound that earns it, e.g. "strong: 50% sure becomes at most 73.2% sure".

    The bound (e/(1 + e) = 73.106% at ε = 1) is written rounded up, so "at most" stays true."""
    post = float(posterior_bound(0.5, epsilon))
    return f"{privacy_level(epsilon)}: an attacker 50% sure of a fact about a person ends at most {claims.percent(post, up=True)} sure"


def guess_ceiling(epsilon: float, prior_success) -> np.ndarray:
    """Highest chance of guessing a person's value (e.g. a diagnosis) right after an ε-DP output.

    ``epsilon`` must be the guarantee for datasets that differ in that person's value (replace-one). For
    any guessing rule, P(right) = Σ_v π(v) P_v(guess v) ≤ e^ε Σ_v π(v) P_u(guess v) ≤ e^ε · max π: at most
    e^ε times the best guess without the output (``prior_success``), and never above 1.
    """
    eps = check_epsilon(epsilon)
    p = np.asarray(prior_success, dtype=float)
    if np.any((p < 0) | (p > 1)) or np.any(np.isnan(p)):
        raise DPError("prior chance of a right guess must be a probability in [0, 1]")
    return np.minimum(1.0, math.exp(eps) * p)


def reading(epsilon: float, prior: float = 0.5, delta: float | None = None) -> str:
    """One sentence that reads the posterior bound for a given epsilon (and says what δ > 0 adds)."""
    post = float(posterior_bound(prior, epsilon))
    out = (f"With ε = {epsilon:g}, an attacker who was {prior:.0%} sure that a person is in the data "
           f"can become at most {claims.percent(post, up=True)} sure after seeing the output — whatever else they know.")
    if delta:
        out += (f" This bound covers the ε part only: with δ = {claims.delta(delta)} > 0 the guarantee may fail outright "
                f"with probability up to δ, and then the attacker may learn more.")
    return out
