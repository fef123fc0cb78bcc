"""The differencing attack: why "we only answer aggregates over large groups" is not privacy.

A query interface answers only ``COUNT(*)`` and ``AVG(age)`` over groups of at least ``min_group``
people. The attacker knows the target's name and asks, for a large group G the target is *not* in::

    COUNT(*), AVG(age) WHERE name = 'target' OR <G>      -> c1, x
    COUNT(*), AVG(age) WHERE <G>                          -> c2, y

and recovers the target's exact age as ``x·c1 − y·c2`` (e.g. 49.5·96 − 49·95 = 97). Both groups are
large, so every query is allowed.

With differential privacy each answer gets Laplace noise. The noisy interface releases, per group,

* ``COUNT'`` = COUNT + discrete Laplace noise of scale 1/ε (geometric mechanism; one person changes a
  count by at most 1), and
* ``AVG' = 18 + SUM'/max(COUNT', 1)`` with ``SUM' = Σ clip(age − 18, 0, 72) + Lap(72/ε)``: ages are
  shifted by the public lower bound 18, so adding or removing one person changes the sum by at most
  ``Δ = 90 − 18 = 72``. AVG' is post-processing of SUM' and COUNT' and costs only the SUM's ε.

The noisy interface has no minimum group size: a refusal decided on the exact count would itself leak
(it is not DP), and the noise already covers small groups. Each of the attacker's 4 queries spends ε;
the groups overlap, so by sequential composition the attack as a whole is ``4ε``-DP. The target is
only in the first group, so the target's own privacy loss is at most ``2ε``. The attacker's best estimate undoes the division (the rule is public):
``(AVG'₁ − 18)·max(COUNT'₁, 1) − (AVG'₂ − 18)·max(COUNT'₂, 1) + 18 = age + L₁ − L₂`` with
``Lᵢ ~ Lap(72/ε)``, clipped to the public bounds 18–90. Unclipped, ``P(|error| ≤ k)`` is exactly
``1 − e^{−k/b}(1 + k/(2b))`` with ``b = 72/ε`` (difference of two Laplace variables); clipping can only help
the attacker, so the simulated rate is at least this.

One example release is drawn through :mod:`dpcore.noise.release` (diffprivlib); the distribution over many
releases is a plain-numpy *simulation* (vectorised, seeded).
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
from ..noise.release import release_count, release_value
from ..validation import _as_float, check_epsilon, check_positive_int
from .reidentification import label as column_label

#: Public bounds of the attacked column (domain knowledge, not the data's min/max).
AGE_LOW, AGE_HIGH = datasets.PUBLIC_BOUNDS["age"]
SUM_SENSITIVITY = AGE_HIGH - AGE_LOW  # 72: one person moves Σ(age − 18) by at most this
COUNT_SENSITIVITY = 1.0
QUERIES_PER_ATTACK = 4  # COUNT and AVG for two groups

DEFAULT_N = 5_000
DEFAULT_SEED = 2  # with n = 5000 this population holds exactly one "Jan Kees" and 96 Peters
DEFAULT_MIN_GROUP = 50
DEFAULT_TARGET_NAME = "Jan Kees"
DEFAULT_GROUP_FIRST_NAME = "Peter"
MAX_TRIALS = limits.DIFFERENCING_MAX_TRIALS
MAX_CURVE_CELLS = limits.DIFFERENCING_MAX_CURVE_CELLS  # epsilons × trials in one vectorised simulation

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
        raise DPError(f"population size n must be at most {limits.DIFFERENCING_MAX_N:,}, got {n:,}; "
                      f"try {DEFAULT_N:,}")
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
        return {"step": self.step, "query": self.sql(), "aggregate": self.aggregate, "where": self.where,
                "answer": self.answer, "refused": self.refused, "message": self.message}


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
        return float(self._ask(f"AVG({self.column})", where,
                               lambda m: float(self.df[self.column].to_numpy(dtype=np.float64)[m].mean())))


# --- validation helpers ----------------------------------------------------------------------------


def check_min_group(value) -> int:
    try:
        return check_positive_int(value, "minimum group size N")
    except DPError:
        raise DPError(f"minimum group size N must be a whole number > 0, got {value!r}; try 10–100") from None


def check_within(k) -> float:
    k = _as_float(k, "k (years)")
    if math.isinf(k) or k < 0:
        raise DPError(f"k (years) must be a finite number >= 0, got {k:g}; try 1–5")
    return k


def check_trials(trials) -> int:
    t = check_positive_int(trials, "number of simulated releases")
    if t > MAX_TRIALS:
        raise DPError(f"number of simulated releases must be at most {MAX_TRIALS:,}, got {t:,}")
    return t


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
        raise DPError(f"{len(pos)} people are named {name!r}; pick the target by person id instead "
                      f"(ids {', '.join(map(str, df['person_id'].to_numpy()[pos][:5]))})")
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
    conj = {"name": str(row["name"])}
    for col in [None, *_DISAMBIGUATE]:
        if col is not None:
            v = row[col]
            conj[col] = int(v) if isinstance(v, (np.integer, int)) else str(v)
        if int(Where.of(conj).mask(df).sum()) == 1:
            return Where.of(conj)
    raise DPError(f"person {int(row['person_id'])} cannot be singled out by name, zip, sex, birth year and "
                  "ethnicity; pick another target")


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
        return (f"x·c₁ − y·c₂ = {self.avg_with:.6g}·{self.count_with} − "
                f"{self.avg_group:.6g}·{self.count_group} = "
                f"{self.avg_with * self.count_with:.6g} − {self.avg_group * self.count_group:.6g} = "
                f"{self.recovered:g}")

    def as_dict(self) -> dict:
        return {
            "target": {"person_id": self.target_id, "name": self.target_name, "where": self.target_sql},
            "group": {"where": self.group_sql, "columns": self.group, "size": self.group_size},
            "min_group": self.min_group,
            "queries": [q.as_dict() for q in self.queries],
            "count_with_target": self.count_with, "avg_with_target": self.avg_with,
            "count_group": self.count_group, "avg_group": self.avg_group,
            "formula": self.formula(),
            "recovered_value": self.recovered,
            "true_value": self.true_value,
            "true_value_note": "not private: read from the hidden data to check the attack",
            "exact": self.exact,
        }


def run_attack(df: pd.DataFrame, *, target_name: str | None = None, target_id=None, group=None,
               min_group: int = DEFAULT_MIN_GROUP) -> AttackResult:
    """Run the differencing attack against an exact, size-restricted interface."""
    min_group = check_min_group(min_group)
    pos = find_target(df, name=target_name, person_id=target_id)
    group = default_group(df, pos) if group is None else parse_group(group, df)
    g_where = Where.of(group)
    t_where = target_where(df, pos)
    if g_where.mask(df)[pos]:
        raise DPError(f"the target is already in the group ({g_where.sql()}); pick a group the target is not in, "
                      "e.g. another first name")
    group_size = int(g_where.mask(df).sum())
    if group_size < min_group:
        raise DPError(f"the group {g_where.sql()} has fewer than {min_group} people, so the interface would "
                      f"refuse it; pick a larger group (e.g. first_name=Peter or zip_code=10001) or a smaller N")
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
    return AttackResult(int(df["person_id"].iloc[pos]), str(df["name"].iloc[pos]), t_where.sql(), group,
                        g_where.sql(), min_group, list(api.log), c1, x, c2, y, recovered, truth, group_size,
                        t_where.as_dicts()[0])


# --- the attack against a DP interface -------------------------------------------------------------


def privacy_cost(epsilon) -> dict:
    """How ε composes over the attacker's queries (basic sequential composition, pure ε-DP, δ = 0)."""
    eps = check_epsilon(epsilon)
    return {
        "epsilon_per_query": eps,
        "queries": QUERIES_PER_ATTACK,
        "total_epsilon": QUERIES_PER_ATTACK * eps,
        "target_epsilon": 2 * eps,
        "delta": 0.0,
        "composition": (f"{QUERIES_PER_ATTACK} queries × ε = {QUERIES_PER_ATTACK * eps:g} by sequential "
                        f"composition (the groups overlap, so parallel composition does not apply); the target "
                        f"is only in the first group, so their own loss is at most 2ε = {2 * eps:g}"),
        "noise_scale_count": COUNT_SENSITIVITY / eps,
        "noise_scale_sum": SUM_SENSITIVITY / eps,
    }


