"""Summaries of a sweep's result for charts, JSON and the plain-language reading: per-ε rows
(:func:`by_epsilon`, :func:`baseline_summary`, :func:`summary_row`), the training-set-size control, the sentence
(:func:`reading`), audit violations, the sweep's title, and the documented CLI JSON (:func:`cli_json`).

Every "proved ε" combines the seeds' audits at :data:`AUDIT_CONFIDENCE` overall, never the largest of
several 95% bounds.

A little over 400 lines, one idea: reading a finished sweep (its rows, headers, sentence and JSON all read the
same per-ε summary, and the headers' "not covered by ε" labels have their one home here).
"""

from __future__ import annotations

import datetime
import math
from typing import Any

import numpy as np

from .. import claims
from ..attacks import audit
from ..errors import DPError
from ..training.config import REPRODUCIBLE_LABEL, dataset_name, model_name
from .config import ATTACK_LABELS

REPORTED_METRICS = ("auc", "advantage", "tpr_at_1pct_fpr", "tpr_at_0.1pct_fpr")


def _slim(p):
    """One point as documented: ``epsilon`` is the ε achieved (the accountant's bound for the steps run;
    None for a baseline), ``target_epsilon`` the grid value it was calibrated for."""
    if p is None:
        return None
    achieved = p.get("epsilon_spent") if p.get("epsilon") is not None else None
    out = {
        "epsilon": achieved if achieved is not None else p["epsilon"],
        "target_epsilon": p["epsilon"],
        "seed": p["seed"],
        "test_accuracy": p["test_accuracy"],
        "mia": {a: {k: v.get(k) for k in REPORTED_METRICS} for a, v in p["mia"].items()},
    }
    for k in (
        "epsilon_pld",
        "delta",
        "train_accuracy",
        "noise_multiplier",
        "sample_rate",
        "steps",
        "train_fraction",
        "n_train",
        "canaries",
        "seconds",
        "tradeoff",
        "gdp_mu",
    ):
        if p.get(k) is not None:
            out[k] = p[k]
    out["reproducible_noise"] = bool(p.get("reproducible_noise", False))
    if p.get("vulnerable"):  # the most exposed records by row number and score; the rows themselves stay out
        out["vulnerable"] = [{k: v for k, v in r.items() if k != "record"} for r in p["vulnerable"]]
        ex = p.get("exposure") or {}
        out["exposure"] = {k: ex.get(k) for k in ("attack", "share_above_claim", "claimed", "confidence", "method")}
    if p.get("release_label"):
        out["release_label"] = p["release_label"]
    e = p.get("empirical_epsilon") or p.get("empirical_epsilon_no_dp")
    if e:
        out["empirical_epsilon"] = {
            k: e.get(k)
            for k in (
                "lower_bound",
                "confidence",
                "max_certifiable",
                "attack",
                "method",
                "claimed",
                "within_claim",
                "guesses",
                "correct",
                "n_canaries",
                "candidates",
                "tried",
                "delta",
                "members",
                "nonmembers",
                "tp",
                "fp",
            )
            if e.get(k) is not None
        }
        if e.get("records"):
            out["empirical_epsilon"]["records"] = {
                k: e["records"].get(k)
                for k in (
                    "lower_bound",
                    "confidence",
                    "attack",
                    "max_certifiable",
                    "delta",
                    "members",
                    "nonmembers",
                    "tp",
                    "fp",
                )
            }
    return out


def cli_json(result: dict) -> dict:
    """The documented JSON: ``baseline`` and ``points`` with test_accuracy, epsilon (achieved), seed,
    mia.<attack>.{auc, tpr_at_1pct_fpr, advantage, ...}, empirical_epsilon.lower_bound (and ``tradeoff`` for DP
    points where the accountant provides it); ``size_control`` for the training-set-size control."""
    out = {
        "config": result["config"],
        "baseline": _slim(result.get("baseline")),
        "points": [_slim(p) for p in result["points"]],
    }
    if result.get("baselines"):
        out["baselines"] = [_slim(p) for p in result["baselines"]]
    if result.get("size_control"):
        out["size_control"] = [_slim(p) for p in result["size_control"]]
    out["reproducible_noise"] = bool(result.get("reproducible_noise", False))
    if result.get("release_label"):
        out["release_label"] = result["release_label"]
    if "id" in result:
        out["id"] = result["id"]
    if result.get("executor"):
        out["executor"] = result["executor"]
    return out


def _mean_sd(values):
    v = np.asarray([x for x in values if x is not None], float)
    if v.size == 0:
        return None, None
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


