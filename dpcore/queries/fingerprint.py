"""Dataset identity: the content fingerprint a budget is keyed by, and the sketches that recognise near-identical
data. The fingerprint ignores row order, column order and number formatting (34 == 34.0 == "3.4e1"); the ledger
registers it (:func:`dpcore.queries.ledger.register_dataset`) and refuses near-identical data unless confirmed.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd

from .. import limits
from ..data.filters import is_numeric
from ..errors import DPError
from .ledger import content_hash

# --- dataset identity ------------------------------------------------------------------------------

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


def _fingerprint(names, rows) -> str:
    h = hashlib.sha256(json.dumps({"columns": names, "rows": int(len(rows))}).encode())
    h.update(np.sort(rows).astype("<u8").tobytes())
    return h.hexdigest()


def _bottom(x: np.ndarray, k: int = SKETCH_K) -> list[int]:
    if len(x) > k:
        x = np.partition(x, k - 1)[:k]
    return [int(v) for v in np.sort(x)]


def dataset_identity(df: pd.DataFrame) -> dict:
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
    return {"fingerprint": _fingerprint(names, rows), "n_rows": int(len(df)), "columns": names, "sketch": sketch,
            "legacy_keys": [content_hash(df.to_csv(index=False).encode())]}



def dataset_key(df: pd.DataFrame) -> str:
    """The table's fingerprint: the same rows and columns give the same key whatever their order, the number
    format (34 vs 34.0), the file name or the dtype."""
    if not isinstance(df, pd.DataFrame) or len(df) == 0 or df.shape[1] == 0:
        raise DPError("a dataset needs at least one row and one column")
    names, _, rows = _row_hashes(df)
    return _fingerprint(names, rows)
