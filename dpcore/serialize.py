"""JSON for everything dpcore writes (CLI output, run metrics, sweep records): numpy values become plain
Python values, and non-finite floats become null (JSON has no NaN/Infinity)."""

from __future__ import annotations

import json
import math

import numpy as np


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
    """Write obj as JSON to a user-given path; a bad path is a DPError that names the option."""
    write_bytes(path_text, dumps(obj).encode(), option)


def write_bytes(path_text: str, data: bytes, option: str = "--out") -> None:
    """Write bytes to a user-given path (through to it: a device or a pipe is written, never replaced); a bad path
    is a DPError that names the option."""
    from pathlib import Path

    from .errors import DPError

    path = Path(path_text)
    if path.is_dir():
        raise DPError(f"{option} must be a file path, got a folder: {path}")
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise DPError(f"could not write {path}: {exc.strerror}") from None


def check_json_path(path_text: str | None, option: str = "--json") -> None:
    """Refuse an unusable ``--json`` target *before* a long run starts: a folder, or a missing parent folder."""
    if path_text is None:
        return
    from pathlib import Path

    from .errors import DPError

    if not str(path_text).strip():  # `--json ''` was silently ignored: the run's JSON went nowhere
        raise DPError(f"{option} needs a file name, got an empty one; give a path like out.json or leave {option} out")
    path = Path(path_text)
    if path.is_dir():
        raise DPError(f"{option} must be a file path, got a folder: {path}")
    if not path.parent.is_dir():
        raise DPError(f"{option}: the folder {path.parent} does not exist; create it or choose another path")
