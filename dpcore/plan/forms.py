"""A plan as a page's form and as examples: the editor's rows (text where a list or bounds go) to and from
:class:`~dpcore.plan.model.Plan`'s fields, and the example plans the page and ``plan --template`` start from."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .model import Json, Plan, _number

#: Example plans: the built-in visits (person-level, five kinds of statistic), the built-in patients, an upload.
EXAMPLES: dict[str, Json] = {
    "visits": {
        "title": "Hospital visits",
        "epsilon": 1.0,
        "split": "equal",
        "unit": {"person": "patient_id", "max_rows": 5},
        "keys": [{"column": "sex", "categories": ["F", "M"]}],
        "expected_rows": 8_000,
        "statistics": [
            {"kind": "count"},
            {
                "kind": "histogram",
                "column": "department",
                "categories": ["emergency", "cardiology", "oncology", "general", "psychiatry"],
            },
            {"kind": "sum", "column": "cost", "bounds": [0, 50_000]},
            {"kind": "mean", "column": "length_of_stay", "bounds": [0, 30], "by": ["sex"]},
            {"kind": "quantile", "column": "age", "bounds": [18, 90], "bins": 72},
        ],
    },
    "patients": {
        "title": "Patients",
        "epsilon": 1.0,
        "split": "equal",
        "unit": {"person": None, "max_rows": 1, "public_max_rows": 1},
        "keys": [{"column": "sex", "categories": ["F", "M"]}],
        "expected_rows": 2_000,
        "statistics": [
            {"kind": "count"},
            {
                "kind": "histogram",
                "column": "diagnosis",
                "categories": ["none", "hypertension", "diabetes", "asthma", "depression", "cancer"],
            },
            {"kind": "mean", "column": "salary", "bounds": [0, 250_000], "by": ["sex"]},
            {"kind": "quantile", "column": "age", "bounds": [18, 90], "bins": 72},
        ],
    },
    "upload": {
        "title": "My release",
        "epsilon": 1.0,
        "split": "hand",
        "unit": {"person": None, "max_rows": 1},
        "keys": [],
        "expected_rows": 1_000,
        "statistics": [{"kind": "count"}],
    },
}

#: The fields of a statistic as an editor's table holds them (text where a list or bounds go).
ROW_FIELDS = ("kind", "column", "bounds", "categories", "bins", "alpha", "by", "weight", "target")


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


def to_rows(plan: Plan) -> list[Json]:
    """A plan's statistics as an editor's rows (bounds "lo:hi", lists comma-separated)."""
    out = []
    for s in plan.statistics:
        out.append(
            {
                "kind": s.kind,
                "column": s.column or "",
                "bounds": f"{s.bounds[0]:g}:{s.bounds[1]:g}" if s.bounds else "",
                "categories": ",".join(s.categories) if s.categories else "",
                "bins": s.bins,
                "alpha": s.alpha,
                "by": ",".join(s.by),
                "weight": s.weight,
                "target": s.target,
            }
        )
    return out


def from_rows(rows: Sequence[Mapping[str, Any]]) -> list[Json]:
    """An editor's rows as statistics' dicts for :meth:`Plan.from_dict`: empty cells left out, numbers from text;
    a row with no kind is skipped (an editor's empty new row)."""
    out = []
    for i, r in enumerate(rows):
        if _blank(r.get("kind")):
            continue
        d: Json = {}
        for f in ROW_FIELDS:
            v = r.get(f)
            if _blank(v):
                continue
            if f in ("bins",):
                v = _number(v, f"statistic {i + 1}'s bins")
            d[f] = v
        out.append(d)
    return out


def keys_from_rows(rows: Sequence[Mapping[str, Any]]) -> list[Json]:
    """An editor's key rows ({column, categories as text}) as keys' dicts; empty rows skipped."""
    return [
        {"column": r.get("column"), "categories": r.get("categories")}
        for r in rows
        if not _blank(r.get("column")) or not _blank(r.get("categories"))
    ]
