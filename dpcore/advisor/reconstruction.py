"""Reconstruction risk from the trade-off curve: how likely an attacker is to rebuild one person's record from the
release, beside how likely they are to tell whether it was used.

Hayes, Mahloujifar & Balle (NeurIPS 2023, "Bounding Training Data Reconstruction in DP-SGD") and Kaissis, Hayes,
Ziller & Rueckert (2023, arXiv 2307.03928, "Bounding data reconstruction attacks with the hypothesis testing
interpretation of differential privacy") bound it through the mechanism's trade-off curve f. Say a guess drawn from
the attacker's prior, without the release, succeeds with probability κ (the *baseline*: one in a thousand guesses
of a rare diagnosis, say). Then for an f-DP mechanism no attack succeeds with probability above

    γ(κ) = 1 − f(κ),

the mechanism's ROC ceiling at false-positive rate κ. An attack that reconstructs well turns into a test that
tells "the record was used" from "it was not", with that test's false-positive rate at most κ. So the bound is the
very number the advisor's membership limit reads off the curve, at FPR κ instead of the limit's α. For DP-SGD the
curve comes from the same privacy-loss distribution as its ε
(:func:`dpcore.training.accounting.dpsgd_tradeoff`, an upper envelope); for Gaussian noise it is
Φ(Φ⁻¹(κ) + μ), μ = Δ/σ; for Laplace noise the ε-DP Laplace curve. Beside it the bound from (ε, δ) alone,
e^ε·κ + δ (Balle, Cherubin & Hayes 2022), is shown for comparison: far looser at small κ.

A promise, like ε: it holds for every attack if the mechanism is what the accountant was told.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..attacks.audit import gaussian_tradeoff, laplace_tradeoff
from ..errors import DPError
from ..safe_math import exp_times
from ..training import accounting

#: Baselines shown: a guess from the prior right once in 10,000, 1,000, 100 and 10 tries.
KAPPAS = (1e-4, 1e-3, 1e-2, 0.1)


@dataclass(frozen=True)
class ReconstructionRisk:
    """The most any reconstruction attack can succeed (``bounds``) at each baseline success ``kappas``, for one
    mechanism; ``from_epsilon``: the looser e^ε·κ + δ at the same κ (None without an ε); ``source``: the curve."""

    kappas: tuple[float, ...]
    bounds: tuple[float, ...]
    from_epsilon: tuple[float, ...] | None
    epsilon: float | None
    delta: float | None
    mechanism: str
    source: str

    def rows(self) -> list[dict[str, float | None]]:
        """One row per baseline: κ, the bound, the bound from (ε, δ), and how many times the baseline the attacker
        can reach at most."""
        out = []
        for i, (k, b) in enumerate(zip(self.kappas, self.bounds)):
            out.append(
                {
                    "baseline": k,
                    "bound": b,
                    "times_baseline": b / k,
                    "from_epsilon": None if self.from_epsilon is None else self.from_epsilon[i],
                }
            )
        return out


def _kappas(kappas: Sequence[float]) -> tuple[float, ...]:
    ks = tuple(float(k) for k in kappas)
    if not ks or not all(0 < k < 1 for k in ks):
        raise DPError("a baseline success κ is a probability in (0, 1): the chance a guess from the prior is right")
    return ks


def _naive(epsilon: float | None, delta: float | None, ks: tuple[float, ...]) -> tuple[float, ...] | None:
    if epsilon is None or not math.isfinite(epsilon):
        return None
    return tuple(min(1.0, float(exp_times(epsilon, k)) + (delta or 0.0)) for k in ks)  # ε up to EPSILON_MAX


def dpsgd(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    *,
    delta: float | None = None,
    epsilon: float | None = None,
    kappas: Sequence[float] = KAPPAS,
) -> ReconstructionRisk:
    """DP-SGD (noise multiplier σ, Poisson rate q, T steps): γ(κ) from its PLD's trade-off curve."""
    ks = _kappas(kappas)
    curve = accounting.dpsgd_tradeoff(noise_multiplier, sample_rate, steps, fpr=list(ks))
    return ReconstructionRisk(
        kappas=ks,
        bounds=tuple(float(t) for t in curve["tpr"]),
        from_epsilon=_naive(epsilon, delta, ks),
        epsilon=epsilon,
        delta=delta,
        mechanism="dpsgd",
        source="DP-SGD's trade-off curve from its privacy-loss distribution (dp_accounting PLD, an upper envelope)",
    )


def gaussian(
    mu: float, *, delta: float | None = None, epsilon: float | None = None, kappas: Sequence[float] = KAPPAS
) -> ReconstructionRisk:
    """One Gaussian release with μ = Δ/σ: γ(κ) = Φ(Φ⁻¹(κ) + μ)."""
    ks = _kappas(kappas)
    return ReconstructionRisk(
        kappas=ks,
        bounds=tuple(float(t) for t in gaussian_tradeoff(mu, np.array(ks))),
        from_epsilon=_naive(epsilon, delta, ks),
        epsilon=epsilon,
        delta=delta,
        mechanism="gaussian",
        source=f"Gaussian trade-off curve, μ = Δ/σ = {mu:.3g}: γ = Φ(Φ⁻¹(κ) + μ)",
    )


def laplace(epsilon: float, *, kappas: Sequence[float] = KAPPAS) -> ReconstructionRisk:
    """One Laplace release at ε (b = Δ/ε): the ε-DP Laplace curve at κ."""
    ks = _kappas(kappas)
    return ReconstructionRisk(
        kappas=ks,
        bounds=tuple(float(t) for t in laplace_tradeoff(epsilon, np.array(ks))),
        from_epsilon=_naive(epsilon, 0.0, ks),
        epsilon=epsilon,
        delta=0.0,
        mechanism="laplace",
        source="the Laplace mechanism's ε-DP trade-off curve",
    )


def for_advice(res: Mapping[str, Any], kappas: Sequence[float] = KAPPAS) -> ReconstructionRisk:
    """Reconstruction risk at an advice's recommended setting (:func:`dpcore.advisor.decision.solve_inputs`'s result,
    or its JSON)."""
    mech = res.get("mechanism")
    eps, d = res.get("epsilon"), res.get("delta")
    if mech == "dpsgd":
        return dpsgd(
            res["noise_multiplier"], res["sample_rate"], int(res["steps"]), delta=d, epsilon=eps, kappas=kappas
        )
    if mech == "gaussian":
        return gaussian(float(res["sensitivity"]) / float(res["sigma"]), delta=d, epsilon=eps, kappas=kappas)
    if mech == "laplace" and eps is not None:
        return laplace(float(eps), kappas=kappas)
    raise DPError(f"no reconstruction bound for mechanism {mech!r}; choose Gaussian, Laplace or DP-SGD")
