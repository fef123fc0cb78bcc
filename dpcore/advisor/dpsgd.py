"""DP-SGD in the advisor, everything from the privacy-loss distribution (Google's dp-accounting PLD): the attack
quantity a risk limit bounds, the privacy-loss tail, the smallest noise multiplier that meets a limit
(:func:`solve_noise_multiplier`), a stored sweep's accuracy-vs-ε curve at one (q, T), and the DP-SGD advice."""

from __future__ import annotations

import math

import numpy as np

from .. import claims, limits
from ..attacks.audit import gdp_mu, roc_from_privacy_profile
from ..errors import DPError
from ..jobs.owners import CLI
from ..sweep import runs as sweep_runs
from ..training import accounting
from .advice import loss_tail_entry, question, set_range
from .risk import gaussian_mu_max, pure_posterior
from .targets import RiskLimit

#: Noise-multiplier search range for DP-SGD (the accountants' calibration range).
NM_MIN, NM_MAX = 0.2, 200.0
#: Stop bisecting on σ when hi/lo is below this (the result is the hi end: it meets the limit).
NM_RTOL = 2e-3


def dpsgd_risk(
    noise_multiplier: float, sample_rate: float, steps: int, risk: RiskLimit, delta: float, *, coarse: bool = False
) -> float:
    """The attack quantity a risk limit bounds, for DP-SGD, from the PLD (an upper bound): the worst-case TPR at
    α, the advantage δ(0), or the posterior bound at the ε of δ. ``coarse``: the fast coarse PLD (for searching;
    also an upper bound)."""
    eps, dl = accounting.privacy_profile(noise_multiplier, sample_rate, steps, coarse=coarse)
    if risk.kind == "posterior":
        if coarse:  # first grid ε whose δ fits: at or above the true ε at δ
            i = int(np.argmax(dl <= delta)) if np.any(dl <= delta) else len(eps) - 1
            e = float(eps[i]) if np.any(dl <= delta) else math.inf
        else:
            e = accounting.pld_epsilon(noise_multiplier, sample_rate, steps, delta)
        return 1.0 if not math.isfinite(e) else pure_posterior(max(e, 1e-12), risk.level)
    if risk.kind == "advantage":
        return float(dl[0])
    return float(roc_from_privacy_profile(eps, dl, [risk.level])[0])


def dpsgd_loss_tail(noise_multiplier: float, sample_rate: float, steps: int, epsilon: float) -> float:
    """An upper bound on P[privacy loss > ε] for DP-SGD from its PLD profile (max over both directions):
    δ(ε′) = E[(1 − e^{ε′−L})₊] ≥ (1 − e^{ε′−ε})·P[L > ε] for any ε′ < ε; we take the profile's grid point ε′ at
    or below ε/2 (δ is decreasing, so its δ is at least δ(ε′))."""
    eps, dl = accounting.privacy_profile(noise_multiplier, sample_rate, steps)
    i = max(int(np.searchsorted(eps, epsilon / 2, side="right")) - 1, 0)
    e1 = float(eps[i])
    if e1 >= epsilon:
        return 1.0
    return min(1.0, float(dl[i]) / (1 - math.exp(e1 - epsilon)))


