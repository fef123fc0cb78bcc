"""Running one job: the context a job function gets, its heartbeat, and the end state it is recorded with.

A worker (:mod:`dpcore.jobs.worker`) claims a queued job (:func:`claim`, ``BEGIN IMMEDIATE``: never two
claims of one job; owners take turns, so one visitor's flood never starves another's job) and :func:`execute`
runs it: the target's function (:func:`dpcore.jobs.registry.resolve`)
is called as ``fn(params, ctx)`` and returns a JSON-serialisable dict of metrics. ``ctx``
(:class:`JobContext`) reports progress, answers "was I cancelled?", and saves files atomically into the
job's own folder ``$DP_EXPLORER_HOME/jobs/<id>/``. ``result.json`` is written there (temp file, fsync,
rename) *before* ``done`` is committed. :func:`run_inline` runs a job in the calling process the same way.

Cancel: the heartbeat thread sees a cancel flag within one heartbeat, ``ctx.cancelled()`` turns true, the
job function returns or raises (one exception for every cancel: :class:`dpcore.errors.Cancelled`), and
the job ends ``cancelled``. A cancelled inline run raises ``Cancelled`` too, never a DPError (a cancel is
not exit 2). A job that ignores the flag for ``DP_EXPLORER_JOBS_CANCEL_GRACE`` seconds (default 10) is
recorded ``cancelled`` and its worker process exits (a new one is started on the next ``ensure_workers``).

Storage faults: a full disk, a read-only home or a ``jobs`` folder replaced by a file, met while a job runs or
saves its files, end that job ``failed`` with :func:`dpcore.storage.fault_message` (what happened, what to do),
never a crashed worker. If even the end state cannot be written (the store's own disk is full), the worker keeps
trying for ``DP_EXPLORER_JOBS_FINISH_RETRY`` seconds (default 600) — its message replaces a "worker died" that
someone else recorded meanwhile — so the job never reads "running" and then "worker died" for a full disk.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import socket
import sqlite3
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import limits, storage
from ..errors import Cancelled, DPError, JobError
from . import registry, store
from .db import connection, dumps, jobs_dir, json_default, transaction
from .owners import Caller
from .records import JobStatus
from .registry import resolve
from .settings import settings
from .store import check_name

MAX_HISTORY = limits.JOBS_MAX_HISTORY  # progress history entries kept per job (live charts)


class WorkerStopped(SystemExit):
    """SIGTERM reached a worker: its running job is recorded failed, then the worker exits."""


_STORAGE_ERRNOS = {
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EROFS,
    errno.EACCES,
    errno.EPERM,
    errno.ENOTDIR,
    errno.EEXIST,
    errno.EISDIR,
}


def _one_line(exc: BaseException, where=None) -> str:
    """A job's error as it is recorded and shown: one line, a storage fault as what to do, and no server folder
    (``$DP_EXPLORER_HOME`` stands for it: the page shows the error to the run's owner, not the server's layout)."""
    if (isinstance(exc, OSError) and exc.errno in _STORAGE_ERRNOS) or isinstance(exc, sqlite3.OperationalError):
        msg = storage.fault_message(exc, where)  # a full disk, a read-only home: what to do, not errno
    else:
        text = str(exc).strip()
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        plain = isinstance(exc, (DPError, WorkerStopped)) and first
        msg = first if plain else f"{type(exc).__name__}: {first}".rstrip(": ")
    try:
        msg = msg.replace(str(storage.home()), f"${storage.ENV_VAR}")
    except storage.StorageError:
        pass
    return msg[:500]


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
        clean = json.loads(dumps(fields))
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
        path = self.result_dir / check_name(name)
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
        conn.execute("UPDATE jobs SET progress = ? WHERE id = ?", (dumps(snapshot), ctx.job_id))
    if pending:
        base = conn.execute(
            "SELECT COALESCE(MAX(seq), -1) + 1 FROM history WHERE job_id = ?", (ctx.job_id,)
        ).fetchone()[0]
        conn.executemany(
            "INSERT INTO history (job_id, seq, t, fields) VALUES (?, ?, ?, ?)",
            [(ctx.job_id, base + i, t, dumps(f)) for i, (t, f) in enumerate(pending)],
        )


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
        with connection("NORMAL") as conn:
            with transaction(conn):
                _flush(conn, self.ctx)
                conn.execute(
                    "UPDATE jobs SET heartbeat = ? WHERE id = ? AND status = 'running'", (now, self.ctx.job_id)
                )
                conn.execute(
                    "UPDATE workers SET heartbeat = ?, registered = 1, job = ? WHERE id = ?",
                    (now, self.ctx.job_id, self.worker_id),
                )
                row = conn.execute(
                    "SELECT status, cancel_requested FROM jobs WHERE id = ?", (self.ctx.job_id,)
                ).fetchone()
            if row is None or row["cancel_requested"] or row["status"] != JobStatus.RUNNING:
                self.ctx._cancel.set()
                if self.cancel_seen is None:
                    self.cancel_seen = now
                elif self.hard_exit and now - self.cancel_seen > self.cfg.cancel_grace and not self.stop.is_set():
                    # the job ignores the flag: record the end honestly, then end this worker process
                    with transaction(conn):
                        conn.execute(
                            "UPDATE jobs SET status = 'cancelled', ended = ?, error = ? "
                            "WHERE id = ? AND status = 'running'",
                            (
                                now,
                                "cancelled (the job ignored the cancel flag; its worker was stopped)",
                                self.ctx.job_id,
                            ),
                        )
                        conn.execute("DELETE FROM workers WHERE id = ?", (self.worker_id,))
                    print(
                        f"[jobs] job {self.ctx.job_id} ignored cancel for {self.cfg.cancel_grace:g} s; worker exits",
                        file=sys.stderr,
                        flush=True,
                    )
                    os._exit(3)


def _finish(
    ctx: JobContext, worker_id: str, status: JobStatus, *, result: dict | None = None, error: str | None = None
) -> None:
    """Record the job's end state. A job that someone else marked "worker died" while this worker could not
    write (a full disk: no heartbeat either) gets its real end instead."""
    with connection() as conn, transaction(conn):
        _flush(conn, ctx)
        conn.execute(
            "UPDATE jobs SET status = ?, ended = ?, result = ?, error = ?, heartbeat = ? "
            "WHERE id = ? AND worker = ? AND (status = 'running' OR (status = 'failed' AND error LIKE 'worker died%'))",
            (
                status,
                time.time(),
                dumps(result) if result is not None else None,
                error,
                time.time(),
                ctx.job_id,
                worker_id,
            ),
        )
        conn.execute("UPDATE workers SET job = NULL, heartbeat = ? WHERE id = ?", (time.time(), worker_id))


def _finish_patiently(
    ctx: JobContext, worker_id: str, status: JobStatus, *, result: dict | None = None, error: str | None = None
) -> None:
    """:func:`_finish`, retried while the store cannot be written (a full disk frees up, a lock clears), for up
    to ``settings().finish_retry`` seconds; then the fault is logged and the worker carries on."""
    cfg = settings()
    deadline = time.monotonic() + cfg.finish_retry
    while True:
        try:
            _finish(ctx, worker_id, status, result=result, error=error)
            return
        except (storage.StorageError, sqlite3.Error, OSError) as exc:
            if time.monotonic() >= deadline:
                print(
                    f"[jobs] could not record the end of job {ctx.job_id} ({status}: {error}): {exc}",
                    file=sys.stderr,
                    flush=True,
                )
                return
            time.sleep(cfg.heartbeat)


def execute(
    job_id: str, target: str, params: dict, worker_id: str, *, hard_exit: bool, reraise: bool
) -> tuple[JobStatus, dict | None]:
    """Run one claimed job to its end state. Returns (status, result).

    With ``reraise`` (inline runs) the job's exception is raised again; any way a job stops on a
    cancel (``Cancelled``, another exception after the flag was set, a normal return) raises
    :class:`~dpcore.errors.Cancelled`."""
    result_dir = store.folder_path(job_id)
    ctx = JobContext(job_id=job_id, result_dir=result_dir)
    beat = _Heartbeat(ctx, worker_id, hard_exit)
    beat.start()
    status, result, error, exc_out = JobStatus.FAILED, None, None, None
    stopped = "cancelled while running"
    try:
        _make_folder(result_dir)  # a full disk, or a file where the jobs folder belongs: the job ends with it
        fn = resolve(target)
        out = fn(params, ctx)
        if ctx.cancelled():
            status, error, exc_out = JobStatus.CANCELLED, stopped, Cancelled(f"job {job_id} was cancelled")
        elif not isinstance(out, dict):
            error = f"job function {target} returned {type(out).__name__}, expected a dict of metrics"
        else:
            result = json.loads(dumps(out))
            payload = json.dumps(
                {"job_id": job_id, "target": target, "params": params, "result": result}, indent=2, default=json_default
            ).encode()
            storage.atomic_write_bytes(result_dir / "result.json", payload)  # before `done` is committed
            status = JobStatus.DONE
    except Cancelled as exc:
        status, error, exc_out = JobStatus.CANCELLED, stopped, exc
    except KeyboardInterrupt as exc:
        status, error, exc_out = JobStatus.CANCELLED, "interrupted", exc
    except Exception as exc:
        if ctx.cancelled():  # whatever the job raised on its way out, it was a cancel
            status, error = JobStatus.CANCELLED, stopped
            exc_out = Cancelled(f"job {job_id} was cancelled")
            exc_out.__cause__ = exc
        else:
            error = _one_line(exc, result_dir)
            print(f"[jobs] job {job_id} ({target}) failed:", file=sys.stderr, flush=True)
            traceback.print_exc(file=sys.stderr)
            sys.stderr.flush()
            exc_out = exc
    except BaseException as exc:  # SystemExit from a job: record, then let it end the process
        error, exc_out = _one_line(exc) or "the job exited its process", exc
        beat.stop.set()
        beat.join()
        try:  # one try: the process is on its way out
            _finish(ctx, worker_id, JobStatus.FAILED, error=error)
        except (storage.StorageError, sqlite3.Error, OSError):
            pass
        raise
    finally:
        beat.stop.set()
        beat.join()
    _finish_patiently(ctx, worker_id, status, result=result, error=error)
    if registry.ended(job_id, status, error):  # its charge was refunded: nothing it made may leave the server
        _purge(result_dir)
    if reraise and exc_out is not None:
        raise exc_out
    return status, result


def _purge(folder: Path) -> None:
    """Delete what a job whose charge was refunded left in its folder (partial weights, a table)."""
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def _make_folder(path: Path) -> None:
    try:
        jobs_dir()
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise storage.StorageError(storage.fault_message(exc, path)) from None


#: The next job, fairly across owners: the owner with the fewest running jobs goes first, then the one whose
#: last job started longest ago (never: first), then the one whose oldest queued job is oldest; within an owner,
#: oldest first. So a visitor's job starts as soon as one worker is free, however many jobs another queued.
_FAIR_NEXT = """
WITH q AS (SELECT owner, MIN(created) AS first FROM jobs WHERE status = 'queued' GROUP BY owner),
pick AS (
    SELECT q.owner AS owner,
           (SELECT COUNT(*) FROM jobs r WHERE r.owner = q.owner AND r.status = 'running') AS running,
           (SELECT MAX(started) FROM jobs s WHERE s.owner = q.owner) AS last,
           q.first AS first
    FROM q ORDER BY running, COALESCE(last, 0), first, owner LIMIT 1
)
SELECT j.* FROM jobs j, pick WHERE j.owner = pick.owner AND j.status = 'queued' ORDER BY j.created, j.rowid LIMIT 1
"""


def claim(worker_id: str) -> sqlite3.Row | None:
    """Atomically move the next queued job to running for this worker (BEGIN IMMEDIATE). Owners take turns
    (:data:`_FAIR_NEXT`); one owner's jobs run oldest first."""
    with connection() as conn:
        if conn.execute("SELECT 1 FROM jobs WHERE status = 'queued' LIMIT 1").fetchone() is None:
            return None
        with transaction(conn):
            row = conn.execute(_FAIR_NEXT).fetchone()
            if row is None:
                return None
            now = time.time()
            conn.execute(
                "UPDATE jobs SET status = 'running', started = ?, heartbeat = ?, worker = ? "
                "WHERE id = ? AND status = 'queued'",
                (now, now, worker_id, row["id"]),
            )
            conn.execute(
                "UPDATE workers SET job = ?, heartbeat = ?, registered = 1 WHERE id = ?", (row["id"], now, worker_id)
            )
        return row


