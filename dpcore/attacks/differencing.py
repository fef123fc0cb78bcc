"""The differencing attack: why "we only answer aggregates over large groups" is not privacy.

A query interface answers only ``COUNT(*)`` and ``AVG(age)`` over groups of at least ``min_group``
people. The attacker knows the target's name and asks, for a large group G the target is *not* in::

    COUNT(*), AVG(age) WHERE name = 'target' OR <G>      -> c1, x
    COUNT(*), AVG(age) WHERE <G>                          -> c2, y

and recovers the target's exact age as ``x·c1 − y·c2`` (e.g. 49.5·96 − 49·95 = 97). Both groups are
large, so every query is allowed.

This module is the attack on exact answers: the population, WHERE clauses, the size-restricted interface, the
choice of target and group, and :func:`run_attack`. The same attack against a differentially private interface —
the noisy release, its cost and the simulation of the attacker's estimate — is :mod:`dpcore.attacks.differencing_dp`
(split by idea: the attack, and what noise does to it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import limits
from ..data import datasets
from ..data.filters import Condition, mask_any
from ..errors import DPError
from ..validation import check_positive_int
from .reidentification import label as column_label

DEFAULT_N = 5_000
DEFAULT_SEED = 2  # with n = 5000 this population holds exactly one "Jan Kees" and 96 Peters
DEFAULT_MIN_GROUP = 50
DEFAULT_TARGET_NAME = "Jan Kees"
DEFAULT_GROUP_FIRST_NAME = "Peter"

#: Columns an attacker may use in WHERE clauses (the interface's schema).
QUERY_COLUMNS = ["name", "first_name", "last_name", "sex", "zip_code", "ethnicity", "birth_year", "age"]
#: Facts added, in order, when a target's name alone is not unique.
_DISAMBIGUATE = ["zip_code", "sex", "birth_year", "ethnicity"]


# --- the population the interface sits on ---------------------------------------------------------


def population(n: int = DEFAULT_N, seed=DEFAULT_SEED) -> pd.DataFrame:
    """The hidden population (with ``name``) plus ``first_name`` / ``last_name`` for group queries.

    ``n`` is capped at :data:`dpcore.limits.DIFFERENCING_MAX_N` (a link once asked for 5,000,000: ~20 s, ~2 GB).
    """
    n = check_positive_int(n, "population size n")
    if n > limits.DIFFERENCING_MAX_N:
        raise DPError(f"population size n must be at most {limits.DIFFERENCING_MAX_N:,}, got {n:,}; try {DEFAULT_N:,}")
    if not isinstance(seed, np.random.Generator):
        seed = limits.check_seed(seed, "data seed")
    pop = datasets.medical_population(n, seed)
    parts = pop["name"].astype(str).str.split(" ", n=1)
    pop.insert(2, "first_name", parts.str[0])
    pop.insert(3, "last_name", parts.str[1])
    return pop


# --- WHERE clauses ---------------------------------------------------------------------------------


def _sql_value(v) -> str:
    return f"'{v}'" if isinstance(v, str) else f"{v:g}" if isinstance(v, float) else str(v)


@dataclass(frozen=True)
class Where:
    """A WHERE clause: an OR of AND-ed ``column = value`` conditions (:class:`dpcore.data.filters.Condition`)."""

    any_of: tuple[tuple[Condition, ...], ...]

    @classmethod
    def of(cls, *conjunctions: dict) -> Where:
        return cls(tuple(tuple(Condition(c, "=", v) for c, v in conj.items()) for conj in conjunctions))

    def __or__(self, other: Where) -> Where:
        return Where(self.any_of + other.any_of)

    def as_dicts(self) -> list[dict]:
        """Each conjunction as ``{column: value}`` (the form :meth:`of` takes)."""
        return [{c.column: c.value for c in conj} for conj in self.any_of]

    def sql(self) -> str:
        parts = []
        for conj in self.any_of:
            s = " AND ".join(f"{c.column} {c.op} {_sql_value(c.value)}" for c in conj)
            parts.append(f"({s})" if len(conj) > 1 and len(self.any_of) > 1 else s)
        return " OR ".join(parts)

    def mask(self, df: pd.DataFrame) -> np.ndarray:
        return mask_any(df, self.any_of)


def group_words(group: dict, quote=str) -> str:
    """The group for a sentence: ``first name Peter``, ``zip code 10004 and sex F``.

    ``quote`` makes the values (typed by the user for a custom group) literal text where the sentence is shown
    (``textsafe.md`` on a page); the columns are the interface's own (:func:`parse_group` checks them)."""
    return " and ".join(f"{column_label(c)} {quote(v)}" for c, v in group.items())


