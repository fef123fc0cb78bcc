"""Audit your own model: membership scores from any attack on any model -> what they prove about its ε.

The one function behind the "Audit your model" page and ``python -m dpcore audit`` (:func:`audit_model`; files
through :func:`read_scores`). A scores table has one row per scored record: ``member`` (1 = trained on, 0 = held
out), ``score`` (higher = more likely a member) and optionally ``canary`` (1 = a canary: a record put in training by
a fair coin, audited by the one-run method; 0 = an ordinary record). It returns

* the split audit of the ordinary rows (:func:`dpcore.attacks.audit.audit_scores`: a lower bound on ε at the stated
  confidence, threshold chosen on one half and bounded on the other) and their ROC: AUC, TPR at 1% and 0.1% FPR;
* the one-run audit of the canaries (:func:`dpcore.attacks.one_run.one_run_lower_bound`) and their ROC;
* the same scores read as trade-off curves: the Gaussian-DP audit of the ordinary rows with the curve it proves
  (:func:`dpcore.attacks.gdp.gdp_audit`) and the one-run f-DP audit of the canaries
  (:func:`dpcore.attacks.fdp.one_run_fdp_audit`), each its own 95% measurement;
* when the mechanism is stated — (ε, δ), or DP-SGD's noise multiplier, sample rate and steps — the claimed ε at the
  audit's δ, the exact worst-case ROC it allows (for DP-SGD from the privacy-loss distribution,
  :func:`dpcore.training.accounting.dpsgd_tradeoff`; for (ε, δ) the trade-off curve
  :func:`dpcore.attacks.audit.dp_roc_ceiling`) and whether the audits contradict the claim. The verdict re-bounds
  each audit at 1 − (1 − confidence)/k for the k audits it reads, so "contradicts" is wrong in at most 1 − confidence
  of audits of a true claim.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .. import claims, limits
from ..data import datasets
from ..errors import DPError
from ..training import accounting
from ..training.accounting import TRADEOFF_FPR
from ..validation import check_confidence, check_delta, check_epsilon
from . import audit, fdp, gdp, mia, one_run

RELATION = "add/remove one record"
#: The split of the ordinary rows into a selection half and an audit half. Fixed, public, chosen before any file
#: is seen: the split audit's confidence holds for one split independent of the scores, not for the largest bound
#: over several splits (an exactly ε = 1 mechanism, 2,000 rows: 0 of 200 audits above ε with one seed, 15% with
#: the best of 40 seeds). The page offers no seed; the CLI's --split-seed is for a seed fixed in advance.
SPLIT_SEED = 0
#: What the split audit of ordinary rows takes for granted (the one-run audit's canaries are in by a fair coin).
SPLIT_ASSUMES = (
    "The split audit assumes the trained-on and held-out rows were split at random from one pool: rows "
    "held out by date, site or kind differ for reasons the model did not cause, and then the audit "
    "measures that difference, not a leak (a model that ignores its training data would 'contradict' "
    "any ε)."
)


def read_scores(source) -> dict:
    """{member, score, canary (None without the column)} from a CSV (a path or bytes) with columns ``member`` and
    ``score`` (any case) and optionally ``canary``; a DPError that says what to fix otherwise."""
    df = datasets.read_csv(source, max_rows=limits.AUDIT_MAX_ROWS)
    cols = {str(c).strip().lower(): c for c in df.columns}
    missing = [c for c in ("member", "score") if c not in cols]
    if missing:
        raise DPError(
            f"the scores CSV needs columns member (1/0) and score, and may have canary (1/0); missing "
            f"{', '.join(missing)}"
        )
    member = pd.to_numeric(df[cols["member"]], errors="coerce").to_numpy(dtype=float)
    score = pd.to_numeric(df[cols["score"]], errors="coerce").to_numpy(dtype=float)
    if not np.isin(member, (0.0, 1.0)).all():
        raise DPError("column member must be 1 (in the training data) or 0 (not) on every row")
    if not np.isfinite(score).all():
        raise DPError("column score must be a finite number on every row (no blanks, text or infinity)")
    canary = None
    if "canary" in cols:
        c = pd.to_numeric(df[cols["canary"]], errors="coerce").to_numpy(dtype=float)
        if not np.isin(c, (0.0, 1.0)).all():
            raise DPError(
                "column canary must be 1 (a canary, in training by a fair coin) or 0 (an ordinary record) on every row"
            )
        canary = c.astype(bool)
    return {"member": member.astype(bool), "score": score, "canary": canary}


def mechanism(*, epsilon=None, delta=None, noise_multiplier=None, sample_rate=None, steps=None) -> dict | None:
    """The claim to check, checked: ``{"kind": "epsilon", "epsilon", "delta"}`` or ``{"kind": "dpsgd",
    "noise_multiplier", "sample_rate", "steps"}``; None when nothing is stated."""
    sgd = (noise_multiplier, sample_rate, steps)
    if epsilon is None and all(v is None for v in sgd):
        return None
    if epsilon is not None and any(v is not None for v in sgd):
        raise DPError("state the mechanism one way: ε (and δ), or DP-SGD's noise multiplier, sample rate and steps")

    if epsilon is not None:
        e = check_epsilon(epsilon)
        if e > limits.EPSILON_MAX:
            raise DPError(
                f"a stated ε must be at most {limits.EPSILON_MAX:,.0f} (no audit can contradict more), got {e:g}"
            )
        return {"kind": "epsilon", "epsilon": e, "delta": check_delta(delta or 0.0, allow_zero=True)}
    if any(v is None for v in sgd):
        raise DPError("DP-SGD needs all three: noise multiplier, sample rate and steps (from your training run)")

    s, q, t, _ = accounting._check_run(noise_multiplier, sample_rate, steps, 1e-5)
    if q < 1e-9:  # batch / rows: below one in a billion no data set has it (1e-320 broke the accountants)
        raise DPError(f"sample rate must be at least 1e-9 (it is batch size / rows), got {q:g}")
    if not 1 <= t <= limits.DPSGD_MAX_STEPS:
        raise DPError(f"DP-SGD steps must be from 1 to {limits.DPSGD_MAX_STEPS:,}, got {t:,}")
    # A claim weaker than ε = 1,000 is no claim an audit could contradict, and its exact PLD can take minutes: the
    # quick RDP upper bound decides first (PLD ≤ RDP).
    if accounting.epsilon(s, q, t, 1e-5, "rdp") > limits.EPSILON_MAX:
        raise DPError(
            f"these DP-SGD settings allow ε above {limits.EPSILON_MAX:,.0f} at δ = 1e-5: no audit can "
            "contradict that; check the noise multiplier, sample rate and steps of your run"
        )
    return {"kind": "dpsgd", "noise_multiplier": s, "sample_rate": q, "steps": t}


def _ceiling(mech: dict, delta: float) -> tuple[float, dict]:
    """(claimed ε at ``delta``, the worst-case ROC the claim allows)."""
    if mech["kind"] == "epsilon":
        fpr = np.asarray(TRADEOFF_FPR)
        tpr = audit.dp_roc_ceiling(mech["epsilon"], mech["delta"], fpr)
        return mech["epsilon"], {
            "fpr": fpr.tolist(),
            "tpr": tpr.tolist(),
            "source": f"(ε, δ) = ({mech['epsilon']:g}, {mech['delta']:g}) trade-off curve: "
            "TPR ≤ min(1, e^ε·FPR + δ, 1 − e^−ε·(1 − δ − FPR))",
        }

    s, q, t = mech["noise_multiplier"], mech["sample_rate"], mech["steps"]
    curve = accounting.dpsgd_tradeoff(s, q, t)
    return accounting.pld_epsilon(s, q, t, delta), {
        "fpr": list(curve["fpr"]),
        "tpr": list(curve["tpr"]),
        "source": "exact worst case of DP-SGD from its privacy-loss distribution (dp_accounting PLD, "
        "Poisson-subsampled Gaussian, add/remove one)",
    }


def _at(curve: dict, fpr: float) -> float:
    f, t = np.asarray(curve["fpr"], float), np.asarray(curve["tpr"], float)
    keep = f > 0
    return float(np.interp(math.log(fpr), np.log(f[keep]), t[keep]))


def audit_model(
    member,
    score,
    canary=None,
    *,
    delta: float = 1e-5,
    confidence: float = 0.95,
    split_seed: int = SPLIT_SEED,
    mech: dict | None = None,
) -> dict:
    """What the scores prove (see the module docstring). ``delta``: the δ at which ε is bounded (for a stated
    (ε, δ) its δ is used). Returns {rows, neighbour_relation, delta, confidence, split_audit, attack, one_run,
    canary_attack, gdp, one_run_fdp, proved, mechanism, claimed_epsilon, ceiling, verdict}; audits that had no rows
    are None; ``proved`` is what the split and one-run audits prove together (:func:`proved`). ``gdp``
    (:func:`dpcore.attacks.gdp.gdp_audit` on the ordinary rows, the same split) and ``one_run_fdp``
    (:func:`dpcore.attacks.fdp.one_run_fdp_audit` on the canaries) read the same scores as trade-off curves: each
    holds at ``confidence`` on its own, beside the headline, never maximised with it."""
    conf = check_confidence(confidence)
    member = np.asarray(member, bool).ravel()
    score = np.asarray(score, float).ravel()
    canary = np.zeros(member.size, bool) if canary is None else np.asarray(canary, bool).ravel()
    if not (member.size == score.size == canary.size):
        raise DPError("member, score and canary must have one value per row")
    if mech is not None and mech["kind"] == "epsilon":
        delta = mech["delta"]
    d = check_delta(delta, allow_zero=True)
    out: dict[str, Any] = {
        "rows": int(member.size),
        "neighbour_relation": RELATION,
        "delta": d,
        "confidence": conf,
        "split_audit": None,
        "attack": None,
        "one_run": None,
        "canary_attack": None,
        "gdp": None,
        "one_run_fdp": None,
        "mechanism": mech,
        "claimed_epsilon": None,
        "ceiling": None,
        "verdict": None,
    }
    ordinary = ~canary
    if ordinary.any():
        m, s = member[ordinary], score[ordinary]
        out["split_audit"] = audit.audit_scores({"scores": (s[m], s[~m])}, d, conf, split_seed=split_seed)
        out["split_audit"].pop("attack", None)
        out["attack"] = mia.attack_metrics(mia.roc(s[m], s[~m]))
        out["gdp"] = gdp.gdp_audit({"scores": (s[m], s[~m])}, d, conf, split_seed=split_seed).to_dict()
    if canary.any():
        m, s = member[canary], score[canary]
        out["one_run"] = {
            **one_run.one_run_lower_bound(s, m, delta=d, confidence=conf),
            "method": "one-run audit (Steinke, Nasr & Jagielski 2023), Bonferroni over the guess counts tried",
        }
        out["one_run_fdp"] = fdp.one_run_fdp_audit(s, m, delta=d, confidence=conf).to_dict()
        if m.any() and (~m).any():
            out["canary_attack"] = mia.attack_metrics(mia.roc(s[m], s[~m]))
    out["proved"] = proved(out)
    if mech is not None:
        claimed, curve = _ceiling(mech, d)
        curve["tpr_at_1pct_fpr"], curve["tpr_at_0.1pct_fpr"] = _at(curve, 0.01), _at(curve, 0.001)
        out["claimed_epsilon"], out["ceiling"] = claimed, curve
        out["verdict"] = verdict(out, claimed)
    return out


def proved(result: dict) -> dict:
    """What the audits prove together at the stated confidence: {epsilon, audits (k), per_audit_confidence}. The
    larger of two bounds each at 95% is not a 95% bound (either may be the 5% that fails), so each audit is
    re-bounded at 1 − (1 − confidence)/k (Bonferroni) and the largest of those is taken: the one number the page's
    headline and the verdict both state."""
    audits = [a for a in (result.get("split_audit"), result.get("one_run")) if a]
    k = max(len(audits), 1)
    level = 1 - (1 - result["confidence"]) / k
    eps = max((audit.stored_bound(a, level)[0] for a in audits), default=0.0)
    return {"epsilon": float(eps), "audits": k, "per_audit_confidence": level}


def proved_words(result: dict) -> str:
    """How :func:`proved`'s bound holds, in words: "95% confidence over its 2 audits together"."""
    p = result.get("proved") or proved(result)
    over = "its audit" if p["audits"] == 1 else f"its {p['audits']} audits together"
    return f"{result['confidence']:.0%} confidence over {over}"


