"""Background jobs: a SQLite store under ``$DP_EXPLORER_HOME`` and worker processes that run it.

Long work (training, sweeps) never runs in the Streamlit script thread. A caller submits a job::

    job_id = jobs.submit(jobs.TRAIN, {"dataset": "digits", ...}, group="train")
    jobs.ensure_workers()          # cheap and idempotent; starts detached workers if too few are alive
    jobs.get(job_id).status        # a JobStatus: queued / running / done / failed / cancelled

Targets are named through a small registry (:func:`register`): ``"train"`` is
``dpcore.training:run_job``, ``"sweep.point"`` is ``dpcore.sweep:run_point``, and so on. Records
written by older versions hold the ``"dpcore.module:function"`` spelling; it still runs and is read
back as its registered name. :func:`get` and :func:`list_jobs` return frozen :class:`JobRecord` objects
(attributes, and ``record["status"]`` for older callers).

A worker claims a queued job (``BEGIN IMMEDIATE``: never two claims of one job), imports the
target's function and calls ``fn(params, ctx)``, which returns a JSON-serialisable dict of
metrics. ``ctx`` (:class:`JobContext`) reports progress, answers "was I cancelled?", and saves files
atomically into the job's own folder ``$DP_EXPLORER_HOME/jobs/<id>/``. The worker writes
``result.json`` there (temp file, fsync, rename) *before* it commits ``done``.

Liveness: workers heartbeat (``DP_EXPLORER_JOBS_HEARTBEAT`` seconds, default 1). A running job whose
heartbeat is older than ``DP_EXPLORER_JOBS_DEAD_AFTER`` (default 6 s) is marked ``failed`` ("worker
died") by whoever looks next — :func:`get`, :func:`list_jobs`, :func:`ensure_workers`, or another
worker. Queued jobs stay queued across restarts; finished jobs and their files are never touched again.

Cancel: :func:`cancel` cancels a queued job at once, and flags a running one; the worker's heartbeat
thread sees the flag within one heartbeat, ``ctx.cancelled()`` turns true, the job function returns or
raises (one exception for every cancel: :class:`dpcore.errors.Cancelled`), and the job ends
``cancelled``. A cancelled inline run raises ``Cancelled`` too, never a DPError (a cancel is not
exit 2). A job that ignores the flag for ``DP_EXPLORER_JOBS_CANCEL_GRACE``
seconds (default 10) is recorded ``cancelled`` and its worker process exits (a new one is started on
the next :func:`ensure_workers`).

The hand-off from store to executor is one small interface, :class:`Executor`: it only has to start a
worker process (``python -m dpcore.worker --id ID``) with the given environment. Workers *pull* jobs
from the store, so a cluster executor only needs a shared ``$DP_EXPLORER_HOME`` and its own
``start_worker``.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import re
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from enum import StrEnum
from pathlib import Path
from typing import Any, Callable, Iterator

from . import limits, storage
from .errors import Cancelled, DPError, JobError


class JobStatus(StrEnum):
    """A job's state. String-valued: stored rows, JSON and ``status == "done"`` read the same as before."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in FINISHED


STATUSES = tuple(JobStatus)
FINISHED = frozenset({JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED})
JobCancelled = Cancelled  # the one cancel exception (dpcore.errors.Cancelled); old name kept importable
DB_NAME = "jobs.sqlite"
LOG_MAX_BYTES = limits.JOBS_LOG_MAX_BYTES  # workers.log is rotated (one old copy) past this size
MAX_HISTORY = limits.JOBS_MAX_HISTORY  # progress history entries kept per job (live charts)

_TARGET_RE = re.compile(r"^dpcore(\.[A-Za-z_][A-Za-z0-9_]*)+:[A-Za-z_][A-Za-z0-9_]*$")
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_TARGET_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")


# --------------------------------------------------------------------------------------------- targets

_TARGETS: dict[str, str] = {}   # registered name -> "dpcore.module:function"
_BY_PATH: dict[str, str] = {}   # "dpcore.module:function" -> registered name (old records, old callers)