def parse_group(spec, df: pd.DataFrame | None = None) -> dict:
    """``"first_name=Peter"`` or ``"zip_code=10001,sex=F"`` (or a dict) -> ``{column: value}``.

    Values are converted to the column's type when ``df`` is given.
    """
    if isinstance(spec, dict):
        items = list(spec.items())
    else:
        text = str(spec or "").strip()
        if not text:
            raise DPError("the group is empty; give COLUMN=VALUE[,COLUMN=VALUE], e.g. first_name=Peter")
        items = []
        for part in text.split(","):
            if "=" not in part:
                raise DPError(f"group part {part.strip()!r} is not COLUMN=VALUE; e.g. zip_code=10001,sex=F")
            col, val = part.split("=", 1)
            items.append((col.strip(), val.strip()))
    if not items:
        raise DPError("the group is empty; give at least one COLUMN=VALUE, e.g. first_name=Peter")
    out = {}
    for col, val in items:
        if col not in QUERY_COLUMNS:
            raise DPError(f"unknown group column {col!r}; use one of {', '.join(QUERY_COLUMNS)}")
        if col == "name":
            raise DPError("a group by full name is one person; use first_name, zip_code, sex, ... instead")
        out[col] = _coerce(val, col, df) if df is not None else val
    return out


def _coerce(val, col: str, df: pd.DataFrame):
    dtype = df[col].dtype
    if pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_bool_dtype(dtype):
        try:
            f = float(val)
        except (TypeError, ValueError):
            raise DPError(f"{col} must be a whole number, got {val!r}") from None
        if not math.isfinite(f) or f != int(f):
            raise DPError(f"{col} must be a whole number, got {val!r}")
        return int(f)
    return str(val)


# --- the "safe" interface: aggregates over large groups only ---------------------------------------


@dataclass
class QueryRecord:
    """One question the attacker asked and what the interface said."""

    step: int
    aggregate: str  # "COUNT(*)" or "AVG(age)"
    where: str  # SQL text of the WHERE clause
    answer: float | None  # None when refused
    refused: bool = False
    message: str = ""

    def sql(self) -> str:
        return f"SELECT {self.aggregate} FROM patients WHERE {self.where}"

    def as_dict(self) -> dict:
        return {
            "step": self.step,
            "query": self.sql(),
            "aggregate": self.aggregate,
            "where": self.where,
            "answer": self.answer,
            "refused": self.refused,
            "message": self.message,
        }


class GroupSizeRefused(DPError):
    """The interface refused a query over fewer than ``min_group`` people."""


