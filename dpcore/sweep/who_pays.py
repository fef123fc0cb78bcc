"""Who pays for privacy (issue 37 §6): each class's test accuracy across ε, beside the non-private baseline's.

DP's cost falls unevenly: classes with few rows lose more accuracy (Bagdasaryan, Poursaeed & Shmatikov, NeurIPS
2019). Every sweep point stores its model's per-class accuracy (``per_class``: each class's test rows, right
answers and a 95% Clopper–Pearson interval, :func:`dpcore.training.results.per_class_accuracy`). Here, per ε and
class: the median seed's accuracy with *that model's* 95% interval and the test rows it is measured on; the cost
against the baseline (points of accuracy lost); and ``pays_more`` only when the intervals support it — the DP
model's interval lies wholly below the baseline's for that class. Every figure is computed on private test rows:
a diagnostic, not covered by ε.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import claims
from ..training.results import pays_more, pays_more_text

NOT_COVERED = (
    "per-class test accuracy and exposure: computed on private rows (test rows; audited training rows), not covered "
    "by ε"
)


def class_exposure(
    labels: Any, proved: Sequence[float], claimed: float | None, class_names: Sequence[Any]
) -> list[dict[str, Any]]:
    """Per class, the audited members' exposure (:mod:`dpcore.attacks.exposure`: what the attack proves at 95% while
    flagging each record): how many were audited, the median and the largest proved ε, and the share proved above
    the claimed ε (None without a claim)."""
    y = np.asarray(labels).ravel()
    pr = np.asarray(proved, float).ravel()
    out = []
    for c in np.unique(y):
        sel = pr[y == c]
        out.append(
            {
                "class": int(c),
                "name": str(class_names[int(c)]) if int(c) < len(class_names) else str(int(c)),
                "members": int(sel.size),
                "median_proved": float(np.median(sel)),
                "max_proved": float(sel.max()),
                "share_above_claim": None if claimed is None else float(np.mean(sel > float(claimed) + 1e-9)),
            }
        )
    return out


def _exposure_by_class(points: Sequence[Mapping[str, Any]]) -> dict[int, dict[str, Any]]:
    """Per class, the median over seeds of the members' median proved ε, and the members audited per seed."""
    groups: dict[int, list[Mapping[str, Any]]] = {}
    for p in points:
        for e in (p.get("exposure") or {}).get("per_class") or ():
            groups.setdefault(int(e["class"]), []).append(e)
    return {
        c: {
            "exposure_median_proved": float(np.median([e["median_proved"] for e in es])),
            "exposure_max_proved": float(max(e["max_proved"] for e in es)),
            "exposure_members": int(np.median([e["members"] for e in es])),
        }
        for c, es in groups.items()
    }


def _median_entry(entries: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The lower-median seed's entry (a real model's accuracy and its own interval, never an average of models)."""
    ranked = sorted(entries, key=lambda e: e["accuracy"])
    return ranked[(len(ranked) - 1) // 2]


def _identity(field: str):
    """(key, name) of an entry of ``field``: a class by its index and name; a subgroup by (column, category),
    named "column = category"."""
    if field == "per_class":
        return (lambda e: int(e["class"])), (lambda e: str(e.get("name", e["class"])))
    return (lambda e: (str(e["column"]), str(e["group"]))), (lambda e: f"{e['column']} = {e['group']}")


def _by(points: Sequence[Mapping[str, Any]], field: str = "per_class") -> dict[Any, dict[str, Any]]:
    """Per class (or subgroup), in the order first seen: the median seed's entry with its seeds counted."""
    key, name = _identity(field)
    out: dict[Any, dict[str, Any]] = {}
    groups: dict[Any, list[Mapping[str, Any]]] = {}
    names: dict[Any, str] = {}
    for p in points:
        for e in p.get(field) or ():
            if e.get("accuracy") is not None:
                groups.setdefault(key(e), []).append(e)
                names[key(e)] = name(e)
    for c, entries in groups.items():
        m = _median_entry(entries)
        out[c] = {
            "class": c,
            "name": names[c],
            "accuracy": float(m["accuracy"]),
            "interval": [float(m["interval"][0]), float(m["interval"][1])],
            "n_test": int(m["n_test"]),
            "seeds": len(entries),
        }
    return out


#: What :func:`who_pays` compares, by its ``by``: the stored field and the word a reader sees.
UNITS = {"class": ("per_class", "class"), "subgroup": ("per_group", "subgroup")}