def register(name: str, path: str) -> str:
    """Name a job function: ``register("train", "dpcore.training:run_job")``; returns the name.

    Nothing is imported here (the worker imports the function when it runs a job). Registering the
    same pair twice is harmless; a name or function registered twice differently is a JobError.
    """
    if not isinstance(name, str) or not _TARGET_NAME_RE.match(name):
        raise JobError(f"job target name must be lower-case words joined by dots (e.g. 'sweep.point'), got {name!r}")
    if not isinstance(path, str) or not _TARGET_RE.match(path):
        raise JobError(f"job target must look like 'dpcore.module:function' (inside dpcore), got {path!r}")
    if _TARGETS.get(name, path) != path or _BY_PATH.get(path, name) != name:
        raise JobError(f"job target {name!r} or {path!r} is already registered differently")
    _TARGETS[name] = path
    _BY_PATH[path] = name
    return name


TRAIN = register("train", "dpcore.training:run_job")
SWEEP_POINT = register("sweep.point", "dpcore.sweep:run_point")
RAY = register("ray", "dpcore.executors:ray_job")
for _fn in ("sleep", "fail", "ignore_cancel", "echo", "not_a_dict"):  # demos for tests and benchmarks
    register(f"demo.{_fn}", f"dpcore.demo_jobs:{_fn}")
del _fn


def targets() -> dict[str, str]:
    """Registered job targets: name -> ``"dpcore.module:function"``."""
    return dict(_TARGETS)


def target_name(target: str) -> str:
    """The registered name for ``target`` (a name, or the ``"dpcore.module:function"`` spelling of older
    records and callers). An unregistered ``dpcore.module:function`` is returned unchanged."""
    if isinstance(target, str):
        if target in _TARGETS:
            return target
        if target in _BY_PATH:
            return _BY_PATH[target]
        if _TARGET_RE.match(target):
            return target
    raise JobError(f"unknown job target {target!r}; registered: {', '.join(sorted(_TARGETS))} "
                   "(or 'dpcore.module:function' inside dpcore)")


# --------------------------------------------------------------------------------------------- settings

def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        return default
    return value if math.isfinite(value) and value > 0 else default


@dataclass(frozen=True)
class Settings:
    """Timing knobs, read from the environment at call time (tests shorten them)."""

    heartbeat: float = 1.0       # seconds between heartbeats
    dead_after: float = 6.0      # a running job without heartbeat for this long is "worker died"
    poll: float = 0.5            # idle worker: seconds between looks for queued jobs
    idle_exit: float = 600.0     # idle worker exits after this many seconds without a job
    cancel_grace: float = 10.0   # a job ignoring cancel this long gets its worker process ended
    startup_grace: float = 30.0  # a just-started worker counts as alive this long before its first beat


def _under_pytest() -> bool:
    return "PYTEST_CURRENT_TEST" in os.environ


def settings() -> Settings:
    hb = _env_float("DP_EXPLORER_JOBS_HEARTBEAT", 1.0)
    return Settings(
        heartbeat=hb,
        dead_after=_env_float("DP_EXPLORER_JOBS_DEAD_AFTER", max(6.0 * hb, 2.0 * hb + 1.0)),
        poll=_env_float("DP_EXPLORER_JOBS_POLL", min(0.5, hb)),
        # under pytest, workers that nobody asked to linger go away quickly
        idle_exit=_env_float("DP_EXPLORER_JOBS_IDLE_EXIT", 20.0 if _under_pytest() else 600.0),
        cancel_grace=_env_float("DP_EXPLORER_JOBS_CANCEL_GRACE", 10.0),
        startup_grace=_env_float("DP_EXPLORER_JOBS_STARTUP_GRACE", 30.0),
    )


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
                with _tx(conn):
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
def _db(synchronous: str = "FULL") -> Iterator[sqlite3.Connection]:
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
def _reader() -> Iterator[sqlite3.Connection | None]:
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
            _reap(conn)
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
def _tx(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction that takes the write lock up front (no lock upgrades, no double claims)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, default=_json_default, allow_nan=True)


def _json_default(obj: Any):
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


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    plain = isinstance(exc, (DPError, WorkerStopped)) and first
    msg = first if plain else f"{type(exc).__name__}: {first}".rstrip(": ")
    return msg[:500]


