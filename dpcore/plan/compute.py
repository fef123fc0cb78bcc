"""A plan's true values (private) and their one release, as a table with each value's 95% interval.

:func:`prepare` checks the plan against the data (every column there, numbers where numbers are needed), bounds each
person's contribution (:mod:`dpcore.plan.bounding`) and computes, for each statistic and cell, the whole numbers the
noise is added to: row counts, clamped values summed on the public grid of :mod:`dpcore.noise.grid`, or the values a
quantile scores. Nothing of it is shown. :meth:`Prepared.release` draws every statistic's noise through
:mod:`dpcore.noise.release` (OpenDP's exact discrete Laplace and its quantile selection, a secure source) and returns
a :class:`PlanRelease`: one row per released cell, value, 95% interval and ε. ``random_state`` (tests only) draws the
same distributions from numpy, labelled "not a DP release".

A cell is a group (every combination of the statistic's keys' public categories, and "(other)") × a histogram bin.
Categories match as the query console matches them (:func:`dpcore.queries.answering.canonical_category`: numbers
by value, true/yes/1 alike, text ignoring case); a missing key value falls in "(other)", a missing measured value
is left out of a sum, a mean or a quantile (and of a numeric histogram).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from ..data.filters import is_numeric, require_column
from ..errors import DPError
from ..noise import grid as noise_grid
from ..noise import release
from ..queries.answering import canonical_category
from . import bounding
from .design import Design, PlanDesign, design
from .model import Plan, Statistic

NOT_DP = release.NOT_DP


def _codes(s: pd.Series, column: str, categories: tuple[str, ...]) -> np.ndarray:
    """Each row's category index (len(categories) for "(other)", a missing value included)."""
    want = [canonical_category(s, column, c) for c in categories]
    if len(set(want)) != len(want):
        raise DPError(f"two categories of {column!r} are the same value; list each once")
    if pd.api.types.is_bool_dtype(s):
        vals = s.astype("boolean")
    elif is_numeric(s):
        vals = pd.to_numeric(s, errors="coerce").astype(float)
    else:
        vals = s.astype("string").str.strip().str.lower()
    out = np.full(len(s), len(categories), dtype=np.int64)
    for i, w in enumerate(want):
        out[(vals == w).fillna(False).to_numpy(dtype=bool)] = i
    return out


def _numeric(df: pd.DataFrame, column: str, what: str) -> np.ndarray:
    s = df[require_column(df, column)]
    if pd.api.types.is_bool_dtype(s):
        return np.asarray(s.astype(float).to_numpy(), dtype=float)
    if not is_numeric(s):
        raise DPError(f"{what} needs a numeric column; {column!r} holds text (use a histogram over its categories)")
    return np.asarray(pd.to_numeric(s, errors="coerce").astype(float).to_numpy(), dtype=float)


def cells_of(df: pd.DataFrame, plan: Plan, s: Statistic) -> np.ndarray:
    """Each row's cell index (groups × bins, row-major: group first), −1 for a row in no cell (a missing value of
    a numeric histogram)."""
    n = len(df)
    group = np.zeros(n, dtype=np.int64)
    for b in s.by:
        key = plan.key(b)
        codes = _codes(df[require_column(df, b, "key column")], b, key.categories)
        group = group * (len(key.categories) + 1) + codes
    if s.kind != "histogram":
        return group
    if s.categories is not None:
        assert s.column is not None
        nbins = len(s.categories) + 1
        b_idx = _codes(df[require_column(df, s.column)], s.column, s.categories)
    else:
        assert s.bounds is not None and s.bins is not None and s.column is not None
        lo, hi = s.bounds
        x = np.clip(_numeric(df, s.column, "a histogram with bounds"), lo, hi)
        nbins = s.bins
        edges = np.linspace(lo, hi, s.bins + 1)
        b_idx = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, s.bins - 1)  # half-open, last bin closed
        b_idx = np.where(np.isnan(x), -1, b_idx)
    return np.where(b_idx < 0, -1, group * nbins + b_idx)


@dataclass(frozen=True)
class Truth:
    """One statistic's private inputs: per cell, the whole numbers its noise is added to (``units``: counts or
    grid sums; a mean's ``counts`` beside its centred sums) or the values a quantile scores (``values``)."""

    units: tuple[int, ...] = ()
    counts: tuple[int, ...] = ()
    values: tuple[tuple[float, ...], ...] = ()


