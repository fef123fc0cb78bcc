"""Where DP Explorer keeps what it stores: one folder, ``$DP_EXPLORER_HOME``.

Default: ``.dp-explorer/`` in the working directory. Ledgers, job stores, run results and uploads
all live below it; tests point it at a temporary folder.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

ENV_VAR = "DP_EXPLORER_HOME"


def home() -> Path:
    """The storage folder, created if missing."""
    path = Path(os.environ.get(ENV_VAR) or ".dp-explorer").expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def subdir(name: str) -> Path:
    path = home() / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a file so that readers see either the old or the whole new content (temp, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
