"""Choose ε from risk: solve a risk limit and a utility target for the ε range that meets both.

A *risk limit* bounds what a membership attacker can do against ONE person's record (add/remove one
person, except MEAN with a public n: replace one), read off the mechanism's worst-case trade-off curve
f(α) = the highest TPR any test reaches at FPR α:

* ``tpr``: f(α) ≤ T at FPR α. Gaussian with μ = Δ/σ: f(α) = Φ(Φ⁻¹(α) + μ) (Dong, Roth & Su 2019), so
  σ ≥ Δ / (Φ⁻¹(T) − Φ⁻¹(α)); any pure ε-DP mechanism (Laplace, geometric): f(α) = min(e^ε·α, 1 − e^−ε·(1 − α)),
  so ε ≤ max(ln(T/α), ln((1 − α)/(1 − T))); DP-SGD: the PLD trade-off curve of
  :func:`dpcore.training.accounting.privacy_profile`.
* ``advantage``: max_α f(α) − α ≤ A. That maximum is the total-variation distance δ(0):
  2Φ(μ/2) − 1 (Gaussian), tanh(ε/2) (pure ε-DP), δ(ε = 0) of the PLD (DP-SGD).
* ``posterior``: an attacker with prior p ends at most at P. Pure ε-DP: P ≤ e^ε·p/(1 − p + e^ε·p), so
  ε ≤ ln(P(1 − p)/(p(1 − P))). With δ > 0 (Gaussian, DP-SGD) the same bound applies to ε at the chosen δ and
  holds except when the privacy loss exceeds ε; that probability is reported (``posterior_fails_with``).

A *utility target*: a COUNT, SUM or MEAN within ±k with probability ``confidence`` (Gaussian: σ ≤ k/z;
Laplace: b = Δ/ε ≤ k/ln(1/(1 − confidence)), conservative for the geometric mechanism of counts), or a
model accuracy of at least X read from a stored sweep at the *lower end* of its spread over seeds
(min over seeds and mean − sd), at the sweep's own sample rate and steps.

:func:`advise` returns the range, the recommended setting (the most private one that meets the utility
target; the risk limit's edge when there is no target), and — when the two conflict — how far apart they
are and what would reconcile them, with numbers. Every ε returned is an upper bound at the stated δ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import claims
from .errors import DPError
from .validation import check_delta, check_positive_int, check_sensitivity
from .noise.calibration import gaussian_epsilon

MECHANISMS = ("gaussian", "laplace", "dpsgd")
MECHANISM_LABELS = {"gaussian": "Gaussian noise (analytic calibration)",
                    "laplace": "Laplace / any pure ε-DP mechanism (geometric for counts)",
                    "dpsgd": "DP-SGD (Poisson-subsampled Gaussian, PLD accounting)"}
RISKS = ("tpr", "posterior", "advantage")
UTILITIES = ("count", "sum", "mean", "accuracy")
DEFAULT_DELTA = 1e-5
#: Noise-multiplier search range for DP-SGD (the accountants' calibration range).
NM_MIN, NM_MAX = 0.2, 200.0
#: Stop bisecting on σ when hi/lo is below this (the result is the hi end: it meets the limit).
NM_RTOL = 2e-3


def _prob(value, name: str, hint: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise DPError(f"{name} must be a number in (0, 1), got {value!r}; {hint}") from None
    if not (0 < x < 1):
        raise DPError(f"{name} must be in (0, 1), got {value!r}; {hint}")
    return x


def _ndtr(x):
    from scipy.special import ndtr

    return ndtr(x)


def _ndtri(x):
    from scipy.special import ndtri

    return ndtri(x)


# --- the two sides ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RiskLimit:
    """``kind`` "tpr" (value T at FPR ``at`` = α), "posterior" (value P from prior ``at`` = p) or
    "advantage" (value A)."""

    kind: str
    value: float
    at: float | None = None

    def checked(self) -> "RiskLimit":
        kind = str(self.kind).strip().lower()
        if kind == "tpr":
            a = _prob(self.at, "FPR α (--at-fpr)", "e.g. 0.01 (1% of non-members wrongly flagged)")
            t = _prob(self.value, "TPR limit T (--max-tpr)", "e.g. 0.05")
            if t <= a:
                raise DPError(f"a TPR limit of {t:g} at FPR {a:g} is impossible: even a coin flip reaches TPR = FPR; "
                              f"choose T above α (e.g. T = {min(0.99, 5 * a):g})")
            return RiskLimit("tpr", t, a)
        if kind == "posterior":
            p = _prob(self.at, "prior p (--prior)", "the attacker's belief before seeing the release, e.g. 0.01")
            big = _prob(self.value, "posterior limit P (--max-posterior)", "e.g. 0.1")
            if big <= p:
                raise DPError(f"a posterior limit of {big:g} is not above the prior {p:g}: no release can promise "
                              "that; choose P above p")
            return RiskLimit("posterior", big, p)
        if kind == "advantage":
            return RiskLimit("advantage", _prob(self.value, "advantage limit A (--max-advantage)",
                                                "TPR − FPR of the best attack, e.g. 0.1"), None)
        raise DPError(f"unknown risk limit {self.kind!r}; choose one of {', '.join(RISKS)}")

    def text(self) -> str:
        if self.kind == "tpr":
            return f"attacker TPR ≤ {self.value:g} at FPR {self.at:g}"
        if self.kind == "posterior":
            return f"posterior ≤ {self.value:g} from prior {self.at:g}"
        return f"attacker advantage (TPR − FPR) ≤ {self.value:g}"


@dataclass(frozen=True)
class UtilityTarget:
    """``kind`` count/sum/mean (``within`` = ±k at ``confidence``; Δ given, or ``bounds`` (and ``n`` for a
    mean)) or "accuracy" (``accuracy`` ≥ X on the stored sweep ``sweep``, read for ``caller``: a
    :class:`dpcore.jobs.owners.Caller`, default the command line's — someone else's sweep is refused)."""

    kind: str
    within: float | None = None
    confidence: float = 0.95
    sensitivity: float | None = None
    bounds: tuple | None = None
    n: int | None = None
    accuracy: float | None = None
    sweep: str | None = None
    caller: object = None

    def checked(self) -> "UtilityTarget":
        kind = str(self.kind).strip().lower()
        if kind not in UTILITIES:
            raise DPError(f"unknown utility target {self.kind!r}; choose one of {', '.join(UTILITIES)}")
        if kind == "accuracy":
            acc = _prob(self.accuracy, "accuracy target (--min-accuracy)", "e.g. 0.85")
            if not self.sweep:
                raise DPError("an accuracy target is read from a stored sweep: give its id (--sweep ID; "
                              "`python -m dpcore sweep` makes one)")
            return UtilityTarget("accuracy", accuracy=acc, sweep=str(self.sweep), caller=self.caller)
        try:
            k = float(self.within)
        except (TypeError, ValueError):
            raise DPError(f"the tolerance ±k (--within) must be a number > 0, got {self.within!r}") from None
        if not (math.isfinite(k) and k > 0):
            raise DPError(f"the tolerance ±k (--within) must be a finite number > 0, got {self.within!r}")
        conf = float(self.confidence) if self.confidence is not None else 0.95
        if not (0.5 <= conf < 1):
            raise DPError(f"confidence must be in [0.5, 1), got {self.confidence!r}; 0.95 is usual")
        bounds, n = self.bounds, self.n
        if bounds is not None:
            from .queries.model import parse_bounds
            from .validation import check_bounds

            bounds = parse_bounds(bounds) if isinstance(bounds, str) else check_bounds(*bounds)
        if n is not None:
            n = check_positive_int(n, "rows n (--n)")
        if self.sensitivity is not None:
            sens = check_sensitivity(self.sensitivity)
            if sens == 0:
                raise DPError("sensitivity Δ is 0: that answer needs no noise; give the query's real Δ")
        elif kind == "count":
            sens = 1.0
        elif bounds is None:
            raise DPError(f"a {kind.upper()} target needs its sensitivity Δ (--sensitivity) or public bounds "
                          "(--bounds LO:HI" + (" and --n" if kind == "mean" else "") + ")")
        elif kind == "sum":
            sens = max(abs(bounds[0]), abs(bounds[1]))
        else:
            if n is None:
                raise DPError("a MEAN target with bounds needs the public number of rows (--n)")
            sens = (bounds[1] - bounds[0]) / n
        if sens == 0:
            raise DPError("bounds [0, 0] give sensitivity 0; give bounds that contain the data")
        return UtilityTarget(kind, within=k, confidence=conf, sensitivity=float(sens), bounds=bounds, n=n)

    def neighbour_relation(self) -> str:
        if self.kind == "mean" and self.sensitivity is not None and self.n is not None and self.bounds is not None:
            return "replace one record (n public)"
        return "add/remove one record"

    def text(self) -> str:
        if self.kind == "accuracy":
            return f"test accuracy ≥ {self.accuracy:g} (sweep {self.sweep})"
        return f"{self.kind.upper()} within ±{self.within:g} with probability {self.confidence:g}"


# --- Gaussian and pure-ε facts --------------------------------------------------------------------------------


def gaussian_advantage(mu: float) -> float:
    """Best attacker advantage (TV distance) against one Gaussian release with μ = Δ/σ: 2Φ(μ/2) − 1."""
    return float(2 * _ndtr(mu / 2) - 1)


def pure_tpr(epsilon: float, alpha: float) -> float:
    """Highest TPR at FPR α against any ε-DP mechanism: min(e^ε·α, 1 − e^−ε·(1 − α))."""
    from .attacks.audit import dp_roc_ceiling

    return float(dp_roc_ceiling(epsilon, 0.0, [alpha])[0])


def pure_advantage(epsilon: float) -> float:
    """Best advantage against an ε-DP mechanism: (e^ε − 1)/(e^ε + 1) = tanh(ε/2)."""
    return float(math.tanh(epsilon / 2))


def pure_posterior(epsilon: float, prior: float) -> float:
    """Posterior bound e^ε·p/(1 − p + e^ε·p) (:func:`dpcore.noise.interpret.posterior_bound`)."""
    from .noise.interpret import posterior_bound

    return float(posterior_bound(prior, epsilon))


def _pure_epsilon_max(risk: RiskLimit) -> float:
    if risk.kind == "tpr":
        return max(math.log(risk.value / risk.at), math.log((1 - risk.at) / (1 - risk.value)))
    if risk.kind == "advantage":
        return math.log((1 + risk.value) / (1 - risk.value))  # 2·artanh(A)
    p, big = risk.at, risk.value
    return math.log(big * (1 - p) / (p * (1 - big)))


def _gaussian_mu_max(risk: RiskLimit, delta: float) -> float:
    """Largest μ = Δ/σ that meets the limit (posterior: via the ε at δ)."""
    if risk.kind == "tpr":
        return float(_ndtri(risk.value) - _ndtri(risk.at))
    if risk.kind == "advantage":
        return float(2 * _ndtri((1 + risk.value) / 2))
    from .noise.calibration import gaussian_analytic_sigma

    return 1.0 / gaussian_analytic_sigma(_pure_epsilon_max(risk), delta, 1.0)


def gaussian_loss_tail(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """P[privacy loss > ε] for Gaussian noise σ: Φ(μ/2 − ε/μ) with μ = Δ/σ (where the posterior bound may fail)."""
    mu = sensitivity / sigma
    return float(_ndtr(mu / 2 - epsilon / mu))


# --- DP-SGD: everything from the privacy-loss distribution ----------------------------------------------------


def dpsgd_risk(noise_multiplier: float, sample_rate: float, steps: int, risk: RiskLimit, delta: float, *,
               coarse: bool = False) -> float:
    """The attack quantity a risk limit bounds, for DP-SGD, from the PLD (an upper bound): the worst-case TPR at
    α, the advantage δ(0), or the posterior bound at the ε of δ. ``coarse``: the fast coarse PLD (for searching;
    also an upper bound)."""
    from .training import accounting
    from .attacks.audit import roc_from_privacy_profile

    eps, dl = accounting.privacy_profile(noise_multiplier, sample_rate, steps, coarse=coarse)
    if risk.kind == "posterior":
        if coarse:  # first grid ε whose δ fits: at or above the true ε at δ
            i = int(np.argmax(dl <= delta)) if np.any(dl <= delta) else len(eps) - 1
            e = float(eps[i]) if np.any(dl <= delta) else math.inf
        else:
            e = accounting.pld_epsilon(noise_multiplier, sample_rate, steps, delta)
        return 1.0 if not math.isfinite(e) else pure_posterior(max(e, 1e-12), risk.at)
    if risk.kind == "advantage":
        return float(dl[0])
    return float(roc_from_privacy_profile(eps, dl, [risk.at])[0])


def dpsgd_loss_tail(noise_multiplier: float, sample_rate: float, steps: int, epsilon: float) -> float:
    """An upper bound on P[privacy loss > ε] for DP-SGD from its PLD profile (max over both directions):
    δ(ε′) = E[(1 − e^{ε′−L})₊] ≥ (1 − e^{ε′−ε})·P[L > ε] for any ε′ < ε; we take the profile's grid point ε′ at
    or below ε/2 (δ is decreasing, so its δ is at least δ(ε′))."""
    from .training import accounting

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
    target = (_gaussian_mu_max(risk, delta) / (sample_rate * math.sqrt(steps))) ** 2
    guess = min(max(1 / math.sqrt(math.log1p(target)), NM_MIN * 1.01), NM_MAX / 1.01)
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
        r = root(prev, seen[prev], x, fx) if prev is not None else None
        factor = 1.05 if r is None else min(max((r / x) ** (1 if up else -1) * 1.02, 1.05), 4.0)
        prev, x = x, (x * factor if up else x / factor)
        if up and x >= NM_MAX:
            x = NM_MAX
            if f(x) > 0:
                raise DPError(f"even noise multiplier {NM_MAX:g} does not meet {risk.text()} with {steps} steps at "
                              f"sample rate {sample_rate:g}; train fewer steps or with smaller batches, or weaken "
                              "the limit")
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


def _sweep_curve(sweep_id: str, sample_rate=None, steps=None, caller=None) -> dict:
    """Per-ε rows of a stored sweep: accuracy lower end over seeds, and the noise multiplier that reaches that ε
    at the sample rate q and steps T the advice is for.

    Points are grouped by the ε asked for (``epsilon``; the ε reached differs slightly per seed). Size-control
    points (a fraction of the rows) answer another question and are left out. Canary coins change the row count,
    so seeds train at slightly different q and T (epochs fixed): the advice is for ONE (q, T) — the caller's if it
    lies within the sweep's range, else the main group's median pair — and each row's noise multiplier is
    recalibrated to reach that row's ε at exactly that q and T (a multiplier means nothing at another q, T)."""
    from .sweep import runs as sweep_runs
    from .training import accounting

    from .jobs.owners import CLI

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
        raise DPError(f"sweep {sweep_id!r} has no DP-SGD points with a noise multiplier (diffprivlib models "
                      "cannot be advised from here)")
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
            raise DPError(f"sweep {sweep_id} was trained at sample rate {span_q} for {span_t} steps; its accuracy "
                          "says nothing about other settings: drop --sample-rate/--steps or give both within "
                          "those ranges")
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
        rows.append({"epsilon": eps, "seeds": int(acc.size), "accuracy_mean": float(acc.mean()), "accuracy_sd": sd,
                     "accuracy_lower": lower, "noise_multiplier": float(nm),
                     "sweep_noise_multipliers": sorted(float(p["noise_multiplier"]) for p in ps),
                     "sample_rate": q, "steps": t, "delta": d})
    note = None
    if q_lo != q_hi or t_lo != t_hi:
        note = (f"the sweep's seeds trained at sample rates {q_lo:g}–{q_hi:g} and {t_lo}–{t_hi} steps (canary "
                f"coins change the row count); advice is for q = {q:g}, T = {t} ({how}), each ε's noise multiplier "
                "recalibrated for that q and T")
    n_size = max(len(result.get("size_control") or []),  # stored apart once done; among points while running
                 sum(1 for p in result["points"] if float(p.get("train_fraction", 1.0)) < 1.0))
    return {"id": sweep_id, "name": rec.get("name"), "rows": rows, "sample_rate": q, "steps": t,
            "note": note, "size_control_left_out": n_size}