@dataclass(frozen=True, eq=True)
class JobRecord(Mapping):
    """One job as the store holds it. Frozen; read attributes (``rec.status``). It is also a read-only
    mapping with the old dict keys (``rec["status"]``, ``rec.get("progress")``, ``dict(rec)``), so callers
    written against the dict records keep working; :meth:`to_dict` gives plain JSON-ready data."""

    id: str
    target: str
    params: dict
    group: str | None
    label: str
    status: JobStatus
    progress: dict
    created: float
    started: float | None
    ended: float | None
    error: str | None
    result: dict | None
    result_dir: str
    worker: str | None
    cancel_requested: bool
    history: list[dict] | None = None  # None: read without history (then "history" is not a key)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def _keys(self) -> tuple[str, ...]:
        names = tuple(f.name for f in fields(self))
        return names if self.history is not None else names[:-1]

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in self._keys()}
        out["status"] = str(self.status)
        return out


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


def resolve(target: str) -> Callable[[dict, "JobContext"], dict]:
    """The job function for a registered name or a ``"dpcore.module:function"`` path (imported here)."""
    name = target_name(target)
    path = _TARGETS.get(name, name)
    module_name, func_name = path.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise JobError(f"job target {target!r}: cannot import {module_name} ({exc})") from None
    fn = getattr(module, func_name, None)
    if not callable(fn):
        raise JobError(f"job target {target!r}: {module_name} has no function {func_name!r}")
    return fn


_resolve_target = resolve  # old private name (dpcore.executors used it)


# --------------------------------------------------------------------------------------------- public API

def submit(target: str, params: dict, *, group: str | None = None, label: str = "") -> str:
    """Queue ``fn(params, ctx)`` for a worker; return the job id. Call :func:`ensure_workers` to run it."""
    resolve(target)
    if not isinstance(params, dict):
        raise JobError(f"job params must be a dict, got {type(params).__name__}")
    try:
        params_json = json.dumps(params, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise JobError(f"job params must be JSON-serialisable (plain numbers, strings, lists, dicts): {exc}") from None
    if group is not None and not isinstance(group, str):
        raise JobError(f"job group must be a string or None, got {type(group).__name__}")
    job_id = _new_id()
    with _db() as conn, _tx(conn):
        conn.execute(
            "INSERT INTO jobs (id, target, params, grp, label, status, created) VALUES (?, ?, ?, ?, ?, 'queued', ?)",
            (job_id, target, params_json, group, str(label or ""), time.time()),
        )
    return job_id


def get(job_id: str, *, history: bool = True) -> JobRecord:
    """The job's record: status, progress, history (list of progress updates), times, error, result."""
    _check_id(job_id)
    with _reader() as conn:
        row = None if conn is None else conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise JobError(f"unknown job id {job_id!r}; see `python -m dpcore jobs list` for the ids")
        return _row_to_job(row, _history(conn, job_id) if history else None)


def list_jobs(group: str | None = None, limit: int = 100) -> list[JobRecord]:
    """Newest jobs first (without their history), optionally only one group."""
    limit = max(1, min(int(limit), 10_000))
    with _reader() as conn:
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
    with _db() as conn:
        with _tx(conn):
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
    with _db() as conn, _tx(conn):
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
    return jobs_dir() / job_id / _check_name(name)


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name) or ".." in name:
        raise JobError(f"file name must be a plain name like 'model.pt' (letters, digits, . _ -), got {name!r}")
    return name


# --------------------------------------------------------------------------------------------- liveness