def who_pays(result: Mapping[str, Any], by: str = "class") -> dict[str, Any] | None:
    """Per class (``by="class"``) or per subgroup (``by="subgroup"``: each category of the categorical feature
    columns, :func:`dpcore.training.results.per_group_accuracy`): the baseline's accuracy and, per ε (ascending),
    the DP models' (see the module docstring); members' exposure per class only. None when no point stored them (a
    sweep from before, or data without categorical columns)."""
    field, unit = UNITS[by]
    points = [p for p in result.get("points") or () if p.get(field)]
    if not points:
        return None
    baselines = result.get("baselines") or ([result["baseline"]] if result.get("baseline") else [])
    base = _by([p for p in [*baselines, *points] if p.get("epsilon") is None], field)
    groups: dict[float, list[Mapping[str, Any]]] = {}
    for p in points:
        if p.get("epsilon") is not None:
            groups.setdefault(float(p["epsilon"]), []).append(p)
    order = {c: i for i, c in enumerate(base)}  # the baseline's order (the stored one: classes by index), then others
    rows = []
    for eps in sorted(groups):
        exposed = _exposure_by_class(groups[eps]) if field == "per_class" else {}
        found = _by(groups[eps], field)
        for c in sorted(found, key=lambda c: order.get(c, len(order))):
            e, b = found[c], base.get(c)
            rows.append(
                {
                    "epsilon": eps,
                    **e,
                    **exposed.get(c, {}),
                    "baseline_accuracy": None if b is None else b["accuracy"],
                    "baseline_interval": None if b is None else b["interval"],
                    "cost": None if b is None else round(b["accuracy"] - e["accuracy"], 4),
                    "pays_more": pays_more(e, b),
                }
            )
    return {"rows": rows, "baseline": list(base.values()), "unit": unit, "not_covered_by_epsilon": NOT_COVERED}


def most_paid(table: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Per ε, the class that loses the most accuracy against the baseline, when the intervals support it."""
    out: dict[float, dict[str, Any]] = {}
    for r in (table or {}).get("rows", ()):
        if r.get("pays_more") and (r["epsilon"] not in out or r["cost"] > out[r["epsilon"]]["cost"]):
            out[r["epsilon"]] = r
    return [out[e] for e in sorted(out)]


def _pct_interval(iv: Sequence[float] | None) -> str:
    return "—" if iv is None else f"{claims.percent(iv[0], 1, up=False)}–{claims.percent(iv[1], 1, up=True)}"


def shown(table: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The rows as a table people read (the page and the report): percentages with their 95% intervals, the test
    rows each is measured on, and "yes" under "pays more" only when the intervals support it."""
    out = []
    unit = (table or {}).get("unit", "class")
    for r in (table or {}).get("rows", ()):
        row = {
            "ε": r["epsilon"],
            unit: r["name"],
            "test rows": r["n_test"],
            "accuracy (median seed)": claims.percent(r["accuracy"], 1, up=False),
            "95% interval": _pct_interval(r["interval"]),
            "non-private": "—"
            if r["baseline_accuracy"] is None
            else claims.percent(r["baseline_accuracy"], 1, up=False),
            "non-private 95% interval": _pct_interval(r["baseline_interval"]),
            "pays more": pays_more_text(r["pays_more"]),
            "members audited": r.get("exposure_members", "—"),
            "proved ε of its members (median)": "—"
            if r.get("exposure_median_proved") is None
            else claims.down(r["exposure_median_proved"]),
        }
        if unit != "class":  # members are audited per class only
            del row["members audited"], row["proved ε of its members (median)"]
        out.append(row)
    return out


def reading(table: Mapping[str, Any] | None) -> str:
    """One paragraph: which class pays most at each ε where the intervals support it, or that none is shown to."""
    if not table:
        return ""
    unit = table.get("unit", "class")
    paid = most_paid(table)
    if not paid:
        return (
            f"Who pays for privacy: no {unit}'s accuracy falls below the non-private model's by more than the 95% "
            f"intervals allow (per-{unit} test accuracy, not covered by ε)."
        )
    parts = [
        f"at ε = {r['epsilon']:g}, {r['name']} ({claims.percent(r['accuracy'], 1, up=False)} of {r['n_test']} test "
        f"rows, against {claims.percent(r['baseline_accuracy'], 1, up=False)} without DP)"
        for r in paid
    ]
    return (
        f"Who pays for privacy: the {unit} that loses most accuracy, where the 95% intervals support it — "
        + "; ".join(parts)
        + f" (per-{unit} test accuracy, not covered by ε)."
    )
