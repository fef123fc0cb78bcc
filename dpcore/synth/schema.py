"""What the data owner declares public before a synthetic release: each column's categories, or its bounds and
bin width. The generators see every column as a few codes (0 .. K-1, plus "missing"); the codes come from these
declarations alone, never from the rows (bins learned from the data would leak it outside ε).

* A **category** column lists its values (``sex=F,M``). A value not in the list is coded "missing".
* A **number** column declares public bounds and a bin width (``age=18:90:1``, ``salary=0:250000:5000``).
  Values are clamped to the bounds, then binned; whole-number columns (bounds and width whole) bin whole
  numbers, so width 1 keeps exact values. A synthetic value is drawn uniformly inside its bin (post-processing).

Encoding is row by row (one record changes one row of codes), so it keeps the add/remove-one guarantee of
what follows. :func:`medical` is the re-identification story's declaration (every bound from
:data:`dpcore.data.datasets.PUBLIC_BOUNDS` or the generator's published categories).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import limits
from ..data import datasets
from ..data.filters import parse_finite
from ..errors import DPError
from ..training.bounds import FROM_DATA

_NAME_RE = re.compile(r"^(?P<name>[^=]+)=(?P<spec>.*)$", re.S)


def category_key(value) -> str | None:
    """How a value is compared with a declared category, whatever the column's type: booleans as
    ``true``/``false``, numbers by value (``34 == 34.0 == "3.4e1"``), text stripped and case-folded. A missing
    value has no key. The same rule on both sides, row by row: nothing about the other rows decides it."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return "#" + repr(float(value)) if math.isfinite(float(value)) else None
    text = str(value).strip()
    try:
        x = float(text.replace(",", "").replace("_", ""))
    except ValueError:
        return text.casefold()
    return "#" + repr(x) if math.isfinite(x) else text.casefold()