def verdict(result: dict, claimed: float) -> dict:
    """Whether the audits contradict a claimed ε: each audit re-bounded at 1 − (1 − confidence)/k (k audits), so
    the verdict as a whole keeps the stated confidence (:func:`proved`)."""
    p = proved(result)
    contradicts = p["epsilon"] > claimed + 1e-9

    conf = f"{result['confidence']:.0%}"
    how = proved_words({**result, "proved": p})
    at = f"the claimed ε ≤ {claims.up(claimed)} at δ = {claims.delta(result['delta'])} ({RELATION})"
    if contradicts:
        words = (
            f"The audit contradicts the claim: it proves ε ≥ {claims.down(p['epsilon'])} ({how}), above {at}. "
            "The training, its accounting or the stated settings are wrong — or this is the "
            f"{1 - result['confidence']:.0%} chance that a {conf} bound is."
        )
        if result.get("split_audit"):
            words += " " + SPLIT_ASSUMES
    else:
        words = (
            f"No contradiction: the audits prove ε ≥ {claims.down(p['epsilon'])} ({how}), within {at}. "
            "An audit is a lower bound: it shows what these attacks found, not that the model is private."
        )
    return {
        "contradicts": bool(contradicts),
        "proved_epsilon": p["epsilon"],
        "per_audit_confidence": p["per_audit_confidence"],
        "audits": p["audits"],
        "words": words,
    }


def example_csv(n: int = 1000, seed: int = 0) -> bytes:
    """An example scores file to try the audit with: ``n`` ordinary records (half members, whose scores a leaky
    model pushes up) and ``n // 2`` canaries (each in training by a fair coin). Synthetic: no one's data."""
    rng = np.random.default_rng(seed)
    member = rng.random(n) < 0.5
    score = rng.normal(0, 1, n) + 1.5 * member
    coins = rng.random(n // 2) < 0.5
    canary_score = rng.normal(0, 1, n // 2) + 3.0 * coins
    lines = (
        ["member,score,canary"]
        + [f"{int(m)},{s:.4f},0" for m, s in zip(member, score)]
        + [f"{int(m)},{s:.4f},1" for m, s in zip(coins, canary_score)]
    )
    return ("\n".join(lines) + "\n").encode()
