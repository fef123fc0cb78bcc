"""Where an advice is applied: the noise page, the query console and the training page. Each link carries the
setting it opens and *recomputes* the risk at that setting, as that page would release (:func:`link_risk`):
``keeps_risk`` is true only when the recomputed risk is within the limit (a grid that snaps δ up, or the
console's MEAN — a noisy sum over a noisy count, each at ε/2 — can otherwise promise what it does not keep), and
``meets_utility`` says whether the advice's error target still holds there. Also the recommended ε as every view
writes it (:func:`recommended_text`)."""

from __future__ import annotations

from .. import claims
from ..errors import DPError
from ..noise import grid as release_grid
from ..noise.calibration import gaussian_analytic_sigma, gaussian_epsilon
from ..noise.mechanisms import DiscreteGaussian
from ..noise.view import DELTA_GRID, EPSILON_GRID
from .advice import Advice, Link
from .dpsgd import dpsgd_risk
from .risk import discrete_gaussian_risk, risk_at
from .targets import RiskLimit

# the query console's δ choices (pages/query_console.py DELTA_CHOICES)
CONSOLE_DELTAS = (1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-12)
_KEYS = {"tpr": "tpr_at_fpr", "advantage": "advantage", "posterior": "posterior"}


def _risk(result: dict) -> RiskLimit:
    r = result["risk"]
    return RiskLimit(r["kind"], r["limit"], r["at"])


#: The grid steps of a SUM or MEAN whose bounds the link does not carry: the release grid gives any spread 10⁶ to
#: 10⁷ steps (dpcore.noise.grid), and at that σ the discrete Gaussian is the continuous one to within e^(−2π²σ²).
_UNKNOWN_STEPS = 10**6


def release_parts(
    epsilon: float, delta: float, *, kind: str = "count", bounds=None, replace_one: bool = False
) -> list[tuple[float, int]]:
    """The discrete-Gaussian releases one record moves when the noise page or the console answers at (ε, δ), as
    [(σ, shift in whole steps)] — σ exactly as the release calibrates it (:class:`dpcore.noise.mechanisms.DiscreteGaussian`):
    a count, K = 1; a SUM on its grid, K = max(|r(lo)|, |r(hi)|); the console's MEAN without a public n, a centred sum
    (K = max(C − r(lo), r(hi) − C)) and a count, each at (ε/2, δ/2) — added or removed, one record moves both;
    replaced, the sum by up to r(hi) − r(lo) and the count not at all."""

    def sigma(e: float, d: float, k: int) -> float:
        return DiscreteGaussian(epsilon=e, delta=d, sensitivity=k).scale

    if kind == "sum":
        k = (
            _UNKNOWN_STEPS
            if not bounds
            else release_grid.bounded_sum_k(release_grid.for_sensitivity(max(abs(bounds[0]), abs(bounds[1]))), *bounds)
        )
        return [(sigma(epsilon, delta, k), k)]
    if kind == "mean":
        if bounds:
            g = release_grid.for_sensitivity((bounds[1] - bounds[0]) / 2)
            c, k = release_grid.centre_and_k(g, *bounds)
            a, b = (int(v) for v in g.units(list(bounds)))
            spread = b - a
        else:
            k, spread = _UNKNOWN_STEPS, 2 * _UNKNOWN_STEPS
        s_sum = sigma(epsilon / 2, delta / 2, k)
        if replace_one:
            return [(s_sum, spread)]
        return [(sigma(epsilon / 2, delta / 2, 1), 1), (s_sum, k)]
    return [(sigma(epsilon, delta, 1), 1)]


def link_risk(
    result: dict, mechanism: str, epsilon: float, delta: float | None, *, kind: str = "count", bounds=None
) -> float:
    """The attack quantity the advice's risk limit bounds (TPR at its FPR, advantage, or posterior), recomputed at a
    link's setting for the release that page makes (``kind`` count, sum or the console's mean, with its ``bounds``),
    under the advice's own neighbour relation. Gaussian releases are whole numbers plus discrete Gaussian noise,
    read off their own privacy profile (:func:`dpcore.advisor.risk.discrete_gaussian_risk`): reading them as the
    continuous Gaussian of the same σ under-stated the risk (an advantage limit of 0.5 met 0.534 on the console)."""
    risk = _risk(result)
    replace_one = str(result.get("neighbour_relation", "")).startswith("replace")
    if mechanism == "laplace":  # any pure ε-DP release: the console's MEAN at ε/2 + ε/2 is ε under either relation
        value = risk_at("laplace", epsilon, risk, 1.0, 0.0)
    elif delta is None:
        raise DPError("a Gaussian release needs δ")
    else:
        parts = release_parts(epsilon, delta, kind=kind, bounds=bounds, replace_one=replace_one)
        value = discrete_gaussian_risk(risk, parts, result["delta"], max(4 * epsilon, 10.0))
    return float(value[_KEYS[risk.kind]])