class AggregateInterface:
    """Answers only COUNT(*) and AVG(age) over groups of at least ``min_group`` people (exact, not DP)."""

    def __init__(self, df: pd.DataFrame, min_group: int = DEFAULT_MIN_GROUP, column: str = "age"):
        self.df = df
        self.min_group = check_min_group(min_group)
        self.column = column
        self.log: list[QueryRecord] = []

    def _group(self, where: Where) -> np.ndarray:
        m = where.mask(self.df)
        size = int(m.sum())
        if size < self.min_group:
            # The refusal does not say how small the group is: that would itself leak a count.
            raise GroupSizeRefused(
                f"refused: WHERE {where.sql()} selects fewer than {self.min_group} people; this interface only "
                f"answers COUNT and AVG over groups of at least {self.min_group}"
            )
        return m

    def _ask(self, aggregate: str, where: Where, fn) -> float:
        step = len(self.log) + 1
        try:
            m = self._group(where)
        except GroupSizeRefused as err:
            self.log.append(QueryRecord(step, aggregate, where.sql(), None, True, str(err)))
            raise
        ans = fn(m)
        self.log.append(QueryRecord(step, aggregate, where.sql(), ans))
        return ans

    def count(self, where: Where) -> int:
        return int(self._ask("COUNT(*)", where, lambda m: int(m.sum())))

    def avg(self, where: Where) -> float:
        return float(
            self._ask(
                f"AVG({self.column})", where, lambda m: float(self.df[self.column].to_numpy(dtype=np.float64)[m].mean())
            )
        )


# --- validation helpers ----------------------------------------------------------------------------


def check_min_group(value) -> int:
    try:
        return check_positive_int(value, "minimum group size N")
    except DPError:
        raise DPError(f"minimum group size N must be a whole number > 0, got {value!r}; try 10–100") from None


# --- choosing the target and the group -------------------------------------------------------------


def find_target(df: pd.DataFrame, *, name: str | None = None, person_id=None) -> int:
    """Row position of the target, by name (must be unique) or by ``person_id``; default: Jan Kees."""
    if name is not None and person_id is not None:
        raise DPError("give the target either by name or by person id, not both")
    if person_id is not None:
        try:
            pid = int(person_id)
            ok = not isinstance(person_id, bool) and pid == float(person_id) and pid >= 0
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise DPError(f"person id must be a whole number >= 0, got {person_id!r}")
        pos = np.flatnonzero(df["person_id"].to_numpy() == pid)
        if len(pos) == 0:
            raise DPError(f"unknown target: no person with id {pid}; ids run from 0 to {len(df) - 1}")
        return int(pos[0])
    if name is None:
        return default_target(df)
    name = str(name).strip()
    pos = np.flatnonzero(df["name"].to_numpy() == name)
    if len(pos) == 0:
        examples = ", ".join(repr(s) for s in unique_names(df)[:3])
        raise DPError(f"unknown target: no one is named {name!r} in this population; try e.g. {examples}")
    if len(pos) > 1:
        raise DPError(
            f"{len(pos)} people are named {name!r}; pick the target by person id instead "
            f"(ids {', '.join(map(str, df['person_id'].to_numpy()[pos][:5]))})"
        )
    return int(pos[0])


def unique_names(df: pd.DataFrame) -> list[str]:
    """Names held by exactly one person (sorted): targets an attacker can name directly."""
    vc = df["name"].value_counts()
    return sorted(vc.index[vc.to_numpy() == 1].astype(str).tolist())


def default_target(df: pd.DataFrame) -> int:
    vc = df["name"].value_counts()
    if vc.get(DEFAULT_TARGET_NAME, 0) == 1:
        return int(np.flatnonzero(df["name"].to_numpy() == DEFAULT_TARGET_NAME)[0])
    names = unique_names(df)
    if not names:
        raise DPError("no one in this population has a unique name; pick the target by person id")
    return int(np.flatnonzero(df["name"].to_numpy() == names[0])[0])


def default_group(df: pd.DataFrame, target_pos: int) -> dict:
    """People with first name Peter (or, if the target is a Peter, the most common other first name)."""
    first = df["first_name"].iloc[target_pos]
    if first != DEFAULT_GROUP_FIRST_NAME:
        return {"first_name": DEFAULT_GROUP_FIRST_NAME}
    vc = df["first_name"].value_counts()
    return {"first_name": str(next(f for f in vc.index if f != first))}