@dataclass(frozen=True)
class Column:
    """One column's public declaration: ``categories``, or ``bounds`` and ``width`` (a number column)."""

    name: str
    categories: tuple[Any, ...] | None = None
    bounds: tuple[Any, Any] | None = None  # as declared (numbers or their text); numbers once built
    width: Any = None  # as declared; a float once built

    def __post_init__(self):
        name = str(self.name)
        if not name.strip():
            raise DPError("a declared column needs a name, e.g. --column age=18:90:1")
        if len(name) > limits.UPLOAD_MAX_NAME_CHARS:
            raise DPError(f"column name {name[:40] + '…'!r} is longer than {limits.UPLOAD_MAX_NAME_CHARS} characters")
        if (self.categories is None) == (self.bounds is None):
            raise DPError(
                f"column {name!r}: declare either its categories (e.g. F,M) or its bounds and bin width "
                "(e.g. 18:90:1), not both or neither"
            )
        if self.categories is not None:
            cats = tuple(self.categories)
            if not cats:
                raise DPError(f"column {name!r}: list at least one public category, e.g. {name}=F,M")
            keys = [category_key(c) for c in cats]
            if None in keys:
                raise DPError(f"column {name!r}: a declared category is empty; list the values, e.g. {name}=F,M")
            dupes = sorted({str(c) for c, k in zip(cats, keys) if keys.count(k) > 1})
            if dupes:
                raise DPError(
                    f"column {name!r}: categories {', '.join(map(repr, dupes))} are the same value; list "
                    "each category once"
                )
            object.__setattr__(self, "categories", cats)
        else:
            lo, hi = (parse_finite(b, f"column {name!r} bound") for b in self.bounds)
            if not lo < hi:
                raise DPError(f"column {name!r}: the lower bound must be below the upper, got {lo:g}:{hi:g}")
            w = parse_finite(self.width if self.width is not None else 1, f"column {name!r} bin width")
            if not w > 0:
                raise DPError(f"column {name!r}: the bin width must be > 0, got {w:g}")
            object.__setattr__(self, "bounds", (lo, hi))
            object.__setattr__(self, "width", w)
        k = self.n_bins
        if k > limits.SYNTH_MAX_CATEGORIES:
            what = "categories" if self.categories is not None else "bins"
            hint = "" if self.categories is not None else "; use a wider bin"
            raise DPError(
                f"column {name!r} has {k:,} {what}; at most {limits.SYNTH_MAX_CATEGORIES} are supported "
                f"per column{hint}"
            )

    @property
    def is_number(self) -> bool:
        return self.bounds is not None

    @property
    def span(self) -> tuple[float, float]:
        """The bounds of a number column (a built column of that kind has them)."""
        if self.bounds is None:
            raise DPError(f"column {self.name!r} declares categories, not bounds")
        return self.bounds

    @property
    def step(self) -> float:
        """The bin width of a number column (1 unless declared)."""
        return 1.0 if self.width is None else float(self.width)

    @property
    def values(self) -> tuple[Any, ...]:
        """The declared categories of a category column."""
        if self.categories is None:
            raise DPError(f"column {self.name!r} declares bounds, not categories")
        return tuple(self.categories)

    @property
    def whole(self) -> bool:
        """Whole numbers: bounds and width are whole (width 1 keeps exact values)."""
        return self.is_number and all(float(x).is_integer() for x in (*self.span, self.step))

    @property
    def n_bins(self) -> int:
        if not self.is_number:
            return len(self.values)
        lo, hi = self.span
        span = hi - lo + (1 if self.whole else 0)
        return max(1, math.ceil(span / self.step - 1e-9))

    def edges(self) -> np.ndarray:
        """Bin k holds [edges[k], edges[k + 1]) (whole numbers: edges[k] .. edges[k + 1] − 1); the last ends at
        the upper bound."""
        lo, hi = self.span
        e = lo + self.step * np.arange(self.n_bins + 1, dtype=np.float64)
        e[-1] = hi + (1 if self.whole else 0)
        return e

    def encode(self, s: pd.Series) -> np.ndarray:
        """Each row's code: 0 .. K-1, or -1 for a missing value or one outside the declared categories."""
        if self.is_number:
            x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)
            lo, hi = self.span
            x = np.clip(x, lo, hi)
            if self.whole:
                x = np.floor(x)
            code = np.floor((x - lo) / self.step)
            code = np.clip(code, 0, self.n_bins - 1)
            return np.where(np.isnan(x), -1, code).astype(np.int64)
        lookup = {category_key(c): i for i, c in enumerate(self.values)}
        keys = pd.Series(s, copy=False).map(category_key, na_action="ignore")
        return keys.map(lookup).fillna(-1).to_numpy(dtype=np.int64)

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.Series:
        """Values for codes (-1: missing). A number is drawn uniformly in its bin (post-processing, ``rng``)."""
        codes = np.asarray(codes, dtype=np.int64)
        missing = codes < 0
        c = np.where(missing, 0, codes)
        if self.is_number:
            e = self.edges()
            a, b = e[c], e[c + 1]
            if self.whole:
                x = np.floor(a + rng.random(len(c)) * (b - a))
                out = pd.Series(np.minimum(x, b - 1), name=self.name).astype("Int64")
            else:
                out = pd.Series(np.minimum(a + rng.random(len(c)) * (b - a), self.span[1]), name=self.name)
            out[missing] = pd.NA if self.whole else np.nan
            return out
        values = np.array(list(self.values) + [None], dtype=object)
        out = pd.Series(values[np.where(missing, len(self.values), c)], name=self.name)
        kinds = {type(v) for v in self.values}
        if kinds <= {bool, np.bool_} and not missing.any():
            return out.astype(bool)
        if kinds <= {int, np.integer} and not missing.any():
            return out.astype(np.int64)
        return out

    def labels(self) -> list[str]:
        """Each code's readable label (tables of marginals): a category, or a bin's range."""
        if not self.is_number:
            return [str(c) for c in self.values]
        e = self.edges()
        fmt = (lambda v: f"{int(v):,}") if self.whole else (lambda v: f"{v:,.4g}")
        if self.whole:
            return [fmt(a) if b - a == 1 else f"{fmt(a)}–{fmt(b - 1)}" for a, b in zip(e[:-1], e[1:])]
        return [f"[{fmt(a)}, {fmt(b)})" for a, b in zip(e[:-1], e[1:])]

    def describe(self) -> str:
        """The declaration in words (statements, the page)."""
        if not self.is_number:
            return f"categories {', '.join(map(str, self.values))}"
        lo, hi = self.span
        unit = "whole numbers" if self.whole else "numbers"
        return f"{unit} {lo:g} to {hi:g} (clamped), {self.n_bins} bins of width {self.step:g}"

    def declaration(self) -> str:
        """The declaration as the CLI takes it: ``age=18:90:1`` or ``sex=F,M``."""
        if self.is_number:
            return f"{self.name}={self.span[0]:g}:{self.span[1]:g}:{self.step:g}"
        return f"{self.name}={','.join(map(str, self.values))}"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name}
        if self.is_number:
            d.update(bounds=list(self.span), width=self.step, bins=self.n_bins, whole=self.whole)
        else:
            d["categories"] = [c if isinstance(c, (bool, int, float, str)) else str(c) for c in self.values]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Column:
        if not isinstance(d, dict) or "name" not in d:
            raise DPError("a column declaration needs a name and its categories or bounds")
        if d.get("categories") is not None:
            return cls(d["name"], categories=tuple(d["categories"]))
        return cls(d["name"], bounds=tuple(d.get("bounds") or ()), width=d.get("width"))