def _keeps(result: dict, value: float) -> bool:
    return value <= result["risk"]["limit"] * (1 + 1e-9)


def _meets(result: dict, mechanism: str, epsilon: float, delta: float | None) -> bool:
    """Whether the advice's error target (±k at its confidence) holds for a release at (ε, δ)."""
    lo = result["epsilon_range"][0]
    util = result.get("utility") or {}
    if lo is None:
        return True
    if mechanism == "gaussian" and util.get("sigma_max") is not None:
        if delta is None:
            raise DPError("a Gaussian release needs δ")
        return gaussian_analytic_sigma(epsilon, delta, result["sensitivity"]) <= util["sigma_max"] * (1 + 1e-9)
    return epsilon >= lo * (1 - 1e-9)


def page_link(result: dict) -> dict:
    """Where to apply a recommendation: {page, params (URL query), state (session keys), label, keeps_risk,
    meets_utility, risk (recomputed at the link's setting)}."""
    mech = result["mechanism"]
    if mech == "dpsgd":
        value = dpsgd_risk(
            result["noise_multiplier"], result["sample_rate"], result["steps"], _risk(result), result["delta"]
        )
        return {
            "page": "pages/training.py",
            "label": "Open DP training with this noise multiplier",
            "params": {},
            "state": {
                "tr_privacy_mode": "noise multiplier σ",
                "tr_sigma": float(result["noise_multiplier"]),
                "tr_delta": float(result["delta"]),
            },
            "risk": value,
            "keeps_risk": _keeps(result, value),
            "meets_utility": bool(result["feasible"]),
        }

    # δ: the slider's largest value not above the advice's (a larger δ at the same ε is less noise); ε: the
    # slider's most private value that keeps the risk limit and meets the target, else its largest that keeps the
    # limit — each checked by recomputing the risk of the page's own release at that (ε, δ)
    delta = None
    if mech == "gaussian":
        fits = [d for d in DELTA_GRID if d <= result["delta"] * (1 + 1e-12)]
        delta = max(fits) if fits else min(DELTA_GRID)
    rows = [(e, link_risk(result, mech, e, delta), _meets(result, mech, e, delta)) for e in EPSILON_GRID]  # a count
    keep = [r for r in rows if _keeps(result, r[1])]
    both = [r for r in keep if r[2]]
    eps, value, meets = min(both) if both else max(keep) if keep else min(rows)
    params = {"noise_mech": mech, "noise_eps": eps}
    if delta is not None:
        params["noise_delta"] = delta
    if (result.get("utility") or {}).get("kind") == "count":
        params["noise_query"] = "count"
    rec = claims.rounded(result["epsilon"], up=False)
    what = (
        f"ε = {eps:g}"
        + (f", δ = {claims.delta(delta)}" if delta is not None else "")
        # not "its slider's nearest": the default 0.71 opens at 1 while 0.7 is nearer (and misses the target)
        + (
            ""
            if abs(eps - rec) <= 1e-9 * rec
            else f" (the recommended {recommended_text(result)} is not on its slider)"
        )
    )
    return {
        "page": "pages/noise.py",
        "label": f"Open the noise page at {what}",
        "params": params,
        "state": {},
        "risk": value,
        "keeps_risk": _keeps(result, value),
        "meets_utility": meets,
    }


def recommended_text(result: dict) -> str:
    """The recommended ε as written everywhere (page metric, band chart, links): rounded up when it is the utility
    target's minimum (the number a reader copies still meets the target), else down (it is the risk limit's
    maximum — also in a conflict, where the recommendation is the limit's edge — and the copied number still keeps
    the limit)."""
    lo = result["epsilon_range"][0]
    at_target = bool(result["feasible"]) and bool(lo) and result["epsilon"] <= lo * (1 + 1e-9)
    return claims.up(result["epsilon"]) if at_target else claims.down(result["epsilon"])