def solve_noise_multiplier(risk: RiskLimit, sample_rate: float, steps: int, delta: float) -> float:
    """Smallest DP-SGD noise multiplier (to ``NM_RTOL``) whose PLD meets ``risk``; the returned value meets it
    on the same (fine) PLD the statement and the trade-off curves use.

    Search on the coarse PLD (an upper bound, ~0.1–0.3 s per evaluation), using the risk's value, not just
    pass/fail: start from the central-limit (Gaussian-DP) guess, bracket with secant steps in log σ, then
    interpolate and test just either side of the estimate, so the bracket closes to ``NM_RTOL`` in about four
    evaluations (bisection took seven). One check on the fine PLD at the end (the page needs that PLD anyway).
    """
    lim = math.log(risk.value)
    seen: dict = {}

    def f(s):  # > 0: the limit is broken at noise multiplier s; decreasing in s
        if s not in seen:
            v = dpsgd_risk(s, sample_rate, steps, risk, delta, coarse=True)
            seen[s] = math.log(max(v, 1e-300)) - lim
        return seen[s]

    def root(a, fa, b, fb):  # where the line through (log a, fa), (log b, fb) crosses 0; None if it cannot
        if not (math.isfinite(fa) and math.isfinite(fb)) or fa == fb:
            return None
        x = math.exp(math.log(a) - fa * (math.log(b) - math.log(a)) / (fb - fa))
        return x if math.isfinite(x) and x > 0 else None

    # Gaussian DP by the CLT: μ ≈ q·√(T(e^{1/σ²} − 1)); the posterior limit via its ε at δ
    target = (gaussian_mu_max(risk, delta) / (sample_rate * math.sqrt(steps))) ** 2
    # a limit so strict that μ is ~0 (advantage 1e-300) starts at the top: the search then says no σ meets it
    guess = min(max(1 / math.sqrt(math.log1p(target)), NM_MIN * 1.01), NM_MAX / 1.01) if target > 0 else NM_MAX / 1.01
    # 1. bracket: lo breaks the limit, hi meets it
    lo = hi = None
    x, fx = guess, f(guess)
    prev = None
    while lo is None or hi is None:
        if fx > 0:
            lo = x
        else:
            hi = x
        if lo is not None and hi is not None:
            break
        up = hi is None
        r: float | None = root(prev, seen[prev], x, fx) if prev is not None else None
        factor = 1.05 if r is None else min(max((r / x) ** (1 if up else -1) * 1.02, 1.05), 4.0)
        prev, x = x, (x * factor if up else x / factor)
        if up and x >= NM_MAX:
            x = NM_MAX
            if f(x) > 0:
                raise DPError(
                    f"even noise multiplier {NM_MAX:g} does not meet {risk.text()} with {steps} steps at "
                    f"sample rate {sample_rate:g}; train fewer steps or with smaller batches, or weaken "
                    "the limit"
                )
        if not up and x <= NM_MIN:
            x = NM_MIN
            if f(x) <= 0:
                lo = hi = NM_MIN
                break
        fx = f(x)
    # 2. close the bracket: interpolate, then test just above the estimate and just below the new hi
    stale = 0
    while hi / lo > 1 + NM_RTOL:
        width = math.log(hi / lo)
        r = root(lo, seen[lo], hi, seen[hi]) if stale < 2 else None
        x = r if r is not None and lo < r < hi else math.sqrt(lo * hi)
        x = min(max(x * (1 + NM_RTOL / 3), lo * (1 + NM_RTOL / 4)), hi / (1 + NM_RTOL / 4))
        if f(x) > 0:
            lo = x
        else:
            hi = x
            y = max(hi / (1 + NM_RTOL * 0.999), lo)
            if y > lo:
                if f(y) > 0:
                    lo = y
                else:
                    hi = y
        stale = stale + 1 if math.log(hi / lo) > width / 2 else 0
    for _ in range(40):  # the fine PLD (what everything else shows) must agree; step up if it does not
        if dpsgd_risk(hi, sample_rate, steps, risk, delta) <= risk.value:
            return float(hi)
        hi *= 1 + NM_RTOL
    raise DPError("could not confirm the noise multiplier on the fine PLD; try other settings")  # pragma: no cover