#: Confidence of every "proved ε" a sweep summary shows: over all the seeds it combines, not per seed.
AUDIT_CONFIDENCE = 0.95


def _proved(audits) -> dict:
    """The seeds' audits of one ε (or of the baselines) combined at :data:`AUDIT_CONFIDENCE` overall
    (:func:`dpcore.attacks.audit.combine_bounds`: the largest seed's bound with a Bonferroni correction, and the median
    seed's with its own) — never the largest of several 95% bounds. The mean ± SD of the seeds' own bounds is
    only a description of their spread. Audits stored without their counts are left out (and counted)."""
    audits = [a for a in audits if a]
    usable = []
    for a in audits:
        try:
            audit.stored_bound(a, AUDIT_CONFIDENCE)
            usable.append(a)
        except DPError:
            continue
    out = {
        "empirical_epsilon": None,
        "empirical_epsilon_median": None,
        "empirical_epsilon_k": len(usable),
        "empirical_epsilon_confidence": AUDIT_CONFIDENCE,
        "max_certifiable": None,
    }
    out["empirical_epsilon_mean"], out["empirical_epsilon_sd"] = _mean_sd(a.get("lower_bound") for a in audits)
    if usable:
        c = audit.combine_bounds(usable, AUDIT_CONFIDENCE)
        out.update(
            empirical_epsilon=c["lower_bound"],
            empirical_epsilon_median=c["median_lower_bound"],
            max_certifiable=c["max_certifiable"],
        )
    return out


def _audits(ps, kind: str = "main"):
    """Each point's stored audit: the main one (canaries when there are any), or the ``records`` one."""
    out = []
    for p in ps:
        e = p.get("empirical_epsilon") or p.get("empirical_epsilon_no_dp") or {}
        out.append(e.get("records") if kind == "records" else e)
    return [a for a in out if a]


def _add_proved(row: dict, ps) -> None:
    row.update(_proved(_audits(ps)))
    rec = _audits(ps, "records")
    if rec:
        r = _proved(rec)
        row["records_epsilon"], row["records_epsilon_median"] = r["empirical_epsilon"], r["empirical_epsilon_median"]


def by_epsilon(result: dict) -> list[dict]:
    """Points aggregated over seeds, per ε (ascending): accuracy and attack metrics as mean ± SD; the proved ε
    as ``empirical_epsilon`` (the seeds' audits combined, 95% overall), ``empirical_epsilon_median`` (the
    median seed's, 95% too: a separate statement, never to be maxed with the first) and ``max_certifiable``
    (the most the combined audit could prove); ``empirical_epsilon_mean``/``_sd`` only describe the spread of the
    seeds' own bounds. ``records_epsilon``: the same combination for the audit on ordinary records."""
    groups: dict = {}
    for p in result.get("points", []):
        groups.setdefault(p["epsilon"], []).append(p)
    rows = []
    for eps in sorted(groups):
        ps = groups[eps]
        row = {"epsilon": eps, "n": len(ps)}
        row["accuracy"], row["accuracy_sd"] = _mean_sd(p["test_accuracy"] for p in ps)
        row["epsilon_spent"] = max((p.get("epsilon_spent") or eps) for p in ps)
        _add_proved(row, ps)
        row["accuracy_median"] = float(np.median([p["test_accuracy"] for p in ps]))
        for a in ps[0]["mia"]:
            for k in REPORTED_METRICS:
                row[f"{a}.{k}"], row[f"{a}.{k}_sd"] = _mean_sd(p["mia"].get(a, {}).get(k) for p in ps)
        rows.append(row)
    return rows


#: The words for :func:`by_epsilon`'s fields in a table people read (the HTML report's words where they overlap);
#: JSON and code keep the field names.
COLUMN_WORDS = {
    "epsilon": "target ε",
    "n": "models",
    "accuracy": "test accuracy (mean)",
    "accuracy_median": "test accuracy (median)",
    "epsilon_spent": "ε spent (accountant)",
    "empirical_epsilon": "proved ε (95% over all seeds)",
    "empirical_epsilon_median": "proved ε, median seed (95%)",
    "empirical_epsilon_k": "models audited",
    "empirical_epsilon_confidence": "audit confidence",
    "max_certifiable": "most the audit could prove",
    "empirical_epsilon_mean": "each seed's proved ε (mean)",
    "empirical_epsilon_sd": "each seed's proved ε, SD",
    "records_epsilon": "proved ε on ordinary records (95% over all seeds)",
    "records_epsilon_median": "proved ε on ordinary records, median seed (95%)",
}
METRIC_WORDS = {
    "auc": "AUC",
    "advantage": "advantage (TPR − FPR)",
    "tpr_at_1pct_fpr": "TPR at 1% FPR",
    "tpr_at_0.1pct_fpr": "TPR at 0.1% FPR",
}


