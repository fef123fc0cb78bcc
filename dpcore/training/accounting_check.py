"""The accounting check: did the training loop do what the accountant was told?

The accountant turns (noise multiplier σ, Poisson sample rate q, steps T) into ε. Those are what the run was *told*;
this module records what it *did*, with wrappers around the pieces that act — the dataset (every batch the data
loader gathers passes through it, with the indices of its records), the optimiser's step, and the noise draw (the
noise tensor actually added to the clipped gradient sum) — and :func:`check` compares the two before any ε is
claimed. Motivated by silent mis-accounting in the field (Opacus issue #813: a weighted sampler spent budget ~781×
faster than reported; the Re:cord-play study, arXiv 2602.17454, found 13 such violations in 12 DP libraries).

What is compared (each refusal says what differed; the run then ends with that message and no ε):

* **Steps**: batches drawn = optimiser steps = steps with noise = the accountant's T (exact counts).
* **Poisson sampling**: no batch holds a record twice (sampling with replacement does); each record's number of
  draws over the run is Binomial(T, q) — the dispersion statistic D = Σᵢ (cᵢ − Tq)² / (Tq(1 − q)) has mean n and
  variance n·(2 + (1 − 6q(1 − q))/(Tq(1 − q))), so fixed-size shuffled batches (every record exactly once an epoch:
  D ≈ 0) and weighted samplers (D ≫ n) both stand out; batch sizes are Binomial(n, q) alike.
* **Sample rate**: the share of records per batch, Σᵢ cᵢ / (nT), against the accountant's q.
* **Noise multiplier**: σ̂² = Σ noise² / (N·C²) over the N noise coordinates drawn, against the accountant's σ
  (Σ noise² / (σC)² is χ² with N degrees of freedom under the claim).

Every statistical comparison allows :data:`Z` standard deviations (:data:`Z_DISPERSION` for the skewed dispersion
statistics): a run that did what it was told is refused with probability below 10⁻⁹ per comparison, and a sampler
or noise that is wrong by more than the allowance is refused every time. With very few steps or rows a test has
little power; the record says how much it allowed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import DPError

#: Standard deviations allowed for the (nearly normal) sample-rate and noise statistics: a two-sided normal tail of
#: 8·10⁻¹¹ each.
Z = 6.5
#: For the dispersion statistics (sums of skewed squares): wider, so that their heavier right tail stays below 10⁻⁹.
Z_DISPERSION = 9.0


class AccountingMismatch(DPError):
    """The training loop did not do what the accountant was told: no ε may be claimed for the run."""


@dataclass
class Witness:
    """What the loop did, counted as it happened: batches (with the indices of their records), optimiser steps, noise
    draws (their sum of squares and size). ``n`` is the number of records the loader draws from."""

    n: int
    counts: np.ndarray = field(init=False)
    batches: int = 0
    batch_sizes: list[int] = field(default_factory=list)
    duplicate_batches: int = 0
    steps: int = 0
    noise_draws: int = 0
    noise_sq: float = 0.0
    noise_numel: int = 0

    def __post_init__(self) -> None:
        self.counts = np.zeros(int(self.n), np.int64)

    def on_batch(self, idx: Any) -> None:
        """A batch was gathered from the dataset: these records (indices), in this order."""
        a = np.asarray(idx.numpy() if hasattr(idx, "numpy") else idx, dtype=np.int64).ravel()
        self.batches += 1
        self.batch_sizes.append(int(a.size))
        if a.size:
            c = np.bincount(a, minlength=self.n)
            if c.size > self.n:
                raise AccountingMismatch("the data loader drew a record that is not in the training data")
            if c.max() > 1:
                self.duplicate_batches += 1
            self.counts += c

    def on_step(self) -> None:
        self.steps += 1

    def on_noise(self, noise: Any) -> None:
        """The noise tensor(s) of one step, as added to the clipped gradient sum (one call per step)."""
        import torch  # lazy: torch takes ~2 s to import; the check's statistics need only numpy

        parts = noise if isinstance(noise, (list, tuple)) else [noise]
        sq = 0.0
        numel = 0
        for t in parts:
            t = t.detach()
            sq += float(torch.sum(t.double() * t.double()))
            numel += int(t.numel())
        self.noise_draws += 1
        self.noise_sq += sq
        self.noise_numel += numel


def _z(observed: float, expected: float, sd: float) -> float:
    return 0.0 if sd <= 0 else (observed - expected) / sd


def check(history: Any, w: Witness, *, clip: float) -> dict[str, Any]:
    """Compare the accountant's inputs (``history``: Opacus's [(σ, q, steps), ...]) with what ``w`` saw; raise
    :class:`AccountingMismatch` naming every difference, else return the record of the check (stored with the
    run: what was compared, observed and allowed)."""
    hist = [(float(s), float(q), int(t)) for s, q, t in history if int(t) > 0]
    T = sum(t for _, _, t in hist)
    sigmas = sorted({s for s, _, _ in hist})
    rates = sorted({q for _, q, _ in hist})
    problems: list[str] = []
    if w.batches != T:
        problems.append(f"the accountant counted {T} steps but the data loader drew {w.batches} batches")
    if w.steps != w.batches:
        problems.append(f"the optimiser stepped {w.steps} times for {w.batches} batches")
    if w.noise_draws != w.steps:
        problems.append(f"noise was added in {w.noise_draws} of {w.steps} steps")
    if len(sigmas) > 1 or len(rates) > 1:
        problems.append("the accountant was told of several noise multipliers or sample rates; this run uses one")
    out: dict[str, Any] = {
        "passed": False,
        "steps": {"accountant": T, "batches": w.batches, "optimiser_steps": w.steps, "noise_draws": w.noise_draws},
        "records": w.n,
        "method": "counted by wrappers around the dataset (each batch's records), the optimiser step and the noise "
        f"draw; statistical comparisons allow {Z:g} standard deviations ({Z_DISPERSION:g} for dispersions)",
    }
    if not hist or not T:
        problems.append("the accountant was told of no step")
        raise AccountingMismatch(_message(problems))
    sigma, q = sigmas[-1], rates[-1]
    n, draws = w.n, float(w.counts.sum())
    # sample rate: the share of records in a batch
    q_hat = draws / (n * w.batches) if w.batches else 0.0
    sd_q = math.sqrt(q * (1 - q) / (n * max(w.batches, 1)))
    z_q = _z(q_hat, q, sd_q)
    out["sample_rate"] = {"accountant": q, "observed": q_hat, "allowed": Z * sd_q, "z": round(z_q, 2)}
    if abs(z_q) > Z:
        problems.append(f"the sample rate was {q_hat:.4g}, not the accountant's {q:.4g}")
    # Poisson sampling: no duplicates; dispersion of the records' draws and of the batch sizes
    tq = T * q * (1 - q)
    disp: dict[str, Any] = {"duplicate_batches": w.duplicate_batches}
    if w.duplicate_batches:
        problems.append(
            f"{w.duplicate_batches} batches held a record twice: sampling with replacement, not Poisson sampling"
        )
    if tq > 0 and q < 1:
        d = float(np.sum((w.counts - T * q) ** 2)) / tq
        var = n * (2 + (1 - 6 * q * (1 - q)) / tq)
        z_d = _z(d, n, math.sqrt(max(var, 1e-12)))
        sizes = np.asarray(w.batch_sizes, float)
        nq = n * q * (1 - q)
        b = float(np.sum((sizes - n * q) ** 2)) / nq
        var_b = w.batches * (2 + (1 - 6 * q * (1 - q)) / nq)
        z_b = _z(b, w.batches, math.sqrt(max(var_b, 1e-12)))
        disp.update(records_z=round(z_d, 2), batch_sizes_z=round(z_b, 2))
        if abs(z_d) > Z_DISPERSION:
            problems.append(
                "the records were not drawn independently with probability q each step (their draw counts are "
                + ("too even: fixed batches, not Poisson sampling" if z_d < 0 else "too uneven: a weighted sampler")
                + f", z = {z_d:.1f})"
            )
        if abs(z_b) > Z_DISPERSION:
            problems.append(
                "the batch sizes were "
                + (
                    "too even for Poisson sampling (fixed-size batches)"
                    if z_b < 0
                    else "too uneven for Poisson sampling"
                )
                + f" (z = {z_b:.1f})"
            )
    out["poisson"] = disp
    # noise multiplier: σ̂² = Σ noise² / (N C²)
    if w.noise_numel:
        ratio = w.noise_sq / (w.noise_numel * (sigma * clip) ** 2)
        sd_r = math.sqrt(2.0 / w.noise_numel)
        z_s = _z(ratio, 1.0, sd_r)
        sigma_hat = math.sqrt(max(ratio, 0.0)) * sigma
        out["noise_multiplier"] = {
            "accountant": sigma,
            "observed": sigma_hat,
            "allowed": sigma * (math.sqrt(1 + Z * sd_r) - 1),
            "z": round(z_s, 2),
            "coordinates": w.noise_numel,
        }
        if abs(z_s) > Z:
            problems.append(
                f"the noise added had σ = {sigma_hat:.4g} (per unit of clip), not the accountant's {sigma:.4g}"
            )
    else:
        out["noise_multiplier"] = {"accountant": sigma, "observed": 0.0, "coordinates": 0}
        if T:
            problems.append(f"no noise was added, but the accountant was told σ = {sigma:g}")
    if problems:
        raise AccountingMismatch(_message(problems))
    out["passed"] = True
    return out


def _message(problems: list[str]) -> str:
    return (
        "the training did not do what the privacy accountant was told, so no ε is claimed for this run: "
        + "; ".join(problems)
        + ". This is a bug in the training code or its settings: report it, and do not release this model"
    )
