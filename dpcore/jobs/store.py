"""The job store: one SQLite database under ``$DP_EXPLORER_HOME`` that every job's state lives in.

A caller submits a job and reads it back::

    job_id = store.submit(registry.TRAIN, {"dataset": "digits", ...}, group="train")
    workers.ensure_workers()        # cheap and idempotent (dpcore.jobs.workers)
    store.get(job_id).status        # a JobStatus: queued / running / done / failed / cancelled

:func:`submit` stores the target's registered name (:mod:`dpcore.jobs.registry`), so rows outlive module
moves. :func:`get` and :func:`list_jobs` return frozen :class:`~dpcore.jobs.records.JobRecord` objects.

Liveness: workers heartbeat (``DP_EXPLORER_JOBS_HEARTBEAT`` seconds, default 1). A running job whose
heartbeat is older than ``DP_EXPLORER_JOBS_DEAD_AFTER`` (default 6 s) is marked ``failed`` ("worker
died") by whoever looks next — :func:`get`, :func:`list_jobs`, ``ensure_workers``, or another
worker (:func:`reap`). Queued jobs stay queued across restarts; finished jobs and their files are never
touched again.

Cancel: :func:`cancel` cancels a queued job at once, and flags a running one; the runner
(:mod:`dpcore.jobs.runner`) sees the flag within one heartbeat.

Every write is one ``BEGIN IMMEDIATE`` transaction (:func:`transaction`): never two claims of one job.
A storage fault (full disk, read-only, corrupted file) is a :class:`dpcore.storage.StorageError`.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .. import storage
from ..errors import JobError
from .records import JobRecord, JobStatus
from .registry import resolve, target_name
from .settings import settings

DB_NAME = "jobs.sqlite"
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


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
    cancel_requested INTEGER NOT NULL DEFAULT 0
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
    stop INTEGER NOT NULL DEFAULT 0
);
"""

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
                _initialised.add(key)
    # FULL: a committed status survives a power cut. Heartbeats use NORMAL (WAL-safe, cheaper fsyncs).
    conn.execute(f"PRAGMA synchronous = {'NORMAL' if synchronous == 'NORMAL' else 'FULL'}")
    return conn


def _fault(exc: BaseException) -> storage.StorageError:
    try:
        where = db_path()
    except storage.StorageError as err:
        return err
    return storage.StorageError(storage.fault_message(exc, where))


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
                    conn = sqlite3.connect(f"{path.as_uri()}?{query}", uri=True, timeout=30.0,
                                           isolation_level=None)
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


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction that takes the write lock up front (no lock upgrades, no double claims)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def dumps(obj: Any) -> str:
    return json.dumps(obj, default=json_default, allow_nan=True)


def json_default(obj: Any):
    if hasattr(obj, "tolist"):  # numpy arrays and scalars, torch tensors
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON-serialisable")


def _check_id(job_id: str) -> str:
    if not isinstance(job_id, str) or not _ID_RE.match(job_id):
        raise JobError(f"unknown job id {job_id!r}; see `python -m dpcore jobs list` for the ids")
    return job_id


def _new_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(4)


def _row_to_job(row: sqlite3.Row, history: list[dict] | None) -> JobRecord:
    return JobRecord(
        id=row["id"],
        target=row["target"],
        params=json.loads(row["params"]),
        group=row["grp"],
        label=row["label"],
        status=JobStatus(row["status"]),
        progress=json.loads(row["progress"] or "{}"),
        created=row["created"],
        started=row["started"],
        ended=row["ended"],
        error=row["error"],
        result=json.loads(row["result"]) if row["result"] else None,
        result_dir=str(storage.home() / "jobs" / row["id"]),  # not created here: reads work read-only
        worker=row["worker"],
        cancel_requested=bool(row["cancel_requested"]),
        history=history,
    )

def _history(conn: sqlite3.Connection, job_id: str) -> list[dict]:
    out = []
    for h in conn.execute("SELECT t, fields FROM history WHERE job_id = ? ORDER BY seq", (job_id,)):
        entry = json.loads(h["fields"])
        entry["t"] = h["t"]
        out.append(entry)
    return out


# --------------------------------------------------------------------------------------------- public API

