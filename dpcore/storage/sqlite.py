"""The one SQLite write transaction of every store under the home (the job store, the budget ledger).

``BEGIN IMMEDIATE`` takes the write lock before anything is read, so two processes never both read a row and then
both change it (no lock upgrades: never two claims of one job, never two spends of one budget). Everything
raised inside — or a ``COMMIT`` that fails (a full disk) — rolls the whole transaction back; a ``ROLLBACK`` that
fails too (the connection is already outside a transaction) is ignored, so the first error is the one raised.
Connections must be opened with ``isolation_level=None`` (the module does not open transactions behind our back).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``; ``ROLLBACK`` on any error, the commit's included."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        raise