# --- the solver -----------------------------------------------------------------------------------------------


def _conf_z(conf: float) -> float:
    return float(_ndtri((1 + conf) / 2))


def _laplace_k(epsilon: float, sens: float, conf: float) -> float:
    return sens / epsilon * math.log(1 / (1 - conf))


def advise(mechanism: str, risk: RiskLimit, utility: UtilityTarget | None = None, *, delta: float | None = None,
           sensitivity: float | None = None, sample_rate: float | None = None, steps: int | None = None) -> dict:
    """Solve ``risk`` and ``utility`` for ``mechanism``; see the module docstring. Returns a JSON-able dict with
    at least ``epsilon`` (at ``delta``), ``epsilon_range``, ``feasible``, and ``sigma`` (Gaussian), ``scale_b``
    (Laplace) or ``noise_multiplier`` (DP-SGD)."""
    mech = str(mechanism).strip().lower()
    if mech not in MECHANISMS:
        raise DPError(f"unknown mechanism {mechanism!r}; choose one of {', '.join(MECHANISMS)}")
    risk = risk.checked()
    utility = utility.checked() if utility is not None else None
    if mech == "laplace":
        d = 0.0
    else:
        d = check_delta(DEFAULT_DELTA if delta is None else delta)
    if utility is not None and (utility.kind == "accuracy") != (mech == "dpsgd"):
        raise DPError("an accuracy target goes with --mechanism dpsgd (read from a stored sweep); COUNT/SUM/MEAN "
                      "targets go with gaussian or laplace")
    out = {"mechanism": mech, "mechanism_label": MECHANISM_LABELS[mech], "delta": d,
           "risk": {"kind": risk.kind, "limit": risk.value, "at": risk.at, "text": risk.text()},
           "utility": None if utility is None else {
               "kind": utility.kind, "text": utility.text(), "n": utility.n,
               "bounds": None if utility.bounds is None else [float(b) for b in utility.bounds]},
           "accountant": {"gaussian": "exact Gaussian trade-off (Balle & Wang 2018; Dong, Roth & Su 2019)",
                          "laplace": "pure ε-DP trade-off (Kairouz et al. 2015)",
                          "dpsgd": "dp_accounting PLD (pessimistic: an upper bound)"}[mech],
           "notes": []}
    if mech == "dpsgd":
        return _advise_dpsgd(out, risk, utility, d, sample_rate, steps)
    if utility is not None:
        sens = utility.sensitivity if sensitivity is None else check_sensitivity(sensitivity)
        if sensitivity is not None and abs(sens - utility.sensitivity) > 1e-12 * max(sens, 1) and (
                utility.bounds is not None or utility.kind == "count"):
            raise DPError(f"--sensitivity {sens:g} disagrees with the query's own Δ = {utility.sensitivity:g}; "
                          "drop one of them")
    else:
        sens = check_sensitivity(1.0 if sensitivity is None else sensitivity)
    if sens == 0:
        raise DPError("sensitivity Δ is 0: no noise is needed, nothing to advise; give the query's Δ (count: 1)")
    out["sensitivity"] = sens
    out["neighbour_relation"] = utility.neighbour_relation() if utility is not None else "add/remove one record"
    if mech == "laplace":
        return _advise_laplace(out, risk, utility, sens)
    return _advise_gaussian(out, risk, utility, sens, d)


