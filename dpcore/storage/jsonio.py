"""The one JSON encoder: everything dpcore writes as JSON — the CLI's output, a job's progress and results, sweep
records, statements and metrics files — goes through :func:`dumps`.

The rule: **NaN and ±Infinity become null.** JSON has no such numbers, and text that every reader can parse (a
browser, ``jq``, SQLite's json functions, Python's ``json`` with ``allow_nan=False``) is worth more than keeping
"not a number" apart from "no value": a reader that meets null reads "no value", and every field that may be
undefined (an attack's AUC on one class, a diverged loss) is already optional. Besides: numpy arrays and scalars
and torch tensors become plain lists and numbers, tuples and sets lists, paths strings, keys strings.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


def jsonable(obj: Any) -> Any:
    """``obj`` as plain JSON values (see the module docstring); anything else is a TypeError."""
    if obj is None or isinstance(obj, (str, bool, int)):
        return obj
    if isinstance(obj, float):  # numpy's float64 too
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "tolist"):  # numpy arrays and scalars, torch tensors
        return jsonable(obj.tolist())
    if hasattr(obj, "item"):
        return jsonable(obj.item())
    raise TypeError(f"{type(obj).__name__} is not JSON-serialisable")


def dumps(obj: Any, indent: int | None = 2) -> str:
    """``obj`` as JSON text under the one rule (``indent=None``: compact, for the stores)."""
    return json.dumps(jsonable(obj), indent=indent, allow_nan=False)
