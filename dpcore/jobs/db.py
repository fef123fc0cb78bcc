"""The job store's SQLite file: schema and migration, connections, transactions, storage faults, liveness.

One database, ``$DP_EXPLORER_HOME/jobs.sqlite`` (0600, WAL), holds every job, its progress history, the live
workers and the clicks already submitted. Only this machine (the app's) writes it. Every write is one
``BEGIN IMMEDIATE`` transaction (:func:`transaction`): never two claims of one job. A storage fault (full disk,
read-only, corrupted file) is a :class:`dpcore.storage.StorageError` (:func:`connection`); :func:`reader` opens
the store read-only where the home cannot be written. :func:`migrate` brings an older file up to today's
schema (rows written before owners existed belong to the CLI owner). The job API over it is
:mod:`dpcore.jobs.store`.

Liveness (:mod:`dpcore.jobs.liveness`): a running job holds its worker's process (pid, host, start time), an
attempt number and a lease that heartbeats renew; whoever looks next (:func:`reader`, ``ensure_workers``, a
worker's heartbeat) gives up a job whose worker's process is gone or whose lease lapsed.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import storage
from ..storage.sqlite import transaction
from .liveness import reap
from .owners import CLI_OWNER

DB_NAME = "jobs.sqlite"


# --------------------------------------------------------------------------------------------- store

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    target TEXT NOT NULL,
    params TEXT NOT NULL,
    grp TEXT,
    label TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    progress TEXT NOT NULL DEFAULT '{}',
    created REAL NOT NULL,
    started REAL,
    ended REAL,
    error TEXT,
    result TEXT,
    worker TEXT,
    heartbeat REAL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    owner TEXT NOT NULL DEFAULT 'cli',
    shared INTEGER NOT NULL DEFAULT 0,
    attempt INTEGER NOT NULL DEFAULT 0,
    lease REAL,
    pid INTEGER,
    host TEXT,
    pid_start TEXT,
    parent TEXT
);
CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs(status, created);
CREATE INDEX IF NOT EXISTS jobs_by_group ON jobs(grp, created);
CREATE TABLE IF NOT EXISTS history (
    job_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    t REAL NOT NULL,
    fields TEXT NOT NULL,
    PRIMARY KEY (job_id, seq)
);
CREATE TABLE IF NOT EXISTS workers (
    id TEXT PRIMARY KEY,
    pid INTEGER,
    host TEXT,
    executor TEXT,
    started REAL NOT NULL,
    heartbeat REAL NOT NULL,
    registered INTEGER NOT NULL DEFAULT 0,
    job TEXT,
    stop INTEGER NOT NULL DEFAULT 0,
    pid_start TEXT
);
CREATE TABLE IF NOT EXISTS clicks (
    owner TEXT NOT NULL,
    key TEXT NOT NULL,
    ref TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (owner, key)
)
"""


def migrate(conn: sqlite3.Connection) -> None:
    """Bring an older store up to today's schema (inside the caller's transaction). Rows written before owners
    existed belong to the CLI owner (the person who runs the server); rows written before shared demos existed
    are not shared (their owner keeps them). A job still running from before leases is judged by its last
    heartbeat plus the lease (:mod:`dpcore.jobs.liveness`)."""
    cols = {r[1] for r in conn.execute("PRAGMA table_info(jobs)")}
    added = {
        "owner": f"TEXT NOT NULL DEFAULT '{CLI_OWNER}'",
        "shared": "INTEGER NOT NULL DEFAULT 0",
        "attempt": "INTEGER NOT NULL DEFAULT 0",
        "lease": "REAL",
        "pid": "INTEGER",
        "host": "TEXT",
        "pid_start": "TEXT",
        "parent": "TEXT",  # the group (a sweep) a job belongs to
    }
    for name, decl in added.items():
        if name not in cols:
            conn.execute(f"ALTER TABLE jobs ADD COLUMN {name} {decl}")
    if "pid_start" not in {r[1] for r in conn.execute("PRAGMA table_info(workers)")}:
        conn.execute("ALTER TABLE workers ADD COLUMN pid_start TEXT")
    conn.execute("CREATE INDEX IF NOT EXISTS jobs_shared ON jobs(shared, target, status)")
    conn.execute("CREATE INDEX IF NOT EXISTS jobs_by_owner ON jobs(owner, status, created)")
    conn.execute("CREATE INDEX IF NOT EXISTS jobs_by_owner_started ON jobs(owner, started)")  # the fair claim
    conn.execute("CREATE INDEX IF NOT EXISTS jobs_by_parent ON jobs(parent)")


