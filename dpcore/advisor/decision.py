"""The advisor's decision as a record a data-protection officer can keep: risk limit → ε → expected error or
accuracy, with the failure probabilities, as a statement of its own (kind ``"advice"``).

:func:`statement` holds the inputs the advice was solved from (mechanism, risk limit, utility target, δ,
sensitivity, DP-SGD sample rate and steps), the advice itself (the ε range, the recommended ε and its σ, Laplace
b or noise multiplier, the risk reached there, P[privacy loss > ε], the error reached and how often it is
missed, a conflict and how to reconcile it), and the decision in words (:func:`words`). It leaves the server
signed (:func:`dpcore.statements.signing.issue`); :func:`recompute` solves the advice again from the recorded inputs and
names every figure that differs — ``statement --verify`` runs it. An accuracy target read from a stored sweep is
re-read where that sweep exists; elsewhere the setting's ε and risk are recomputed and the accuracy is said to
be as recorded.
"""

from __future__ import annotations

import math

from .. import claims, nist
from ..errors import DPError
from ..training import accounting
from .dpsgd import dpsgd_loss_tail, dpsgd_risk
from .links import recommended_text
from .solve import advise
from .targets import RiskLimit, UtilityTarget

#: The figures of an advice that a check recomputes (dotted paths into the statement's ``advice``).
FIGURES = (
    "epsilon",
    "epsilon_range[0]",
    "epsilon_range[1]",
    "sigma",
    "scale_b",
    "noise_multiplier",
    "mu",
    "risk.epsilon_max",
    "utility.epsilon_min",
    "achieved.tpr_at_fpr",
    "achieved.advantage",
    "achieved.posterior",
    "achieved.posterior_fails_with",
    "achieved.within",
    "privacy_loss_tail.probability",
)


def inputs(
    mechanism: str,
    risk: RiskLimit,
    utility: UtilityTarget | None = None,
    *,
    delta=None,
    sensitivity=None,
    sample_rate=None,
    steps=None,
) -> dict:
    """What :func:`dpcore.advisor.solve.advise` was called with, as JSON."""
    u = None
    if utility is not None:
        u = {
            "kind": utility.kind,
            "within": utility.within,
            "confidence": utility.confidence,
            "sensitivity": utility.sensitivity,
            "bounds": (
                None
                if utility.bounds is None
                else utility.bounds
                if isinstance(utility.bounds, str)
                else [float(b) for b in utility.bounds]
            ),
            "n": utility.n,
            "accuracy": utility.accuracy,
            "sweep": utility.sweep,
        }
    return {
        "mechanism": mechanism,
        "risk": {"kind": risk.kind, "value": risk.value, "at": risk.at},
        "utility": u,
        "delta": delta,
        "sensitivity": sensitivity,
        "sample_rate": sample_rate,
        "steps": steps,
    }


def solve_inputs(inp: dict, caller=None) -> dict:
    """The advice for recorded inputs (the same call the page and the CLI made); ``caller``: who reads an accuracy
    target's sweep (:class:`dpcore.jobs.owners.Caller`; default the command line's)."""
    r = inp["risk"]
    u = inp.get("utility")
    utility = (
        None
        if u is None
        else UtilityTarget(
            u["kind"],
            within=u.get("within"),
            confidence=u.get("confidence", 0.95),
            sensitivity=u.get("sensitivity"),
            bounds=u["bounds"] if isinstance(u.get("bounds"), (str, type(None))) else tuple(u["bounds"]),
            n=u.get("n"),
            accuracy=u.get("accuracy"),
            sweep=u.get("sweep"),
            caller=caller,
        )
    )
    return advise(
        inp["mechanism"],
        RiskLimit(r["kind"], r["value"], r.get("at")),
        utility,
        delta=inp.get("delta"),
        sensitivity=inp.get("sensitivity"),
        sample_rate=inp.get("sample_rate"),
        steps=inp.get("steps"),
    )