#: :func:`by_epsilon` fields that are bounds: written so a rounded value keeps its side (claims).
UPPER_FIELDS = ("epsilon_spent",)
LOWER_FIELDS = (
    "empirical_epsilon",
    "empirical_epsilon_median",
    "records_epsilon",
    "records_epsilon_median",
    "max_certifiable",
)


ACCURACY_FIELDS = ("accuracy", "accuracy_median")


def shown_row(row: dict) -> dict:
    """A :func:`by_epsilon` row as a table shows it (the page's grid and the report): the accountant's ε rounded
    up and every proved ε rounded down (a grid of raw floats showed 0.9946543016479602), accuracy as a
    percentage, the target ε as set, other numbers at 3 significant digits; the downloads keep the raw values."""
    out = {}
    for k, v in row.items():
        if k in UPPER_FIELDS:
            out[k] = claims.up(v)
        elif k in LOWER_FIELDS:
            out[k] = claims.down(v)
        elif not isinstance(v, float):
            out[k] = v
        elif math.isnan(v):
            out[k] = "—"
        else:
            out[k] = f"{v:.1%}" if k in ACCURACY_FIELDS else f"{v:g}" if k == "epsilon" else f"{v:.3g}"
    return out


#: What a header adds when its column is computed on the private rows (:func:`on_private_rows`): the words the
#: sweep's reading, the report and the statement use.
NOT_COVERED = "not covered by ε"
#: :func:`by_epsilon` fields computed from the private rows that no ε covers: test accuracy on the private test
#: rows, every attack's results (members are training rows, non-members test rows) and every audit's bound and
#: its reach (the canaries are training rows too). The target ε, the models and the accountant's ε are not.
PRIVATE_FIELDS = (
    *ACCURACY_FIELDS,
    "empirical_epsilon",
    "empirical_epsilon_median",
    "max_certifiable",
    "empirical_epsilon_mean",
    "records_epsilon",
    "records_epsilon_median",
)


def on_private_rows(field: str) -> bool:
    """Whether a :func:`by_epsilon` field (or its ``_sd``) is computed on the private rows, outside ε."""
    base = field[:-3] if field.endswith("_sd") and len(field) > 3 else field
    return base in PRIVATE_FIELDS or base.partition(".")[2] in METRIC_WORDS


def _words(field: str) -> str:
    if field in COLUMN_WORDS:
        return COLUMN_WORDS[field]
    if field.endswith("_sd") and len(field) > 3:
        return f"{_words(field[:-3]).removesuffix(' (mean)')}, SD"
    attack, _, metric = field.partition(".")
    if metric in METRIC_WORDS:
        return f"{ATTACK_LABELS.get(attack, attack)}: {METRIC_WORDS[metric]}"
    return field


def column_label(field: str) -> str:
    """A :func:`by_epsilon` field in words, the one home of the per-ε table's headers (the page, its download, the
    report): ``"loss.tpr_at_1pct_fpr"`` -> ``"loss threshold (Yeom): TPR at 1% FPR, not covered by ε"``,
    ``"accuracy_sd"`` -> ``"test accuracy, SD, not covered by ε"``, ``"epsilon_spent"`` -> ``"ε spent
    (accountant)"``. Every column computed on the private rows (:func:`on_private_rows`) says so. An unknown field
    is returned as it is."""
    words = _words(field)
    return f"{words}, {NOT_COVERED}" if on_private_rows(field) else words


def summary_row(result: dict, epsilon) -> dict | None:
    """The :func:`by_epsilon` row of ``epsilon`` (None: :func:`baseline_summary`); None if not finished."""
    if epsilon is None:
        return baseline_summary(result)
    return next((r for r in by_epsilon(result) if r["epsilon"] == epsilon), None)