def _reap(conn: sqlite3.Connection) -> int:
    """Mark running jobs whose worker stopped heartbeating as failed. Cheap when nothing is stale."""
    cfg = settings()
    cutoff = time.time() - cfg.dead_after
    stale = conn.execute("SELECT id FROM jobs WHERE status = 'running' AND heartbeat < ? LIMIT 1",
                         (cutoff,)).fetchone()
    if stale is None:
        return 0
    with _tx(conn):
        cur = conn.execute(
            "UPDATE jobs SET status = 'failed', ended = ?, "
            "error = 'worker died (no heartbeat for ' || CAST(ROUND(? - heartbeat, 1) AS TEXT) || ' s); "
            "submit the job again' WHERE status = 'running' AND heartbeat < ?",
            (time.time(), time.time(), cutoff),
        )
    return cur.rowcount


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed child that nobody waited for yet is a zombie: dead
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _live_workers(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    cfg = settings()
    now = time.time()
    host = socket.gethostname()
    live = []
    for w in conn.execute("SELECT * FROM workers WHERE stop = 0").fetchall():
        same_host_dead = w["host"] == host and w["executor"] == "local" and not _pid_alive(w["pid"])
        if same_host_dead:
            continue
        if w["heartbeat"] >= now - cfg.dead_after:
            live.append(w)
        elif not w["registered"] and w["started"] >= now - cfg.startup_grace:
            live.append(w)  # started, still importing
    return live


def workers() -> list[dict]:
    """Live workers (id, pid, host, executor, started, heartbeat, job)."""
    with _reader() as conn:
        if conn is None:
            return []
        return [{k: w[k] for k in ("id", "pid", "host", "executor", "started", "heartbeat", "job")}
                for w in _live_workers(conn)]


# --------------------------------------------------------------------------------------------- executors

class Executor:
    """Starts worker processes. The only hand-off from the store to compute: workers pull jobs themselves.

    A cluster executor would submit ``python -m dpcore.worker --id WORKER_ID`` to the cluster with the
    same environment (``DP_EXPLORER_HOME`` must point at storage the cluster shares).
    """

    name = "base"

    def start_worker(self, worker_id: str, env: dict[str, str]) -> int | None:
        """Start one worker; return its pid if it runs on this host, else None."""
        raise NotImplementedError

    def reap(self) -> None:
        """Collect exited workers (optional)."""


class LocalProcessExecutor(Executor):
    """Detached local processes (own session: they outlive a Streamlit rerun or restart)."""

    name = "local"

    def __init__(self) -> None:
        self._children: list[subprocess.Popen] = []

    def reap(self) -> None:
        self._children = [p for p in self._children if p.poll() is None]  # no zombies left behind

    def start_worker(self, worker_id: str, env: dict[str, str]) -> int | None:
        self.reap()
        log_dir = storage.subdir("logs")
        root = str(Path(__file__).resolve().parents[1])
        env = dict(env)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        log_path = log_dir / "workers.log"
        try:
            if log_path.stat().st_size > LOG_MAX_BYTES:  # keep one old log, never grow without bound
                os.replace(log_path, log_dir / "workers.log.1")
        except FileNotFoundError:
            pass
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "dpcore.worker", "--id", worker_id],
                cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, close_fds=True,
            )
        self._children.append(proc)
        return proc.pid

    def children(self) -> list[subprocess.Popen]:
        return list(self._children)


_executor: Executor = LocalProcessExecutor()


def set_executor(executor: Executor) -> Executor:
    """Use another executor (e.g. a cluster one); returns the previous one."""
    global _executor
    previous, _executor = _executor, executor
    return previous


def get_executor() -> Executor:
    return _executor


def ensure_workers(n: int = 2) -> int:
    """Start workers until ``n`` are alive; return how many were started. Idempotent and cheap.

    ``n`` is 0 .. :data:`dpcore.limits.WORKERS_MAX` (each worker is a process on this machine).
    """
    n = limits.check_int_range(n, 0, limits.WORKERS_MAX, "number of workers",
                               "each worker is a process on this machine; 2 suits most laptops")
    started = 0
    _executor.reap()
    with _db() as conn:
        _reap(conn)
        with _tx(conn):
            live = _live_workers(conn)
            live_ids = {w["id"] for w in live}
            # forget workers that are gone (never touch the jobs they ran: _reap handles those)
            for w in conn.execute("SELECT id FROM workers").fetchall():
                if w["id"] not in live_ids:
                    conn.execute("DELETE FROM workers WHERE id = ?", (w["id"],))
            env = dict(os.environ)
            env[storage.ENV_VAR] = str(storage.home())
            for _ in range(max(0, n - len(live))):
                worker_id = f"w-{secrets.token_hex(4)}"
                pid = _executor.start_worker(worker_id, env)
                now = time.time()
                conn.execute(
                    "INSERT INTO workers (id, pid, host, executor, started, heartbeat) VALUES (?, ?, ?, ?, ?, ?)",
                    (worker_id, pid, socket.gethostname(), _executor.name, now, now),
                )
                started += 1
    return started