def _shifted_sum(df: pd.DataFrame, where: Where) -> float:
    ages = df["age"].to_numpy(dtype=np.float64)[where.mask(df)]
    return float(np.clip(ages - AGE_LOW, 0.0, SUM_SENSITIVITY).sum())


def noisy_release(df: pd.DataFrame, attack: AttackResult, epsilon, *, seed=None) -> dict:
    """One release of the attacker's 4 queries through diffprivlib (geometric count, Laplace sum).

    ``seed`` makes the example reproducible (for teaching and tests); a seeded release is not a secure one.
    """
    eps = check_epsilon(epsilon)
    both = Where.of(attack.target_conditions) | Where.of(attack.group)
    groups = [("target OR group", both), ("group", Where.of(attack.group))]
    if seed is not None and not isinstance(seed, np.random.Generator):
        seed = limits.check_int_range(seed, 0, 2**63 - 1, "release seed")
    base = None if seed is None else int(np.random.default_rng(seed).integers(0, 2**31 - 1))
    rows, sums, counts = [], [], []
    for i, (label, where) in enumerate(groups):
        c = int(where.mask(df).sum())
        rs_c = None if base is None else base + 2 * i
        rs_s = None if base is None else base + 2 * i + 1
        c_noisy = release_count(c, epsilon=eps, sensitivity=1, random_state=rs_c)
        s_noisy = release_value(_shifted_sum(df, where), mechanism="laplace", epsilon=eps,
                                sensitivity=SUM_SENSITIVITY, random_state=rs_s)
        avg_noisy = AGE_LOW + s_noisy / max(c_noisy, 1)
        rows.append({"group": label, "where": where.sql(), "count_noisy": c_noisy, "avg_noisy": avg_noisy})
        sums.append((avg_noisy - AGE_LOW) * max(c_noisy, 1))
        counts.append(c_noisy)
    naive = rows[0]["avg_noisy"] * counts[0] - rows[1]["avg_noisy"] * counts[1]
    estimate = float(np.clip(AGE_LOW + sums[0] - sums[1], AGE_LOW, AGE_HIGH))
    return {"answers": rows, "naive_estimate": naive, "estimate": estimate,
            "error": estimate - attack.true_value, "seeded": seed is not None, **privacy_cost(eps)}