def console_link(result: dict) -> dict | None:
    """The query console set up for a COUNT/SUM/MEAN recommendation: {page, label, params, notes, risk,
    keeps_risk, meets_utility}; None otherwise.

    The console calibrates its own noise from (ε, δ), never below the exact calibration; its MEAN (no public n)
    splits ε and δ between a noisy sum and a noisy count. The link's ε is the recommendation written with 3 digits
    (up where the console's own release still keeps the risk limit, else down), lowered further while the risk
    recomputed for the console's release breaks the limit; δ is the console's largest choice not above the
    advice's, and a Gaussian link's ε is the one at which that δ gives the advised σ. The analyst is never carried
    in a link."""
    util = result.get("utility") or {}
    kind = util.get("kind")
    mech = result.get("mechanism")
    if kind not in ("count", "sum", "mean") or mech not in ("laplace", "gaussian"):
        return None
    notes = []
    split = kind == "mean"  # the console's MEAN is always sum ÷ count (it has no public-n mean)
    d_link = None
    if mech == "gaussian":
        fits = [d for d in CONSOLE_DELTAS if d <= result["delta"] * (1 + 1e-12)]
        if not fits:
            return None  # the advice's δ is below every δ the console offers
        d_link = max(fits)

    def risk_of(e: float) -> float:
        return link_risk(result, mech, e, d_link, kind=kind, bounds=util.get("bounds"))

    # where to start: the advised ε (Laplace), or the ε at which the console's δ gives the advised σ (Gaussian)
    exact = result["epsilon"] if d_link is None else gaussian_epsilon(result["sigma"], d_link, result["sensitivity"])
    eps = claims.rounded(exact, up=True)
    if not _keeps(result, risk_of(eps)):
        eps = claims.rounded(exact, up=False)
    for _ in range(2000):  # 3 significant digits, stepped down until the console's release keeps the limit
        if _keeps(result, risk_of(eps)) or eps <= 1e-6:
            break
        eps = claims.rounded(eps * (1 - 2e-3), up=False)
    value = risk_of(eps)
    params: dict = {"qc_kind": kind.upper(), "qc_mech": mech, "qc_eps": eps}
    if d_link is not None:
        params["qc_delta"] = d_link
    if util.get("bounds") and kind in ("sum", "mean"):
        params["qc_lo"], params["qc_hi"] = util["bounds"]
    if kind == "mean":
        notes.append(
            "The console's MEAN divides a noisy sum by a noisy count (ε and δ split in two), so its error "
            "is larger than this advice's public-n mean; its ε here is chosen so that the risk limit, "
            "recomputed for that release, still holds."
        )
    if kind in ("sum", "mean"):
        notes.append("Choose the column these public bounds are for in the console (the bounds travel in the link).")
    if d_link is not None and d_link != result["delta"]:
        notes.append(
            f"The console's δ choices go up to {claims.delta(max(CONSOLE_DELTAS))}: the link uses δ = "
            f"{claims.delta(d_link)} (below the advised δ), and the risk limit holds there too."
        )
    meets = False if split else _meets(result, mech, eps, d_link)
    label = f"Open the query console: {kind.upper()} at ε = {eps:g}" + (
        f", δ = {claims.delta(d_link)}" if d_link is not None else ""
    )
    return {
        "page": "pages/query_console.py",
        "label": label,
        "params": params,
        "notes": notes,
        "risk": value,
        "keeps_risk": _keeps(result, value),
        "meets_utility": meets,
    }


def link_note(advice: Advice) -> str:
    """What the page link's button needs said beside it: the training page's q and T, or where the noise page's
    slider (a grid of ε) opens relative to the advice."""
    link = advice.link
    if link is None:
        return ""
    if link.page == "pages/training.py":
        return (
            f"Set the training page's epochs and batch so that q = {advice.sample_rate:g} and "
            f"T = {advice.steps} steps: the noise multiplier is only right for those."
        )
    grid_eps = link.params["noise_eps"]
    if not link.keeps_risk:
        return (
            f"The noise page's slider starts at ε = {grid_eps:g}, above the largest ε the risk limit "
            "allows: it shows more risk than advised, for comparison only."
        )
    if not link.meets_utility:
        return (
            f"No ε on the noise page's slider (a grid) keeps both: it opens at ε = {grid_eps:g}, the nearest "
            "value below the recommendation, which keeps the risk limit but not the utility target."
        )
    if advice.epsilon_range[0]:
        return (
            f"The noise page's slider is a grid: ε = {grid_eps:g} is its most private value that keeps both "
            "the risk limit and the utility target."
        )
    return f"The noise page's slider is a grid: ε = {grid_eps:g} is its largest value within the risk limit."


def link_label(link: Link) -> str:
    """A link's button text: its label, and when it opens above the risk limit, that it does."""
    return link.label + ("" if link.keeps_risk or link.page == "pages/training.py" else " (above the risk limit)")


def console_notes(advice: Advice) -> list[str]:
    """What the console link needs said: its own notes, and that it misses the utility target when it does."""
    link = advice.console_link
    if link is None:
        return []
    extra = (
        []
        if link.meets_utility
        else ["At the console's settings, this ε keeps the risk limit but not the utility target."]
    )
    return [*link.notes, *extra]