def _range(out: dict, lo, hi) -> dict:
    out["epsilon_range"] = [lo, hi]
    out["feasible"] = lo is None or lo <= hi * (1 + 1e-12)
    return out


def _advise_laplace(out, risk, utility, sens):
    e_max = _pure_epsilon_max(risk)
    e_min = None
    if utility is not None:
        e_min = sens * math.log(1 / (1 - utility.confidence)) / utility.within
        out["utility"].update(epsilon_min=e_min, within=utility.within, confidence=utility.confidence)
    out["risk"].update(epsilon_max=e_max, scale_b_min=sens / e_max)
    _range(out, e_min, e_max)
    eps = e_min if (e_min is not None and out["feasible"]) else e_max
    out.update(epsilon=eps, scale_b=sens / eps, achieved=_achieved_pure(eps, risk, utility, sens))
    if not out["feasible"]:
        out["conflict"] = _conflict(out, risk, utility, e_min, e_max, sens, "laplace")
    return out


def _achieved_pure(eps, risk, utility, sens):
    a = {"tpr_at_fpr" if risk.kind == "tpr" else risk.kind:
         pure_tpr(eps, risk.at) if risk.kind == "tpr" else
         (pure_advantage(eps) if risk.kind == "advantage" else pure_posterior(eps, risk.at))}
    if utility is not None:
        a["within"] = _laplace_k(eps, sens, utility.confidence)
    return a