def analytic_success(epsilon, k) -> np.ndarray:
    """Exact P(|L₁ − L₂| ≤ k), Lᵢ ~ Lap(72/ε): the unclipped attacker's success. Vectorised over ε."""
    eps = np.asarray(epsilon, dtype=np.float64)
    k = check_within(k)
    b = SUM_SENSITIVITY / eps
    return 1.0 - np.exp(-k / b) * (1.0 + k / (2.0 * b))


def simulate_estimates(true_value: float, epsilons, trials: int, rng) -> np.ndarray:
    """Simulation (plain numpy): the attacker's clipped estimate over ``trials`` releases at each ε.

    Returns an array of shape ``(len(epsilons), trials)``. Only the sums' noise matters to this attacker.
    """
    eps = np.atleast_1d(np.asarray(epsilons, dtype=np.float64))
    for e in eps:
        check_epsilon(e)
    trials = check_trials(trials)
    if eps.size * trials > MAX_CURVE_CELLS:
        raise DPError(f"{eps.size} ε values × {trials:,} releases is too much to simulate at once; "
                      f"use fewer releases (at most {MAX_CURVE_CELLS // eps.size:,})")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    b = (SUM_SENSITIVITY / eps)[:, None]
    noise = rng.laplace(0.0, 1.0, size=(2, eps.size, trials))
    est = true_value + b * (noise[0] - noise[1])
    return np.clip(est, AGE_LOW, AGE_HIGH)


def _truth(attack) -> float:
    value = attack.true_value if isinstance(attack, AttackResult) else attack
    value = _as_float(value, "true value")
    if not AGE_LOW <= value <= AGE_HIGH:
        raise DPError(f"true value must lie within the public bounds {AGE_LOW:g}–{AGE_HIGH:g}, got {value:g}")
    return value


def _sim_seed(seed):
    return seed if isinstance(seed, np.random.Generator) else limits.check_seed(seed, "simulation seed")


def simulate(attack: AttackResult | float, epsilon, *, k=5, trials: int = 10_000, seed=0) -> dict:
    """Simulated distribution of the attacker's estimate at one ε and its success rate within ±k years.

    ``attack`` is an :class:`AttackResult` or just the target's true age.
    """
    truth = _truth(attack)
    eps = check_epsilon(epsilon)
    k = check_within(k)
    est = simulate_estimates(truth, [eps], trials, np.random.default_rng(_sim_seed(seed)))[0]
    err = est - truth
    q = np.quantile(est, [0.05, 0.25, 0.5, 0.75, 0.95])
    return {
        "label": "simulation (plain numpy, seeded): not a release",
        "epsilon_per_query": eps, "k_years": k, "trials": int(est.size), "seed": seed,
        "success_probability": float(np.mean(np.abs(err) <= k)),
        "analytic_success_unclipped": float(analytic_success(eps, k)),
        "mean_abs_error": float(np.mean(np.abs(err))),
        "estimate_quantiles": dict(zip(["p05", "p25", "p50", "p75", "p95"], map(float, q))),
        "estimates": est,
    }


def success_curve(attack: AttackResult | float, *, k=5, trials: int = 4_000, seed=0,
                  epsilons=None) -> pd.DataFrame:
    """P(|estimate − truth| ≤ k) against ε per query: simulated (clipped) and exact (unclipped)."""
    truth = _truth(attack)
    k = check_within(k)
    eps = np.logspace(-2, 3, 41) if epsilons is None else np.asarray(epsilons, dtype=np.float64)
    est = simulate_estimates(truth, eps, trials, np.random.default_rng(_sim_seed(seed)))
    sim = np.mean(np.abs(est - truth) <= k, axis=1)
    return pd.DataFrame({"epsilon_per_query": eps, "total_epsilon": QUERIES_PER_ATTACK * eps,
                         "simulated": sim, "analytic_unclipped": analytic_success(eps, k)})
