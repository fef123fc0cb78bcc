"""The ledger file and the one transaction helper every budget module uses.

``$DP_EXPLORER_HOME/ledger.sqlite``, mode 0600, WAL, ``synchronous = FULL``. :func:`immediate` is the one
``BEGIN IMMEDIATE`` transaction (the write lock is taken before anything is read, so concurrent processes never
overspend); :func:`reading` is one read transaction on a read-only connection. A new ledger is built in a
temporary file and linked into place complete, so a ledger file is never empty: an empty (0-byte) or otherwise
damaged ledger is refused with the storage message every damaged store gets, never silently re-created (every
registration, quota and spend would be lost and budgets would refill). Storage faults become one
:class:`~dpcore.storage.StorageError` that says what to do.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import storage
from ..errors import DPError
from ..storage.sqlite import transaction  # the one BEGIN IMMEDIATE helper of every store under the home
from . import schema

# A ledger's location: a path, or None for the one under $DP_EXPLORER_HOME.
LedgerPath = str | os.PathLike[str] | None

FILENAME = "ledger.sqlite"
BUSY_TIMEOUT_S = 60.0
STORE = "the budget ledger"


def default_path() -> Path:
    return storage.home() / FILENAME


def fault(exc: BaseException, path: LedgerPath, unharmed: str = "nothing was spent") -> DPError:
    """A storage fault as one message that says what to do next (:func:`dpcore.storage.fault_message`)."""
    return storage.StorageError(storage.fault_message(exc, path, store=STORE, unharmed=unharmed))


def resolve(path: LedgerPath = None) -> Path:
    try:
        return Path(path) if path is not None else default_path()
    except OSError as exc:
        raise fault(exc, path or "$DP_EXPLORER_HOME") from None


def _refuse_empty(p: Path) -> None:
    """A ledger file that exists but holds nothing was emptied (ours are never empty): refuse it."""
    try:
        empty = p.stat().st_size == 0
    except FileNotFoundError:
        return
    except OSError as exc:
        raise fault(exc, p) from None
    if empty:
        raise fault(
            sqlite3.DatabaseError("file is not a database: it is empty (0 bytes), yet a ledger existed here"), p
        ) from None


def _open(p: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(p), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":  # pragma: no cover - only on file systems without shared memory
        raise DPError(
            f"the ledger at {p} could not switch to WAL mode (got {mode}); put DP_EXPLORER_HOME on a local disk"
        )
    conn.execute("PRAGMA synchronous = FULL")
    return conn


def _create(p: Path) -> None:
    """Build a new ledger (schema included) in a temporary file and link it into place whole. A process that
    loses the race uses the winner's file."""
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".new")
    os.close(fd)
    os.chmod(tmp, 0o600)  # owner only; the WAL and SHM files inherit the mode
    try:
        conn = _open(Path(tmp))
        try:
            schema.migrate(conn)
        finally:
            conn.close()
        try:
            os.link(tmp, p)
        except FileExistsError:
            pass
    finally:
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(tmp + suffix)
            except FileNotFoundError:
                pass


def connect(path: LedgerPath = None) -> sqlite3.Connection:
    """Open the ledger for writing (created whole on first use, migrated to the current schema), WAL mode,
    autocommit (transactions are begun by :func:`immediate`)."""
    p = resolve(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        _refuse_empty(p)
        if not p.exists():
            _create(p)
        conn = _open(p)
        schema.migrate(conn)
    except (sqlite3.Error, OSError) as exc:
        raise fault(exc, p) from None
    return conn


def connect_readonly(path: LedgerPath = None) -> sqlite3.Connection | None:
    """Open the ledger read-only (no file created); None when there is no ledger yet. A ledger of an earlier
    schema is migrated first (once, through a write connection)."""
    p = resolve(path)
    if not p.exists():
        return None
    _refuse_empty(p)
    try:
        conn = sqlite3.connect(
            f"{p.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None
        )
        conn.row_factory = sqlite3.Row
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        if "not a database" in str(exc).lower():
            raise fault(exc, p) from None
        try:  # a WAL file in a read-only folder without its -shm: read the file as it is
            conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro&immutable=1", uri=True, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc2:
            raise fault(exc2, p) from None
    except sqlite3.Error as exc:
        raise fault(exc, p) from None
    try:
        current = schema.version(conn) == schema.SCHEMA_VERSION
    except sqlite3.Error as exc:
        conn.close()
        raise fault(exc, p) from None
    if not current:  # an older ledger: migrate it once, then read
        conn.close()
        _cached(p)
        return connect_readonly(p)
    return conn


_local = threading.local()


def _cached(path: LedgerPath = None) -> sqlite3.Connection:
    """This thread's open connection to the ledger at ``path`` (opening one per call would checkpoint the WAL
    on every close, which costs an fsync)."""
    p = str(resolve(path))
    cache = getattr(_local, "conns", None)
    if cache is None or getattr(_local, "pid", None) != os.getpid():
        cache = _local.conns = {}
        _local.pid = os.getpid()
    conn = cache.get(p)
    if conn is None or not Path(p).exists():
        conn = cache[p] = connect(p)
    return conn


def drop(path: LedgerPath = None) -> None:
    """Close this thread's cached connection (tests, and after a fault)."""
    p = str(resolve(path))
    conn = getattr(_local, "conns", {}).pop(p, None)
    if conn is not None:
        conn.close()


@contextmanager
def immediate(path: LedgerPath = None, *, unharmed: str = "nothing was spent") -> Iterator[sqlite3.Connection]:
    """One write transaction on this thread's connection to the ledger (see :func:`transaction`). Storage faults
    (sqlite errors, OS errors) become one DPError; anything else raised inside passes through unchanged."""
    p = resolve(path)
    _refuse_empty(p)
    conn = _cached(path)
    try:
        with transaction(conn):
            yield conn
    except (sqlite3.Error, OSError) as exc:
        drop(path)
        raise fault(exc, p, unharmed) from None


@contextmanager
def reading(path: LedgerPath = None) -> Iterator[sqlite3.Connection | None]:
    """A read-only connection in one read transaction (None inside when there is no ledger file yet)."""
    p = resolve(path)
    conn = connect_readonly(p)
    if conn is None:
        yield None
        return
    try:
        conn.execute("BEGIN")
        yield conn
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        raise fault(exc, p) from None
    finally:
        conn.close()