def target_where(df: pd.DataFrame, target_pos: int) -> Where:
    """``name = '...'``, plus zip code, sex, ... when the name alone is shared (facts the attacker knows)."""
    row = df.iloc[target_pos]
    conj: dict[str, int | str] = {"name": str(row["name"])}
    for col in [None, *_DISAMBIGUATE]:
        if col is not None:
            v = row[col]
            conj[col] = int(v) if isinstance(v, (np.integer, int)) else str(v)
        if int(Where.of(conj).mask(df).sum()) == 1:
            return Where.of(conj)
    raise DPError(
        f"person {int(row['person_id'])} cannot be singled out by name, zip, sex, birth year and "
        "ethnicity; pick another target"
    )


# --- the attack without noise ----------------------------------------------------------------------


@dataclass
class AttackResult:
    target_id: int
    target_name: str
    target_sql: str
    group: dict
    group_sql: str
    min_group: int
    queries: list[QueryRecord]
    count_with: int  # c1: target + group
    avg_with: float  # x
    count_group: int  # c2
    avg_group: float  # y
    recovered: float  # x·c1 − y·c2
    true_value: float  # not private: the teaching view's ground truth
    group_size: int = 0
    target_conditions: dict = field(default_factory=dict)  # what the attacker knows: name (+ zip, sex ...)

    @property
    def exact(self) -> bool:
        return abs(self.recovered - self.true_value) < 1e-6

    def formula(self) -> str:
        return (
            f"x·c₁ − y·c₂ = {self.avg_with:.6g}·{self.count_with} − "
            f"{self.avg_group:.6g}·{self.count_group} = "
            f"{self.avg_with * self.count_with:.6g} − {self.avg_group * self.count_group:.6g} = "
            f"{self.recovered:g}"
        )

    def as_dict(self) -> dict:
        return {
            "target": {"person_id": self.target_id, "name": self.target_name, "where": self.target_sql},
            "group": {"where": self.group_sql, "columns": self.group, "size": self.group_size},
            "min_group": self.min_group,
            "queries": [q.as_dict() for q in self.queries],
            "count_with_target": self.count_with,
            "avg_with_target": self.avg_with,
            "count_group": self.count_group,
            "avg_group": self.avg_group,
            "formula": self.formula(),
            "recovered_value": self.recovered,
            "true_value": self.true_value,
            "true_value_note": "not private: read from the hidden data to check the attack",
            "exact": self.exact,
        }


def run_attack(
    df: pd.DataFrame, *, target_name: str | None = None, target_id=None, group=None, min_group: int = DEFAULT_MIN_GROUP
) -> AttackResult:
    """Run the differencing attack against an exact, size-restricted interface."""
    min_group = check_min_group(min_group)
    pos = find_target(df, name=target_name, person_id=target_id)
    group = default_group(df, pos) if group is None else parse_group(group, df)
    g_where = Where.of(group)
    t_where = target_where(df, pos)
    if g_where.mask(df)[pos]:
        raise DPError(
            f"the target is already in the group ({g_where.sql()}); pick a group the target is not in, "
            "e.g. another first name"
        )
    group_size = int(g_where.mask(df).sum())
    if group_size < min_group:
        raise DPError(
            f"the group {g_where.sql()} has fewer than {min_group} people, so the interface would "
            f"refuse it; pick a larger group (e.g. first_name=Peter or zip_code=10001) or a smaller N"
        )
    api = AggregateInterface(df, min_group)
    try:  # step 1: the direct question is refused
        api.avg(t_where)
    except GroupSizeRefused:
        pass
    both = t_where | g_where
    c1 = api.count(both)
    x = api.avg(both)
    c2 = api.count(g_where)
    y = api.avg(g_where)
    raw = x * c1 - y * c2
    recovered = float(round(raw, 6))  # ages are whole numbers; rounding removes float dust only
    truth = float(df["age"].iloc[pos])
    return AttackResult(
        int(df["person_id"].iloc[pos]),
        str(df["name"].iloc[pos]),
        t_where.sql(),
        group,
        g_where.sql(),
        min_group,
        list(api.log),
        c1,
        x,
        c2,
        y,
        recovered,
        truth,
        group_size,
        t_where.as_dicts()[0],
    )
