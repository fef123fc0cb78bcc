"""The noise page's teaching query: count / bounded sum / bounded mean on the medical data, REPLACE-ONE neighbours.

Deliberately apart from :class:`dpcore.queries.model.Query` (the query console and its ledger, add/remove one
row): see :class:`QueryAnswer`. Its true answers are NOT private and are never charged to a ledger.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import DPError
from ..validation import check_bounds, check_positive_int
from .charge import Neighbour
from .mechanisms import Mechanism, for_release


QUERY_KINDS = ("count", "sum", "mean")


@dataclass(frozen=True)
class QueryAnswer:
    """The true (NOT private) answer of a teaching query and its sensitivity under REPLACE-ONE neighbours.

    This is the noise page's teaching view, deliberately apart from :class:`~dpcore.queries.model.Query` (the query
    console and its ledger, add/remove one row): here the number of rows n is public and neighbours swap one
    record, so a bounded SUM has Δ = U − L (add/remove: max(|L|, |U|)) and a MEAN Δ = (U − L)/n with all ε on
    it (add/remove: noisy sum / noisy count). Its answers are never charged to a ledger; ``neighbour`` says the
    relation so that a :class:`~dpcore.noise.charge.Charge` built from it (:meth:`charge`) says it too, and the ledger
    refuses it.
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
    integer: bool  # a count: released through the integer (geometric) mechanism
    neighbour: Neighbour = Neighbour.REPLACE_ONE  # the relation Δ is computed for (explicit, never the ledger's)

    def mechanism(self, name: str, epsilon, delta=None) -> Mechanism:
        """The mechanism that releases this answer (a count under Laplace: geometric)."""
        return for_release(name, epsilon=epsilon, delta=delta, sensitivity=self.sensitivity, integer=self.integer)

    def charge(self, name: str, epsilon, delta=None):
        """What one release of this answer costs, under :attr:`neighbour` (replace-one)."""
        return self.mechanism(name, epsilon, delta).charge(neighbour=self.neighbour)


def bounded_sum_sensitivity(lower, upper) -> float:
    lo, hi = check_bounds(lower, upper)
    return hi - lo


def bounded_mean_sensitivity(lower, upper, n) -> float:
    lo, hi = check_bounds(lower, upper)
    rows = check_positive_int(n, "n (number of rows)")
    return (hi - lo) / rows


def clamp(values, lower, upper) -> np.ndarray:
    lo, hi = check_bounds(lower, upper)
    return np.clip(np.asarray(values, dtype=float), lo, hi)


def query(df: pd.DataFrame, kind: str, column: str = "has_rare_disease", lower=None, upper=None) -> QueryAnswer:
    """Count / bounded sum / bounded mean on a data frame (the true answer: NOT private).

    count: rows where ``column`` is true (Δ = 1). sum / mean: values clamped to the *public* bounds
    [lower, upper] (Δ = U − L and (U − L)/n, n public).
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
        return QueryAnswer("count", column, float(true), 1.0, n, None, None, 0,
                           f"number of patients with {column} = yes", True)
    if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        raise DPError(f"a {kind} needs a numeric column; {column!r} is not")
    lo, hi = check_bounds(lower, upper)
    raw = col.to_numpy(dtype=float)
    clamped_n = int(np.sum((raw < lo) | (raw > hi)))
    vals = np.clip(raw, lo, hi)
    if kind == "sum":
        return QueryAnswer("sum", column, float(vals.sum()), hi - lo, n, lo, hi, clamped_n,
                           f"sum of {column} clamped to [{lo:g}, {hi:g}]", False)
    return QueryAnswer("mean", column, float(vals.mean()), bounded_mean_sensitivity(lo, hi, n), n, lo, hi,
                       clamped_n, f"mean of {column} clamped to [{lo:g}, {hi:g}] over n = {n:,} rows", False)