def shutdown_workers(timeout: float = 5.0) -> int:
    """Ask every worker to exit after its current job; wait up to ``timeout`` s. Returns how many were asked."""
    with _db() as conn, _tx(conn):
        ids = [w["id"] for w in conn.execute("SELECT id FROM workers WHERE stop = 0")]
        conn.execute("UPDATE workers SET stop = 1")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with _db() as conn:
            rows = conn.execute("SELECT pid, host, executor FROM workers").fetchall()
        if not any(r["host"] == socket.gethostname() and r["executor"] == "local" and _pid_alive(r["pid"])
                   for r in rows):
            break
        time.sleep(0.05)
    return len(ids)


# --------------------------------------------------------------------------------------------- running a job

@dataclass
class JobContext:
    """What a job function gets besides its params: progress, cancel flag, its own result folder."""

    job_id: str
    result_dir: Path
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    _progress: dict = field(default_factory=dict, repr=False)
    _pending: list = field(default_factory=list, repr=False)
    _dirty: bool = field(default=False, repr=False)
    _n_history: int = field(default=0, repr=False)
    _t0: float = field(default_factory=time.time, repr=False)

    def progress(self, **fields: Any) -> None:
        """Merge fields (epoch, step, total_steps, loss, accuracy, epsilon, ...) into the job's progress
        and append them (plus ``t``, seconds since start) to its history. Cheap: written to the store
        by the heartbeat thread."""
        clean = json.loads(_dumps(fields))
        with self._lock:
            self._progress.update(clean)
            self._dirty = True
            if self._n_history < MAX_HISTORY:
                self._pending.append((round(time.time() - self._t0, 3), clean))
                self._n_history += 1

    def cancelled(self) -> bool:
        """True once someone asked to cancel this job (checked by the training loop each step)."""
        return self._cancel.is_set()

    def check_cancelled(self) -> None:
        """Raise :class:`~dpcore.errors.Cancelled` if the job was cancelled."""
        if self._cancel.is_set():
            raise Cancelled(f"job {self.job_id} was cancelled")

    def save_bytes(self, name: str, data: bytes) -> Path:
        """Write ``data`` atomically to ``result_dir/name``; return the path."""
        path = self.result_dir / _check_name(name)
        storage.atomic_write_bytes(path, data)
        return path

    # -- used by the runner
    def _take(self) -> tuple[dict | None, list]:
        with self._lock:
            snapshot = dict(self._progress) if self._dirty else None
            pending, self._pending, self._dirty = self._pending, [], False
        return snapshot, pending


def _flush(conn: sqlite3.Connection, ctx: JobContext) -> None:
    """Write buffered progress and history (inside the caller's transaction)."""
    snapshot, pending = ctx._take()
    if snapshot is not None:
        conn.execute("UPDATE jobs SET progress = ? WHERE id = ?", (_dumps(snapshot), ctx.job_id))
    if pending:
        base = conn.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM history WHERE job_id = ?",
                            (ctx.job_id,)).fetchone()[0]
        conn.executemany("INSERT INTO history (job_id, seq, t, fields) VALUES (?, ?, ?, ?)",
                         [(ctx.job_id, base + i, t, _dumps(f)) for i, (t, f) in enumerate(pending)])


