"""Epsilon in plain language: real deployments, and what an epsilon lets an attacker learn."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import DPError
from .validation import check_epsilon


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


def privacy_level(epsilon: float) -> str:
    """Coarse plain-language zone for an epsilon (a convention used across the app)."""
    eps = check_epsilon(epsilon)
    if eps < 1:
        return "strong"
    if eps <= 5:
        return "moderate"
    if eps <= 10:
        return "weak"
    return "very weak"


def reading(epsilon: float, prior: float = 0.5) -> str:
    """One sentence that reads the posterior bound for a given epsilon."""
    post = float(posterior_bound(prior, epsilon))
    return (f"With ε = {epsilon:g}, an attacker who was {prior:.0%} sure that a person is in the data "
            f"can become at most {post:.1%} sure after seeing the output — whatever else they know.")
