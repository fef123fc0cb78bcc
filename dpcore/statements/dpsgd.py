"""The DP-SGD block of a training run's and of each sweep point's statement, and its recomputation.

:func:`block` states ε at each δ (PLD, and the run's own accountant), μ (CLT, an approximation), the worst-case
trade-off curve and the inputs to recompute them; :func:`loss_tail` the probability that the privacy loss exceeds
the stated ε. :func:`check` recomputes every one of those figures from σ, q and the steps the block records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dpcore import claims
from dpcore.advisor.dpsgd import dpsgd_loss_tail
from dpcore.attacks import audit
from dpcore.statements.checks import Checker, close, get, num, obj
from dpcore.statements.common import STANDARD_DELTAS
from dpcore.training import accounting

Json = dict[str, Any]
#: What a statement keeps of a stored audit (a sweep point's, a training run's own): the bound, its level and δ, what
#: it was computed on, and whether it is within the claim.
AUDIT_FIELDS = (
    "lower_bound",
    "confidence",
    "delta",
    "attack",
    "members",
    "nonmembers",
    "tp",
    "fp",
    "n_canaries",
    "guesses",
    "correct",
    "max_certifiable",
    "within_claim",
    "method",
)


def block(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    deltas: Iterable[float],
    *,
    accountant: str | None = None,
    tradeoff: Mapping[str, Any] | None = None,
) -> Json:
    """ε at each δ (PLD, and the run's own accountant), μ (CLT, an approximation) and the trade-off curve."""
    s, q, t = float(noise_multiplier), float(sample_rate), int(steps)
    rows = []
    for d in deltas:
        row: Json = {"delta": float(d), "epsilon_pld": accounting.pld_epsilon(s, q, t, d)}
        if accountant in accounting.ACCOUNTANTS:
            row[f"epsilon_{accountant}"] = accounting.epsilon(s, q, t, d, accountant)
        rows.append(row)
    curve = tradeoff if tradeoff and tradeoff.get("fpr") else accounting.dpsgd_tradeoff(s, q, t)
    return {
        "mechanism": {
            "name": "DP-SGD: Poisson-subsampled Gaussian",
            "noise_multiplier": s,
            "sample_rate": q,
            "steps": t,
        },
        "sampling": {
            "scheme": "Poisson",
            "sample_rate": q,
            "assumption": "each record joins each batch independently with probability q",
        },
        "epsilon_at_delta": rows,
        "mu": {
            "value": audit.gdp_mu(s, q, t) if t > 0 else 0.0,
            "kind": "Gaussian-DP μ by the central limit theorem (Bu et al. 2020): an approximation, not a bound",
        },
        "tradeoff": {
            "fpr": list(curve["fpr"]),
            "tpr": list(curve["tpr"]),
            "source": "dp_accounting PLD (pessimistic): no attack's ROC lies above it",
        },
        "recompute": {
            "epsilon_pld": "dpcore.training.accounting.pld_epsilon(noise_multiplier, sample_rate, steps, delta)",
            "tradeoff": "dpcore.training.accounting.dpsgd_tradeoff(noise_multiplier, sample_rate, steps, fpr)",
            "loss_tail": "dpcore.advisor.dpsgd.dpsgd_loss_tail(noise_multiplier, sample_rate, steps, epsilon)",
            "inputs": {"noise_multiplier": s, "sample_rate": q, "steps": t},
        },
    }


def loss_tail(noise_multiplier: float, sample_rate: float, steps: int, epsilon: float, delta: float) -> Json:
    """P[privacy loss > ε] at the stated ε (an upper bound from the PLD): where the posterior reading of ε fails.
    δ bounds something else (the hockey-stick divergence); this probability can be many times δ."""
    p = dpsgd_loss_tail(noise_multiplier, sample_rate, steps, epsilon)
    return {
        "epsilon": float(epsilon),
        "delta": float(delta),
        "probability": p,
        "meaning": f"with probability at most {claims.up(p, 2)} the privacy loss exceeds ε = {claims.up(epsilon)}: "
        "on those outputs an attacker's belief may move further than ε allows; δ is not this "
        "probability",
    }


def check(c: Checker, b: Mapping[str, Any], at: str) -> None:
    """Every figure of a DP-SGD block recomputed from its σ, q and steps (``at``: the block's path, "points[2].")."""
    mech = obj(b.get("mechanism"))
    s, q, t = mech.get("noise_multiplier"), mech.get("sample_rate"), mech.get("steps")
    if not (
        c.need(f"{at}mechanism.noise_multiplier", s)
        & c.need(f"{at}mechanism.sample_rate", q)
        & c.need(f"{at}mechanism.steps", t)
    ):
        return
    inputs = obj(get(b, "recompute.inputs"))
    for k, v in (("noise_multiplier", s), ("sample_rate", q), ("steps", t)):
        c.same(f"{at}recompute.inputs.{k}", inputs.get(k), v, 0)
    c.same(f"{at}sampling.sample_rate", get(b, "sampling.sample_rate"), q, 0)
    raw_rows = b.get("epsilon_at_delta")
    rows: list[Any] = raw_rows if isinstance(raw_rows, list) else []
    stated = [r.get("delta") for r in rows if isinstance(r, dict)]
    for d in STANDARD_DELTAS:
        if not any(close(d, x) for x in stated):
            c.fail(
                f"{at}epsilon_at_delta",
                f"{at}epsilon_at_delta has no row at δ = {d:g} (a statement states ε at δ = 1e-5 and "
                "1e-6): a row was removed",
            )
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not c.need(f"{at}epsilon_at_delta[{i}].delta", r.get("delta")):
            continue
        d = r["delta"]
        c.same(
            f"{at}epsilon_at_delta[{i}].epsilon_pld",
            r.get("epsilon_pld"),
            c.run(f"{at}epsilon_at_delta[{i}]", accounting.pld_epsilon, s, q, t, d),
        )
        for name in accounting.ACCOUNTANTS:
            if f"epsilon_{name}" in r:
                c.same(
                    f"{at}epsilon_at_delta[{i}].epsilon_{name}",
                    r[f"epsilon_{name}"],
                    c.run(f"{at}epsilon_at_delta[{i}]", accounting.epsilon, s, q, t, d, name),
                )
    acc = obj(b.get("accountant"))
    acc_eps = acc.get("epsilon")
    if str(acc.get("name")) in accounting.ACCOUNTANTS and acc.get("delta"):
        acc_eps = c.run(f"{at}accountant", accounting.epsilon, s, q, t, acc["delta"], acc["name"])
        c.same(f"{at}accountant.epsilon", acc.get("epsilon"), acc_eps)
    tr = obj(b.get("tradeoff"))
    fpr, tpr = tr.get("fpr"), tr.get("tpr")
    if (
        isinstance(fpr, list)
        and isinstance(tpr, list)
        and fpr
        and len(fpr) == len(tpr)
        and all(num(x) and 0 <= x <= 1 for x in fpr)
    ):
        curve = c.run(f"{at}tradeoff", accounting.dpsgd_tradeoff, s, q, t, fpr)
        if curve is not None:
            bad = [i for i, (a, z) in enumerate(zip(tpr, curve["tpr"])) if not close(a, z, 1e-6)]
            if bad:
                c.fail(
                    f"{at}tradeoff",
                    f"{at}tradeoff.tpr[{bad[0]}] is {tpr[bad[0]]!r}, recomputed {curve['tpr'][bad[0]]!r} "
                    f"(the worst-case TPR at FPR {fpr[bad[0]]:g}; {len(bad)} point(s) differ)",
                )
            else:
                c.passed(f"{at}tradeoff", f"{at}tradeoff: the worst-case TPR at {len(fpr)} FPRs, as recomputed")
    else:
        c.fail(f"{at}tradeoff", f"{at}tradeoff is missing or damaged (fpr and tpr lists of equal length)")
    mu = get(b, "mu.value")
    if mu is not None:
        c.same(f"{at}mu.value", mu, c.run(f"{at}mu", audit.gdp_mu, s, q, t) if t else 0.0)
    lt = b.get("loss_tail")
    if isinstance(lt, dict):
        c.same(f"{at}loss_tail.epsilon", lt.get("epsilon"), acc_eps)
        if num(lt.get("epsilon")):
            c.same(
                f"{at}loss_tail.probability",
                lt.get("probability"),
                c.run(f"{at}loss_tail", dpsgd_loss_tail, s, q, t, lt["epsilon"]),
            )