def _advise_gaussian(out, risk, utility, sens, d):
    mu_max = _gaussian_mu_max(risk, d)
    sigma_min = sens / mu_max
    e_max = gaussian_epsilon(sigma_min, d, sens)
    out["risk"].update(epsilon_max=e_max, sigma_min=sigma_min, mu_max=mu_max)
    sigma_max = e_min = None
    if utility is not None:
        sigma_max = utility.within / _conf_z(utility.confidence)
        e_min = gaussian_epsilon(sigma_max, d, sens)
        out["utility"].update(epsilon_min=e_min, sigma_max=sigma_max, within=utility.within,
                              confidence=utility.confidence)
    _range(out, e_min, e_max)
    if sigma_max is not None:
        out["feasible"] = sigma_min <= sigma_max
        out["sigma_range"] = [sigma_min, sigma_max]
    sigma = sigma_max if (sigma_max is not None and out["feasible"]) else sigma_min
    eps = gaussian_epsilon(sigma, d, sens)
    mu = sens / sigma
    out.update(epsilon=eps, sigma=sigma, mu=mu)
    ach = {}
    if risk.kind == "tpr":
        ach["tpr_at_fpr"] = float(_ndtr(_ndtri(risk.at) + mu))
    elif risk.kind == "advantage":
        ach["advantage"] = gaussian_advantage(mu)
    else:
        ach["posterior"] = pure_posterior(max(eps, 1e-12), risk.at)
        ach["posterior_fails_with"] = gaussian_loss_tail(sigma, eps, sens)
        out["notes"].append("with δ > 0 the posterior bound holds except when the privacy loss exceeds ε: "
                            f"probability {ach['posterior_fails_with']:.2g} here")
    if utility is not None:
        ach["within"] = _conf_z(utility.confidence) * sigma
    out["achieved"] = ach
    if not out["feasible"]:
        out["conflict"] = _conflict(out, risk, utility, e_min, e_max, sens, "gaussian", sigma_min=sigma_min,
                                    sigma_max=sigma_max)
    return out


