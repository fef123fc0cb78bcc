"""Every DP-SGD run audits itself, in the same training run: what its canaries and its records prove beside what its
accountant promises.

A run carries canaries (:mod:`dpcore.training.canaries`: m records, each put in by a secret fair coin). After
training, :func:`audit_run` scores them and its ordinary records and calls the audit functions of
:mod:`dpcore.attacks` (none is re-derived here):

* ``one_run`` — the one-run (ε, δ) lower bound at 95% of Steinke, Nasr & Jagielski (2023),
  :func:`dpcore.attacks.one_run.one_run_lower_bound`, with the most these canaries could prove;
* ``one_run_fdp`` — the one-run f-DP audit of Mahloujifar, Melis & Chaudhuri (2024) on the same guesses,
  :func:`dpcore.attacks.fdp.one_run_fdp_audit`: μ-GDP and (ε, δ) curves ruled out at 95%;
* ``gdp`` — the Gaussian-DP / f-DP audit from scores (Nasr et al. 2023), :func:`dpcore.attacks.gdp.gdp_audit`, on the
  loss and confidence scores of training rows (members) against test rows (non-members);
* ``heuristic`` — the last-iterate heuristic of Steinke et al. (2025) for the run's (σ, q, T),
  :func:`dpcore.attacks.last_iterate.heuristic_epsilon`: what auditing the final model can be expected to show.

Each measurement holds at 95% on its own (a lower bound: what this attack proved on this run, never a guarantee).
:func:`verdict` names which figure is the promise, which the heuristic and which the measurements, and whether a
measurement lies above the promise (a bug in the training, its accounting or its settings — or the 5% chance each
95% bound has). The audit's scores are computed on private rows and its bounds are diagnostics: not covered by ε.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from .. import claims, limits
from ..attacks import fdp, gdp, last_iterate, mia
from . import canaries as canary_mod
from .canaries import Canaries
from .data import Split

RELATION = "add/remove one record"
#: The kinds of figure a run reports, as every reader names them.
KINDS = {
    "promise": "promise: an upper bound for every attack, if training did what the accountant was told",
    "heuristic": "heuristic: what auditing the final model can be expected to show; not a bound",
    "measurement": "measurement: a 95% lower bound from this run's own audit; not a guarantee",
}
NOT_COVERED = "not covered by ε: scores of canaries and of private rows (training and test), for diagnosis"


@functools.lru_cache(maxsize=256)
def _fdp_ceiling(m: int, delta: float) -> tuple[float, float]:
    """(μ, ε) the f-DP audit of m canaries proves at most (every guess right): the counts alone fix it."""
    return fdp.max_provable(m, delta)


def records_scores(predict_proba: Callable[[Any], Any], split: Split, seed: int) -> dict[str, tuple[Any, Any]]:
    """Loss and confidence scores of a sample of training rows (members) and as many test rows (non-members)."""
    mi, ni = mia.membership_sample(split.n_train, len(split.y_test), seed, limits.SWEEP_AUDIT_MAX_PER_SIDE)
    pm = predict_proba(split.X_train[mi])
    pn = predict_proba(split.X_test[ni])
    ym, yn = split.y_train[mi], split.y_test[ni]
    return {
        "loss": (mia.loss_scores(pm, ym), mia.loss_scores(pn, yn)),
        "threshold": (mia.true_class_confidence(pm, ym), mia.true_class_confidence(pn, yn)),
    }


def audit_run(
    predict_proba: Callable[[Any], Any],
    canaries: Canaries | None,
    split: Split,
    *,
    epsilon: float | None,
    delta: float,
    noise_multiplier: float | None,
    sample_rate: float,
    steps: int,
    accountant: str,
    seed: int,
    records: Mapping[str, tuple[Any, Any]] | None = None,
) -> dict[str, Any]:
    """The run's own audit (see the module docstring). ``split``: the run's data without its canaries. ``records``:
    membership scores already computed (a sweep point's attacks), else the loss and confidence scores here.
    ``epsilon`` None (a non-private model with canaries): measurements only, no promise and no heuristic."""
    out: dict[str, Any] = {"confidence": 0.95, "delta": float(delta), "not_covered_by_epsilon": NOT_COVERED}
    if canaries is not None:
        s = canary_mod.scores(predict_proba, canaries)
        out["canaries"] = canaries.summary(split.n_train)
        out["one_run"] = canary_mod.one_run_bound(s, canaries.included, delta)
        f = fdp.one_run_fdp_audit(s, canaries.included, delta=delta)
        out["one_run_fdp"] = {**f.to_dict(), "max_provable": list(_fdp_ceiling(canaries.n, float(delta)))}
    else:
        out["canaries"] = None
        out["canaries_note"] = "no canaries: too few training rows for a useful one-run audit, or none asked for"
    try:
        scored = dict(records) if records is not None else records_scores(predict_proba, split, seed)
        out["gdp"] = gdp.gdp_audit(scored, delta, split_seed=seed).to_dict()
    except ValueError as exc:  # too few rows to split into selection and audit halves
        out["gdp"] = None
        out["gdp_note"] = f"no scores audit: {exc}"
    if noise_multiplier and steps:
        out["heuristic"] = {
            "epsilon": last_iterate.heuristic_epsilon(noise_multiplier, sample_rate, int(steps), delta),
            "method": "last-iterate heuristic (Steinke et al. 2025) for the run's σ, q and T",
        }
    out.update(verdict(epsilon, delta, accountant, out))
    return out


def figures(epsilon: float | None, delta: float, accountant: str, audit: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every figure of the run about ε at its δ, each with its kind (promise, heuristic or measurement); no promise
    for a model trained without DP (``epsilon`` None)."""
    out: list[dict[str, Any]] = []
    if epsilon is not None:
        out.append(
            {
                "name": f"accountant ({str(accountant).upper()})",
                "kind": "promise",
                "epsilon": float(epsilon),
                "bound": "upper",
            }
        )
    h = audit.get("heuristic") or {}
    if h.get("epsilon") is not None:
        out.append({"name": "last-iterate heuristic", "kind": "heuristic", "epsilon": float(h["epsilon"])})
    one = audit.get("one_run") or {}
    if one.get("lower_bound") is not None:
        out.append(
            {
                "name": "one-run audit (Steinke, Nasr & Jagielski 2023)",
                "kind": "measurement",
                "epsilon": float(one["lower_bound"]),
                "bound": "lower",
                "confidence": float(one.get("confidence") or 0.95),
                "most_provable": one.get("max_certifiable"),
            }
        )
    f = audit.get("one_run_fdp") or {}
    if f.get("mu") is not None:
        out.append(
            {
                "name": "one-run f-DP audit (Mahloujifar, Melis & Chaudhuri 2024)",
                "kind": "measurement",
                "epsilon": float(f["epsilon"]),
                "mu": float(f["mu"]),
                "epsilon_gaussian": f.get("epsilon_gaussian"),
                "bound": "lower",
                "confidence": float(f.get("confidence") or 0.95),
            }
        )
    g = audit.get("gdp") or {}
    if g.get("mu") is not None:
        out.append(
            {
                "name": "Gaussian-DP audit from scores, records (Nasr et al. 2023)",
                "kind": "measurement",
                "epsilon": float(g["epsilon"]),
                "mu": float(g["mu"]),
                "bound": "lower",
                "confidence": float(g.get("confidence") or 0.95),
            }
        )
    return out


def verdict(epsilon: float | None, delta: float, accountant: str, audit: Mapping[str, Any]) -> dict[str, Any]:
    """``figures`` (each with its kind), ``verdict`` ("consistent", "measurement above the promise", or "no promise"
    for a model trained without DP) and ``verdict_text``: the sentence that names which figure is a promise and which
    a measurement."""
    figs = figures(epsilon, delta, accountant, audit)
    measured = [f for f in figs if f["kind"] == "measurement"]
    d = claims.delta(delta)
    if epsilon is None:
        parts = ["No promise: this model was trained without DP, so no ε bounds what it reveals about a record."]
        above: list[dict[str, Any]] = []
    else:
        promise = float(epsilon)
        above = [f for f in measured if f["epsilon"] > promise + 1e-9]
        parts = [
            f"Promise: ε ≤ {claims.up(promise)} at δ = {d} ({RELATION}) from the {figs[0]['name']}: an upper bound "
            "for every attack, if training did what the accountant was told."
        ]
    for f in figs:
        if f["kind"] == "heuristic":
            parts.append(
                f"Heuristic: auditing only the final model can be expected to show up to about ε ≈ {f['epsilon']:.2g} "
                "(last-iterate analysis): an estimate, not a bound."
            )
    for f in measured:
        extra = f", μ ≥ {claims.down(f['mu'])}" if f.get("mu") is not None else ""
        most = f.get("most_provable")
        ceiling = f" (these canaries could prove at most {claims.down(most)})" if most is not None else ""
        parts.append(
            f"Measurement: the {f['name']} proves ε ≥ {claims.down(f['epsilon'])}{extra} at 95%{ceiling}: a lower "
            "bound from this run, not a guarantee."
        )
    if above:
        parts.append(
            "A measurement lies above the promise: the training, its accounting or its settings are wrong, or this "
            "is the 5% chance a 95% bound has of failing."
        )
    elif measured and epsilon is not None:
        parts.append("No measurement lies above the promise.")
    return {
        "figures": figs,
        "verdict": "no promise" if epsilon is None else "measurement above the promise" if above else "consistent",
        "verdict_text": " ".join(parts),
    }
