"""The differencing attack against a differentially private interface: what noise does to the subtraction.

The noisy interface releases, per group (:func:`noisy_release`, through :mod:`dpcore.noise.release`):

* ``COUNT'`` = COUNT + discrete Laplace noise of scale 1/ε (one person changes a count by at most 1), and
* ``AVG' = 18 + SUM'/max(COUNT', 1)`` with ``SUM' = Σ clip(age − 18, 0, 72)`` (on the release grid) + discrete
  Laplace noise of scale 72/ε: ages are shifted by the public lower bound 18, so adding or removing one person
  changes the sum by at most ``Δ = 90 − 18 = 72``. AVG' is post-processing of SUM' and COUNT' and costs only the
  SUM's ε.

The noisy interface has no minimum group size: a refusal decided on the exact count would itself leak
(it is not DP), and the noise already covers small groups. Each of the attacker's 4 queries spends ε;
the groups overlap, so by sequential composition the attack as a whole is ``4ε``-DP. The target is
only in the first group, so the target's own privacy loss is at most ``2ε``. The attacker's best estimate undoes
the division (the rule is public): ``(AVG'₁ − 18)·max(COUNT'₁, 1) − (AVG'₂ − 18)·max(COUNT'₂, 1) + 18 =
age + L₁ − L₂`` with ``Lᵢ ~ Lap(72/ε)``, **clipped to the public bounds 18–90**: an estimate outside them is
impossible, so at small ε the estimates pile up at 18 and 90. Unclipped, ``P(|error| ≤ k)`` is exactly
``1 − e^{−k/b}(1 + k/(2b))`` with ``b = 72/ε`` (difference of two Laplace variables); clipping can only help the
attacker, so the simulated rate is at least this.

One example release goes through the release path (seeded on the page: not a DP release); the distribution over
many releases is a plain-numpy *simulation* of the continuous Laplace (vectorised, seeded) — a picture.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd

from .. import limits
from ..data import datasets
from ..errors import DPError
from ..noise import grid as noise_grid
from ..noise import release
from ..validation import _as_float, check_epsilon, check_positive_int
from .differencing import AttackResult, Where

#: Public bounds of the attacked column (domain knowledge, not the data's min/max).
AGE_LOW, AGE_HIGH = datasets.PUBLIC_BOUNDS["age"]
SUM_SENSITIVITY = AGE_HIGH - AGE_LOW  # 72: one person moves Σ(age − 18) by at most this
COUNT_SENSITIVITY = 1.0
QUERIES_PER_ATTACK = 4  # COUNT and AVG for two groups
MAX_TRIALS = limits.DIFFERENCING_MAX_TRIALS
MAX_CURVE_CELLS = limits.DIFFERENCING_MAX_CURVE_CELLS  # epsilons × trials in one vectorised simulation


def check_within(k) -> float:
    k = _as_float(k, "k (years)")
    if math.isinf(k) or k < 0:
        raise DPError(f"k (years) must be a finite number >= 0, got {k:g}; try 1–5")
    return k


def check_trials(trials) -> int:
    t = check_positive_int(trials, "number of simulated releases")
    if t > MAX_TRIALS:
        raise DPError(f"number of simulated releases must be at most {MAX_TRIALS:,}, got {t:,}")
    return t


def privacy_cost(epsilon) -> dict:
    """How ε composes over the attacker's queries (basic sequential composition, pure ε-DP, δ = 0)."""
    eps = check_epsilon(epsilon)
    return {
        "epsilon_per_query": eps,
        "queries": QUERIES_PER_ATTACK,
        "total_epsilon": QUERIES_PER_ATTACK * eps,
        "target_epsilon": 2 * eps,
        "delta": 0.0,
        "composition": (
            f"{QUERIES_PER_ATTACK} queries × ε = {QUERIES_PER_ATTACK * eps:g} by sequential "
            f"composition (the groups overlap, so parallel composition does not apply); the target "
            f"is only in the first group, so their own loss is at most 2ε = {2 * eps:g}"
        ),
        "noise_scale_count": COUNT_SENSITIVITY / eps,
        "noise_scale_sum": SUM_SENSITIVITY / eps,
    }


def _shifted_sum(df: pd.DataFrame, where: Where) -> noise_grid.GridSum:
    """Σ clip(age − 18, 0, 72) over the group, on the release grid (whole grid steps; K = 72 years in steps)."""
    ages = df["age"].to_numpy(dtype=np.float64)[where.mask(df)]
    return noise_grid.clamped_sum(ages - AGE_LOW, 0.0, SUM_SENSITIVITY, what="the shifted ages")