@dataclass(frozen=True)
class Schema:
    """The declared columns, in order. ``complete``: the owner declares that no value is missing, so a synthetic
    row the model draws with a missing value is redrawn (post-processing)."""

    columns: tuple[Column, ...]
    complete: bool = True

    def __post_init__(self):
        cols = tuple(self.columns)
        if not cols:
            raise DPError("declare at least one column to release, e.g. --column age=18:90:1 --column sex=F,M")
        if len(cols) > limits.SYNTH_MAX_COLUMNS:
            raise DPError(
                f"{len(cols)} columns declared; a synthetic release takes at most "
                f"{limits.SYNTH_MAX_COLUMNS}: leave some out"
            )
        names = [c.name for c in cols]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise DPError(f"column {dupes[0]!r} is declared twice; declare each column once")
        object.__setattr__(self, "columns", cols)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise DPError(f"column {name!r} is not declared; declared: {', '.join(self.names)}")

    def select(self, names) -> Schema:
        return Schema(tuple(self.column(n) for n in names), self.complete)

    def encode(self, df: pd.DataFrame) -> pd.DataFrame:
        """The codes of every declared column (int64, -1 = missing); every declared column must be in ``df``."""
        missing = [n for n in self.names if n not in df.columns]
        if missing:
            raise DPError(
                f"the data has no column {missing[0]!r} (declared); its columns: {', '.join(map(str, df.columns[:20]))}"
            )
        return pd.DataFrame({c.name: c.encode(df[c.name]) for c in self.columns}, index=df.index)

    def decode(self, codes: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        return pd.DataFrame({c.name: c.decode(codes[c.name].to_numpy(), rng) for c in self.columns})

    def key(self) -> tuple:
        """A hashable identity (caches of built measurements)."""
        return (tuple((c.name, c.categories, c.bounds, c.width) for c in self.columns), self.complete)

    def to_dict(self) -> dict:
        return {"columns": [c.to_dict() for c in self.columns], "complete": self.complete}

    @classmethod
    def from_dict(cls, d: dict) -> Schema:
        if not isinstance(d, dict) or not isinstance(d.get("columns"), list):
            raise DPError("a schema needs a list of column declarations")
        return cls(tuple(Column.from_dict(c) for c in d["columns"]), bool(d.get("complete", True)))


def parse_column(text: str) -> Column:
    """``NAME=LO:HI[:WIDTH]`` (a number column; width 1 by default) or ``NAME=A,B,C`` (categories)."""
    m = _NAME_RE.match(str(text))
    if not m or not m.group("name").strip():
        raise DPError(
            f"column declaration {str(text)[:60]!r} must look like NAME=LO:HI:WIDTH (a number) or "
            "NAME=A,B,C (categories), e.g. age=18:90:1 or sex=F,M"
        )
    name, spec = m.group("name").strip(), m.group("spec").strip()
    if ":" in spec and "," not in spec:
        parts = spec.split(":")
        if len(parts) not in (2, 3):
            raise DPError(f"column {name!r}: a number column is LO:HI or LO:HI:WIDTH, got {spec!r}")
        return Column(name, bounds=(parts[0], parts[1]), width=parts[2] if len(parts) == 3 else 1)
    cats = [c.strip() for c in spec.split(",")]
    if not spec or any(not c for c in cats):
        raise DPError(
            f"column {name!r}: list its public categories separated by commas, e.g. {name}=F,M (no empty ones)"
        )
    return Column(name, categories=tuple(_typed(c) for c in cats))


def _typed(text: str):
    """A declared category as a value: a whole number, a number, or text (``10001`` -> 10001)."""
    try:
        x = float(text.replace(",", "").replace("_", ""))
    except ValueError:
        return text
    if not math.isfinite(x):
        return text
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


def parse_schema(declarations, *, complete: bool = True) -> Schema:
    return Schema(tuple(parse_column(t) for t in declarations), complete)


def from_bounds(bounds: dict, widths: dict | None = None, *, complete: bool = True) -> Schema:
    """The pages' one declaration editor (:func:`pages.ui.upload.editor`, bounds in the form of
    :mod:`dpcore.training.bounds`) as a synthetic release's schema: each declared range with its bin width (1 when
    none is given), each list of categories as its typed values (``0, 1`` are the numbers 0 and 1). A column to be
    learned from the rows cannot be released: a synthetic table's declaration reads nothing from them."""
    if not bounds:
        raise DPError("declare at least one column to release: its public range or categories")
    cols = []
    for name, spec in bounds.items():
        if FROM_DATA in spec:
            raise DPError(
                f"column {name!r}: a synthetic release reads nothing from the rows to declare a column; give its "
                "public range or categories, or leave it empty to keep it out of the release"
            )
        if "categories" in spec:
            cols.append(Column(name, categories=tuple(_typed(str(c)) for c in spec["categories"])))
        else:
            cols.append(Column(name, bounds=(spec["lower"], spec["upper"]), width=(widths or {}).get(name) or 1))
    return Schema(tuple(cols), complete)


#: The story's declaration of every synthetic medical column (public knowledge, never read from the rows).
MEDICAL_COLUMNS: dict[str, Column] = {
    "age": Column("age", bounds=datasets.PUBLIC_BOUNDS["age"], width=1),
    "sex": Column("sex", categories=tuple(datasets.SEXES.tolist())),
    "zip_code": Column("zip_code", categories=tuple(int(z) for z in datasets.ZIP_CODES)),
    "birth_year": Column("birth_year", bounds=datasets.PUBLIC_BOUNDS["birth_year"], width=1),
    "ethnicity": Column("ethnicity", categories=tuple(datasets.ETHNICITIES.tolist())),
    "salary": Column("salary", bounds=datasets.PUBLIC_BOUNDS["salary"], width=5_000),
    "has_rare_disease": Column("has_rare_disease", categories=(False, True)),
    "diagnosis": Column("diagnosis", categories=tuple(datasets.DIAGNOSES.tolist())),
}
#: The columns the story releases by default: the neighbour's facts, the quasi-identifiers and the diagnosis.
STORY_COLUMNS = ("age", "sex", "zip_code", "salary", "diagnosis")


def medical(columns=STORY_COLUMNS) -> Schema:
    """The synthetic medical data's public declaration for ``columns`` (complete: no value is missing)."""
    unknown = [c for c in columns if c not in MEDICAL_COLUMNS]
    if unknown:
        raise DPError(f"unknown medical column {unknown[0]!r}; choose from {', '.join(MEDICAL_COLUMNS)}")
    return Schema(tuple(MEDICAL_COLUMNS[c] for c in columns), complete=True)