def statement(inp: dict, result: dict) -> dict:
    """The decision record of one advice (unsigned; :func:`dpcore.statements.signing.issue` signs it)."""
    advice = {k: v for k, v in result.items() if k not in ("link", "console_link")}
    st = {
        "kind": "advice",
        "subject": f"{result['mechanism_label']}: {result['risk']['text']}",
        "unit_of_privacy": "one person's record (one row of the data the release reads)",
        "neighbour_relation": result.get("neighbour_relation", "add/remove one record"),
        "question": result.get("question"),
        "inputs": inp,
        "advice": advice,
        "decision": {
            "epsilon": result["epsilon"],
            "epsilon_text": recommended_text(result),
            "delta": result["delta"],
            "feasible": result["feasible"],
        },
        "recompute": "dpcore.advisor.decision.recompute(statement): the advice solved again from its inputs",
    }
    st["words"] = words(st)
    st["nist"] = nist.for_statement(st)
    return st


def _at(d, path: str):
    cur = d
    for part in path.replace("[", ".[").split("."):
        if part.startswith("["):
            cur = cur[int(part[1:-1])] if isinstance(cur, list) and int(part[1:-1]) < len(cur) else None
        else:
            cur = cur.get(part) if isinstance(cur, dict) else None
        if cur is None:
            return None
    return cur


def _differs(a, b) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    if isinstance(a, bool) or isinstance(b, bool):
        return a != b
    try:
        return not math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-12)
    except (TypeError, ValueError):
        return a != b


def recompute(st: dict) -> list[str]:
    """Every figure of an advice statement that its recorded inputs do not give again, named by field."""
    inp, advice = st.get("inputs"), st.get("advice")
    if not isinstance(inp, dict) or not isinstance(advice, dict):
        return ["inputs and advice are needed: an advice statement records what it was solved from"]
    u = inp.get("utility") or {}
    try:
        if u.get("kind") == "accuracy":
            again = _at_recorded_setting(advice)
        else:
            again = solve_inputs(inp)
    except DPError as err:
        return [f"inputs: the recorded inputs are refused ({err})"]
    except (KeyError, TypeError, ValueError) as err:
        return [f"inputs are damaged ({type(err).__name__}: {str(err)[:80]})"]
    out = []
    for path in FIGURES:
        a, b = _at(advice, path), _at(again, path)
        if (a is not None or b is not None) and _differs(a, b):
            out.append(f"advice.{path} is {a!r}, recomputed {b!r}")
    if advice.get("feasible") != again.get("feasible"):
        out.append(f"advice.feasible is {advice.get('feasible')!r}, recomputed {again.get('feasible')!r}")
    for key in ("neighbour_relation", "question"):
        if st.get(key) != again.get(key):
            out.append(f"{key} is {str(st.get(key))[:60]!r}, recomputed {again.get(key)!r}")
    dec = st.get("decision") or {}
    if _differs(dec.get("epsilon"), again.get("epsilon")):
        out.append(f"decision.epsilon is {dec.get('epsilon')!r}, recomputed {again.get('epsilon')!r}")
    if not out:
        if dec.get("epsilon_text") != recommended_text(again):
            out.append(f"decision.epsilon_text is {dec.get('epsilon_text')!r}, recomputed {recommended_text(again)!r}")
        elif st.get("words") != words(st):
            out.append("words do not say what the recomputed figures say")
    return out


def _at_recorded_setting(advice: dict) -> dict:
    """An accuracy target's advice, checked at the recorded DP-SGD setting: ε, risk and the loss tail from the PLD
    (the accuracy itself was read from a sweep and is kept as recorded)."""
    r = advice["risk"]
    risk = RiskLimit(r["kind"], r["limit"], r.get("at")).checked()
    nm, q, t, d = advice["noise_multiplier"], advice["sample_rate"], advice["steps"], advice["delta"]
    eps = accounting.pld_epsilon(nm, q, t, d)
    again = {
        **advice,
        "epsilon": eps,
        "achieved": {
            **advice.get("achieved", {}),
            ("tpr_at_fpr" if risk.kind == "tpr" else risk.kind): dpsgd_risk(nm, q, t, risk, d),
        },
        "privacy_loss_tail": {**advice.get("privacy_loss_tail", {}), "probability": dpsgd_loss_tail(nm, q, t, eps)},
    }
    return again


