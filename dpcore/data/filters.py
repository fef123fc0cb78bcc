"""Rows where ``column op value``: the one Condition, its parsers, its mask and the column checks.

Every page that filters rows uses this module: the query console's COUNT condition and WHERE clauses
(:mod:`dpcore.queries`), the attacker's known facts (:mod:`dpcore.attacks.linkage`), the differencing groups
(:mod:`dpcore.attacks.differencing`), and the checks that a table has rows and a named column exists.

A :class:`Condition` is frozen: ``column``, ``op`` and ``value``. ``op`` is one of ``=, !=, <, <=, >, >=``
(``value`` kept as given, usually the text typed) or ``between`` (``value`` = ``(low, high)``, inclusive
at both ends, numbers only). Its :meth:`Condition.text` form parses back to an equal condition.

How a condition matches is decided by the column's type (:func:`column_kind`), once, here:

* **bool** — ``true/yes/y/t/1`` or ``false/no/n/f/0`` (any case); only ``=`` and ``!=``.
* **numeric** — the value as a number (``50,000`` and ``50_000`` are read as 50000); every operator and
  ranges. A value that can never match (``age=nan``, ``age>=nan``) is refused rather than answering 0.
* **categorical / text** — ``=`` and ``!=`` only, compared as text, ignoring case and surrounding spaces
  (``sex=f`` finds ``F``).

A missing value (NaN, None, ``pd.NA``) never matches, whatever the operator: ``age!=34`` does not count the
rows whose age is unknown (SQL's rule). Masks are vectorised: numbers in numpy, text with pandas' string
kernels, categorical columns once per category.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DPError

OPERATORS = (">=", "<=", "!=", "=", ">", "<")
BETWEEN = "between"
TRUE_WORDS = frozenset({"true", "1", "yes", "y", "t"})
FALSE_WORDS = frozenset({"false", "0", "no", "n", "f"})

_COND_RE = re.compile(r"^\s*(?P<col>[^<>=!]+?)\s*(?P<op>>=|<=|!=|=|>|<)\s*(?P<val>.*?)\s*$")
_NUM = r"[-+]?(?:\d[\d,_]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_RANGE_RE = re.compile(rf"^\s*({_NUM})\s*(?::|\.\.|–|—|-|\bto\b)\s*({_NUM})\s*$")
_COMPARE = {
    "=": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}


# --- the table and its columns -----------------------------------------------------------------------


def require_rows(df: pd.DataFrame) -> None:
    """A pandas table with at least one row, or a DPError saying what to do."""
    if not isinstance(df, pd.DataFrame):
        raise DPError("expected a table (pandas DataFrame)")
    if len(df) == 0:
        raise DPError("the table has no rows; load or generate some data first")


def require_column(df: pd.DataFrame, column, what: str = "column") -> str:
    """``column`` if ``df`` has it; else a DPError naming it, suggesting the closest name, listing the rest."""
    if column in df.columns:
        return column
    names = [str(c) for c in df.columns]
    close = difflib.get_close_matches(str(column), names, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise DPError(f"unknown {what} {column!r}{hint}; available: {', '.join(names)}")


def is_numeric(s: pd.Series) -> bool:
    """Numbers (not yes/no): these take every operator, ranges and bands."""
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def column_kind(df: pd.DataFrame, column: str) -> str:
    """ "bool", "numeric", "categorical" (public categories in the dtype) or "text"."""
    s = df[require_column(df, column)]
    if pd.api.types.is_bool_dtype(s):
        return "bool"
    if is_numeric(s):
        return "numeric"
    if isinstance(s.dtype, pd.CategoricalDtype):
        return "categorical"
    return "text"


# --- values as the column's type ---------------------------------------------------------------------


def parse_number(text, what: str) -> float:
    """A number from text (``50,000`` and ``50_000`` allowed); NaN is refused (it equals nothing)."""
    if isinstance(text, (bool, np.bool_)):
        raise DPError(f"{what} must be a number, not {text!r}")
    if isinstance(text, (int, float, np.integer, np.floating)):
        out = float(text)
    else:
        try:
            out = float(str(text).strip().replace(",", "").replace("_", ""))
        except ValueError:
            raise DPError(f"{what} must be a number, got {text!r}") from None
    if math.isnan(out):
        raise DPError(f"{what} can never match: NaN equals nothing, not even a missing value; give a number")
    return out


def parse_bool(text, what: str) -> bool:
    """True/False from ``true/yes/y/t/1`` or ``false/no/n/f/0`` (any case)."""
    if isinstance(text, (bool, np.bool_)):
        return bool(text)
    word = str(text).strip().casefold()
    if word not in TRUE_WORDS | FALSE_WORDS:
        raise DPError(f"{what} is yes/no (true/false); give true or false, not {str(text).strip()!r}")
    return word in TRUE_WORDS


def parse_finite(text, what: str) -> float:
    """A finite number from text (range ends, band widths)."""
    x = parse_number(text, what)
    if not math.isfinite(x):
        raise DPError(f"{what} must be a finite number, got {text!r}")
    return x


# --- the condition -----------------------------------------------------------------------------------


@dataclass(frozen=True, init=False)
class Condition:
    """``column op value`` (op in =, !=, <, <=, >, >=) or ``low <= column <= high`` (op ``between``).

    ``Condition("sex", "=", "F")``, ``Condition("age", value="34")`` (op defaults to =),
    ``Condition("salary", low=50_000, high=60_000)``.
    """

    column: str
    op: str
    value: Any  # a (low, high) pair for a range, else the value as given

    def __init__(self, column, op: str = "=", value=None, *, low=None, high=None):
        if low is not None or high is not None:
            if low is None or high is None:
                raise DPError(f"a range for {column} needs both ends, LO:HI")
            lo = parse_finite(low, f"lower end of the range for {column}")
            hi = parse_finite(high, f"upper end of the range for {column}")
            if lo > hi:
                raise DPError(f"range for {column}: LO must be <= HI, got {lo:g} > {hi:g}; swap them")
            op, value = BETWEEN, (lo, hi)
        elif op not in OPERATORS:
            raise DPError(f"unknown operator {op!r}; use one of {', '.join(OPERATORS)}")
        if not isinstance(column, str) or not column.strip():
            raise DPError("a condition needs a column name, e.g. sex=F")
        object.__setattr__(self, "column", column)
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "value", value)

    @property
    def is_range(self) -> bool:
        return self.op == BETWEEN

    @property
    def low(self) -> float | None:
        return self.value[0] if self.is_range else None

    @property
    def high(self) -> float | None:
        return self.value[1] if self.is_range else None

    def text(self) -> str:
        """The form the parsers read back: ``sex=F``, ``age>=65``, ``salary=50000:60000``."""
        if self.is_range:
            return f"{self.column}={self.low:g}:{self.high:g}"
        return f"{self.column}{self.op}{self.value}"

    def describe(self) -> str:
        """Readable: ``age = 34``, ``salary in [50000, 60000]``."""
        if self.is_range:
            return f"{self.column} in [{self.low:g}, {self.high:g}]"
        return f"{self.column} {self.op} {self.value}"

    def mask(self, df: pd.DataFrame) -> np.ndarray:
        return condition_mask(df, self)


# --- parsers -----------------------------------------------------------------------------------------


def parse_condition(text: str, what: str = "condition") -> Condition:
    """``COL=VALUE`` (also !=, <, <=, >, >=)."""
    if not isinstance(text, str) or not text.strip():
        raise DPError(f"{what} is empty; write it as COLUMN=VALUE, e.g. sex=F or age>=65")
    m = _COND_RE.match(text)
    if not m or not m.group("col").strip():
        raise DPError(f"{what} {text!r} is not COLUMN=VALUE (operators: {', '.join(OPERATORS)}); e.g. sex=F or age>=65")
    if m.group("val") == "":
        raise DPError(f"{what} {text!r}: no value given after {m.group('op')!r}; e.g. sex=F")
    return Condition(m.group("col").strip(), m.group("op"), m.group("val"))


def parse_conditions(texts, what: str = "WHERE condition") -> tuple[Condition, ...]:
    """Several conditions: a list (of texts or Conditions), or one string separated by commas / ' and '."""
    if texts is None:
        return ()
    if isinstance(texts, str):
        texts = [t for t in re.split(r",|\band\b", texts) if t.strip()]
    return tuple(t if isinstance(t, Condition) else parse_condition(t, what) for t in texts)


def _range_text(column: str, text: str) -> Condition:
    m = _RANGE_RE.match(text)
    if m:
        return Condition(column, low=m.group(1), high=m.group(2))
    if ":" in text:
        lo, _, hi = text.partition(":")
        return Condition(column, low=lo, high=hi)  # raises a clear "must be a number" message
    raise DPError(f"range for {column} must look like LO:HI with numbers (e.g. 50000:60000), got {text!r}")


def parse_range(item: str) -> Condition:
    """``COL=LO:HI`` (also ``LO-HI``, ``LO..HI``, ``LO to HI``) -> a range condition."""
    col, sep, rest = str(item).partition("=")
    if not sep or not col.strip():
        raise DPError(f"a range must look like COL=LO:HI (e.g. salary=50000:60000), got {item!r}")
    return _range_text(col.strip(), rest)


def parse_field(column: str, text) -> Condition | None:
    """A form field for one column: blank = unknown (None), ``34`` = exact, ``30-39`` / ``30:39`` = range,
    ``>=65`` (any operator in front) = that comparison."""
    if text is None:
        return None
    text = str(text).strip()
    if not text:
        return None
    op = next((o for o in OPERATORS if text.startswith(o)), None)
    if op is not None:
        value = text[len(op) :].strip()
        if not value:
            raise DPError(f"no value given after {op!r} for {column}; e.g. {op}65")
        return Condition(column, op, value)
    if _RANGE_RE.match(text) or ":" in text:
        return _range_text(column, text)
    return Condition(column, "=", text)


# --- masks -------------------------------------------------------------------------------------------


def _present(s: pd.Series) -> np.ndarray:
    return s.notna().to_numpy(dtype=bool)


def condition_mask(df: pd.DataFrame, cond: Condition) -> np.ndarray:
    """Rows of ``df`` that satisfy ``cond`` (a bool array); a missing value never matches."""
    s = df[require_column(df, cond.column)]
    name = cond.column
    if cond.is_range:
        if not is_numeric(s):
            raise DPError(f"column {name!r} is not numeric, so it cannot take a range; give an exact value instead")
        x = s.to_numpy(dtype=np.float64, na_value=np.nan)
        return (x >= cond.low) & (x <= cond.high)
    if pd.api.types.is_bool_dtype(s):
        truth = parse_bool(cond.value, f"column {name!r}")
        if cond.op not in ("=", "!="):
            raise DPError(f"column {name!r} is true/false; use = or !=, not {cond.op!r}")
        present = _present(s)
        eq = s.to_numpy(dtype=bool, na_value=False) == truth
        return present & (eq if cond.op == "=" else ~eq)
    if is_numeric(s):
        try:
            target = parse_number(cond.value, f"value for {name}")
        except DPError as e:
            if "never match" in str(e):
                raise DPError(
                    f"condition {cond.text()!r} can never match (NaN equals nothing, not even a "
                    "missing value); compare with a number, e.g. age>=65"
                ) from None
            raise DPError(
                f"{name} must be a number here: column {name!r} is numeric; compare it with a number, "
                f"not {cond.value!r}"
            ) from None
        x = s.to_numpy(dtype=np.float64, na_value=np.nan)
        return _COMPARE[cond.op](x, target) & ~np.isnan(x)
    if cond.op not in ("=", "!="):
        raise DPError(f"column {name!r} holds text; use = or != with it, not {cond.op!r}")
    want = str(cond.value).strip().lower()
    if isinstance(s.dtype, pd.CategoricalDtype):  # compare the (few) categories, then look up each row's code
        cats = pd.Series(s.cat.categories).astype("string").str.strip().str.lower()
        same = cats.eq(want).to_numpy(dtype=bool, na_value=False)
        hit = same if cond.op == "=" else ~same
        code = s.cat.codes.to_numpy()
        return (code >= 0) & hit[np.maximum(code, 0)]
    text = s.astype("string")  # vectorised (Arrow) string kernels; a missing value stays <NA>
    same = text.str.strip().str.lower().eq(want).to_numpy(dtype=bool, na_value=False)
    return same if cond.op == "=" else text.notna().to_numpy(dtype=bool) & ~same


def mask_all(df: pd.DataFrame, conditions) -> np.ndarray:
    """Rows that satisfy every condition (all rows when there are none)."""
    mask = np.ones(len(df), dtype=bool)
    for cond in conditions:
        mask &= condition_mask(df, cond)
    return mask


def mask_any(df: pd.DataFrame, conjunctions) -> np.ndarray:
    """Rows that satisfy every condition of at least one conjunction (an OR of ANDs)."""
    mask = np.zeros(len(df), dtype=bool)
    for conj in conjunctions:
        mask |= mask_all(df, conj)
    return mask