class _Heartbeat(threading.Thread):
    """Beats for the job (and its worker), flushes progress, and turns a cancel flag into ctx.cancelled()."""

    def __init__(self, ctx: JobContext, worker_id: str, hard_exit: bool) -> None:
        super().__init__(name=f"heartbeat-{ctx.job_id}", daemon=True)
        self.ctx = ctx
        self.worker_id = worker_id
        self.hard_exit = hard_exit
        self.stop = threading.Event()
        self.cancel_seen: float | None = None
        self.cfg = settings()

    def run(self) -> None:
        while not self.stop.wait(self.cfg.heartbeat):
            try:
                self.beat()
            except (sqlite3.Error, storage.StorageError) as exc:  # keep beating; busy is not dead
                print(f"[jobs] heartbeat for {self.ctx.job_id} failed: {exc}", file=sys.stderr, flush=True)

    def beat(self) -> None:
        now = time.time()
        with _db("NORMAL") as conn:
            with _tx(conn):
                _flush(conn, self.ctx)
                conn.execute("UPDATE jobs SET heartbeat = ? WHERE id = ? AND status = 'running'",
                             (now, self.ctx.job_id))
                conn.execute("UPDATE workers SET heartbeat = ?, registered = 1, job = ? WHERE id = ?",
                             (now, self.ctx.job_id, self.worker_id))
                row = conn.execute("SELECT status, cancel_requested FROM jobs WHERE id = ?",
                                   (self.ctx.job_id,)).fetchone()
            if row is None or row["cancel_requested"] or row["status"] != JobStatus.RUNNING:
                self.ctx._cancel.set()
                if self.cancel_seen is None:
                    self.cancel_seen = now
                elif self.hard_exit and now - self.cancel_seen > self.cfg.cancel_grace and not self.stop.is_set():
                    # the job ignores the flag: record the end honestly, then end this worker process
                    with _tx(conn):
                        conn.execute("UPDATE jobs SET status = 'cancelled', ended = ?, error = ? "
                                     "WHERE id = ? AND status = 'running'",
                                     (now, "cancelled (the job ignored the cancel flag; its worker was stopped)",
                                      self.ctx.job_id))
                        conn.execute("DELETE FROM workers WHERE id = ?", (self.worker_id,))
                    print(f"[jobs] job {self.ctx.job_id} ignored cancel for {self.cfg.cancel_grace:g} s; "
                          "worker exits", file=sys.stderr, flush=True)
                    os._exit(3)


def _finish(ctx: JobContext, worker_id: str, status: JobStatus, *, result: dict | None = None,
            error: str | None = None) -> None:
    with _db() as conn, _tx(conn):
        _flush(conn, ctx)
        conn.execute(
            "UPDATE jobs SET status = ?, ended = ?, result = ?, error = ?, heartbeat = ? "
            "WHERE id = ? AND status = 'running' AND worker = ?",
            (status, time.time(), _dumps(result) if result is not None else None, error, time.time(),
             ctx.job_id, worker_id),
        )
        conn.execute("UPDATE workers SET job = NULL, heartbeat = ? WHERE id = ?", (time.time(), worker_id))


def _execute(job_id: str, target: str, params: dict, worker_id: str, *, hard_exit: bool,
             reraise: bool) -> tuple[JobStatus, dict | None]:
    """Run one claimed job to its end state. Returns (status, result).

    With ``reraise`` (inline runs) the job's exception is raised again; any way a job stops on a
    cancel (``Cancelled``, another exception after the flag was set, a normal return) raises
    :class:`~dpcore.errors.Cancelled`."""
    result_dir = jobs_dir() / job_id
    result_dir.mkdir(parents=True, exist_ok=True)
    ctx = JobContext(job_id=job_id, result_dir=result_dir)
    beat = _Heartbeat(ctx, worker_id, hard_exit)
    beat.start()
    status, result, error, exc_out = JobStatus.FAILED, None, None, None
    stopped = "cancelled while running"
    try:
        fn = resolve(target)
        out = fn(params, ctx)
        if ctx.cancelled():
            status, error, exc_out = JobStatus.CANCELLED, stopped, Cancelled(f"job {job_id} was cancelled")
        elif not isinstance(out, dict):
            error = f"job function {target} returned {type(out).__name__}, expected a dict of metrics"
        else:
            result = json.loads(_dumps(out))
            payload = json.dumps({"job_id": job_id, "target": target, "params": params, "result": result},
                                 indent=2, default=_json_default).encode()
            storage.atomic_write_bytes(result_dir / "result.json", payload)  # before `done` is committed
            status = JobStatus.DONE
    except Cancelled as exc:
        status, error, exc_out = JobStatus.CANCELLED, stopped, exc
    except KeyboardInterrupt as exc:
        status, error, exc_out = JobStatus.CANCELLED, "interrupted", exc
    except Exception as exc:  # noqa: BLE001 - a job's failure is recorded, not fatal to the worker
        if ctx.cancelled():  # whatever the job raised on its way out, it was a cancel
            status, error = JobStatus.CANCELLED, stopped
            exc_out = Cancelled(f"job {job_id} was cancelled")
            exc_out.__cause__ = exc
        else:
            error = _one_line(exc)
            print(f"[jobs] job {job_id} ({target}) failed:", file=sys.stderr, flush=True)
            traceback.print_exc(file=sys.stderr)
            sys.stderr.flush()
            exc_out = exc
    except BaseException as exc:  # SystemExit from a job: record, then let it end the process
        error, exc_out = _one_line(exc) or "the job exited its process", exc
        beat.stop.set()
        beat.join()
        _finish(ctx, worker_id, JobStatus.FAILED, error=error)
        raise
    finally:
        beat.stop.set()
        beat.join()
    _finish(ctx, worker_id, status, result=result, error=error)
    if reraise and exc_out is not None:
        raise exc_out
    return status, result


