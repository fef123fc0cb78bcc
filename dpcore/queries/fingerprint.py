"""Dataset identity: the content fingerprint a budget is keyed by, and what recognises the same people in
near-identical data. The fingerprint ignores row order, column order and number formatting (34 == 34.0 ==
"3.4e1"); the registry (:func:`dpcore.budgets.registry.register`) keys a dataset's cap by it and refuses
near-identical data unless the admin confirms:

* :func:`near_duplicate` compares two tables by their values, not their column names: columns are paired by the
  values they hold (a renamed column pairs with its original; an added ID column, or a rescaled one, pairs with
  nothing and is left out), and the rows over the paired columns are looked up in the other table. Most rows of
  the smaller table found in the larger — 25% of the rows dropped, or added — is the same people.
* :func:`profile` is a small name-free summary per column, kept at registration, that picks the registered
  datasets worth that comparison; the bottom-k row sketches of :func:`dataset_identity` serve datasets
  registered before their data was kept on the server.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np
import pandas as pd

from .. import limits
from ..data.filters import is_numeric
from ..errors import DPError

# --- dataset identity ------------------------------------------------------------------------------


def content_hash(data: bytes) -> str:
    """SHA-256 of some bytes (the dataset key of ledger schema 1: the table written as CSV)."""
    return hashlib.sha256(data).hexdigest()


_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)
SKETCH_K = 256
MAX_SKETCH_COLUMNS = limits.QUERY_MAX_SKETCH_COLUMNS


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser on uint64 arrays (wrapping arithmetic): a stable, well-spread hash."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _h64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def _cell_hashes(s: pd.Series, name: str) -> np.ndarray:
    """One uint64 per cell, equal for equal values whatever their format: numbers by value (34 == 34.0 ==
    "3.4e1", also inside text columns), booleans as 1/0, text stripped, missing values as one value."""
    col = np.uint64(_h64("col\x1f" + name))
    if pd.api.types.is_bool_dtype(s) or is_numeric(s):
        num = s.astype(float).to_numpy(dtype=float)
        text = None
    else:
        obj = s.astype(object)
        low = obj.map(lambda v: v.strip().lower() if isinstance(v, str) else v)
        num = pd.to_numeric(low.replace({"true": 1.0, "false": 0.0}), errors="coerce").to_numpy(dtype=float)
        text = obj
    num = np.where(num == 0, 0.0, num)  # -0.0 == 0.0
    isnum = ~np.isnan(num)
    out = _mix(np.where(isnum, num, 0.0).view(np.uint64) ^ col)
    if text is not None:
        missing = text.isna().to_numpy()
        rest = ~isnum & ~missing
        if rest.any():
            codes, uniques = pd.factorize(text[rest].map(lambda v: str(v).strip()))
            uh = np.array([_h64("txt\x1f" + u) for u in uniques], dtype=np.uint64)
            out[rest] = _mix(uh[codes] ^ col)
        nan_mask = missing | (~isnum & ~rest)
    else:
        nan_mask = ~isnum
    out[nan_mask] = _mix(np.full(int(nan_mask.sum()), _h64("na"), dtype=np.uint64) ^ col)
    return out


def _row_hashes(df: pd.DataFrame) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Column names (stripped, sorted), per-cell hashes (n × c) and per-row hashes (sum of the cells: independent
    of column order)."""
    names = [str(c).strip() for c in df.columns]
    if len(set(names)) != len(names):
        raise DPError("the table has duplicate column names; rename them so that each column is named once")
    order = sorted(range(len(names)), key=lambda i: names[i])
    cells = np.empty((len(df), len(names)), dtype=np.uint64)
    for j, i in enumerate(order):
        cells[:, j] = _cell_hashes(df.iloc[:, i], names[i])
    with np.errstate(over="ignore"):
        rows = cells.sum(axis=1, dtype=np.uint64) if len(names) else np.zeros(len(df), dtype=np.uint64)
    return [names[i] for i in order], cells, rows


def _fingerprint(names: list[str], rows: np.ndarray) -> str:
    h = hashlib.sha256(json.dumps({"columns": names, "rows": int(len(rows))}).encode())
    h.update(np.sort(rows).astype("<u8").tobytes())
    return h.hexdigest()


def _bottom(x: np.ndarray, k: int = SKETCH_K) -> list[int]:
    if len(x) > k:
        x = np.partition(x, k - 1)[:k]
    return [int(v) for v in np.sort(x)]


def dataset_identity(df: pd.DataFrame) -> dict[str, Any]:
    """What the ledger registers about a table: a fingerprint that ignores row order, column order and number
    formatting; n, the column names; and bottom-k sketches of the row hashes (all columns, and each column left
    out) so that a near-identical table (a column added or dropped, a few rows changed) is recognised."""
    if not isinstance(df, pd.DataFrame) or len(df) == 0 or df.shape[1] == 0:
        raise DPError("a dataset needs at least one row and one column")
    names, cells, rows = _row_hashes(df)
    sketch = {"": _bottom(rows)}
    if 1 < len(names) <= MAX_SKETCH_COLUMNS:
        with np.errstate(over="ignore"):
            for j, name in enumerate(names):
                sketch[name] = _bottom(rows - cells[:, j])
    return {
        "fingerprint": _fingerprint(names, rows),
        "n_rows": int(len(df)),
        "columns": names,
        "sketch": sketch,
        "legacy_keys": [content_hash(df.to_csv(index=False).encode())],
    }


