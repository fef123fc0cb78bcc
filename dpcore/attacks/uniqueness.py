"""How unique are people? Equivalence classes on quasi-identifiers, k-anonymity, ℓ-diversity, risk.

Records that agree on every quasi-identifier (QI) form an *equivalence class*. A record alone in its
class is *unique*: whoever knows those few facts about a person finds exactly their row.

* k-anonymity = the size of the smallest class (every record hides among at least k - 1 others).
* ℓ-diversity (distinct) = the smallest number of distinct sensitive values inside any class.
* Prosecutor risk of a record = 1 / (size of its class); we report the highest (= 1/k) and the
  average over records (= number of classes / n).

Everything is vectorised: each column is factorised once (hash table, O(n)), the codes of the QIs are
combined into one integer per record and re-factorised, so adding QIs one by one costs one extra pass
per QI. One million rows with four QIs take well under a second (see ``bench/uniqueness.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from ..data.datasets import QUASI_IDENTIFIERS
from ..data.filters import require_column, require_rows
from ..errors import DPError

# --- input checks ------------------------------------------------------------------------------------


#: Column names that hold facts anyone can know about a person (the synthetic medical data's quasi-identifiers and
#: their usual spellings elsewhere).
QI_NAMES = (
    *QUASI_IDENTIFIERS,
    *("gender", "zip", "zipcode", "postcode", "postal_code", "dob", "date_of_birth", "birth_date", "race", "county"),
)


def suggested_qis(columns) -> list[str]:
    """An upload's quasi-identifiers to suggest, from its column names alone (never its rows, never the first
    columns by position): the columns named as such facts, in the table's order. The owner checks them."""
    known = {q.lower() for q in QI_NAMES}
    return [str(c) for c in columns if str(c).strip().lower() in known]


def check_qis(df: pd.DataFrame, qis) -> list[str]:
    """Quasi-identifiers as a list of existing, distinct column names (a 'a,b,c' string is accepted)."""
    if qis is None:
        qis = []
    if isinstance(qis, str):
        qis = [q.strip() for q in qis.split(",")]
    qis = [q for q in qis if str(q).strip()]
    if not qis:
        raise DPError("choose at least one quasi-identifier column (for example age, sex, zip_code)")
    dupes = sorted({q for q in qis if qis.count(q) > 1})
    if dupes:
        raise DPError(f"quasi-identifier listed twice: {', '.join(dupes)}; list each column once")
    for q in qis:
        require_column(df, q, "quasi-identifier column")
    return list(qis)


def check_sensitive(df: pd.DataFrame, sensitive, qis=()) -> str | None:
    """The sensitive column: must exist, not be a QI, and hold at least two distinct values."""
    if sensitive is None or (isinstance(sensitive, str) and not sensitive.strip()):
        return None
    require_column(df, sensitive, "sensitive column")
    if sensitive in qis:
        raise DPError(
            f"{sensitive!r} is chosen both as a quasi-identifier and as the sensitive column; "
            "pick a different sensitive column"
        )
    values = pd.unique(df[sensitive])
    if len(values) < 2:
        only = values[0] if len(values) else "nothing"
        raise DPError(
            f"sensitive column {sensitive!r} has only one value ({only!r}): everyone's value is "
            "known without any attack, so ℓ-diversity means nothing; choose a column with at "
            "least two different values"
        )
    return sensitive


# --- vectorised grouping -----------------------------------------------------------------------------


def factor_codes(values) -> tuple[np.ndarray, int]:
    """Dense integer codes of the values (0..K-1) and K; NaN is a value of its own."""
    codes, uniques = pd.factorize(values, use_na_sentinel=False)  # NaN is a value of its own
    return codes.astype(np.int64, copy=False), len(uniques)


def _combine(code: np.ndarray, card: int, column) -> tuple[np.ndarray, int]:
    """Dense ids of the pairs (code, column value)."""
    c, k = factor_codes(column)
    return factor_codes(code * k + c)  # card * k <= n * n < 2**63 for n up to 3e9


def group_ids(df: pd.DataFrame, qis) -> tuple[np.ndarray, int]:
    """Equivalence-class id (0..G-1) of every record on the given QIs, and G."""
    qis = check_qis(df, qis)
    code, card = factor_codes(df[qis[0]])
    for q in qis[1:]:
        code, card = _combine(code, card, df[q])
    return code, card


def class_size_per_record(df: pd.DataFrame, qis) -> np.ndarray:
    """Size of each record's equivalence class (1 = unique)."""
    ids, g = group_ids(df, qis)
    return np.bincount(ids, minlength=g)[ids]