def _claim(worker_id: str) -> sqlite3.Row | None:
    """Atomically move the oldest queued job to running for this worker (BEGIN IMMEDIATE)."""
    with _db() as conn:
        if conn.execute("SELECT 1 FROM jobs WHERE status = 'queued' LIMIT 1").fetchone() is None:
            return None
        with _tx(conn):
            row = conn.execute("SELECT * FROM jobs WHERE status = 'queued' ORDER BY created, rowid LIMIT 1").fetchone()
            if row is None:
                return None
            now = time.time()
            conn.execute("UPDATE jobs SET status = 'running', started = ?, heartbeat = ?, worker = ? "
                         "WHERE id = ? AND status = 'queued'", (now, now, worker_id, row["id"]))
            conn.execute("UPDATE workers SET job = ?, heartbeat = ?, registered = 1 WHERE id = ?",
                         (row["id"], now, worker_id))
        return row


def run_inline(target: str, params: dict, *, group: str | None = None, label: str = "") -> dict:
    """Run a job in this process (CLI without --background, tests) and return its result dict.

    The run is recorded in the store like any job (visible in ``jobs list``), with the same context,
    heartbeats and ``result.json``. A job error is raised again here (DPError stays a DPError);
    a cancelled run raises :class:`~dpcore.errors.Cancelled` (not a DPError: a cancel is not exit 2).
    """
    job_id = submit(target, params, group=group, label=label)
    worker_id = f"inline-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"
    now = time.time()
    with _db() as conn, _tx(conn):
        conn.execute("UPDATE jobs SET status = 'running', started = ?, heartbeat = ?, worker = ? "
                     "WHERE id = ? AND status = 'queued'", (now, now, worker_id, job_id))
    status, result = _execute(job_id, target, params, worker_id, hard_exit=False, reraise=True)
    if status is not JobStatus.DONE:
        job = get(job_id, history=False)
        raise JobError(f"job {job_id} ended {status}: {job['error'] or 'no result'}")
    return result


class WorkerStopped(SystemExit):
    """SIGTERM reached a worker: its running job is recorded failed, then the worker exits."""


def _on_sigterm(signum, frame):  # noqa: ARG001
    raise WorkerStopped("the worker was stopped (SIGTERM); submit the job again")


