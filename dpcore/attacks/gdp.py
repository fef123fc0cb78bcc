"""Gaussian-DP and f-DP audits from membership scores: what an attack's (FPR, FNR) pairs prove about a model's
trade-off curve, after Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini & Terzis (2023, arXiv 2302.07956),
"Tight Auditing of Differentially Private Machine Learning", with Clopper–Pearson intervals on the rates.

**f-DP and a test.** A mechanism is f-DP when every membership test's false-negative rate β at false-positive rate
α obeys β ≥ f(α) (Dong, Roth & Su 2019); equivalently its ROC lies under the ceiling 1 − f. A test's true rates
(α, β) are unknown, but Clopper–Pearson upper limits α̂ ≥ α and β̂ ≥ β hold together at the stated confidence, and
then, f being decreasing, f(α̂) ≤ f(α) ≤ β ≤ β̂: **the mechanism's trade-off curve passes at or below (α̂, β̂)** —
its ROC ceiling reaches at least TPR 1 − β̂ at FPR α̂. A ceiling is concave and runs from (0, 0) to (1, 1), so it
also lies above the upper hull of several such points (:meth:`GdpAudit.proven_tpr`): the proved curve.

**Gaussian DP.** μ-GDP has f_μ(α) = Φ(Φ⁻¹(1 − α) − μ). A point (α̂, β̂) under the curve rules out every μ below

    μ̂ = Φ⁻¹(1 − α̂) − Φ⁻¹(β̂)        (Dong, Roth & Su 2019, eq. 6; Nasr et al. 2023, §3),

and the Gaussian curve of μ̂ passes through the point. **(ε, δ)-DP**: the same point gives
ε ≥ max(log((1 − δ − β̂)/α̂), log((1 − δ − α̂)/β̂)) (:func:`dpcore.attacks.audit.epsilon_lower_bound`'s inequality).

**Choosing the tests without spoiling the 95%** (as :func:`dpcore.attacks.audit.audit_scores`): the scored rows are
split at random into a selection half and an audit half. On the selection half the attack, the direction and
:data:`TESTS` thresholds are fixed — the one whose μ̂ would be largest, and for each FPR in :data:`FPR_TARGETS` the
one with the highest TPR at or below it. On the audit half each of the K tests gets its two limits at one-sided
level (1 − confidence)/(2K) (Bonferroni), so all K points hold together at the stated confidence, and with them μ̂
(the largest over the points), the ε bound and the proved curve. Each is a **measurement** — what this attack
proves — never a guarantee: a better attack could prove more, and a model is not private because an audit is small.
The split audit also assumes the members and non-members were split at random from one pool (see
:data:`dpcore.attacks.model_audit.SPLIT_ASSUMES`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import DPError
from ..validation import check_confidence, check_delta
from . import audit, mia

#: FPRs at which a test is fixed on the selection half (plus the test of largest μ̂): the proved curve's points.
FPR_TARGETS = (0.001, 0.01, 0.1, 0.3)
#: Tests the Bonferroni correction is over (whether or not two of them coincide).
TESTS = len(FPR_TARGETS) + 1
FloatArray = npt.NDArray[np.float64]


def _ndtri(x: npt.ArrayLike) -> FloatArray:
    # lazy: scipy costs ~0.3 s to import and Home imports the audit modules without auditing
    from scipy.special import ndtri

    out: FloatArray = ndtri(np.asarray(x, dtype=float))
    return out


def mu_from_rates(fpr_hi: npt.ArrayLike, fnr_hi: npt.ArrayLike) -> FloatArray:
    """μ̂ = Φ⁻¹(1 − α̂) − Φ⁻¹(β̂), floored at 0: the smallest μ whose Gaussian curve allows a test with rates at
    most (α̂, β̂) (vectorised)."""
    a = np.clip(np.asarray(fpr_hi, dtype=float), 0.0, 1.0)
    b = np.clip(np.asarray(fnr_hi, dtype=float), 0.0, 1.0)
    with np.errstate(invalid="ignore"):
        mu = _ndtri(1.0 - a) - _ndtri(b)
    out: FloatArray = np.nan_to_num(np.maximum(mu, 0.0), nan=0.0, posinf=math.inf)
    return out


@dataclass(frozen=True)
class TradeoffPoint:
    """One fixed test on the audit half: its counts, its observed rates, and the corner (``fpr_hi``, ``tpr_lo``) the
    mechanism's ROC ceiling is proved to reach (with the other points of its audit, at the audit's confidence)."""

    threshold: float | None
    tp: int
    fp: int
    fpr: float
    tpr: float
    fpr_hi: float
    tpr_lo: float
    mu: float
    epsilon: float


@dataclass(frozen=True)
class GdpAudit:
    """What an attack's scores prove at ``confidence`` (a measurement): the ROC ceiling reaches every point of
    ``points`` (hence :meth:`proven_tpr`); the mechanism is not μ′-GDP for any μ′ < ``mu``, nor (ε′, δ)-DP for any
    ε′ < ``epsilon``. ``mu_estimate``: μ̂ of the best test from its observed rates alone (no interval): what the
    attack shows on these rows, not a bound."""

    mu: float
    epsilon: float
    delta: float
    confidence: float
    attack: str
    direction: str
    points: tuple[TradeoffPoint, ...]
    best: int
    mu_estimate: float
    members: int
    nonmembers: int
    selection_members: int
    selection_nonmembers: int
    tests: int = TESTS
    method: str = (
        "Gaussian-DP / f-DP audit from scores (Nasr et al. 2023): attack, direction and thresholds chosen on a "
        "random half of the rows; Clopper–Pearson limits on the other half, Bonferroni over the tests"
    )
    kind: str = "gdp_scores"

    def proven_tpr(self, fpr: npt.ArrayLike) -> FloatArray:
        """The proved lower envelope of the mechanism's ROC ceiling: the upper hull of the proved corners with
        (0, 0) and (1, 1) — any concave ceiling through those corners lies on or above it."""
        return hull_tpr([(p.fpr_hi, p.tpr_lo) for p in self.points], fpr)

    def gaussian_tpr(self, fpr: npt.ArrayLike) -> FloatArray:
        """The Gaussian curve of ``mu`` (TPR = Φ(Φ⁻¹(FPR) + μ)), through the best proved corner."""
        out: FloatArray = audit.gaussian_tradeoff(self.mu, fpr)
        return out

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["points"] = [dataclasses.asdict(p) for p in self.points]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GdpAudit:
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        kw["points"] = tuple(TradeoffPoint(**p) for p in d.get("points") or ())
        return cls(**kw)


def hull_tpr(corners: Sequence[tuple[float, float]], fpr: npt.ArrayLike) -> FloatArray:
    """The upper concave hull of ``corners`` ∪ {(0, 0), (1, 1)} evaluated at ``fpr``."""
    pts = sorted({(0.0, 0.0), (1.0, 1.0), *((float(a), float(b)) for a, b in corners)})
    hull: list[tuple[float, float]] = []
    for p in pts:  # Andrew's monotone chain, upper side
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) >= 0:
                hull.pop()
            else:
                break
        hull.append(p)
    xs, ys = zip(*hull)
    out: FloatArray = np.interp(np.clip(np.asarray(fpr, dtype=float), 0.0, 1.0), xs, ys)
    return out


def _point(thr: float, tp: int, fp: int, n_pos: int, n_neg: int, delta: float, alpha_each: float) -> TradeoffPoint:
    _, fpr_hi = audit.clopper_pearson(fp, n_neg, alpha_each)
    _, fnr_hi = audit.clopper_pearson(n_pos - tp, n_pos, alpha_each)
    eps = float(np.maximum(audit._eps_from_rates(fpr_hi, fnr_hi, delta), 0.0))
    return TradeoffPoint(
        threshold=thr if math.isfinite(thr) else None,
        tp=int(tp),
        fp=int(fp),
        fpr=fp / n_neg,
        tpr=tp / n_pos,
        fpr_hi=float(fpr_hi),
        tpr_lo=float(1.0 - fnr_hi),
        mu=float(mu_from_rates(fpr_hi, fnr_hi)),
        epsilon=eps,
    )


def _plan(r: mia.Roc, na_pos: int, na_neg: int, alpha_each: float) -> FloatArray:
    """μ̂ each selection-half threshold would prove on the audit half if it showed the same rates."""
    _, fpr_hi = audit.clopper_pearson(r.fpr * na_neg, na_neg, alpha_each)
    _, fnr_hi = audit.clopper_pearson((1.0 - r.tpr) * na_pos, na_pos, alpha_each)
    return mu_from_rates(fpr_hi, fnr_hi)


def gdp_audit(
    per_attack: Mapping[str, tuple[npt.ArrayLike, npt.ArrayLike]],
    delta: float = 1e-5,
    confidence: float = 0.95,
    *,
    split_seed: int = 0,
) -> GdpAudit:
    """The Gaussian-DP and f-DP audit of the module docstring. ``per_attack``: {attack name: (member_scores,
    nonmember_scores)}, higher = "more likely a member", every attack scoring the same rows in the same order (as
    :func:`dpcore.attacks.audit.audit_scores`, whose random split it shares). ``delta``: the δ of the ε bound."""
    d = check_delta(delta, allow_zero=True)
    conf = check_confidence(confidence)
    if not per_attack:
        raise DPError("no attack scores to audit; run at least one attack")
    pairs = {name: audit._check_pair(name, pair) for name, pair in per_attack.items()}
    sizes = {(p.size, n.size) for p, n in pairs.values()}
    if len(sizes) != 1:
        raise DPError("every attack must score the same members and non-members (got different counts)")
    n_pos, n_neg = sizes.pop()
    sel_p, aud_p, sel_n, aud_n = audit.split_halves(n_pos, n_neg, split_seed)
    na_pos, na_neg = int(aud_p.size), int(aud_n.size)
    alpha_each = (1.0 - conf) / TESTS  # two-sided at this level: each limit one-sided at half of it
    best: tuple[float, str, int, mia.Roc] | None = None
    for name, (pos, neg) in pairs.items():
        for sign in (1, -1):
            r = mia.roc(sign * pos[sel_p], sign * neg[sel_n])
            plan = _plan(r, na_pos, na_neg, alpha_each)
            i = int(np.argmax(plan))
            if best is None or plan[i] > best[0]:
                best = (float(plan[i]), name, sign, r)
    assert best is not None
    _, name, sign, r = best
    plan = _plan(r, na_pos, na_neg, alpha_each)
    picks = [int(np.argmax(plan))]
    for target in FPR_TARGETS:  # the highest selection TPR at or below each FPR (the ROC is in FPR order)
        picks.append(int(np.searchsorted(r.fpr, target, side="right")) - 1)
    pos, neg = sign * pairs[name][0][aud_p], sign * pairs[name][1][aud_n]
    points = []
    for i in picks:
        thr = float(r.thresholds[i])
        tp, fp = int(np.sum(pos >= thr)), int(np.sum(neg >= thr))
        points.append(_point(sign * thr, tp, fp, na_pos, na_neg, d, alpha_each))
    unique = tuple(dict.fromkeys(points))  # the same test picked twice is one point (the correction stays K)
    k = int(np.argmax([p.mu for p in unique]))
    est = float(mu_from_rates(unique[k].fpr, 1.0 - unique[k].tpr))
    return GdpAudit(
        mu=unique[k].mu,
        epsilon=max(p.epsilon for p in unique),
        delta=d,
        confidence=conf,
        attack=name,
        direction="higher" if sign > 0 else "lower",
        points=unique,
        best=k,
        mu_estimate=est,
        members=na_pos,
        nonmembers=na_neg,
        selection_members=int(sel_p.size),
        selection_nonmembers=int(sel_n.size),
    )


def rebound(a: GdpAudit | Mapping[str, Any], confidence: float) -> GdpAudit:
    """A stored audit's points re-bounded from their counts at another confidence (above 0.95: a correction for
    several audits; the tests were fixed on the selection half, so any level is valid)."""
    g = a if isinstance(a, GdpAudit) else GdpAudit.from_dict(a)
    conf = check_confidence(confidence)
    alpha_each = (1.0 - conf) / g.tests
    pts = tuple(
        _point(
            math.inf if p.threshold is None else p.threshold, p.tp, p.fp, g.members, g.nonmembers, g.delta, alpha_each
        )
        for p in g.points
    )
    k = int(np.argmax([p.mu for p in pts]))
    return dataclasses.replace(
        g, points=pts, best=k, mu=pts[k].mu, epsilon=max(p.epsilon for p in pts), confidence=conf
    )


def mu_from_split_audit(a: Mapping[str, Any], confidence: float = 0.95) -> float | None:
    """μ̂ of a stored :func:`dpcore.attacks.audit.audit_scores` result (one test fixed on its selection half), from
    its counts at ``confidence``; None when the counts are missing."""
    need = ("tp", "fp", "members", "nonmembers")
    if any(a.get(k) is None for k in need):
        return None
    alpha = 1.0 - check_confidence(confidence)
    _, fpr_hi = audit.clopper_pearson(a["fp"], a["nonmembers"], alpha)
    _, fnr_hi = audit.clopper_pearson(a["members"] - a["tp"], a["members"], alpha)
    return float(mu_from_rates(fpr_hi, fnr_hi))


def combine(audits: Sequence[GdpAudit | Mapping[str, Any]], confidence: float = 0.95) -> dict[str, Any]:
    """One bound over several models' audits (seeds) at ``confidence``: each re-bounded at 1 − (1 − c)/k, the
    largest taken (Bonferroni). Returns {mu, epsilon, k, per_audit_confidence, mus, epsilons}."""
    conf = check_confidence(confidence)
    items = [a for a in audits if a]
    if not items:
        raise DPError("no Gaussian-DP audits to combine; audit at least one model's scores")
    level = 1.0 - (1.0 - conf) / len(items)
    each = [rebound(a, level) for a in items]
    return {
        "mu": max(g.mu for g in each),
        "epsilon": max(g.epsilon for g in each),
        "k": len(items),
        "per_audit_confidence": level,
        "mus": [g.mu for g in each],
        "epsilons": [g.epsilon for g in each],
    }
