"""An upload beside a DP synthetic table of it: each declared column's shares and summary, side by side.

The synthetic table is the synth engineer's release (:func:`dpcore.synth.release.release`: OpenDP's MST on the
columns declared public), made only of the uploader's own rows: rows that are (or nearly are) a registered dataset's
are refused here, since their cap is charged where that dataset's synthetic tables are released.
The other side is computed on the uploaded rows themselves: **not covered by ε**, shown to the uploader only — the
page says so above it, and nothing of it is stored or signed.

Columns are declared from the plan (:func:`schema_for`): a histogram's or a key's public categories, a sum's, mean's
or quantile's public bounds (in at most :data:`BINS` bins).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..budgets import gate
from ..budgets.identities import Identity
from ..errors import DPError
from ..synth import release as synth_release
from ..synth.schema import Column, Schema
from . import run
from .model import Plan

NOT_COVERED = "computed on your rows: not covered by ε, shown to you only"
BINS = 20


def schema_for(plan: Plan) -> Schema:
    """The columns a plan declares public, as a synthetic release's schema (categories, or bounds in bins)."""
    cols: dict[str, Column] = {}
    for k in plan.keys:
        cols[k.column] = Column(k.column, categories=k.categories)
    for s in plan.statistics:
        if s.column is None or s.column in cols:
            continue
        if s.categories is not None:
            cols[s.column] = Column(s.column, categories=s.categories)
        elif s.bounds is not None:
            lo, hi = s.bounds
            whole = float(lo).is_integer() and float(hi).is_integer()
            width = max(1.0, math.ceil((hi - lo + 1) / BINS)) if whole else (hi - lo) / BINS
            cols[s.column] = Column(s.column, bounds=(lo, hi), width=width)
    if not cols:
        raise DPError("the plan declares no column (categories or bounds) to compare")
    return Schema(tuple(cols.values()), complete=False)


@dataclass(frozen=True)
class ColumnSide:
    """One column in both tables: its bins' labels and shares, and (numbers) mean and median of each side."""

    name: str
    labels: tuple[str, ...]
    original: tuple[float, ...]
    synthetic: tuple[float, ...]
    original_mean: float | None = None
    synthetic_mean: float | None = None
    original_median: float | None = None
    synthetic_median: float | None = None


@dataclass(frozen=True)
class Comparison:
    """The side-by-side view: each declared column, the synthetic table, its ε and δ and what was charged."""

    columns: tuple[ColumnSide, ...]
    synthetic: pd.DataFrame
    epsilon: float
    delta: float
    budget: dict[str, Any]
    release: Any  # the synth package's SynthRelease (its statement signs the table)


def _shares(codes: np.ndarray, k: int) -> tuple[float, ...]:
    ok = codes >= 0
    counts = np.bincount(codes[ok], minlength=k)[:k].astype(float)
    tot = counts.sum()
    return tuple(float(c / tot) if tot else 0.0 for c in counts)


def _stat(x: pd.Series, fn: Any) -> float | None:
    v = pd.to_numeric(x, errors="coerce").dropna()
    return float(fn(v)) if len(v) else None


def sides(original: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema) -> tuple[ColumnSide, ...]:
    """Each declared column's shares and summary in both tables (the original side: not covered by ε)."""
    real, synth = schema.encode(original), schema.encode(synthetic)
    out = []
    for c in schema.columns:
        k = c.n_bins
        side = ColumnSide(
            c.name,
            tuple(c.labels()),
            _shares(real[c.name].to_numpy(), k),
            _shares(synth[c.name].to_numpy(), k),
        )
        if c.is_number:
            side = ColumnSide(
                side.name,
                side.labels,
                side.original,
                side.synthetic,
                _stat(original[c.name], np.mean),
                _stat(synthetic[c.name], np.mean),
                _stat(original[c.name], np.median),
                _stat(synthetic[c.name], np.median),
            )
        out.append(side)
    return tuple(out)


def compare(df: pd.DataFrame, plan: Plan, epsilon: float, who: Identity, *, path: Any = None) -> Comparison:
    """A DP synthetic table of ``df``'s declared columns at ``epsilon`` (MST, δ = 0) (the uploader's own rows only), and
    the side-by-side view of both tables."""
    schema = schema_for(plan)
    for c in schema.columns:
        if c.name not in df.columns:
            raise DPError(f"column {c.name!r} is not in the upload")
    cfg = synth_release.SynthConfig(epsilon, 0.0, "mst").check(schema)
    eps, delta = synth_release.spend(schema, cfg)
    found = gate.registered_rows(df, path=path)
    if found:  # the same people as a registered dataset: its cap protects them, whatever the file is called
        raise DPError(
            "these rows are (or nearly are) a registered dataset's: release a synthetic table of them where its "
            "budget is charged (the re-identification page's synthetic tab, or `python -m dpcore synth`); "
            "nothing was spent"
        )
    rel = synth_release.release(df[schema.names], schema, cfg)
    budget = {"charged_to": [], "owner": run.OWN_ROWS}
    return Comparison(sides(df, rel.table, schema), rel.table, eps, delta, budget, rel)
