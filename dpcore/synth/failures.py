"""When a synthetic release stops on an error that is not dpcore's own (OpenDP's FFI error, jax's, a bug): the
user reads one sentence saying what to do, never the exception's text, and the log keeps the detail —
``$DP_EXPLORER_HOME/logs/synth.log`` (the traceback, the generator, ε, δ and the column names; never data), and a
worker's log gets the traceback too (the job runner prints it, with the one-line error and its cause)."""

from __future__ import annotations

import sqlite3
import threading
import time
import traceback
from contextlib import contextmanager

from .. import storage
from ..errors import Cancelled, DPError

#: The log that keeps what went wrong inside a generator (``$DP_EXPLORER_HOME/logs/``): pages and the CLI show one
#: sentence saying what to do, never the exception's text.
LOG_NAME = "synth.log"
_LOG = threading.Lock()
#: What a user reads when OpenDP's generator stops part-way (the log keeps the detail).
STOPPED = (
    "the synthetic release stopped inside OpenDP's generator and released nothing; try again with fewer columns, "
    "wider bins or a larger ε (the server's log, logs/" + LOG_NAME + ", has the details)"
)


def log_failure(doing: str, settings: str, exc: BaseException) -> None:
    """Append the failure, its traceback and the settings (column names and budget, never data) to the log; best
    effort (a full disk must not hide the first error)."""

    text = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {doing} failed ({settings})\n" + "".join(
        traceback.format_exception(exc)
    )
    try:
        with _LOG, open(storage.subdir("logs") / LOG_NAME, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    except (OSError, storage.StorageError):
        pass


#: What a user reads when a synthetic release job or study stops on an error that is not one of dpcore's.
FAILED = (
    "the synthetic release stopped on an unexpected error and released nothing; try again, and if it happens again "
    "tell the server's operator (the server's log, logs/" + LOG_NAME + ", has the details)"
)


@contextmanager
def plain_errors(doing: str, settings: str = ""):
    """Run the block; an error that is not dpcore's own (a DPError, a cancel, a storage fault, no memory) is logged
    (:func:`log_failure`) and raised again as a DPError saying what to do (:data:`FAILED`): pages and the CLI show
    one sentence, never an exception's text."""
    try:
        yield
    except (DPError, Cancelled, OSError, MemoryError, sqlite3.Error):
        raise
    except Exception as exc:
        log_failure(doing, settings, exc)
        raise DPError(FAILED) from exc