def truth(df: pd.DataFrame, plan: Plan, d: Design) -> Truth:
    """The private inputs of one statistic on the plan's (already bounded) rows."""
    s = d.statistic
    cell = cells_of(df, plan, s)
    m = d.cells
    if s.kind in ("count", "histogram"):
        ok = cell >= 0
        return Truth(units=tuple(int(c) for c in np.bincount(cell[ok], minlength=m)))
    assert s.column is not None and s.bounds is not None
    x = _numeric(df, s.column, f"a {s.kind}")
    ok = ~np.isnan(x)
    if s.kind == "quantile":
        return Truth(values=tuple(tuple(float(v) for v in x[ok & (cell == c)]) for c in range(m)))
    lo, hi = s.bounds
    sp = d.parts[0]
    assert sp.grid_exponent is not None
    g = noise_grid.Grid(sp.grid_exponent)
    u = g.units(np.clip(x[ok], lo, hi)) - sp.centre
    per_row = sp.sensitivity // bounding_k(plan)
    sums = [noise_grid.exact_sum(u[cell[ok] == c], per_row) for c in range(m)]
    if s.kind == "sum":
        return Truth(units=tuple(sums))
    counts = np.bincount(cell[ok], minlength=m)
    return Truth(units=tuple(sums), counts=tuple(int(c) for c in counts))


def bounding_k(plan: Plan) -> int:
    return plan.unit.contributions


@dataclass(frozen=True)
class Row:
    """One released cell: its statistic, group and bin, the value, its 95% interval (None for a quantile, whose
    bound is on its rank) and the statistic's ε."""

    statistic: int
    label: str
    group: str
    bin: str
    value: float
    low: float | None
    high: float | None
    error: str
    epsilon: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic + 1,
            "label": self.label,
            "group": self.group,
            "bin": self.bin,
            "value": self.value,
            "low_95": self.low,
            "high_95": self.high,
            "error_95": self.error,
            "epsilon": self.epsilon,
        }


COLUMNS = ("statistic", "label", "group", "bin", "value", "low_95", "high_95", "error_95", "epsilon")


@dataclass(frozen=True)
class PlanRelease:
    """The released table of a plan, with its design (public) and how its noise was drawn."""

    design: PlanDesign
    rows: tuple[Row, ...]
    secure: bool = True

    @property
    def label(self) -> str | None:
        return None if self.secure else NOT_DP

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([r.to_dict() for r in self.rows], columns=list(COLUMNS))

    def to_json(self) -> dict[str, Any]:
        """What the ledger stores with the charge (and returns for the same plan asked again)."""
        return {"rows": [r.to_dict() for r in self.rows], "secure": self.secure}

    @classmethod
    def from_json(cls, d: PlanDesign, stored: dict[str, Any]) -> PlanRelease:
        rows = tuple(
            Row(
                int(r["statistic"]) - 1,
                str(r["label"]),
                str(r["group"]),
                str(r["bin"]),
                float(r["value"]),
                None if r["low_95"] is None else float(r["low_95"]),
                None if r["high_95"] is None else float(r["high_95"]),
                str(r["error_95"]),
                float(r["epsilon"]),
            )
            for r in stored["rows"]
        )
        return cls(d, rows, bool(stored.get("secure", True)))


@dataclass(frozen=True)
class Prepared:
    """A plan checked against its data, with every statistic's private inputs. Never shown."""

    design: PlanDesign
    truths: tuple[Truth, ...]

    def release(self, random_state: Any = None) -> PlanRelease:
        """Draw every statistic's noise once (OpenDP's exact samplers; ``random_state``: numpy, not a DP release)."""
        rng = None if random_state is None else np.random.default_rng(random_state)
        rows: list[Row] = []
        for d, t in zip(self.design.designs, self.truths):
            rows += _release_one(d, t, rng)
        return PlanRelease(self.design, tuple(rows), rng is None)


def _labels(d: Design) -> list[tuple[str, str]]:
    return [(g, b) for g in d.groups for b in d.bins]


