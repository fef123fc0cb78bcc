"""Re-identification attacks on a release without names, and what DP does about them.

* :func:`find_matches` -- "find your neighbour": filter the release with a few facts (exact values or
  ranges) an attacker knows about one person, and say what the matching rows disclose.
* :func:`public_register` / :func:`link` -- linkage at scale: a synthetic voter-roll style register
  (name, birth year, age, sex, zip code) covering part of the same population (plus people who are not
  in the release), joined to the release on chosen quasi-identifiers. Scored against the hidden truth.
* :func:`dp_attack_simulation` -- the attacker asks the same questions as noisy counts at ε. This is a
  numpy *simulation* over many releases, for visualising success rates, not a release path (released
  answers go through :mod:`dpcore.noise.release`).

The classic defence, generalisation (age bands, zip prefixes), is :mod:`dpcore.attacks.generalise`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import limits
from ..data import datasets
from ..data.filters import (  # noqa: F401  (the attacker's form fields and --range; re-exported)
    Condition,
    mask_all,
    parse_condition,
    parse_field,
    parse_finite,
    parse_range,
    require_column,
    require_rows,
)
from ..errors import DPError
from ..noise.release import release_count
from ..validation import check_epsilon, check_positive_int
from .uniqueness import check_qis, check_sensitive, distinct_per_class, factor_codes, group_ids

#: Columns of the public register; ``person_id`` is kept only as hidden ground truth for scoring.
REGISTER_COLUMNS = ["name", "birth_year", "age", "sex", "zip_code"]
LINKABLE_COLUMNS = ["birth_year", "age", "sex", "zip_code"]
DEFAULT_LINK_ON = ["birth_year", "sex", "zip_code"]

#: The default "find your neighbour" scenario: 34 years old, lives in 10001, earns about $50-60k.
DEFAULT_SCENARIO = {"age": "34", "zip_code": "10001", "salary": "50000-60000"}


# --- conditions: the attacker's facts (one home: dpcore.data.filters) -----------------------------------


def parse_known(item: str) -> Condition:
    """``COL=VALUE`` (also !=, <, <=, >, >=) -> a condition."""
    return parse_condition(item, "a known fact")


@dataclass(frozen=True)
class NeighbourResult:
    matches: int
    records: pd.DataFrame  # the matching rows (at most max_records)
    conditions: tuple[Condition, ...]
    learned: tuple[str, ...]  # plain-language lines: what the attacker learns

    def to_dict(self) -> dict:
        return {
            "matches": self.matches,
            "conditions": [c.describe() for c in self.conditions],
            "learned": list(self.learned),
            "records": self.records.astype(object).where(self.records.notna(), None).to_dict("records"),
        }


def _learned(records: pd.DataFrame, matches: int, sensitive_columns, label=str) -> list[str]:
    if matches == 0:
        return [
            "No record matches these facts: either the person is not in the release or a fact is wrong. "
            "Try a range instead of an exact value."
        ]
    out = [
        f"{matches} record{'s' if matches != 1 else ''} match{'es' if matches == 1 else ''}."
        + (" Each extra fact (sex, birth year, a narrower salary) narrows them down." if matches > 1 else "")
    ]
    for col in sensitive_columns:
        if col not in records.columns:
            continue
        name = label(col)
        vc = records[col].astype(str).value_counts()
        if pd.api.types.is_bool_dtype(records[col]):
            k = int(records[col].sum())
            if matches == 1:
                out.append(
                    f"{name}: {'yes' if k else 'no'} — exactly one record, so the attacker learns it for certain."
                )
            else:
                out.append(
                    f"{name}: {k} of {matches} matches {'has' if k == 1 else 'have'} it "
                    f"(the attacker's belief: {k}/{matches} = {k / matches:.0%})."
                )
            continue
        if matches == 1:
            out.append(f"{name}: {vc.index[0]} — exactly one record, so the attacker learns it for certain.")
        elif len(vc) == 1:
            out.append(
                f"{name}: all {matches} matches have {vc.index[0]} — learned without knowing which "
                "row is the person (homogeneity)."
            )
        else:
            parts = ", ".join(f"{v} ({c})" for v, c in vc.items())
            out.append(f"{name}: {parts}.")
    return out


def match_mask(df: pd.DataFrame, conditions) -> np.ndarray:
    """Rows that satisfy every condition (at least one condition required)."""
    require_rows(df)
    conditions = tuple(c for c in conditions if c is not None)
    if not conditions:
        raise DPError("give at least one known fact (an exact value or a range), e.g. age=34")
    return mask_all(df, conditions)


def find_matches(
    df: pd.DataFrame, conditions, *, sensitive=None, max_records: int = 1000, label=str
) -> NeighbourResult:
    """Filter the release with the attacker's facts; return the matches and what they disclose.

    ``label`` names a sensitive column in the ``learned`` lines (the page's display names; default: as is)."""
    conditions = tuple(c for c in conditions if c is not None)
    mask = match_mask(df, conditions)
    idx = np.flatnonzero(mask)
    records = df.iloc[idx[:max_records]]
    if sensitive is None:
        sensitive = [c for c in datasets.SENSITIVE_COLUMNS if c in df.columns]
    elif isinstance(sensitive, str):
        sensitive = [sensitive]
    for s in sensitive:
        require_column(df, s, "sensitive column")
    return NeighbourResult(
        int(mask.sum()), records, conditions, tuple(_learned(records, int(mask.sum()), sensitive, label))
    )


# --- public register and linkage -------------------------------------------------------------------


def _fraction(value, name: str, *, upper: float = 1.0) -> float:
    x = parse_finite(value, name)
    if not 0.0 <= x <= upper:
        raise DPError(f"{name} must be between 0 and {upper:g}, got {x:g}")
    return x


def public_register(population: pd.DataFrame, *, coverage: float = 0.5, outsiders: float = 1.0, seed=0) -> pd.DataFrame:
    """A voter-roll style register: ``name, birth_year, age, sex, zip_code`` (+ hidden ``person_id``).

    ``coverage``: share of the release's people listed in the register (drawn at random with ``seed``).
    ``outsiders``: people in the register who are *not* in the release, per covered person (the area's
    voter roll is larger than one hospital's patient list). Outsiders come from the same generator with
    a derived seed and get negative ``person_id`` so they never count as the right person.
    """
    require_column(population, "person_id")
    require_column(population, "name")
    for c in LINKABLE_COLUMNS:
        require_column(population, c)
    coverage = _fraction(coverage, "register coverage")
    outsiders = _fraction(outsiders, "outsiders per covered person", upper=10.0)
    rng = np.random.default_rng(seed)
    n = len(population)
    k = int(round(coverage * n))
    chosen = np.sort(rng.choice(n, size=k, replace=False)) if k else np.array([], dtype=np.int64)
    inside = population.iloc[chosen][["person_id"] + REGISTER_COLUMNS]
    m = int(round(outsiders * k))
    parts = [inside]
    if m:
        out = datasets.medical_population(m, int(rng.integers(2**31)))[["person_id"] + REGISTER_COLUMNS].copy()
        out["person_id"] = -1 - np.arange(m, dtype=np.int64)
        parts.append(out)
    reg = pd.concat(parts, ignore_index=True)
    order = rng.permutation(len(reg))  # the register is not sorted by hospital
    return reg.iloc[order].reset_index(drop=True)


@dataclass(frozen=True)
class LinkageResult:
    on: tuple[str, ...]
    register_size: int
    in_release: int  # register entries who really are in the release (ground truth)
    matched_none: int
    matched_one: int  # entries whose QIs match exactly one release record
    matched_many: int
    right_person: int  # of matched_one: the record really is that person
    wrong_person: int  # of matched_one: an outsider pinned on someone else's record
    diagnoses_disclosed: int  # = right_person: a named person's diagnosis is now known
    rare_disclosed: int  # of those, with the rare disease
    attribute_disclosed: int  # entries in the release whose class has one sensitive value (any size)
    examples: pd.DataFrame

    @property
    def precision(self) -> float:
        return self.right_person / self.matched_one if self.matched_one else float("nan")

    @property
    def success_rate(self) -> float:
        """Share of register entries who are in the release and are re-identified."""
        return self.right_person / self.in_release if self.in_release else 0.0

    def to_dict(self) -> dict:
        d = {
            k: getattr(self, k)
            for k in (
                "register_size",
                "in_release",
                "matched_none",
                "matched_one",
                "matched_many",
                "right_person",
                "wrong_person",
                "diagnoses_disclosed",
                "rare_disclosed",
                "attribute_disclosed",
            )
        }
        return {"on": list(self.on), **d, "precision": self.precision, "success_rate": self.success_rate}


def link(
    release: pd.DataFrame, register: pd.DataFrame, on, *, sensitive: str = "diagnosis", n_examples: int = 20
) -> LinkageResult:
    """Join the register to the release on ``on``; score the unique matches against ``person_id``.

    ``release`` is the released table *plus* the hidden ``person_id`` (ground truth, never used to match).
    """
    require_rows(release)
    require_rows(register)
    on = check_qis(release, on)
    for c in on:
        require_column(register, c, "register column")
    for frame, what in ((release, "release"), (register, "register")):
        if "person_id" not in frame.columns:
            raise DPError(f"the {what} needs the hidden person_id column to score the attack")
    require_column(release, sensitive, "sensitive column")
    n, m = len(release), len(register)
    both = pd.concat([release[on], register[on]], ignore_index=True)
    ids, g = group_ids(both, on)  # one id space for both tables
    rel, reg = ids[:n], ids[n:]
    size = np.bincount(rel, minlength=g)
    row_of = np.full(g, -1, dtype=np.int64)
    row_of[rel] = np.arange(n)  # for classes of size 1: the only release row
    cnt = size[reg]
    one = cnt == 1
    matched_row = row_of[reg[one]]
    rel_pid = release["person_id"].to_numpy()
    reg_pid = register["person_id"].to_numpy()
    right = rel_pid[matched_row] == reg_pid[one]
    rare = 0
    if "has_rare_disease" in release.columns:
        rare = int(release["has_rare_disease"].to_numpy(dtype=bool)[matched_row][right].sum())
    s_codes, s_card = factor_codes(release[sensitive])
    distinct = distinct_per_class(rel, g, s_codes, s_card)
    in_rel = np.isin(reg_pid, rel_pid)
    attr = int((in_rel & (cnt >= 1) & (distinct[reg] == 1)).sum())

    reg_rows = np.flatnonzero(one)[:n_examples]
    ex_rel = matched_row[: len(reg_rows)]
    examples = register.iloc[reg_rows][["name"] + on].reset_index(drop=True)
    examples[f"linked {sensitive}"] = release[sensitive].iloc[ex_rel].astype(str).to_numpy()
    examples["right person?"] = right[: len(reg_rows)]
    return LinkageResult(
        on=tuple(on),
        register_size=m,
        in_release=int(in_rel.sum()),
        matched_none=int((cnt == 0).sum()),
        matched_one=int(one.sum()),
        matched_many=int((cnt > 1).sum()),
        right_person=int(right.sum()),
        wrong_person=int((~right).sum()),
        diagnoses_disclosed=int(right.sum()),
        rare_disclosed=rare,
        attribute_disclosed=attr,
        examples=examples,
    )


# --- DP defence (simulation) --------------------------------------------------------------------------

MAX_SENSITIVE_VALUES = limits.LINKAGE_MAX_SENSITIVE_VALUES


def dp_attack_simulation(
    df: pd.DataFrame, qis, sensitive: str, epsilons, *, n_releases: int = 200, n_targets: int = 200, seed=0
) -> dict:
    """The attacker's success at learning a target's sensitive value from noisy counts, against ε.

    For each target (a record drawn at random, ``seed``), the attacker knows its QIs and asks, for
    every sensitive value v, "how many records have these QIs and sensitive = v?". Those cells are
    disjoint, so the whole set of answers is ε-DP (parallel composition). Each answer gets Laplace(1/ε)
    noise; the attacker guesses the value with the largest noisy count. Repeated over ``n_releases``
    independent releases. Without noise this is exactly the attack on the raw release.

    SIMULATION with numpy noise, for visualising success rates; not a release path.
    """
    require_rows(df)
    qis = check_qis(df, qis)
    checked = check_sensitive(df, sensitive, qis)
    if checked is None:
        raise DPError("choose a sensitive column for the attacker to learn")
    sensitive = checked
    eps = [check_epsilon(e) for e in np.atleast_1d(epsilons)]
    if not eps:
        raise DPError("give at least one epsilon, e.g. 0.1, 1, 10")
    n_releases = check_positive_int(n_releases, "number of simulated releases")
    n_targets = check_positive_int(n_targets, "number of targets")
    seed = check_seed(seed)
    rng = np.random.default_rng(seed)
    ids, g = group_ids(df, qis)
    s_codes, v = factor_codes(df[sensitive])
    if v > MAX_SENSITIVE_VALUES:
        raise DPError(
            f"sensitive column {sensitive!r} has {v} different values; the simulation supports at "
            f"most {MAX_SENSITIVE_VALUES}. Choose a categorical column (or put it into bands)"
        )
    t_rows = pick_targets(len(df), n_targets, rng)
    t_class, t_value = ids[t_rows], s_codes[t_rows]
    # counts[t, v]: records in the target's class with sensitive value v
    cls_of_target = {c: i for i, c in enumerate(np.unique(t_class))}
    uniq = np.array(sorted(cls_of_target))
    sel = np.isin(ids, uniq)
    table = np.zeros((len(uniq), v), dtype=np.float64)
    np.add.at(table, (np.searchsorted(uniq, ids[sel]), s_codes[sel]), 1.0)
    counts = table[np.searchsorted(uniq, t_class)]  # (T, V)
    tie = rng.random(counts.shape) * 1e-9  # random tie-breaking

    def success(noisy):
        return np.argmax(noisy + tie, axis=-1) == t_value

    no_noise = float(success(counts).mean())
    prior = float(np.bincount(s_codes, minlength=v).max() / len(df))
    rows = []
    for e in eps:
        # each ε has its own stream (seed, ε): a point's figure does not depend on which other ε are asked
        noise = np.random.default_rng([seed, _eps_key(e)]).laplace(0.0, 1.0 / e, size=(n_releases,) + counts.shape)
        hits = success(counts[None] + noise)  # (R, T)
        rate = float(hits.mean())
        se = math.sqrt(max(rate * (1 - rate), 1e-12) / hits.size)
        rows.append(
            {
                "epsilon": e,
                "success_rate": rate,
                "ci_low": max(0.0, rate - 1.96 * se),
                "ci_high": min(1.0, rate + 1.96 * se),
            }
        )
    return {
        "curve": pd.DataFrame(rows),
        "no_noise": no_noise,
        "prior_guess": prior,
        "n_targets": int(len(t_rows)),
        "n_releases": n_releases,
        "n_values": int(v),
        "qis": qis,
        "sensitive": sensitive,
        "simulation": True,
    }


def pick_targets(n: int, n_targets: int, seed) -> np.ndarray:
    """The attacker's targets: ``n_targets`` distinct rows of ``n`` drawn with ``seed`` (an int or a Generator).
    Every attack on the same story draws them here, so the defences are scored on the same patients."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(check_seed(seed))
    return rng.choice(n, size=min(int(n_targets), n), replace=False)


def attribute_guess(
    release: pd.DataFrame, targets: pd.DataFrame, qis, sensitive: str, *, fallback=None, seed=0
) -> tuple[np.ndarray, np.ndarray]:
    """The attacker who knows each target's quasi-identifiers looks them up in ``release`` and guesses the
    ``sensitive`` value most common among the rows that match (ties broken at random with ``seed``).

    Works on any release that shares the targets' representation: the exact table, a generalised one (targets
    generalised alike) or a synthetic one (both as declared codes). Returns (guess per target, rows matched per
    target); a target matching no row gets ``fallback`` (default: the release's most common value).
    """
    require_rows(release)
    qis = check_qis(release, qis)
    for q in qis:
        require_column(targets, q, "quasi-identifier column")
    require_column(release, sensitive, "sensitive column")
    n = len(release)
    ids, g = group_ids(pd.concat([release[qis], targets[qis]], ignore_index=True), qis)
    r_ids, t_ids = ids[:n], ids[n:]
    s_codes, uniques = pd.factorize(release[sensitive], use_na_sentinel=False)
    v = len(uniques)
    if v > MAX_SENSITIVE_VALUES:
        raise DPError(
            f"sensitive column {sensitive!r} has {v} different values; at most {MAX_SENSITIVE_VALUES} "
            "can be guessed. Choose a categorical column (or put it into bands)"
        )
    t_cls, t_pos = np.unique(t_ids, return_inverse=True)
    table = np.zeros((len(t_cls), v))
    sel = np.isin(r_ids, t_cls)
    np.add.at(table, (np.searchsorted(t_cls, r_ids[sel]), s_codes[sel]), 1.0)
    counts = table[t_pos]
    rng = np.random.default_rng(check_seed(seed))
    best = np.argmax(counts + rng.random(counts.shape) * 1e-9, axis=1)
    matched = counts.sum(axis=1).astype(np.int64)
    if fallback is None:
        fallback = uniques[int(np.argmax(np.bincount(s_codes, minlength=v)))]
    guess = np.asarray(uniques, dtype=object)[best]
    guess[matched == 0] = fallback
    return guess, matched


def _eps_key(epsilon: float) -> int:
    return int(round(float(epsilon) * 1e6))


def check_seed(seed) -> int:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise DPError(f"simulation seed must be a whole number from 0 to {2**32 - 1}, got {seed!r}")
    return int(seed)


def noisy_neighbour_count(df: pd.DataFrame, conditions, *, epsilon: float, random_state=None) -> int:
    """The neighbour query answered as one DP count (geometric mechanism via :mod:`dpcore.noise.release`)."""
    res = find_matches(df, conditions, max_records=0)
    return release_count(res.matches, epsilon=epsilon, random_state=random_state)
