"""The noise page's teaching query: count / bounded sum / bounded mean on the medical data, or a typed value.

Neighbours are those of every other page — one patient's record **added or removed** — for the COUNT (Δ = 1) and
the bounded SUM (Δ = max(|L|, |U|)). The bounded MEAN keeps n public and is the labelled exception: one record
**replaced** (Δ = (U − L)/n; under add/remove its guarantee is worth up to 2ε), as the query console's MEAN with a
public n. Deliberately apart from :class:`dpcore.queries.model.Query` (the console and its ledger): its true answers
are NOT private and are never charged to a ledger. :func:`release` draws "Release one answer" through
:mod:`dpcore.noise.release`, on the same grid and with the same whole-number noise as the console.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..errors import DPError
from ..validation import check_bounds, check_positive_int
from . import grid as _grid
from . import release as _release
from .charge import Charge, Neighbour
from .mechanisms import Mechanism, _finite, for_release

QUERY_KINDS = ("count", "sum", "mean")


@dataclass(frozen=True)
class QueryAnswer:
    """The true (NOT private) answer of a teaching query, its sensitivity and the relation Δ is computed for.

    COUNT and SUM: add or remove one record (the ledger's relation: SUM Δ = max(|L|, |U|)). MEAN: n public, one
    record replaced, Δ = (U − L)/n with all ε on it (add/remove would be noisy sum / noisy count). A custom value
    (:func:`custom`) takes the Δ the user claims, for the relation they claim. Never charged to a ledger; a
    :class:`~dpcore.noise.charge.Charge` built from it (:meth:`charge`) says its relation, and the ledger refuses a
    replace-one charge.
    """

    kind: str
    column: str
    true_value: float
    sensitivity: float
    n: int
    lower: float | None
    upper: float | None
    clamped: int  # rows whose value was outside [L, U] and was clamped
    description: str
    integer: bool  # a count: whole numbers, released with whole-number noise directly
    neighbour: Neighbour = Neighbour.ADD_REMOVE  # the relation Δ is computed for
    grid_sum: _grid.GridSum | None = None  # SUM, MEAN: the clamped values in whole grid steps (the release's input)

    def mechanism(self, name: str, epsilon: float, delta: float | None = None) -> Mechanism:
        """The mechanism whose figures describe a release (a count: its whole-number mechanism)."""
        return for_release(name, epsilon=epsilon, delta=delta, sensitivity=self.sensitivity, integer=self.integer)

    def charge(self, name: str, epsilon: float, delta: float | None = None) -> Charge:
        """What one release of this answer costs, under :attr:`neighbour`."""
        return self.mechanism(name, epsilon, delta).charge(neighbour=self.neighbour)


def bounded_sum_sensitivity(lower: float, upper: float) -> float:
    """Δ of a SUM clamped to [L, U] when one record is added or removed: max(|L|, |U|)."""
    lo, hi = check_bounds(lower, upper)
    return max(abs(lo), abs(hi))


def bounded_mean_sensitivity(lower: float, upper: float, n: int) -> float:
    """Δ of a MEAN clamped to [L, U] over a public n when one record is replaced: (U − L)/n."""
    lo, hi = check_bounds(lower, upper)
    rows = check_positive_int(n, "n (number of rows)")
    return (hi - lo) / rows


def clamp(values: ArrayLike, lower: float, upper: float) -> np.ndarray:
    lo, hi = check_bounds(lower, upper)
    out: np.ndarray = np.clip(np.asarray(values, dtype=float), lo, hi)
    return out


def query(
    df: pd.DataFrame,
    kind: str,
    column: str = "has_rare_disease",
    lower: float | None = None,
    upper: float | None = None,
) -> QueryAnswer:
    """Count / bounded sum / bounded mean on a data frame (the true answer: NOT private).

    count: rows where ``column`` is true (Δ = 1). sum / mean: values clamped to the *public* bounds [lower, upper],
    rounded to the release grid (:mod:`dpcore.noise.grid`): sum Δ = max(|L|, |U|) (add/remove), mean Δ = (U − L)/n
    (n public, replace one).
    """
    if kind not in QUERY_KINDS:
        raise DPError(f"unknown query {kind!r}; choose one of {', '.join(QUERY_KINDS)}")
    if column not in df.columns:
        raise DPError(f"unknown column {column!r}; available: {', '.join(map(str, df.columns))}")
    n = check_positive_int(len(df), "n (number of rows)")
    col = df[column]
    if kind == "count":
        if not (pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col)):
            raise DPError(f"a count needs a yes/no column; {column!r} is not")
        true = int(col.astype(bool).sum())
        return QueryAnswer(
            "count", column, float(true), 1.0, n, None, None, 0, f"number of patients with {column} = yes", True
        )
    if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        raise DPError(f"a {kind} needs a numeric column; {column!r} is not")
    lo, hi = check_bounds(lower, upper, name="public bounds")
    raw = col.to_numpy(dtype=float)
    clamped_n = int(np.sum((raw < lo) | (raw > hi)))
    what = "the public bounds"
    if kind == "sum":
        gs = _grid.clamped_sum(raw, lo, hi, what=what)
        return QueryAnswer(
            "sum",
            column,
            gs.value(gs.units),
            bounded_sum_sensitivity(lo, hi),
            n,
            lo,
            hi,
            clamped_n,
            f"sum of {column} clamped to [{lo:g}, {hi:g}]",
            False,
            grid_sum=gs,
        )
    gs = _grid.centred_sum(raw, lo, hi, replace_one=True, what=what)
    return QueryAnswer(
        "mean",
        column,
        gs.value(gs.units, n),
        bounded_mean_sensitivity(lo, hi, n),
        n,
        lo,
        hi,
        clamped_n,
        f"mean of {column} clamped to [{lo:g}, {hi:g}] over n = {n:,} rows",
        False,
        Neighbour.REPLACE_ONE,
        gs,
    )


def custom(value: float, sensitivity: float) -> QueryAnswer:
    """A typed true value and the Δ the user claims (checked against what a release can represent)."""
    v = _finite(value, "true value")
    d = _finite(sensitivity, "sensitivity Δ")
    _grid.check_release(magnitude=abs(v), sensitivity=d, what="the true value")
    return QueryAnswer("custom", "", v, d, 0, None, None, 0, "custom value", False)


def release(answer: QueryAnswer, name: str, epsilon: float, delta: float | None = None) -> int | float:
    """ONE released answer through the release path (a secure source, never seeded): a count gets whole-number
    noise; a SUM or MEAN its clamped values on the grid plus noise in whole grid steps (a MEAN then divided by the
    public n); a custom value is rounded to its grid. Each call costs :meth:`QueryAnswer.charge`."""
    d = 0.0 if delta is None else delta
    if answer.grid_sum is None:
        return _release.release_answer(
            answer.true_value,
            mechanism=name,
            epsilon=epsilon,
            delta=d,
            sensitivity=answer.sensitivity,
            integer=answer.integer,
        )
    divide = answer.n if answer.kind == "mean" else 1
    return _release.release_sum(answer.grid_sum, mechanism=name, epsilon=epsilon, delta=d, divide_by=divide).values[0]