def run_worker(worker_id: str | None = None, *, once: bool = False) -> int:
    """The worker loop (``python -m dpcore.worker``): claim, run, repeat; exit when idle too long.

    Returns how many jobs it ran.
    """
    cfg = settings()
    worker_id = worker_id or f"w-{secrets.token_hex(4)}"
    now = time.time()
    with _db() as conn, _tx(conn):
        conn.execute(
            "INSERT INTO workers (id, pid, host, executor, started, heartbeat, registered) "
            "VALUES (?, ?, ?, 'local', ?, ?, 1) "
            "ON CONFLICT(id) DO UPDATE SET pid = excluded.pid, host = excluded.host, heartbeat = excluded.heartbeat, "
            "registered = 1",
            (worker_id, os.getpid(), socket.gethostname(), now, now),
        )
    print(f"[jobs] worker {worker_id} pid {os.getpid()} started, home {storage.home()}", file=sys.stderr, flush=True)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)  # a running job ends `failed` at once, not after dead_after
    parent = os.getppid() if _under_pytest() else None  # test workers do not outlive the test run
    ran = 0
    idle_since = time.monotonic()
    last_beat = 0.0
    try:
        while True:
            if time.monotonic() - last_beat >= cfg.heartbeat:
                last_beat = time.monotonic()
                with _db() as conn:
                    _reap(conn)
                    with _tx(conn):
                        conn.execute("UPDATE workers SET heartbeat = ?, registered = 1 WHERE id = ?",
                                     (time.time(), worker_id))
                        row = conn.execute("SELECT stop FROM workers WHERE id = ?", (worker_id,)).fetchone()
                if row is None or row["stop"]:
                    print(f"[jobs] worker {worker_id} asked to stop", file=sys.stderr, flush=True)
                    break
            job = _claim(worker_id)
            if job is None:
                if once or time.monotonic() - idle_since > cfg.idle_exit:
                    break
                if parent is not None and os.getppid() != parent:
                    print(f"[jobs] worker {worker_id}: test process gone", file=sys.stderr, flush=True)
                    break
                time.sleep(cfg.poll)
                continue
            print(f"[jobs] worker {worker_id} runs job {job['id']} ({job['target']})", file=sys.stderr, flush=True)
            status, _ = _execute(job["id"], job["target"], json.loads(job["params"]), worker_id,
                                 hard_exit=True, reraise=False)
            print(f"[jobs] job {job['id']} {status}", file=sys.stderr, flush=True)
            ran += 1
            idle_since = time.monotonic()
            if once:
                break
    finally:
        with _db() as conn, _tx(conn):
            conn.execute("DELETE FROM workers WHERE id = ?", (worker_id,))
        print(f"[jobs] worker {worker_id} exits after {ran} job(s)", file=sys.stderr, flush=True)
    return ran


# --------------------------------------------------------------------------------------------- page helper

def view(job: dict | str) -> dict:
    """Everything a page needs to draw a job, without Streamlit: status text, progress fraction, history.

    Returns ``{"job": <get() record>, "finished": bool, "fraction": 0..1 or None, "text": str,
    "elapsed": seconds, "series": {field: [(x, value), ...]}}`` where ``series`` holds history values
    of ``loss``, ``accuracy``, ``epsilon`` (and any other numeric field) against ``epoch`` when the job
    reported epochs, else against ``step``.
    """
    if isinstance(job, str):
        job = get(job)
    p = job.get("progress") or {}
    fraction = None
    for done_key, total_key in (("step", "total_steps"), ("epoch", "total_epochs"), ("epoch", "epochs")):
        done, total = p.get(done_key), p.get(total_key)
        if isinstance(done, (int, float)) and isinstance(total, (int, float)) and total > 0:
            fraction = max(0.0, min(1.0, done / total))
            break
    if job["status"] == JobStatus.DONE:
        fraction = 1.0
    parts = [str(job["status"])]
    if isinstance(p.get("epoch"), (int, float)):
        total_epochs = p.get("total_epochs", p.get("epochs"))
        parts.append(f"epoch {p['epoch']:.3g}" + (f"/{total_epochs}" if total_epochs is not None else ""))
    if "step" in p:
        parts.append(f"step {p['step']}" + (f"/{p['total_steps']}" if "total_steps" in p else ""))
    if job["status"] in (JobStatus.FAILED, JobStatus.CANCELLED) and job.get("error"):
        parts.append(job["error"])
    start = job.get("started") or job.get("created")
    end = job.get("ended") or time.time()
    history = job.get("history") or []
    x_key = "epoch" if any("epoch" in h for h in history) else "step"
    series: dict[str, list] = {}
    for h in history:
        if x_key not in h:
            continue
        for k, v in h.items():
            if k in (x_key, "t", "step", "epoch", "total_steps", "total_epochs", "epochs") or isinstance(v, bool):
                continue
            if isinstance(v, (int, float)):
                series.setdefault(k, []).append((h[x_key], v))
    return {
        "job": job,
        "finished": job["status"] in FINISHED,
        "fraction": fraction,
        "text": " · ".join(str(x) for x in parts),
        "elapsed": max(0.0, end - start) if start else 0.0,
        "x": x_key,
        "series": series,
    }


def history_frame(job: dict | str):
    """The job's progress history as a pandas DataFrame (one row per ctx.progress call, column ``t``)."""
    import pandas as pd

    if isinstance(job, str):
        job = get(job)
    return pd.DataFrame(job.get("history") or [])