def noisy_release(df: pd.DataFrame, attack: AttackResult, epsilon, *, seed=None) -> dict:
    """One release of the attacker's 4 queries through the release path (:mod:`dpcore.noise.release`): each COUNT
    plus discrete Laplace noise (Δ = 1), each SUM of age − 18 clamped to [0, 72] on the release grid plus discrete
    Laplace noise in whole grid steps (Δ = 72 years). AVG' is post-processing of the two.

    ``seed`` draws the same noise from numpy, reproducibly: the page's example, labelled not a DP release (a
    secure release, ``seed=None``, is OpenDP's and never reproducible).
    """
    eps = check_epsilon(epsilon)
    both = Where.of(attack.target_conditions) | Where.of(attack.group)
    groups = [("target OR group", both), ("group", Where.of(attack.group))]
    rng = None
    if seed is not None:
        rng = (
            seed
            if isinstance(seed, np.random.Generator)
            else np.random.default_rng(limits.check_int_range(seed, 0, 2**63 - 1, "release seed"))
        )
    rows: list[dict[str, Any]] = []
    sums: list[float] = []
    counts: list[int] = []
    grid_note = ""
    for label, where in groups:
        c = int(where.mask(df).sum())
        c_noisy = release.release_count(c, epsilon=eps, sensitivity=1, random_state=rng)
        r = release.release_sum(_shifted_sum(df, where), mechanism="laplace", epsilon=eps, random_state=rng)
        s_noisy, grid_note = r.values[0], r.describe("years")
        avg_noisy = AGE_LOW + s_noisy / max(c_noisy, 1)
        rows.append({"group": label, "where": where.sql(), "count_noisy": c_noisy, "avg_noisy": avg_noisy})
        sums.append((avg_noisy - AGE_LOW) * max(c_noisy, 1))
        counts.append(c_noisy)
    naive = rows[0]["avg_noisy"] * counts[0] - rows[1]["avg_noisy"] * counts[1]
    estimate = float(np.clip(AGE_LOW + sums[0] - sums[1], AGE_LOW, AGE_HIGH))
    out = {
        "answers": rows,
        "naive_estimate": naive,
        "estimate": estimate,
        "error": estimate - attack.true_value,
        "seeded": seed is not None,
        "sum_rounding": f"each age − 18 clamped to [0, 72] and {grid_note}",
        **privacy_cost(eps),
    }
    if seed is not None:
        out["label"] = release.NOT_DP
    return out


def analytic_success(epsilon, k) -> np.ndarray:
    """Exact P(|L₁ − L₂| ≤ k), Lᵢ ~ Lap(72/ε): the unclipped attacker's success. Vectorised over ε."""
    eps = np.asarray(epsilon, dtype=np.float64)
    k = check_within(k)
    b = SUM_SENSITIVITY / eps
    return 1.0 - np.exp(-k / b) * (1.0 + k / (2.0 * b))


def simulate_estimates(true_value: float, epsilons, trials: int, rng) -> np.ndarray:
    """Simulation (plain numpy): the attacker's clipped estimate over ``trials`` releases at each ε.

    Returns an array of shape ``(len(epsilons), trials)``. Only the sums' noise matters to this attacker.
    """
    eps = np.atleast_1d(np.asarray(epsilons, dtype=np.float64))
    for e in eps:
        check_epsilon(e)
    trials = check_trials(trials)
    if eps.size * trials > MAX_CURVE_CELLS:
        raise DPError(
            f"{eps.size} ε values × {trials:,} releases is too much to simulate at once; "
            f"use fewer releases (at most {MAX_CURVE_CELLS // eps.size:,})"
        )
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    b = (SUM_SENSITIVITY / eps)[:, None]
    noise = rng.laplace(0.0, 1.0, size=(2, eps.size, trials))
    est = true_value + b * (noise[0] - noise[1])
    return np.clip(est, AGE_LOW, AGE_HIGH)


def _truth(attack) -> float:
    value = attack.true_value if isinstance(attack, AttackResult) else attack
    value = _as_float(value, "true value")
    if not AGE_LOW <= value <= AGE_HIGH:
        raise DPError(f"true value must lie within the public bounds {AGE_LOW:g}–{AGE_HIGH:g}, got {value:g}")
    return value


def _sim_seed(seed):
    return seed if isinstance(seed, np.random.Generator) else limits.check_seed(seed, "simulation seed")