def unique_ints(x: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an integer array (sort + diff: np.unique is far slower on numpy 2.4)."""
    s = np.sort(x)
    if len(s) == 0:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def distinct_per_class(ids: np.ndarray, g: int, sensitive_codes: np.ndarray, n_values: int) -> np.ndarray:
    """Number of distinct sensitive values in each of the G classes."""
    pairs = unique_ints(ids * n_values + sensitive_codes)
    return np.bincount(pairs // n_values, minlength=g)


# --- the report --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UniquenessReport:
    n: int
    qis: tuple[str, ...]
    sensitive: str | None
    n_classes: int
    unique_records: int
    unique_fraction: float
    k_anonymity: int
    l_diversity: int | None  # None without a sensitive column
    homogeneous_records: int | None  # records in classes with a single sensitive value
    prosecutor_risk_max: float
    prosecutor_risk_avg: float
    class_sizes: dict[int, int]  # class size -> number of classes of that size

    def to_dict(self) -> dict:
        d = asdict(self)
        d["qis"] = list(self.qis)
        return d

    def class_size_table(self) -> pd.DataFrame:
        sizes = np.array(list(self.class_sizes.keys()), dtype=np.int64)
        classes = np.array(list(self.class_sizes.values()), dtype=np.int64)
        return pd.DataFrame(
            {
                "class_size": sizes,
                "classes": classes,
                "records": sizes * classes,
                "share_of_records": sizes * classes / self.n,
            }
        )


def _report(n: int, qis, sensitive, ids: np.ndarray, g: int, sens=None) -> UniquenessReport:
    sizes = np.bincount(ids, minlength=g)
    per_size = np.bincount(sizes)  # per_size[s] = number of classes of size s
    vals = np.flatnonzero(per_size)
    counts = per_size[vals]
    l_div = homog = None
    if sens is not None:
        s_codes, s_card = sens
        distinct = distinct_per_class(ids, g, s_codes, s_card)
        l_div = int(distinct.min())
        homog = int(sizes[distinct == 1].sum())
    k = int(sizes.min())
    unique = int(counts[vals == 1].sum()) if (vals == 1).any() else 0
    return UniquenessReport(
        n=int(n),
        qis=tuple(qis),
        sensitive=sensitive,
        n_classes=int(g),
        unique_records=unique,
        unique_fraction=unique / n,
        k_anonymity=k,
        l_diversity=l_div,
        homogeneous_records=homog,
        prosecutor_risk_max=1.0 / k,
        prosecutor_risk_avg=g / n,
        class_sizes={int(v): int(c) for v, c in zip(vals, counts)},
    )


def uniqueness(df: pd.DataFrame, qis, sensitive=None) -> UniquenessReport:
    """Uniqueness, class sizes, k-anonymity, ℓ-diversity and prosecutor risk for the given QIs."""
    require_rows(df)
    qis = check_qis(df, qis)
    sensitive = check_sensitive(df, sensitive, qis)
    ids, g = group_ids(df, qis)
    sens = factor_codes(df[sensitive]) if sensitive else None
    return _report(len(df), qis, sensitive, ids, g, sens)


def incremental(df: pd.DataFrame, qis, sensitive=None) -> pd.DataFrame:
    """One row per step as the QIs are added in the given order: uniqueness, k, ℓ, risk after each."""
    require_rows(df)
    qis = check_qis(df, qis)
    sensitive = check_sensitive(df, sensitive, qis)
    sens = factor_codes(df[sensitive]) if sensitive else None
    rows = []
    code, card = factor_codes(df[qis[0]])
    for i, q in enumerate(qis):
        if i:
            code, card = _combine(code, card, df[q])
        r = _report(len(df), qis[: i + 1], sensitive, code, card, sens)
        rows.append(
            {
                "step": i + 1,
                "added": q,
                "quasi_identifiers": " + ".join(qis[: i + 1]),
                "classes": r.n_classes,
                "unique_records": r.unique_records,
                "unique_fraction": r.unique_fraction,
                "k_anonymity": r.k_anonymity,
                "l_diversity": r.l_diversity,
                "prosecutor_risk_max": r.prosecutor_risk_max,
                "prosecutor_risk_avg": r.prosecutor_risk_avg,
            }
        )
    return pd.DataFrame(rows)


def uniqueness_loop(df: pd.DataFrame, qis, sensitive=None) -> dict:
    """The straightforward per-row Python loop (dict of tuples), for the benchmark and as a test oracle."""
    qis = check_qis(df, qis)
    cols = [df[q].tolist() for q in qis]
    sens = df[sensitive].tolist() if sensitive else None
    sizes: dict = {}
    values: dict = {}
    for i in range(len(df)):
        key = tuple(c[i] for c in cols)
        sizes[key] = sizes.get(key, 0) + 1
        if sens is not None:
            values.setdefault(key, set()).add(sens[i])
    n = len(df)
    k = min(sizes.values())
    unique = sum(1 for s in sizes.values() if s == 1)
    out = {
        "n": n,
        "n_classes": len(sizes),
        "unique_fraction": unique / n,
        "k_anonymity": k,
        "prosecutor_risk_max": 1 / k,
        "prosecutor_risk_avg": len(sizes) / n,
    }
    if sens is not None:
        out["l_diversity"] = min(len(v) for v in values.values())
    return out