def sweep_curve(sweep_id: str, sample_rate=None, steps=None, caller=None) -> dict:
    """Per-ε rows of a stored sweep: accuracy lower end over seeds, and the noise multiplier that reaches that ε
    at the sample rate q and steps T the advice is for.

    Points are grouped by the ε asked for (``epsilon``; the ε reached differs slightly per seed). Size-control
    points (a fraction of the rows) answer another question and are left out. Canary coins change the row count,
    so seeds train at slightly different q and T (epochs fixed): the advice is for ONE (q, T) — the caller's if it
    lies within the sweep's range, else the main group's median pair — and each row's noise multiplier is
    recalibrated to reach that row's ε at exactly that q and T (a multiplier means nothing at another q, T)."""
    rec = sweep_runs.load(sweep_id, caller=caller or CLI)
    result = rec.get("result")
    if not result or not result.get("points"):
        raise DPError(f"sweep {sweep_id!r} has no finished DP points yet; wait for it or pick another")
    groups: dict = {}
    for p in result["points"]:
        if p.get("test_accuracy") is None or not p.get("noise_multiplier") or p.get("epsilon") is None:
            continue
        if float(p.get("train_fraction", 1.0)) < 1.0:  # size control: another question
            continue
        if not p.get("sample_rate") or not p.get("steps"):
            continue
        groups.setdefault(float(p.get("target_epsilon", p["epsilon"])), []).append(p)
    if not groups:
        raise DPError(
            f"sweep {sweep_id!r} has no DP-SGD points with a noise multiplier (diffprivlib models "
            "cannot be advised from here)"
        )
    pairs = sorted((float(p["sample_rate"]), int(p["steps"])) for ps in groups.values() for p in ps)
    q_lo, q_hi = pairs[0][0], pairs[-1][0]
    t_lo, t_hi = min(t for _, t in pairs), max(t for _, t in pairs)
    given = sample_rate is not None or steps is not None
    if given:
        q = float(sample_rate) if sample_rate is not None else None
        t = int(steps) if steps is not None else None
        if q is None or t is None or not (q_lo * (1 - 1e-9) <= q <= q_hi * (1 + 1e-9)) or not (t_lo <= t <= t_hi):
            span_q = f"{q_lo:g}" if q_lo == q_hi else f"{q_lo:g}–{q_hi:g}"
            span_t = f"{t_lo}" if t_lo == t_hi else f"{t_lo}–{t_hi}"
            raise DPError(
                f"sweep {sweep_id} was trained at sample rate {span_q} for {span_t} steps; its accuracy "
                "says nothing about other settings: drop --sample-rate/--steps or give both within "
                "those ranges"
            )
        how = "the sample rate and steps you gave (within the sweep's range)"
    else:
        q, t = pairs[(len(pairs) - 1) // 2]  # a pair some seed really trained with
        how = "the median (q, steps) pair of the sweep's points"
    delta = float(rec["config"]["delta"])
    rows = []
    for eps in sorted(groups):
        ps = groups[eps]
        acc = np.array([float(p["test_accuracy"]) for p in ps])
        sd = float(acc.std(ddof=1)) if acc.size > 1 else 0.0
        lower = float(min(acc.min(), acc.mean() - sd))
        d = float(ps[0].get("delta") or delta)
        nm, _ = accounting.calibrate_noise(eps, d, q, t)
        rows.append(
            {
                "epsilon": eps,
                "seeds": int(acc.size),
                "accuracy_mean": float(acc.mean()),
                "accuracy_sd": sd,
                "accuracy_lower": lower,
                "noise_multiplier": float(nm),
                "sweep_noise_multipliers": sorted(float(p["noise_multiplier"]) for p in ps),
                "sample_rate": q,
                "steps": t,
                "delta": d,
            }
        )
    note = None
    if q_lo != q_hi or t_lo != t_hi:
        note = (
            f"the sweep's seeds trained at sample rates {q_lo:g}–{q_hi:g} and {t_lo}–{t_hi} steps (canary "
            f"coins change the row count); advice is for q = {q:g}, T = {t} ({how}), each ε's noise multiplier "
            "recalibrated for that q and T"
        )
    n_size = max(
        len(result.get("size_control") or []),  # stored apart once done; among points while running
        sum(1 for p in result["points"] if float(p.get("train_fraction", 1.0)) < 1.0),
    )
    return {
        "id": sweep_id,
        "name": rec.get("name"),
        "rows": rows,
        "sample_rate": q,
        "steps": t,
        "note": note,
        "size_control_left_out": n_size,
    }


def advise_dpsgd(out, risk, utility, d, sample_rate, steps):
    curve = None
    if utility is not None:
        curve = sweep_curve(utility.sweep, sample_rate, steps, utility.caller)
        sample_rate, steps = curve["sample_rate"], curve["steps"]
    if sample_rate is None or steps is None:
        raise DPError(
            "DP-SGD needs its sample rate q (--sample-rate, batch size / rows) and number of steps "
            "(--steps, epochs / q)"
        )
    try:
        q = float(sample_rate)
    except (TypeError, ValueError):
        raise DPError(
            f"sample rate must be a number in [{limits.ADVISOR_SAMPLE_RATE_MIN:g}, 1], got "
            f"{sample_rate!r}; it is batch size / rows"
        ) from None
    if not (limits.ADVISOR_SAMPLE_RATE_MIN <= q <= 1):
        raise DPError(
            f"sample rate must be in [{limits.ADVISOR_SAMPLE_RATE_MIN:g}, 1], got {sample_rate!r}; it is "
            "batch size / rows (e.g. 64 / 10,000 = 0.0064)"
        )
    t = limits.check_int_range(steps, 1, limits.ADVISOR_MAX_STEPS, "steps")
    out.update(
        sample_rate=q,
        steps=t,
        neighbour_relation="add/remove one record",
        question=question("add/remove one record"),
        sampling="Poisson sampling with rate q (each record in each batch independently, probability q)",
    )
    nm_min = solve_noise_multiplier(risk, q, t, d)
    e_max = accounting.pld_epsilon(nm_min, q, t, d)
    out["risk"].update(epsilon_max=e_max, noise_multiplier_min=nm_min)
    nm = nm_min
    e_min = None
    if curve is not None:
        good = [r for r in curve["rows"] if r["accuracy_lower"] >= utility.accuracy]
        out["utility"].update(
            sweep=curve["id"],
            sweep_name=curve["name"],
            accuracy=utility.accuracy,
            curve=[
                {
                    k: r[k]
                    for k in ("epsilon", "seeds", "accuracy_mean", "accuracy_sd", "accuracy_lower", "noise_multiplier")
                }
                for r in curve["rows"]
            ],
            spread="lower end = min over seeds and mean − sd",
        )
        if curve["note"]:
            out["notes"].append(curve["note"])
        if curve["size_control_left_out"]:
            out["notes"].append(
                f"{curve['size_control_left_out']} size-control points (fewer rows) left out: they "
                "answer how accuracy changes with data, not with ε"
            )
        if not good:
            best = max(curve["rows"], key=lambda r: r["accuracy_lower"])
            raise DPError(
                f"no point of sweep {curve['id']} reaches accuracy {utility.accuracy:g} at the lower end "
                f"of its spread (best: {best['accuracy_lower']:.3f} at ε = {best['epsilon']:g}); lower the "
                "target, or sweep larger ε, more rows or more epochs"
            )
        pick = max(good, key=lambda r: r["noise_multiplier"])  # the most noise that still meets the target
        nm_max = pick["noise_multiplier"]
        e_min = accounting.pld_epsilon(nm_max, q, t, d)
        out["utility"].update(
            epsilon_min=e_min,
            noise_multiplier_max=nm_max,
            at_sweep_epsilon=pick["epsilon"],
            accuracy_lower=pick["accuracy_lower"],
        )
        out["noise_multiplier_range"] = [nm_min, nm_max]
    set_range(out, e_min, e_max)
    if curve is not None:
        out["feasible"] = nm_min <= nm_max
        if out["feasible"]:
            nm = nm_max
    eps = accounting.pld_epsilon(nm, q, t, d)
    val = dpsgd_risk(nm, q, t, risk, d)
    ach = {"tpr_at_fpr" if risk.kind == "tpr" else risk.kind: val}
    tail = dpsgd_loss_tail(nm, q, t, eps)
    if risk.kind == "posterior":
        ach["posterior_fails_with"] = tail
    out["privacy_loss_tail"] = loss_tail_entry(eps, d, tail, at_most=True)
    out.update(epsilon=eps, noise_multiplier=nm, achieved=ach, mu_clt=gdp_mu(nm, q, t))
    out["notes"].append(
        "the advice's JSON also gives mu_clt: μ of Gaussian DP by the central limit theorem (Bu et "
        "al. 2020), an estimate, not a bound"
    )
    if not out["feasible"]:
        ratio = e_min / e_max
        at = dpsgd_risk(nm_max, q, t, risk, d)
        best_ok = [r for r in curve["rows"] if r["noise_multiplier"] >= nm_min]
        opts = [
            {
                "kind": "weaker_limit",
                "value": at,
                "text": f"accept a weaker risk limit: {risk.text().split(' ≤')[0]} ≤ {claims.up(at)}",
            }
        ]
        if best_ok:
            r = max(best_ok, key=lambda r: r["accuracy_lower"])
            opts.append(
                {
                    "kind": "lower_target",
                    "accuracy": r["accuracy_lower"],
                    "text": f"accept accuracy {r['accuracy_lower']:.3f} (sweep point ε = {r['epsilon']:g}, "
                    "lower end of its spread)",
                }
            )
        opts.append(
            {
                "kind": "more_rows",
                "text": "train on more rows: the same noise multiplier and steps then "
                "cost less accuracy (sweep again with more training rows to measure how much)",
            }
        )
        out["conflict"] = {
            "epsilon_needed_by_utility": e_min,
            "epsilon_allowed_by_risk": e_max,
            "ratio": ratio,
            "text": f"the accuracy target needs ε ≥ {claims.up(e_min)} but the risk limit allows at most "
            f"ε ≤ {claims.down(e_max)} ({ratio:.2g}× apart)",
            "reconcile": opts,
        }
    return out