def simulate(attack: AttackResult | float, epsilon, *, k=5, trials: int = 10_000, seed=0) -> dict:
    """Simulated distribution of the attacker's estimate at one ε and its success rate within ±k years.

    ``attack`` is an :class:`AttackResult` or just the target's true age.
    """
    truth = _truth(attack)
    eps = check_epsilon(epsilon)
    k = check_within(k)
    est = simulate_estimates(truth, [eps], trials, np.random.default_rng(_sim_seed(seed)))[0]
    err = est - truth
    q = np.quantile(est, [0.05, 0.25, 0.5, 0.75, 0.95])
    return {
        "label": "simulation (plain numpy, seeded): not a release",
        "epsilon_per_query": eps,
        "k_years": k,
        "trials": int(est.size),
        "seed": seed,
        "success_probability": float(np.mean(np.abs(err) <= k)),
        "analytic_success_unclipped": float(analytic_success(eps, k)),
        "mean_abs_error": float(np.mean(np.abs(err))),
        "estimate_quantiles": dict(zip(["p05", "p25", "p50", "p75", "p95"], map(float, q))),
        "estimates": est,
    }


def success_curve(attack: AttackResult | float, *, k=5, trials: int = 4_000, seed=0, epsilons=None) -> pd.DataFrame:
    """P(|estimate − truth| ≤ k) against ε per query: simulated (clipped) and exact (unclipped)."""
    truth = _truth(attack)
    k = check_within(k)
    eps = np.logspace(-2, 3, 41) if epsilons is None else np.asarray(epsilons, dtype=np.float64)
    est = simulate_estimates(truth, eps, trials, np.random.default_rng(_sim_seed(seed)))
    sim = np.mean(np.abs(est - truth) <= k, axis=1)
    return pd.DataFrame(
        {
            "epsilon_per_query": eps,
            "total_epsilon": QUERIES_PER_ATTACK * eps,
            "simulated": sim,
            "analytic_unclipped": analytic_success(eps, k),
        }
    )


# --- the results as the page reads them (typed; each reads and writes the JSON above) ----------------------------


@dataclass(frozen=True)
class PrivacyCost:
    """:func:`privacy_cost` as typed fields."""

    epsilon_per_query: float
    queries: int
    total_epsilon: float
    target_epsilon: float
    delta: float
    composition: str
    noise_scale_count: float
    noise_scale_sum: float

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PrivacyCost:
        return cls(**{f.name: d[f.name] for f in fields(cls)})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class NoisyRelease:
    """:func:`noisy_release` as typed fields: the four answers, the attacker's estimate and its error, and the
    cost. ``label`` is set when the noise was seeded (not a DP release)."""

    answers: tuple[dict[str, Any], ...]
    naive_estimate: float
    estimate: float
    error: float
    seeded: bool
    sum_rounding: str
    cost: PrivacyCost
    label: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NoisyRelease:
        return cls(
            answers=tuple(dict(a) for a in d["answers"]),
            naive_estimate=float(d["naive_estimate"]),
            estimate=float(d["estimate"]),
            error=float(d["error"]),
            seeded=bool(d["seeded"]),
            sum_rounding=str(d["sum_rounding"]),
            cost=PrivacyCost.from_dict(d),
            label=d.get("label"),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "answers": [dict(a) for a in self.answers],
            "naive_estimate": self.naive_estimate,
            "estimate": self.estimate,
            "error": self.error,
            "seeded": self.seeded,
            "sum_rounding": self.sum_rounding,
            **self.cost.to_dict(),
        }
        if self.label is not None:
            out["label"] = self.label
        return out

    def table(self) -> pd.DataFrame:
        """The answers as shown and downloaded: the answers first (a phone shows the first columns), the WHERE text
        last. The noisy average keeps the decimals its noise (about the sum's Laplace scale / the noisy count, both
        public) leaves meaningful: 1 at ε = 1, 3 at ε = 1000, where the attacker's subtraction needs them."""
        rel = pd.DataFrame(list(self.answers))
        avg_scale = self.cost.noise_scale_sum / max(int(rel["count_noisy"].max()), 1)
        decimals = min(max(1, math.ceil(-math.log10(2 * avg_scale))), 6)  # rounding error <= 10^-d / 2 <= the noise
        return pd.DataFrame(
            {
                "group": rel["group"],
                "noisy count": rel["count_noisy"],
                "noisy average age": rel["avg_noisy"].round(decimals),
                "WHERE clause": rel["where"],
            }
        )


@dataclass(frozen=True)
class Simulation:
    """:func:`simulate` as typed fields (a numpy simulation, not a release)."""

    label: str
    epsilon_per_query: float
    k_years: float
    trials: int
    seed: Any
    success_probability: float
    analytic_success_unclipped: float
    mean_abs_error: float
    estimate_quantiles: dict[str, float]
    estimates: np.ndarray = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Simulation:
        return cls(**{f.name: d[f.name] for f in fields(cls)})

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
