"""A sweep's "who is most exposed" view, from each point's ``exposure`` and ``vulnerable``
(:mod:`dpcore.attacks.exposure`): the non-private baseline's most exposed records followed across ε
(:func:`paths`), and per ε the share of records whose proved ε exceeds the model's claim (:func:`shares`).

Records are private rows, shown to their owner: not covered by ε (the page and the report say so); the CLI's JSON
keeps only their row numbers and scores.
"""

from __future__ import annotations

import math

from .. import claims
from ..attacks.exposure import share_above
from ..training.results import compare_accuracy
from . import summary
from .summary import accuracy_text


def _baseline(result: dict, seed: int | None = None) -> dict | None:
    bases = result.get("baselines") or ([result["baseline"]] if result.get("baseline") else [])
    bases = [b for b in bases if b.get("exposure")]
    if seed is not None:
        bases = [b for b in bases if b.get("seed") == seed]
    return min(bases, key=lambda b: b.get("seed", 0)) if bases else None


def paths(result: dict, top: int = 5) -> list[dict]:
    """The baseline's ``top`` most exposed records (its lowest seed), each followed through the DP models trained
    with the same seed (same split, same audited rows): [{index, record, points: [{epsilon (None: the baseline),
    score, fpr, proved_epsilon}]}], the baseline last."""
    base = _baseline(result)
    if base is None:
        return []
    seed = base.get("seed")
    models = sorted(
        (p for p in result.get("points", []) if p.get("seed") == seed and p.get("exposure")), key=lambda p: p["epsilon"]
    ) + [base]
    lookup = []
    for p in models:
        ex = p["exposure"]
        lookup.append((p["epsilon"], {r: i for i, r in enumerate(ex["rows"])}, ex))
    out = []
    for v in (base.get("vulnerable") or [])[:top]:
        steps = []
        for eps, where, ex in lookup:
            i = where.get(v["index"])
            if i is not None:
                steps.append(
                    {"epsilon": eps, "score": ex["scores"][i], "fpr": ex["fpr"][i], "proved_epsilon": ex["proved"][i]}
                )
        out.append({"index": v["index"], "record": v.get("record"), "points": steps})
    return out


def shares(result: dict) -> list[dict]:
    """Per ε of the grid: the share of audited records whose proved ε exceeds the DP models' claim (mean over the
    seeds: 0 under DP with 95% confidence per model) and, for the baseline, the share that exceeds that ε (what a
    model at that ε would not be allowed to show)."""
    base = [
        b
        for b in (result.get("baselines") or ([result["baseline"]] if result.get("baseline") else []))
        if b.get("exposure")
    ]
    groups: dict = {}
    for p in result.get("points", []):
        if p.get("exposure"):
            groups.setdefault(p["epsilon"], []).append(p)
    rows = []
    for eps in sorted(groups):
        ps = groups[eps]
        dp = [p["exposure"].get("share_above_claim") or 0.0 for p in ps]
        rows.append(
            {
                "epsilon": eps,
                "dp_share": sum(dp) / len(dp),
                "models": len(ps),
                "baseline_share": (sum(share_above(b["exposure"], eps) for b in base) / len(base)) if base else None,
                "attack": ps[0]["exposure"].get("attack"),
            }
        )
    return rows


def story(result: dict) -> dict | None:
    """The sweep's answer in one sentence's numbers, at the grid's ε nearest 1 (log scale): what DP costs in accuracy
    (medians over seeds), the accountant's ε there, and the most any audit proves there ("no attack proves more
    than ε̂": the largest of the seeds' combined canary and ordinary-record bounds, each 95%). None before that ε
    and a baseline have finished."""
    rows = summary.by_epsilon(result)
    base = summary.baseline_summary(result)
    if not rows or base is None:
        return None
    r = min(rows, key=lambda r: abs(math.log(r["epsilon"])))
    proved = max((r.get(k) or 0.0) for k in ("empirical_epsilon", "records_epsilon"))
    at = [p for p in result.get("points", []) if p["epsilon"] == r["epsilon"]]
    bases = result.get("baselines") or ([result["baseline"]] if result.get("baseline") else [])
    return {
        "n_test": _test_rows(at),
        "baseline_n_test": _test_rows(bases),
        "epsilon": r["epsilon"],
        "epsilon_spent": r["epsilon_spent"],
        "delta": (result.get("config") or {}).get("delta"),
        "dp_accuracy": r["accuracy_median"],
        "baseline_accuracy": base["accuracy_median"],
        "cost_points": (base["accuracy_median"] - r["accuracy_median"]) * 100,
        "proved": proved,
        "models": r["n"],
        "baselines": base["n"],
        "upload": bool((result.get("config") or {}).get("upload_name")),
    }


def _test_rows(points) -> int | None:
    """Test rows of a sweep's model (every seed's split has as many), from its per-class counts; None when the
    points predate them."""
    for p in points:
        n = sum(int(c.get("n_test") or 0) for c in p.get("per_class") or ())
        if n:
            return n
    return None


#: What a proved bound far below the claimed ε means (the page says it beside the story, one click away).
PROVED_LOW = "A proved bound far below the claim means the attacks found little, not that less privacy was spent."


def story_words(s: dict) -> tuple[str, str]:
    """(a short claim for the heading — two lines on a phone —, the detail under it) for :func:`story`: "At ε = 1,
    your model loses 2.9 points" / "No attack proves more than ε ≥ 0.12 (…)" and the numbers behind both."""
    who = "your model" if s["upload"] else "the model"
    cost = s["cost_points"]
    # a difference only where the medians' 95% intervals on the test rows show one (dpcore.training.results)
    side = compare_accuracy(s["dp_accuracy"], s.get("n_test"), s["baseline_accuracy"], s.get("baseline_n_test"))
    if side is None:  # a sweep stored before its points kept per-class counts: no interval to read
        side = -1 if cost >= 0.05 else 1 if cost <= -0.05 else 0
    lose = (
        f"{who} loses {cost:.1f} points"
        if side < 0
        else f"{who} gains {-cost:.1f} points"
        if side > 0
        else f"no cost shown on {s['n_test']:,} test rows"
        if s.get("n_test")
        else f"{who} loses nothing measurable"
    )
    claim = f"At ε = {s['epsilon']:g}, {lose}"
    proved = claims.down(s["proved"])
    said = (
        f"**No attack proves more than ε ≥ {proved}**"
        if s["proved"] > 0
        else f"**No attack proves any leak** (the audits at ε = {s['epsilon']:g}, its models together, prove only ε ≥ 0)"
    )
    # what a proved bound far below the claim means is the page's to explain, one click away (PROVED_LOW)
    detail = (
        f"{said}: the audits' 95% lower bounds, against the accountant's ε ≤ "
        f"{claims.up(s['epsilon_spent'])} at δ = {claims.delta(s['delta'])} (add/remove one record). Test "
        f"accuracy {accuracy_text(s['dp_accuracy'])} with DP vs {accuracy_text(s['baseline_accuracy'])} "
        f"without (medians of {s['models']} and {s['baselines']} models"
        + (f", {s['n_test']:,} test rows each" if s.get("n_test") else "")
        + (
            ")."
            if side or not s.get("n_test")
            else "): one model's 95% interval on that many test rows, put around each median, overlap, so no cost "
            "is shown."
        )
    )
    return claim, detail