def _risk_at(mech, eps_or_sigma, risk, sens, d):
    """The attack quantity at a setting (Laplace: ε; Gaussian: σ)."""
    if mech == "laplace":
        return _achieved_pure(eps_or_sigma, risk, None, sens)
    mu = sens / eps_or_sigma
    if risk.kind == "tpr":
        return {"tpr_at_fpr": float(_ndtr(_ndtri(risk.at) + mu))}
    if risk.kind == "advantage":
        return {"advantage": gaussian_advantage(mu)}
    return {"posterior": pure_posterior(max(gaussian_epsilon(eps_or_sigma, d, sens), 1e-12), risk.at)}


def _conflict(out, risk, utility, e_min, e_max, sens, mech, *, sigma_min=None, sigma_max=None) -> dict:
    """How far apart the two sides are, and three ways to reconcile them, with numbers."""
    d = out["delta"]
    ratio = e_min / e_max
    c = {"epsilon_needed_by_utility": e_min, "epsilon_allowed_by_risk": e_max, "ratio": ratio,
         "text": f"the utility target needs ε ≥ {claims.up(e_min)} but the risk limit allows at most ε ≤ {claims.down(e_max)} "
                 f"({ratio:.2g}× apart)"}
    opts = []
    # 1. a weaker limit: what the attacker gets at the utility's setting
    at = _risk_at(mech, e_min if mech == "laplace" else sigma_max, risk, sens, d)
    (key, val), = [(k, v) for k, v in at.items() if k != "within"][:1]
    opts.append({"kind": "weaker_limit", key: val,
                 "text": f"accept a weaker risk limit: {risk.text().split(' ≤')[0]} ≤ {claims.up(val)}"
                         + (f" at FPR {risk.at:g}" if risk.kind == "tpr" else "")
                         + (f" from prior {risk.at:g}" if risk.kind == "posterior" else "")})
    # 2. a coarser answer: the tolerance reachable at the risk's setting
    k_at = (_laplace_k(e_max, sens, utility.confidence) if mech == "laplace"
            else _conf_z(utility.confidence) * sigma_min)
    opts.append({"kind": "coarser_answer", "within": k_at,
                 "text": f"accept a coarser answer: ±{claims.up(k_at, 4)} instead of ±{utility.within:g} "
                         f"at {utility.confidence:.0%}"})
    scale = k_at / utility.within  # how much Δ must shrink for the same noise to fit
    if utility.kind == "mean" and utility.n is not None and utility.bounds is not None:
        n_need = math.ceil(utility.n * scale)
        opts.append({"kind": "more_rows", "n": n_need,
                     "text": f"more rows: n ≥ {n_need:,} (now {utility.n:,}) gives ±{utility.within:g} within the "
                             "risk limit"})
    elif utility.kind == "sum" and utility.bounds is not None:
        lo, hi = utility.bounds
        opts.append({"kind": "narrower_bounds", "bounds": [lo / scale, hi / scale],
                     "text": f"clamp to narrower public bounds [{lo / scale:.4g}, {hi / scale:.4g}] (sensitivity "
                             f"{sens / scale:.4g} instead of {sens:g})"})
    elif utility.kind == "count":
        opts.append({"kind": "coarser_query", "sensitivity": sens / scale,
                     "text": f"a coarser question: report the count rounded to ±{k_at:.3g} (e.g. in bands), or ask "
                             "fewer counts so that each may use more ε under the same limit"})
    else:
        opts.append({"kind": "coarser_query", "sensitivity": sens / scale,
                     "text": f"a coarser query whose sensitivity is at most {claims.down(sens / scale, 4)} (now {sens:g}), e.g. "
                             "tighter public bounds or fewer records per person"})
    c["reconcile"] = opts
    return c