def dataset_key(df: pd.DataFrame) -> str:
    """The table's fingerprint: the same rows and columns give the same key whatever their order, the number
    format (34 vs 34.0), the file name or the dtype."""
    if not isinstance(df, pd.DataFrame) or len(df) == 0 or df.shape[1] == 0:
        raise DPError("a dataset needs at least one row and one column")
    names, _, rows = _row_hashes(df)
    return _fingerprint(names, rows)


# --- the same people under other column names, scales or row counts ------------------------------------------

#: Fraction of the smaller table's rows found in the other above which two tables hold the same people.
SIMILAR_SHARED = 0.8
#: Paired columns must tell rows apart: distinct rows over them at least this fraction of the rows.
DISTINCT_ROWS_MIN = 0.5
#: A column pairs with another when this fraction of the fewer distinct values are shared.
COLUMN_SHARED = 0.9


def _value_hashes(df: pd.DataFrame) -> list[np.ndarray]:
    """Per column, one uint64 per cell that depends on the value only (not the column's name)."""
    return [_cell_hashes(df.iloc[:, i], "") for i in range(df.shape[1])]


def profile(df: pd.DataFrame) -> dict[str, Any]:
    """Name-free summary of each column (its distinct values' bottom-k hashes and how many there are): enough to
    tell which registered tables share columns with a new one, whatever the columns are called."""
    cols = []
    for name, h in zip(df.columns, _value_hashes(df)):
        u = np.unique(h)
        cols.append({"name": str(name).strip(), "distinct": int(len(u)), "bottom": _bottom(u)})
    return {"n_rows": int(len(df)), "columns": cols}


def _shares(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two column profiles hold (nearly) the same set of values."""
    sa, sb = set(a["bottom"]), set(b["bottom"])
    if not sa or not sb:
        return False
    # bottom-k of each set: compare below the smaller sketch's largest value, where both sketches are complete
    top = min(max(sa), max(sb)) if len(sa) >= SKETCH_K or len(sb) >= SKETCH_K else None
    if top is not None:
        sa, sb = {x for x in sa if x <= top}, {x for x in sb if x <= top}
    small = min(len(sa), len(sb))
    return (
        small > 0
        and len(sa & sb) / small >= COLUMN_SHARED
        and min(a["distinct"], b["distinct"]) >= 0.5 * max(a["distinct"], b["distinct"])
    )


def shared_columns(p: dict[str, Any], q: dict[str, Any]) -> int:
    """How many columns of profile ``p`` hold the values of some column of profile ``q``."""
    return sum(any(_shares(a, b) for b in q["columns"]) for a in p["columns"])


def _pairs(ha: list[np.ndarray], hb: list[np.ndarray], names_a: list[str], names_b: list[str]) -> list[tuple[int, int]]:
    """Pair columns of A with columns of B that hold the same values (same name first, then the best share)."""
    ua, ub = [np.unique(h) for h in ha], [np.unique(h) for h in hb]
    scores = []
    for i, a in enumerate(ua):
        for j, b in enumerate(ub):
            small, big = sorted((len(a), len(b)))
            if small == 0 or small < 0.5 * big:
                continue
            share = len(np.intersect1d(a, b, assume_unique=True)) / small
            if share >= COLUMN_SHARED:
                scores.append((names_a[i] != names_b[j], -share, abs(len(a) - len(b)), i, j))
    pairs, used_a, used_b = [], set(), set()
    for *_, i, j in sorted(scores):
        if i not in used_a and j not in used_b:
            pairs.append((i, j))
            used_a.add(i)
            used_b.add(j)
    return pairs


def _rows_over(hashes: list[np.ndarray], order: list[tuple[int, int]]) -> np.ndarray:
    """Row hashes over the given (column, slot) pairs: equal rows give equal hashes in either table."""
    with np.errstate(over="ignore"):
        out = np.zeros(len(hashes[0]), dtype=np.uint64)
        for col, slot in order:
            out += _mix(hashes[col] ^ np.uint64(_h64(f"slot\x1f{slot}")))
    return out


def near_duplicate(new: pd.DataFrame, old: pd.DataFrame) -> dict[str, Any] | None:
    """Whether ``new`` holds the same people as ``old`` under renamed, rescaled or added columns and with rows
    dropped or added. Returns {shared (fraction of the smaller table's rows found in the other), columns (the
    pairs "new = old"), left_out (columns of ``new`` that pair with nothing)} or None."""
    ha, hb = _value_hashes(new), _value_hashes(old)
    na, nb = [str(c).strip() for c in new.columns], [str(c).strip() for c in old.columns]
    pairs = _pairs(ha, hb, na, nb)
    if not pairs or len(new) == 0 or len(old) == 0:
        return None
    ra = _rows_over(ha, [(i, j) for i, j in pairs])
    rb = _rows_over(hb, [(j, j) for _, j in pairs])
    ua, ca = np.unique(ra, return_counts=True)
    ub, cb = np.unique(rb, return_counts=True)
    if len(ub) < DISTINCT_ROWS_MIN * len(rb) or len(ua) < DISTINCT_ROWS_MIN * len(ra):
        return None  # the paired columns do not tell people apart: no evidence either way
    common, ia, ib = np.intersect1d(ua, ub, assume_unique=True, return_indices=True)
    found = int(np.minimum(ca[ia], cb[ib]).sum())
    shared = found / min(len(ra), len(rb))
    if shared < SIMILAR_SHARED:
        return None
    paired = {i for i, _ in pairs}
    return {
        "shared": shared,
        "columns": [f"{na[i]} = {nb[j]}" if na[i] != nb[j] else na[i] for i, j in pairs],
        "left_out": [na[i] for i in range(len(na)) if i not in paired],
    }
