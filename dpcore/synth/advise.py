"""The advisor's synthetic-data question: which ε keeps the 2-way marginals within ±k%?

Read from a finished study (:mod:`dpcore.synth.study`), never guessed from a formula: the answer is the smallest
studied ε whose 2-way marginals that matter kept every cell within k percentage points of the real table in
*every* release measured at that ε (the worst release, not the average). Two real samples of the same
population already differ by the study's sampling floor: no generator can promise less than that.
"""

from __future__ import annotations

import math

from ..errors import DPError
from .study import Study

WITHIN_MIN, WITHIN_MAX = 0.1, 100.0  # percentage points


def check_within(within) -> float:
    """The error allowed: a number of percentage points in [WITHIN_MIN, WITHIN_MAX]."""
    try:
        k = float(within) if not isinstance(within, bool) else math.nan
    except (TypeError, ValueError):
        k = math.nan
    if not (math.isfinite(k) and WITHIN_MIN <= k <= WITHIN_MAX):
        raise DPError(
            f"the marginal error allowed must be from {WITHIN_MIN:g} to {WITHIN_MAX:g} percentage points, "
            f"got {within!r}; try 5"
        )
    return k


def epsilon_for_marginals(study: Study, within) -> dict:
    """``{"epsilon": the smallest studied ε that keeps every 2-way cell within ±within points in all its
    releases (None if none does), "rows": [ε, worst, mean, releases, ok], "floor": ..., "text": words}``."""
    k = check_within(within)
    rows = []
    for p in study.result["points"]:
        s = p["summary"].get("two_way_max")
        if not s:
            continue
        rows.append(
            {"epsilon": p["epsilon"], "worst": s["max"], "mean": s["mean"], "releases": s["count"], "ok": s["max"] <= k}
        )
    if not rows:
        raise DPError("this study measured no 2-way marginals; run one that releases at least two columns")
    floor = (study.result.get("reference", {}).get("sampling_floor") or {}).get("two_way_max")
    ok = [r for r in rows if r["ok"]]
    best = min(ok, key=lambda r: r["epsilon"]) if ok else None
    n = study.config.n
    if best is not None:
        below = [r for r in rows if r["epsilon"] < best["epsilon"]]
        text = (
            f"ε = {best['epsilon']:g} kept every cell of the 2-way marginals that matter within ±{k:g} points "
            f"in all {best['releases']} releases measured (worst {best['worst']:.1f} points)"
        )
        if below:
            prev = max(below, key=lambda r: r["epsilon"])
            text += f"; at ε = {prev['epsilon']:g} the worst release was {prev['worst']:.1f} points off"
        text += (
            ". Only the studied ε were tried: an ε between two of them may do too. The errors are computed on "
            "the real rows (not covered by ε)."
        )
    elif floor is not None and k < floor:
        text = (
            f"No ε can: two real samples of {n:,} patients already differ by {floor:.1f} points in these "
            f"marginals. Allow at least ±{math.ceil(floor * 10) / 10:g} points, or release more rows."
        )
    else:
        top = max(rows, key=lambda r: r["epsilon"])
        text = (
            f"None of the studied ε does: at the largest, ε = {top['epsilon']:g}, the worst release was "
            f"{top['worst']:.1f} points off. Run a study with a larger ε, or allow more error."
        )
    return {
        "within": k,
        "epsilon": best["epsilon"] if best else None,
        "rows": rows,
        "floor": floor,
        "study": study.job_id,
        "text": text,
    }