def _advise_dpsgd(out, risk, utility, d, sample_rate, steps):
    from .training import accounting

    curve = None
    if utility is not None:
        curve = _sweep_curve(utility.sweep, sample_rate, steps, utility.caller)
        sample_rate, steps = curve["sample_rate"], curve["steps"]
    if sample_rate is None or steps is None:
        raise DPError("DP-SGD needs its sample rate q (--sample-rate, batch size / rows) and number of steps "
                      "(--steps, epochs / q)")
    q = float(sample_rate)
    if not (0 < q <= 1):
        raise DPError(f"sample rate must be in (0, 1], got {sample_rate!r}; it is batch size / rows")
    t = check_positive_int(steps, "steps")
    if t > 1_000_000:
        raise DPError(f"steps must be at most 1,000,000, got {t:,}")
    out.update(sample_rate=q, steps=t, neighbour_relation="add/remove one record",
               sampling="Poisson sampling with rate q (as Opacus's DPDataLoader)")
    nm_min = solve_noise_multiplier(risk, q, t, d)
    e_max = accounting.pld_epsilon(nm_min, q, t, d)
    out["risk"].update(epsilon_max=e_max, noise_multiplier_min=nm_min)
    nm = nm_min
    e_min = None
    if curve is not None:
        good = [r for r in curve["rows"] if r["accuracy_lower"] >= utility.accuracy]
        out["utility"].update(sweep=curve["id"], sweep_name=curve["name"], accuracy=utility.accuracy,
                              curve=[{k: r[k] for k in ("epsilon", "seeds", "accuracy_mean", "accuracy_sd",
                                                        "accuracy_lower", "noise_multiplier")}
                                     for r in curve["rows"]],
                              spread="lower end = min over seeds and mean − sd")
        if curve["note"]:
            out["notes"].append(curve["note"])
        if curve["size_control_left_out"]:
            out["notes"].append(f"{curve['size_control_left_out']} size-control points (fewer rows) left out: they "
                                "answer how accuracy changes with data, not with ε")
        if not good:
            best = max(curve["rows"], key=lambda r: r["accuracy_lower"])
            raise DPError(f"no point of sweep {curve['id']} reaches accuracy {utility.accuracy:g} at the lower end "
                          f"of its spread (best: {best['accuracy_lower']:.3f} at ε = {best['epsilon']:g}); lower the "
                          "target, or sweep larger ε, more rows or more epochs")
        pick = max(good, key=lambda r: r["noise_multiplier"])  # the most noise that still meets the target
        nm_max = pick["noise_multiplier"]
        e_min = accounting.pld_epsilon(nm_max, q, t, d)
        out["utility"].update(epsilon_min=e_min, noise_multiplier_max=nm_max, at_sweep_epsilon=pick["epsilon"],
                              accuracy_lower=pick["accuracy_lower"])
        out["noise_multiplier_range"] = [nm_min, nm_max]
    _range(out, e_min, e_max)
    if curve is not None:
        out["feasible"] = nm_min <= nm_max
        if out["feasible"]:
            nm = nm_max
    eps = accounting.pld_epsilon(nm, q, t, d)
    val = dpsgd_risk(nm, q, t, risk, d)
    ach = {"tpr_at_fpr" if risk.kind == "tpr" else risk.kind: val}
    if risk.kind == "posterior":
        ach["posterior_fails_with"] = dpsgd_loss_tail(nm, q, t, eps)
    out.update(epsilon=eps, noise_multiplier=nm, achieved=ach,
               mu_clt=_gdp_mu(nm, q, t))
    out["notes"].append("the advice's JSON also gives mu_clt: μ of Gaussian DP by the central limit theorem (Bu et "
                        "al. 2020), an estimate, not a bound")
    if not out["feasible"]:
        ratio = e_min / e_max
        at = dpsgd_risk(nm_max, q, t, risk, d)
        best_ok = [r for r in curve["rows"] if r["noise_multiplier"] >= nm_min]
        opts = [{"kind": "weaker_limit", "value": at,
                 "text": f"accept a weaker risk limit: {risk.text().split(' ≤')[0]} ≤ {claims.up(at)}"}]
        if best_ok:
            r = max(best_ok, key=lambda r: r["accuracy_lower"])
            opts.append({"kind": "lower_target", "accuracy": r["accuracy_lower"],
                         "text": f"accept accuracy {r['accuracy_lower']:.3f} (sweep point ε = {r['epsilon']:g}, "
                                 "lower end of its spread)"})
        opts.append({"kind": "more_rows", "text": "train on more rows: the same noise multiplier and steps then "
                     "cost less accuracy (sweep again with more training rows to measure how much)"})
        out["conflict"] = {"epsilon_needed_by_utility": e_min, "epsilon_allowed_by_risk": e_max, "ratio": ratio,
                           "text": f"the accuracy target needs ε ≥ {claims.up(e_min)} but the risk limit allows at most "
                                   f"ε ≤ {claims.down(e_max)} ({ratio:.2g}× apart)", "reconcile": opts}
    return out


def _gdp_mu(nm, q, t):
    from .attacks.audit import gdp_mu

    return gdp_mu(nm, q, t)


def page_link(result: dict) -> dict:
    """Where to apply a recommendation: {page, params (URL query), state (session keys), label}."""
    mech = result["mechanism"]
    if mech == "dpsgd":
        return {"page": "pages/training.py", "label": "Open DP training with this noise multiplier",
                "params": {},
                "state": {"tr_privacy_mode": "noise multiplier σ", "tr_sigma": float(result["noise_multiplier"]),
                          "tr_delta": float(result["delta"])}}
    from .noise.view import DELTA_GRID, EPSILON_GRID

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
        from .noise.calibration import gaussian_analytic_sigma

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
