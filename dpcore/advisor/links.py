"""Where an advice is applied: the noise page, the query console and the training page, each link with the
setting it opens and whether that setting keeps the risk limit and meets the utility target; and the recommended
ε as every view writes it."""

from __future__ import annotations

import math

from .. import claims
from ..noise.calibration import gaussian_epsilon

def page_link(result: dict) -> dict:
    """Where to apply a recommendation: {page, params (URL query), state (session keys), label}."""
    mech = result["mechanism"]
    if mech == "dpsgd":
        return {"page": "pages/training.py", "label": "Open DP training with this noise multiplier",
                "params": {},
                "state": {"tr_privacy_mode": "noise multiplier σ", "tr_sigma": float(result["noise_multiplier"]),
                          "tr_delta": float(result["delta"])}}
    from ..noise.view import DELTA_GRID, EPSILON_GRID

    lo, hi = result["epsilon_range"]
    eps = result["epsilon"]
    # the noise page's slider offers a grid: its most private ε that keeps both the risk limit and the utility
    # target when there is one (0.71 recommended: 1, not the 0.7 below it that misses the target); else the
    # largest grid ε not above the recommendation (more noise: the risk limit still holds)
    both = [e for e in EPSILON_GRID if lo is not None and lo * (1 - 1e-9) <= e <= hi * (1 + 1e-12)]
    below = [e for e in EPSILON_GRID if e <= eps * (1 + 1e-9)]
    grid_eps = min(both) if both else max(below) if below else min(EPSILON_GRID)
    params = {"noise_mech": mech, "noise_eps": grid_eps}
    if mech == "gaussian":
        params["noise_delta"] = min(DELTA_GRID, key=lambda x: abs(math.log(x / result["delta"])))
    util = (result.get("utility") or {}).get("kind")
    if util == "count":
        params["noise_query"] = "count"
    return {"page": "pages/noise.py", "label": f"Open the noise page at ε = {grid_eps:g}",
            "params": params, "state": {},
            "meets_utility": lo is None or grid_eps >= lo * (1 - 1e-9),
            "keeps_risk": grid_eps <= hi * (1 + 1e-12)}  # the grid starts at 0.01: a limit below it is missed


def recommended_text(result: dict) -> str:
    """The recommended ε as written everywhere (page metric, band chart): rounded up when it is the utility
    target's minimum (the number a reader copies still meets the target), else down (it is the risk limit's
    maximum, and the copied number still keeps the limit)."""
    lo = result["epsilon_range"][0]
    at_target = bool(lo) and result["epsilon"] <= lo * (1 + 1e-9)
    return claims.up(result["epsilon"]) if at_target else claims.down(result["epsilon"])


# the query console's δ choices (pages/query_console.py DELTA_CHOICES: a link snaps to the nearest one)
CONSOLE_DELTAS = (1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-12)


def console_link(result: dict) -> dict | None:
    """The query console set up for a COUNT/SUM/MEAN recommendation: {page, label, params, notes}; None otherwise.

    The console calibrates its own noise from (ε, δ), never below the exact calibration. The link's ε is chosen
    so the risk limit still holds there, written with 3 digits like the rest of the advice: for Laplace the
    recommended ε (rounded up only while it stays within the risk limit's ε, else down); for Gaussian the
    console's largest δ not above the advice's δ, with the ε at which that δ gives the advised σ (rounded up
    while the console's own calibration keeps the risk limit, else down). ``meets_utility`` says whether the
    rounded ε still meets the utility target. The analyst is never carried in a link.
    """
    util = result.get("utility") or {}
    kind = util.get("kind")
    if kind not in ("count", "sum", "mean") or result.get("mechanism") not in ("laplace", "gaussian"):
        return None
    lo, hi = result["epsilon_range"]
    params: dict = {"qc_kind": kind.upper(), "qc_mech": result["mechanism"]}
    if result["mechanism"] == "laplace":
        up = claims.rounded(result["epsilon"], up=True)
        eps = up if up <= hi * (1 + 1e-12) else claims.rounded(result["epsilon"], up=False)
    else:
        from ..noise.calibration import gaussian_analytic_sigma

        d_link = max(d for d in CONSOLE_DELTAS if d <= result["delta"] * (1 + 1e-12))
        params["qc_delta"] = d_link
        sens = result["sensitivity"]
        exact = gaussian_epsilon(result["sigma"], d_link, sens)
        ceiling = gaussian_epsilon(result["risk"]["sigma_min"], d_link, sens)  # the risk limit's ε at this δ
        up = claims.rounded(exact, up=True)
        eps = up if up <= ceiling * (1 - 1e-9) else claims.rounded(exact, up=False)
        sigma_max = util.get("sigma_max")
        meets = sigma_max is None or gaussian_analytic_sigma(eps, d_link, sens) <= sigma_max * (1 + 1e-9)
    params["qc_eps"] = eps
    if util.get("bounds") and kind in ("sum", "mean"):
        params["qc_lo"], params["qc_hi"] = util["bounds"]
    notes = []
    if kind == "mean":
        notes.append("The console's MEAN divides a noisy sum by a noisy count (ε split in two, add/remove one "
                     "record), so its error is larger than this advice's public-n mean; the risk limit still holds.")
    if kind in ("sum", "mean"):
        notes.append("Choose the column these public bounds are for in the console (the bounds travel in the link).")
    if params.get("qc_delta", result["delta"]) != result["delta"]:  # the advice's δ is above the console's largest
        notes.append(f"The console's δ choices go up to {claims.delta(max(CONSOLE_DELTAS))}: stated at δ = "
                     f"{claims.delta(params['qc_delta'])}, about the advised noise reads ε = {eps:g}, and the risk "
                     "limit holds there too.")
    label = f"Open the query console: {kind.upper()} at ε = {eps:g}" + (
        f", δ = {claims.delta(params['qc_delta'])}" if "qc_delta" in params else "")
    return {"page": "pages/query_console.py", "label": label,
            "params": params, "notes": notes,
            "meets_utility": meets if result["mechanism"] == "gaussian" else lo is None or eps >= lo * (1 - 1e-9)}