def submit(target: str, params: dict, *, group: str | None = None, label: str = "") -> str:
    """Queue ``fn(params, ctx)`` for a worker; return the job id (``dpcore.jobs.workers.ensure_workers`` runs it).

    ``target`` is a registered name (or a path :func:`~dpcore.jobs.registry.target_name` knows); the row holds
    the registered name."""
    resolve(target)
    name = target_name(target)
    if not isinstance(params, dict):
        raise JobError(f"job params must be a dict, got {type(params).__name__}")
    try:
        params_json = json.dumps(params, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise JobError(f"job params must be JSON-serialisable (plain numbers, strings, lists, dicts): {exc}") from None
    if group is not None and not isinstance(group, str):
        raise JobError(f"job group must be a string or None, got {type(group).__name__}")
    job_id = _new_id()
    with connection() as conn, transaction(conn):
        conn.execute(
            "INSERT INTO jobs (id, target, params, grp, label, status, created) VALUES (?, ?, ?, ?, ?, 'queued', ?)",
            (job_id, name, params_json, group, str(label or ""), time.time()),
        )
    return job_id


def get(job_id: str, *, history: bool = True) -> JobRecord:
    """The job's record: status, progress, history (list of progress updates), times, error, result."""
    _check_id(job_id)
    with reader() as conn:
        row = None if conn is None else conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise JobError(f"unknown job id {job_id!r}; see `python -m dpcore jobs list` for the ids")
        return _row_to_job(row, _history(conn, job_id) if history else None)


def list_jobs(group: str | None = None, limit: int = 100) -> list[JobRecord]:
    """Newest jobs first (without their history), optionally only one group."""
    limit = max(1, min(int(limit), 10_000))
    with reader() as conn:
        if conn is None:
            return []
        if group is None:
            rows = conn.execute("SELECT * FROM jobs ORDER BY created DESC, rowid DESC LIMIT ?", (limit,))
        else:
            rows = conn.execute("SELECT * FROM jobs WHERE grp = ? ORDER BY created DESC, rowid DESC LIMIT ?",
                                (group, limit))
        return [_row_to_job(r, None) for r in rows.fetchall()]


def cancel(job_id: str) -> JobRecord:
    """Cancel a job: a queued one at once, a running one within a heartbeat or two. Finished: no change."""
    _check_id(job_id)
    now = time.time()
    with connection() as conn:
        with transaction(conn):
            row = conn.execute("SELECT status FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                raise JobError(f"unknown job id {job_id!r}; see `python -m dpcore jobs list` for the ids")
            if row["status"] == JobStatus.QUEUED:
                conn.execute("UPDATE jobs SET status = 'cancelled', cancel_requested = 1, ended = ?, "
                             "error = 'cancelled before it started' WHERE id = ?", (now, job_id))
            elif row["status"] == JobStatus.RUNNING:
                conn.execute("UPDATE jobs SET cancel_requested = 1 WHERE id = ?", (job_id,))
    return get(job_id, history=False)


def cancel_group(group: str) -> int:
    """Cancel every queued or running job of a group (e.g. a sweep); return how many were asked."""
    now = time.time()
    with connection() as conn, transaction(conn):
        queued = conn.execute("UPDATE jobs SET status = 'cancelled', cancel_requested = 1, ended = ?, "
                              "error = 'cancelled before it started' WHERE grp = ? AND status = 'queued'",
                              (now, group)).rowcount
        running = conn.execute("UPDATE jobs SET cancel_requested = 1 WHERE grp = ? AND status = 'running'",
                               (group,)).rowcount
    return queued + running


def wait(job_id: str, timeout: float = 60.0, poll: float = 0.05) -> JobRecord:
    """Block until the job finishes (done / failed / cancelled) and return it; JobError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        job = get(job_id, history=False)
        if job.finished:
            return get(job_id)
        if time.monotonic() >= deadline:
            raise JobError(f"job {job_id} is still {job['status']} after {timeout:g} s")
        time.sleep(poll)


def result_path(job_id: str, name: str = "result.json") -> Path:
    """Path of a file in the job's result folder (``result.json``, or a file saved with ctx.save_bytes)."""
    _check_id(job_id)
    return jobs_dir() / job_id / check_name(name)


def check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name) or ".." in name:
        raise JobError(f"file name must be a plain name like 'model.pt' (letters, digits, . _ -), got {name!r}")
    return name


# --------------------------------------------------------------------------------------------- liveness

def reap(conn: sqlite3.Connection) -> int:
    """Mark running jobs whose worker stopped heartbeating as failed. Cheap when nothing is stale."""
    cfg = settings()
    cutoff = time.time() - cfg.dead_after
    stale = conn.execute("SELECT id FROM jobs WHERE status = 'running' AND heartbeat < ? LIMIT 1",
                         (cutoff,)).fetchone()
    if stale is None:
        return 0
    with transaction(conn):
        cur = conn.execute(
            "UPDATE jobs SET status = 'failed', ended = ?, "
            "error = 'worker died (no heartbeat for ' || CAST(ROUND(? - heartbeat, 1) AS TEXT) || ' s); "
            "submit the job again' WHERE status = 'running' AND heartbeat < ?",
            (time.time(), time.time(), cutoff),
        )
    return cur.rowcount