def words(st: dict) -> list[str]:
    """The decision for a human reader: the limit and what it is about, the ε chosen, the risk and the error
    reached there, and how often each may fail."""
    a = st["advice"]
    d = a["delta"]
    eps_text = st["decision"]["epsilon_text"]
    at_delta = f" at δ = {claims.delta(d)}" if d else " (pure ε-DP, δ = 0)"
    out = [f"Risk limit: {a['risk']['text']} — about {st.get('question') or 'one person'}."]
    util = a.get("utility")
    if util:
        out.append(f"Utility target: {util['text']}.")
    setting = (
        f"Gaussian noise σ = {a['sigma']:.4g} for sensitivity Δ = {a['sensitivity']:g}"
        if a["mechanism"] == "gaussian"
        else f"Laplace noise b = {a['scale_b']:.4g} for sensitivity Δ = {a['sensitivity']:g}"
        if a["mechanism"] == "laplace"
        else f"DP-SGD noise multiplier {a['noise_multiplier']:.4g} at sample rate q = {a['sample_rate']:g} for "
        f"{a['steps']} steps"
    )
    lo, hi = a["epsilon_range"]
    if a["feasible"]:
        span = (
            f"every ε from {claims.up(lo)} to {claims.down(hi)} meets both"
            if lo
            else f"every ε up to {claims.down(hi)} keeps the limit"
        )
        out.append(
            f"Decision: ε = {eps_text}{at_delta}, with {setting} ({span}; the most private that meets the "
            "target is chosen)."
        )
    else:
        c = a.get("conflict") or {}
        out.append(
            f"Decision: no ε meets both — {c.get('text', 'the two conflict')}. The advice keeps the risk limit: "
            f"ε = {eps_text}{at_delta}, with {setting}."
        )
        out += [f"To reconcile: {o['text']}." for o in c.get("reconcile") or []]
    ach = a.get("achieved") or {}
    key = "tpr_at_fpr" if a["risk"]["kind"] == "tpr" else a["risk"]["kind"]
    if ach.get(key) is not None:
        if key == "tpr_at_fpr":
            what = f"a true-positive rate above {claims.up(ach[key], 4)} at FPR {a['risk']['at']:g}"
        elif key == "advantage":
            what = f"an advantage (TPR − FPR) above {claims.up(ach[key], 4)}"
        else:
            what = f"a belief above {claims.percent(ach[key], up=True)} from a prior of {a['risk']['at']:g}"
        out.append(f"At this setting no attacker can reach {what} (the limit is {a['risk']['limit']:g}).")
    tail = a.get("privacy_loss_tail")
    if tail:
        out.append(f"With δ > 0 the readings of ε fail on rare outputs: {tail['text']}.")
    if util and ach.get("within") is not None:
        conf = a["utility"].get("confidence", 0.95)
        out.append(
            f"{conf:.0%} error bound (not an expected error): within ±{claims.up(ach['within'], 4)} with probability "
            f"{conf:.0%}; it misses with probability {1 - conf:.0%}."
        )
    if util and util.get("kind") == "accuracy" and util.get("accuracy_lower") is not None:
        out.append(
            f"Expected accuracy: at least {util['accuracy_lower']:.1%} (the lower end of the sweep's spread "
            "over seeds, a diagnostic on private test rows)."
        )
    out.append("Every figure here is recomputed from the recorded inputs by python -m dpcore statement --verify FILE.")
    return out
