"""Generalisation: the classic defence against re-identification -- coarsen the quasi-identifiers.

* :func:`generalise` -- numeric columns floored to bands (age 34 -> 30 for width 10), text or integer
  code columns cut to their first characters/digits (zip 10001 -> 10000 for 4 digits).
* :func:`medical_generalisation` / :func:`generalise_medical` -- the same for the synthetic medical data
  (birth year banded like age, or it would undo the age bands).

It lowers uniqueness and linkage (:mod:`dpcore.attacks.uniqueness`, :mod:`dpcore.attacks.linkage`) but
gives no guarantee; the re-identification page shows it beside differential privacy.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data.filters import is_numeric, parse_finite, require_column, require_rows
from ..errors import DPError
from ..validation import check_positive_int


def _band(s: pd.Series, width, column: str) -> pd.Series:
    w = parse_finite(width, f"band width for {column}")
    if w <= 0:
        raise DPError(f"band width for {column} must be > 0, got {w:g}")
    if not is_numeric(s):
        raise DPError(f"column {column!r} is not numeric, so it cannot be put into bands; use a prefix")
    v = s.to_numpy(dtype=np.float64, na_value=np.nan)
    out = np.floor(v / w) * w
    if pd.api.types.is_integer_dtype(s) and float(w).is_integer():
        return pd.Series(out.astype(s.dtype), index=s.index, name=s.name)
    return pd.Series(out, index=s.index, name=s.name)


def _prefix(s: pd.Series, digits, column: str) -> pd.Series:
    d = check_positive_int(digits, f"prefix length for {column}")
    if pd.api.types.is_integer_dtype(s):  # zip codes stored as numbers: keep the first d digits
        v = s.to_numpy(dtype=np.int64)
        ndig = np.floor(np.log10(np.maximum(np.abs(v), 1))).astype(np.int64) + 1
        factor = 10 ** np.maximum(ndig - d, 0)
        return pd.Series((v // factor * factor).astype(s.dtype), index=s.index, name=s.name)
    text = s.astype("string")
    return text.str.slice(0, d)


def generalise(df: pd.DataFrame, *, bands: dict | None = None, prefixes: dict | None = None) -> pd.DataFrame:
    """A copy with numeric columns floored to bands (34 -> 30 for width 10, meaning 30-39) and text or
    integer code columns cut to their first digits/characters (10001 -> 10000 for 4 digits, meaning 1000*)."""
    require_rows(df)
    out = df.copy()
    for col, w in (bands or {}).items():
        require_column(df, col)
        out[col] = _band(df[col], w, col)
    for col, d in (prefixes or {}).items():
        require_column(df, col)
        out[col] = _prefix(df[col], d, col)
    return out


def medical_generalisation(age_band=1, zip_digits=5, salary_band=1) -> dict:
    """The bands/prefixes for the medical data (birth year is banded like age, or it would undo it)."""
    bands, prefixes = {}, {}
    if parse_finite(age_band, "age band width") != 1:
        bands["age"] = age_band
        bands["birth_year"] = age_band
    if parse_finite(salary_band, "salary band width") != 1:
        bands["salary"] = salary_band
    d = check_positive_int(zip_digits, "zip digits kept")
    if d > 5:
        raise DPError(f"zip codes have 5 digits; keep 1 to 5, got {d}")
    if d < 5:
        prefixes["zip_code"] = d
    return {"bands": bands, "prefixes": prefixes}


def generalise_medical(df: pd.DataFrame, *, age_band=1, zip_digits=5, salary_band=1) -> pd.DataFrame:
    """Age bands, zip prefixes, salary bands on any table with those columns (release or register)."""
    spec = medical_generalisation(age_band, zip_digits, salary_band)
    spec["bands"] = {k: v for k, v in spec["bands"].items() if k in df.columns}
    spec["prefixes"] = {k: v for k, v in spec["prefixes"].items() if k in df.columns}
    return generalise(df, **spec)
