"""Who is most exposed: per-record membership scores rank the audited training records by vulnerability, and each
record gets what an attacker *proves* when it flags that record.

For every audited member j with score s_j, the test "member if score ≥ s_j" flags TP_j members and FP_j non-members;
its empirical ε lower bound is Clopper–Pearson's (as the split audit's :func:`dpcore.attacks.audit._one_test_bound`),
every threshold corrected together (Bonferroni over the distinct member scores), so with probability ≥
``confidence`` *no* such test's bound exceeds the true ε. Record i is flagged by every test with s_j ≤ s_i: its
proved ε (:func:`per_record_bounds`) is the strongest of those, the most an attacker proves while flagging it. Under
(ε, δ)-DP the share of records "exposed beyond what ε allows" is therefore 0 with that confidence. The threshold family
is fixed before the counts are looked at (the members' own scores), so the correction is all the choosing needs.

:func:`summarise` keeps, for one model, every audited record's row number, score, the false-positive rate at which the
attack flags it (lower = more exposed) and its bound, plus the ``top`` most exposed (``vulnerable``). These are
computed from private rows and say which records they are: shown to the data's owner, not covered by ε.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import DPError
from ..validation import check_confidence, check_delta
from .audit import _one_test_bound

#: Attacks whose per-record scores rank records, most informative first: LiRA online's likelihood ratio, RMIA's
#: relative likelihood, LiRA offline's z-score, the loss (Yeom), the confidence.
RANKING_ORDER = ("lira_online", "rmia", "lira_offline", "loss", "threshold")
#: Records listed as the most exposed of each model.
TOP = 10


def ranking_attack(scores: dict) -> str | None:
    """The attack whose per-record scores rank the records (the first of :data:`RANKING_ORDER` that ran)."""
    return next((a for a in RANKING_ORDER if a in scores), None)


def per_record_bounds(member_scores, nonmember_scores, delta: float, confidence: float = 0.95):
    """For each member: (its ε lower bound, the false-positive rate at which "score ≥ its score" flags it).

    Every bound holds together at ``confidence`` (Bonferroni over the distinct member scores used as thresholds)."""
    d = check_delta(delta, allow_zero=True)
    conf = check_confidence(confidence)
    pos = np.asarray(member_scores, float).ravel()
    neg = np.asarray(nonmember_scores, float).ravel()
    if pos.size < 1 or neg.size < 1:
        raise DPError("per-record exposure needs at least one member and one non-member score")
    if not (np.isfinite(pos).all() and np.isfinite(neg).all()):
        raise DPError("attack scores contain NaN or infinity; check the model's probabilities")
    tp = pos.size - np.searchsorted(np.sort(pos), pos, side="left")  # members with a score ≥ s_i
    fp = neg.size - np.searchsorted(np.sort(neg), pos, side="left")  # non-members with a score ≥ s_i
    k = np.unique(pos).size
    lb, _, _ = _one_test_bound(tp, fp, pos.size, neg.size, d, (1.0 - conf) / k)
    # a record is flagged by every threshold at or below its score: its exposure is the strongest of those tests
    order = np.argsort(pos, kind="mergesort")
    best = np.maximum.accumulate(np.asarray(lb, float)[order])
    last = np.searchsorted(pos[order], pos, side="right") - 1
    return best[last], fp / neg.size


def _down(x: float, digits: int = 4) -> float:
    """A lower bound stored rounded *down* (it keeps its side)."""
    return math.floor(float(x) * 10**digits) / 10**digits


def summarise(
    rows,
    member_scores,
    nonmember_scores,
    *,
    attack: str,
    delta: float,
    claimed: float | None,
    confidence: float = 0.95,
    top: int = TOP,
) -> dict:
    """One model's exposure: ``rows`` are the audited members' row numbers (in the source data), in the order of
    ``member_scores``. ``claimed``: the model's ε (None without DP). Returns {attack, confidence, delta, rows, scores,
    fpr, proved, claimed, share_above_claim, vulnerable: the ``top`` most exposed as {index, score, fpr,
    proved_epsilon}, method}."""
    rows = np.asarray(rows, np.int64).ravel()
    pos = np.asarray(member_scores, float).ravel()
    if rows.size != pos.size:
        raise DPError(f"got {rows.size} row numbers for {pos.size} member scores")
    proved, fpr = per_record_bounds(pos, nonmember_scores, delta, confidence)
    order = np.lexsort((rows, -pos))  # highest score first; ties by row number (deterministic)
    share = None if claimed is None else float(np.mean(proved > float(claimed) + 1e-9))
    vulnerable = [
        {
            "index": int(rows[i]),
            "score": round(float(pos[i]), 6),
            "fpr": round(float(fpr[i]), 6),
            "proved_epsilon": _down(proved[i]),
        }
        for i in order[:top]
    ]
    return {
        "attack": attack,
        "confidence": float(confidence),
        "delta": float(delta),
        "rows": rows.tolist(),
        "scores": np.round(pos, 5).tolist(),
        "fpr": np.round(fpr, 6).tolist(),
        "proved": [_down(x) for x in proved],
        "claimed": claimed,
        "share_above_claim": share,
        "vulnerable": vulnerable,
        "method": "each audited member flagged by 'score ≥ its score': Clopper–Pearson bound on that test's "
        f"rates, all {np.unique(pos).size} thresholds corrected together (Bonferroni)",
    }


def share_above(exposure: dict, epsilon: float) -> float:
    """The share of a model's audited records whose proved ε exceeds ``epsilon`` (for the baseline: what a model at
    that ε would not be allowed to show)."""
    p = np.asarray(exposure.get("proved") or [], float)
    return float(np.mean(p > float(epsilon) + 1e-9)) if p.size else 0.0