def _release_one(d: Design, t: Truth, rng: np.random.Generator | None) -> list[Row]:
    """Draw one statistic's noise (each part once, over all its cells) and read the cells from it."""
    if d.quantile is not None:
        return from_noisy(d, [[release.release_quantile(v, d.quantile, rng) for v in t.values]])
    noisy = [release.draw(list(inputs), p.noise(), rng) for p, inputs in zip(d.parts, (t.units, t.counts))]
    return from_noisy(d, noisy)


def from_noisy(d: Design, noisy: list[list[Any]]) -> list[Row]:
    """The released cells of one statistic from its parts' noisy whole numbers (a quantile's: the chosen
    candidates): post-processing only — grid steps to values, a mean's ratio and interval, the 95% bounds."""
    s, label, out = d.statistic, d.statistic.label(), []
    cells = _labels(d)
    if s.kind in ("count", "histogram"):
        h = int(d.parts[0].halfwidth)
        for (g, b), v in zip(cells, noisy[0]):
            out.append(Row(d.index, label, g, b, float(v), float(v - h), float(v + h), f"± {h:,} rows", d.epsilon))
        return out
    assert s.bounds is not None
    lo, hi = s.bounds
    if s.kind == "quantile":
        for (g, b), v in zip(cells, noisy[0]):
            out.append(Row(d.index, label, g, b, float(v), None, None, d.error_text(), d.epsilon))
        return out
    sp = d.parts[0]
    assert sp.grid_exponent is not None
    gs = noise_grid.Grid(sp.grid_exponent)
    ts = int(sp.halfwidth)
    if s.kind == "sum":
        for (g, b), z in zip(cells, noisy[0]):
            err = f"± {gs.value(ts):,g}"
            out.append(Row(d.index, label, g, b, gs.value(z), gs.value(z - ts), gs.value(z + ts), err, d.epsilon))
        return out
    tn = int(d.parts[1].halfwidth)
    for (g, b), z, n in zip(cells, noisy[0], noisy[1]):
        value, low, high = mean_interval(gs, sp.centre, int(z), ts, int(n), tn, lo, hi)
        out.append(Row(d.index, label, g, b, value, low, high, f"± {(high - low) / 2:,.4g}", d.epsilon))
    return out


def mean_interval(
    g: noise_grid.Grid, centre: int, z: int, ts: int, n: int, tn: int, lo: float, hi: float
) -> tuple[float, float, float]:
    """A mean from a noisy centred sum z (grid steps) and a noisy count n, clamped to the bounds, with the interval
    every ratio allows when the sum lies within ±ts and the count within ±tn (each at 97.5%: both at 95%)."""

    def at(a: int, b: int) -> float:
        return float((Fraction(centre) + Fraction(a, b)) * Fraction(10) ** g.exponent)

    value = min(max(at(z, max(n, 1)), lo), hi)
    if n - tn <= 0:
        return value, lo, hi
    ends = [at(a, b) for a in (z - ts, z + ts) for b in (n - tn, n + tn)]
    return value, max(min(ends), lo), min(max(ends), hi)


def _check_columns(df: pd.DataFrame, plan: Plan) -> None:
    for s in plan.statistics:
        for b in s.by:
            require_column(df, b, "key column")
        if s.column is not None:
            require_column(df, s.column)
            if s.kind in ("sum", "mean", "quantile") or (s.kind == "histogram" and s.bounds is not None):
                _numeric(df, s.column, f"a {s.kind}")


def prepare(df: pd.DataFrame, plan: Plan, plan_design: PlanDesign | None = None) -> Prepared:
    """Check ``plan`` against ``df``, bound each person's rows and compute the private inputs. No noise, no spend."""
    if not isinstance(df, pd.DataFrame):
        raise DPError("the data must be a table")
    d = plan_design or design(plan)
    _check_columns(df, plan)
    rows = bounding.bound(df, plan.unit)
    return Prepared(d, tuple(truth(rows, plan, x) for x in d.designs))


@dataclass(frozen=True)
class Outcome:
    """A released plan: the table, what was charged (``charge``: the ledger's totals after it; None for the
    uploader's own rows), the statement's budget block, whether the stored release was returned, the subject (the
    data in words) and the source ("builtin:visits", "builtin:patients", "dataset", "upload")."""

    release: PlanRelease
    charge: dict[str, Any] | None
    budget: dict[str, Any]
    reused: bool
    subject: str
    source: str
