"""JSON for everything dpcore writes (CLI output, run metrics, sweep records): numpy values become plain
Python values, and non-finite floats become null (JSON has no NaN/Infinity)."""

from __future__ import annotations

import json
import math

import numpy as np

from .storage import check_user_path, write_user_file


def jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps(obj, indent: int | None = 2) -> str:
    return json.dumps(jsonable(obj), indent=indent)


def write_json(path_text: str, obj, option: str = "--json") -> None:
    """Write obj as JSON to a user-given path (whole or not at all; through a link, to a device or a pipe with
    a reader: :func:`dpcore.storage.write_user_file`); a bad path is a DPError that names the option."""
    write_user_file(path_text, dumps(obj).encode(), option=option)


def check_json_path(path_text: str | None, option: str = "--json") -> None:
    """Refuse an unusable ``--json`` target *before* a long run starts (None: no file asked for). An empty path
    is refused too: ``--json ''`` was silently ignored."""
    if path_text is None:
        return

    check_user_path(path_text, option)