def size_control(result: dict) -> list[dict]:
    """The training-set-size control: per fraction of the rows, the baseline's and the DP model's mean
    accuracy (over seeds) and the accuracy DP costs. The full-size row comes from the main grid."""
    cfg = result.get("config") or {}
    eps = cfg.get("size_epsilon")
    pts = list(result.get("size_control") or [])
    if not pts or eps is None:
        return []
    full = [p for p in result.get("points", []) if p["epsilon"] == eps] + (
        result.get("baselines") or ([result["baseline"]] if result.get("baseline") else [])
    )
    groups: dict = {}
    for p in pts + [dict(q, train_fraction=1.0) for q in full]:
        groups.setdefault(float(p.get("train_fraction", 1.0)), []).append(p)
    rows = []
    for f in sorted(groups):
        ps = groups[f]
        base = [p["test_accuracy"] for p in ps if p["epsilon"] is None]
        dp = [p["test_accuracy"] for p in ps if p["epsilon"] is not None]
        if not base or not dp:
            continue
        b, bsd = _mean_sd(base)
        d, dsd = _mean_sd(dp)
        rows.append(
            {
                "fraction": f,
                "n_train": max(int(p.get("n_train") or 0) for p in ps),
                "epsilon": eps,
                "baseline_accuracy": b,
                "baseline_accuracy_sd": bsd,
                "dp_accuracy": d,
                "dp_accuracy_sd": dsd,
                "cost": b - d,
                "n": len(dp),
            }
        )
    return rows


def baseline_summary(result: dict) -> dict | None:
    base = result.get("baselines") or ([result["baseline"]] if result.get("baseline") else [])
    if not base:
        return None
    row: dict[str, Any] = {"n": len(base)}
    row["accuracy"], row["accuracy_sd"] = _mean_sd(p["test_accuracy"] for p in base)
    row["accuracy_median"] = float(np.median([p["test_accuracy"] for p in base]))
    _add_proved(row, base)
    for a in base[0]["mia"]:
        for k in REPORTED_METRICS:
            row[f"{a}.{k}"], _ = _mean_sd(p["mia"].get(a, {}).get(k) for p in base)
    return row


def headline(result: dict) -> dict | None:
    """The sweep's headline figures, as the page shows them above its charts (None before the first model):

    ``baseline``: median test accuracy of the non-private baselines and their count; ``points``: the median test
    accuracy at ε = 1 and at the grid's largest ε (those in the grid, finished or None while running);
    ``proved``: the baselines' combined canary audit (95% overall, as in :func:`baseline_summary`);
    ``attack``/``tpr``: the attack with the highest mean TPR at 1% FPR against the baselines; ``audited``: DP
    models finished; ``violations``: how many of them have a proved ε above their claim (:func:`violations`)."""
    base = baseline_summary(result)
    rows = {r["epsilon"]: r for r in by_epsilon(result)}
    if base is None and not rows:
        return None
    grid = sorted({float(e) for e in (result.get("config") or {}).get("epsilons") or []} | set(rows))
    picks = sorted({e for e in (1.0, grid[-1] if grid else None) if e in grid})
    found = {a: base.get(f"{a}.tpr_at_1pct_fpr") for a in (result.get("baseline") or {}).get("mia", {})} if base else {}
    tprs: dict[str, float] = {a: v for a, v in found.items() if v is not None}
    attack = max(tprs, key=lambda a: tprs[a]) if tprs else None
    return {
        "baseline": None if base is None else {"accuracy": base["accuracy_median"], "n": base["n"]},
        "points": [
            {
                "epsilon": e,
                "accuracy": rows[e]["accuracy_median"] if e in rows else None,
                "n": rows[e]["n"] if e in rows else 0,
            }
            for e in picks
        ],
        "proved": None if base is None else base.get("empirical_epsilon"),
        "proved_k": 0 if base is None else base.get("empirical_epsilon_k", 0),
        "attack": attack,
        "tpr": tprs[attack] if attack is not None else None,
        "audited": sum(1 for p in result.get("points", []) if p.get("empirical_epsilon")),
        "violations": len(violations(result)),
    }


def best_attack(row: dict, attacks) -> tuple[str, float]:
    vals: dict[str, float] = {a: row[f"{a}.advantage"] for a in attacks if row.get(f"{a}.advantage") is not None}
    if not vals:
        return "", 0.0
    a = max(vals, key=lambda k: vals[k])
    return a, float(vals[a])