_initialised: set[str] = set()
_init_lock = threading.Lock()


def db_path() -> Path:
    return storage.home() / DB_NAME


def jobs_dir() -> Path:
    return storage.subdir("jobs")


def _connect(synchronous: str = "FULL") -> sqlite3.Connection:
    path = db_path()
    storage.private_file(path)  # 0600: job parameters and results are the owner's business only
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA busy_timeout = 30000")
    key = str(path)
    if key not in _initialised:
        with _init_lock:
            if key not in _initialised:
                conn.execute("PRAGMA journal_mode = WAL")
                with transaction(conn):
                    for stmt in _SCHEMA.split(";"):
                        if stmt.strip():
                            conn.execute(stmt)
                    migrate(conn)
                _initialised.add(key)
    # FULL: a committed status survives a power cut. Heartbeats use NORMAL (WAL-safe, cheaper fsyncs).
    conn.execute(f"PRAGMA synchronous = {'NORMAL' if synchronous == 'NORMAL' else 'FULL'}")
    return conn


def _fault(exc: BaseException) -> storage.StorageError:
    try:
        where = db_path()
    except storage.StorageError as err:
        return err
    kind = storage.StorageBusy if storage.is_busy(exc) else storage.StorageError
    return kind(storage.fault_message(exc, where))


@contextmanager
def connection(synchronous: str = "FULL") -> Iterator[sqlite3.Connection]:
    """A connection to the job store; a storage fault (full disk, read-only, corrupted) is a StorageError."""
    try:
        conn = _connect(synchronous)
    except (sqlite3.Error, OSError) as exc:
        raise _fault(exc) from None
    try:
        yield conn
    except sqlite3.Error as exc:
        raise _fault(exc) from None
    finally:
        conn.close()


def _is_corrupt(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.DatabaseError) and ("not a database" in text or "malformed" in text)


@contextmanager
def reader() -> Iterator[sqlite3.Connection | None]:
    """A connection for commands that only read (``jobs list``, ``jobs show``, ``workers``).

    Works on a read-only ``$DP_EXPLORER_HOME``: there it opens the store read-only, skips reaping
    (a write) and yields ``None`` when no store exists yet (nothing to list). A corrupted store is
    still a StorageError that says so.
    """
    conn = None
    try:
        conn = _connect()
    except (sqlite3.Error, OSError, storage.StorageError) as exc:
        if isinstance(exc, storage.StorageError) and not db_path_parent_ok():
            raise
        if _is_corrupt(exc):
            raise _fault(exc) from None
        path = db_path()
        if not path.exists():
            conn = None
        else:
            for query in ("mode=ro", "immutable=1"):  # immutable: no -shm needed in a read-only folder
                try:
                    conn = sqlite3.connect(f"{path.as_uri()}?{query}", uri=True, timeout=30.0, isolation_level=None)
                    conn.row_factory = sqlite3.Row
                    conn.execute("SELECT count(*) FROM jobs").fetchone()
                    break
                except sqlite3.Error as exc2:
                    if conn is not None:
                        conn.close()
                    conn = None
                    if _is_corrupt(exc2):
                        raise _fault(exc2) from None
            if conn is None:
                raise _fault(exc) from None
    else:
        try:
            reap(conn)
        except sqlite3.Error:
            pass  # a read-only store cannot be reaped; reading still works
    try:
        yield conn
    except sqlite3.Error as exc:
        raise _fault(exc) from None
    finally:
        if conn is not None:
            conn.close()


def db_path_parent_ok() -> bool:
    """True when ``$DP_EXPLORER_HOME`` is a usable folder (a file in its place is a configuration error)."""
    try:
        storage.home()
    except storage.StorageError:
        return False
    return True