def run_inline(
    target: str,
    params: dict,
    *,
    owner: str,
    group: str | None = None,
    label: str = "",
    submitted: Callable[[str], None] | None = None,
) -> dict:
    """Run a job in this process (CLI without --background, tests) and return its result dict.
    ``submitted(job_id)`` is called once the job is recorded, before it runs (the ledger ties a charge to it).

    The run is recorded in the store like any job of ``owner`` (visible in its ``jobs list``), with the same
    context, heartbeats and ``result.json``. A job error is raised again here (DPError stays a DPError);
    a cancelled run raises :class:`~dpcore.errors.Cancelled` (not a DPError: a cancel is not exit 2).
    """
    job_id = store.submit(target, params, owner=owner, group=group, label=label)
    if submitted is not None:
        try:
            submitted(job_id)
        except BaseException:
            store.cancel(job_id, caller=Caller(owner))  # never ran: its end hooks settle it
            raise
    worker_id = f"inline-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"
    now = time.time()
    with connection() as conn, transaction(conn):
        conn.execute(
            "UPDATE jobs SET status = 'running', started = ?, heartbeat = ?, worker = ? "
            "WHERE id = ? AND status = 'queued'",
            (now, now, worker_id, job_id),
        )
    status, result = execute(job_id, target, params, worker_id, hard_exit=False, reraise=True)
    if status is not JobStatus.DONE:
        job = store.get(job_id, caller=Caller(owner), history=False)
        raise JobError(f"job {job_id} ended {status}: {job['error'] or 'no result'}")
    return result