def reading(result: dict, epsilon: float) -> str:
    """A plain-language sentence about one ε of a finished (or partial) sweep."""
    rows = {r["epsilon"]: r for r in by_epsilon(result)}
    if epsilon not in rows:
        return f"No finished model at ε = {epsilon:g} yet."
    r = rows[epsilon]
    base = baseline_summary(result)
    attacks = list(result["points"][0]["mia"]) if result.get("points") else []
    a, adv = best_attack(r, attacks)
    label = ATTACK_LABELS.get(a, a)
    text = (
        f"At ε = {epsilon:g} (δ = {claims.delta(result['config']['delta'])}, add/remove one record) the model reaches "
        f"{accuracy_text(r['accuracy'])} test accuracy (measured on private test rows: not covered by ε)"
    )
    if base and base.get("accuracy"):
        keep = r["accuracy"] / base["accuracy"]
        ba, badv = best_attack(base, attacks)
        text += (
            f", {keep:.0%} of the non-private baseline's {accuracy_text(base['accuracy'])}; the best attack's advantage "
            f"(TPR − FPR) fell from {badv:.2f} without privacy to {adv:.2f} ({label})."
        )
    else:
        text += f"; the best attack's advantage (TPR − FPR) is {adv:.2f} ({label})."
    if base and base.get("empirical_epsilon"):
        text += (
            f" Without DP the audit *proves* a leak: ε ≥ {claims.down(base['empirical_epsilon'])} for the baseline "
            f"({_over(base['empirical_epsilon_k'])})."
        )
    if r.get("empirical_epsilon") is not None:
        k, med = r["empirical_epsilon_k"], r.get("empirical_epsilon_median") or 0.0
        also = (
            f"; the median seed's bound, a separate 95% statement: ε ≥ {claims.down(med)}" if k > 1 and med > 0 else ""
        )
        if r["empirical_epsilon"] > 0:
            where = "below" if r["empirical_epsilon"] <= r["epsilon_spent"] + 1e-9 else "ABOVE (a bug to report)"
            text += (
                f" The attacks prove ε ≥ {claims.down(r['empirical_epsilon'])} empirically ({_over(k)}), "
                f"{where} the claimed {claims.up(r['epsilon_spent'])}{also}"
            )
        elif also:
            text += f" The attacks prove no leak ({_over(k)}) at the claimed ε = {claims.up(r['epsilon_spent'])}{also}"
        else:
            text += f" The attacks prove no leak at all at the claimed ε = {claims.up(r['epsilon_spent'])}"
        text += f"; with this audit no attack could prove more than ε ≈ {r['max_certifiable']:.1f}."
    if result.get("reproducible_noise") or (result.get("config") or {}).get("reproducible_noise"):
        text += f" ({REPRODUCIBLE_LABEL}: sampling and noise were drawn from the public seed.)"
    return text


def _over(k: int) -> str:
    return "95% confidence" if k == 1 else f"over {k} seeds, at 95% confidence overall"


def accuracy_text(value) -> str:
    """Accuracy as every page shows it: a percentage with one decimal ("88.4%"), "—" when unknown."""
    return "—" if value is None else f"{float(value):.1%}"


def violations(result: dict) -> list[dict]:
    """DP points whose empirical lower bound exceeds the claimed ε (should never happen: a bug to find).

    Every stored audit of every DP point (canaries and ordinary records) is re-bounded at 1 − 0.05/N for the N
    audits checked, so the list is empty with 95% confidence overall when every claim holds (a point audited
    without stored counts is checked at its own bound). Each entry: {epsilon, seed, lower_bound, confidence,
    audit}."""
    checks = []
    for p in result.get("points", []):
        e = p.get("empirical_epsilon")
        for kind, a in (("main", e), ("records", (e or {}).get("records"))):
            if a:
                checks.append((p, kind, a))
    out = []
    conf = 1.0 - (1.0 - AUDIT_CONFIDENCE) / max(len(checks), 1)
    for p, kind, a in checks:
        try:
            lb, c = audit.stored_bound(a, conf)[0], conf
        except DPError:
            lb, c = float(a.get("lower_bound") or 0.0), a.get("confidence")
        if lb > (p.get("epsilon_spent") or p["epsilon"]) + 1e-9:
            out.append(
                {
                    "epsilon": p["epsilon"],
                    "seed": p["seed"],
                    "lower_bound": lb,
                    "confidence": c,
                    "audit": a.get("attack") if kind == "main" else "records",
                }
            )
    return out


def sweep_title(rec: dict) -> str:
    """A sweep named by what it is: dataset, model (their readable names), ε range and date (never by its id)."""
    cfg = rec.get("config") or {}
    eps = [float(e) for e in cfg.get("epsilons") or []]
    rng = f"ε {min(eps):g}–{max(eps):g}" if len(eps) > 1 else (f"ε {eps[0]:g}" if eps else "ε ?")
    when = rec.get("created")
    date = datetime.datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M") if isinstance(when, (int, float)) else ""
    data = cfg.get("upload_name") or dataset_name(cfg.get("dataset"))  # an upload by its owner's file name
    return ", ".join(x for x in (data, model_name(cfg.get("model")), rng, date) if x)
