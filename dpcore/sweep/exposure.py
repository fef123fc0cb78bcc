"""A sweep's "who is most exposed" view, from each point's ``exposure`` and ``vulnerable``
(:mod:`dpcore.attacks.exposure`): the non-private baseline's most exposed records followed across ε
(:func:`paths`), and per ε the share of records whose proved ε exceeds the model's claim (:func:`shares`).

Records are private rows, shown to their owner: not covered by ε (the page and the report say so); the CLI's JSON
keeps only their row numbers and scores.
"""

from __future__ import annotations

from ..attacks.exposure import share_above


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
    models = sorted((p for p in result.get("points", []) if p.get("seed") == seed and p.get("exposure")),
                    key=lambda p: p["epsilon"]) + [base]
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
                steps.append({"epsilon": eps, "score": ex["scores"][i], "fpr": ex["fpr"][i],
                              "proved_epsilon": ex["proved"][i]})
        out.append({"index": v["index"], "record": v.get("record"), "points": steps})
    return out


def shares(result: dict) -> list[dict]:
    """Per ε of the grid: the share of audited records whose proved ε exceeds the DP models' claim (mean over the
    seeds: 0 under DP with 95% confidence per model) and, for the baseline, the share that exceeds that ε (what a
    model at that ε would not be allowed to show)."""
    base = [b for b in (result.get("baselines") or ([result["baseline"]] if result.get("baseline") else []))
            if b.get("exposure")]
    groups: dict = {}
    for p in result.get("points", []):
        if p.get("exposure"):
            groups.setdefault(p["epsilon"], []).append(p)
    rows = []
    for eps in sorted(groups):
        ps = groups[eps]
        dp = [p["exposure"].get("share_above_claim") or 0.0 for p in ps]
        rows.append({"epsilon": eps, "dp_share": sum(dp) / len(dp), "models": len(ps),
                     "baseline_share": (sum(share_above(b["exposure"], eps) for b in base) / len(base)) if base
                     else None, "attack": ps[0]["exposure"].get("attack")})
    return rows
