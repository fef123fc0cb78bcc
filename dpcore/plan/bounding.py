"""People, not rows: bound each person's contribution before anything is computed.

A person is the set of rows that share the person-id column's value. :func:`bound` keeps the first ``k`` rows of
each person in the data's order (a choice that depends on that person's rows alone, so removing a person changes no
one else's kept rows) and leaves out rows with no person id (they belong to no one we could bound; how many is
private and never stated). Every statistic of a plan is then computed on the kept rows, each value clamped to its
public bounds, so adding or removing one person changes:

* a count, or the cells of a histogram or a grouped statistic together, by at most k (L1: each kept row sits in
  exactly one cell);
* a bounded sum (all its cells together) by at most k·K grid steps, K = max(|r(lo)|, |r(hi)|)
  (:func:`dpcore.noise.grid.bounded_sum_k`); a mean's centred sum by k·K_c and its count by k;
* a quantile's scores by OpenDP's stability map at k rows (:func:`dpcore.noise.release.quantile_noise`).

A row-level plan (no person column) is the case k = 1 on rows. tests/dpcore/plan/test_bounding.py checks these
sensitivities by brute force: a person with ten rows, removed, never moves a released statistic by more.
"""

from __future__ import annotations

import pandas as pd

from ..data.filters import require_column
from ..errors import DPError
from .model import Unit


def bound(df: pd.DataFrame, unit: Unit) -> pd.DataFrame:
    """The rows a plan reads: all of them for a row-level plan; at most ``unit.max_rows`` per person (the first
    ones), rows without a person id left out, for a person-level plan."""
    if not unit.person_level:
        return df
    assert unit.person is not None
    col = require_column(df, unit.person, "person-id column")
    ids = df[col]
    keep = ids.notna().to_numpy()
    if not keep.any():
        raise DPError(f"the person-id column {unit.person!r} is empty: no row says whose it is")
    kept = df.loc[keep]
    rank = kept.groupby(kept[col], sort=False, observed=True).cumcount().to_numpy()
    return kept.loc[rank < unit.max_rows]


def rows_of(df: pd.DataFrame, unit: Unit, person: object) -> pd.DataFrame:
    """Every row of one person (tests and the brute-force check; private)."""
    assert unit.person is not None
    return df.loc[df[unit.person] == person]
