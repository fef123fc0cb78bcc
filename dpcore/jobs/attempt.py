"""One attempt at a job: the context its function gets, its heartbeat, and its end — every write fenced.

A claim makes the job's attempt number one higher (:mod:`dpcore.jobs.liveness`). Every write of the attempt —
heartbeat, progress, the end — says which attempt it belongs to and changes nothing once the job is no longer
running under that attempt. The end is one transaction (:func:`record_end`) that moves the attempt's files
(``result.json`` last) from its own folder ``jobs/<id>/.attempt-<n>/`` into ``jobs/<id>/`` and records ``done``; a
job that ends any other way publishes nothing. So a worker that comes back after its job was given up or handed to
another worker writes nothing: it drops its work and says so in its log. A job's results are visible exactly when
it is ``done`` (:attr:`dpcore.jobs.hooks.JobEnd.released`).

**Heartbeat.** A thread of its own (:class:`Heartbeat`) renews the claim's lease every heartbeat, flushes
progress, turns a cancel into ``ctx.cancelled()``, and gives up other workers' dead jobs. It never waits on the job
function and keeps beating until the end is recorded, so a job whose end waits for a full disk to clear never
reads as silent. A job that ignores the stop flag for ``DP_EXPLORER_JOBS_CANCEL_GRACE`` seconds gets its worker
process ended once whatever is the worker's to record is recorded.

**Storage faults** met by the heartbeat (:data:`FAULT_BEATS` beats in a row that cannot write the store) stop the
job and record it failed with the storage message at once. A full disk is still written down: the writer gives
back the home's reserve (:mod:`dpcore.storage.reserve`) and records the end in the room that frees; otherwise the
end is retried for ``DP_EXPLORER_JOBS_FINISH_RETRY`` seconds (:func:`finish_patiently`).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import limits, storage
from ..errors import Cancelled, DPError
from ..storage import reserve
from ..storage.jsonio import dumps, jsonable
from . import liveness
from .db import connection, db_path, transaction
from .hooks import JobEnd, announce
from .records import JobStatus
from .settings import settings
from .store import check_name

MAX_HISTORY = limits.JOBS_MAX_HISTORY  # progress history entries kept per job (live charts)
#: Heartbeats in a row that meet a storage fault before the job is ended with it: one may be a passing hiccup (a
#: temporary file freed a moment later); two are not, and the job is failed within three heartbeats of the fault.
FAULT_BEATS = 2

RECORDED, ENDED, LOST = "recorded", "ended", "lost"  # what record_end found


def log(line: str) -> None:
    """One line to the worker's log (stderr). A full disk under the log loses the line, never the worker."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


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
    errno.EIO,
}


def one_line(exc: BaseException, where=None) -> str:
    """A job's error as it is recorded and shown: one line, a storage fault as what to do, and no server folder
    (``$DP_EXPLORER_HOME`` stands for it: the page shows the error to the run's owner, not the server's layout)."""
    text = str(exc).strip()
    if (
        (isinstance(exc, OSError) and exc.errno in _STORAGE_ERRNOS)
        or isinstance(exc, sqlite3.OperationalError)
        or "no space left on device" in text.lower()  # a library's own words for a full disk
    ):
        msg = storage.fault_message(exc, where)  # a full disk, a read-only home: what to do, not errno
    else:
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
    """What a job function gets besides its params: progress, the stop flag, its own result folder."""

    job_id: str
    result_dir: Path  # this attempt's folder: its files are published with `done`
    attempt: int = 1
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _why: str | None = field(default=None, repr=False)  # "cancel", "fault" (storage) or "lost" (taken away)
    _message: str | None = field(default=None, repr=False)
    _progress: dict = field(default_factory=dict, repr=False)
    _pending: list = field(default_factory=list, repr=False)
    _dirty: bool = field(default=False, repr=False)
    _n_history: int = field(default=0, repr=False)
    _t0: float = field(default_factory=time.time, repr=False)

    def progress(self, **fields: Any) -> None:
        """Merge fields (epoch, step, total_steps, loss, accuracy, epsilon, ...) into the job's progress
        and append them (plus ``t``, seconds since start) to its history. Cheap: written to the store
        by the heartbeat thread."""
        clean = jsonable(fields)
        with self._lock:
            self._progress.update(clean)
            self._dirty = True
            if self._n_history < MAX_HISTORY:
                self._pending.append((round(time.time() - self._t0, 3), clean))
                self._n_history += 1

    def cancelled(self) -> bool:
        """True once the job should stop: someone cancelled it, the store cannot be written, or the job was
        taken away from this worker (checked by the training loop each step)."""
        return self._stop.is_set()

    def check_cancelled(self) -> None:
        """Raise :class:`~dpcore.errors.Cancelled` if the job should stop."""
        if self._stop.is_set():
            raise Cancelled(f"job {self.job_id} was cancelled")

    def save_bytes(self, name: str, data: bytes) -> Path:
        """Write ``data`` atomically to ``result_dir/name``; return the path (published when the job is done)."""
        path = self.result_dir / check_name(name)
        storage.atomic_write_bytes(path, data)
        return path

    # -- used by the runner
    def _halt(self, why: str, message: str | None = None) -> None:
        with self._lock:
            if self._why is None:  # the first reason is the one recorded
                self._why, self._message = why, message
        self._stop.set()

    def _take(self) -> tuple[dict | None, list]:
        with self._lock:
            snapshot = dict(self._progress) if self._dirty else None
            pending, self._pending, self._dirty = self._pending, [], False
        return snapshot, pending


def _flush(conn: sqlite3.Connection, ctx: JobContext) -> None:
    """Write buffered progress and history (inside the caller's transaction, which checked the claim)."""
    snapshot, pending = ctx._take()
    if snapshot is not None:
        conn.execute("UPDATE jobs SET progress = ? WHERE id = ?", (dumps(snapshot, indent=None), ctx.job_id))
    if pending:
        base = conn.execute(
            "SELECT COALESCE(MAX(seq), -1) + 1 FROM history WHERE job_id = ?", (ctx.job_id,)
        ).fetchone()[0]
        conn.executemany(
            "INSERT INTO history (job_id, seq, t, fields) VALUES (?, ?, ?, ?)",
            [(ctx.job_id, base + i, t, dumps(f, indent=None)) for i, (t, f) in enumerate(pending)],
        )


# --------------------------------------------------------------------------------------------- the end


def _publish(ctx: JobContext) -> list[tuple[Path, Path]]:
    """Move the attempt's files into the job's folder (``result.json`` last); returns what moved."""
    final = ctx.result_dir.parent
    moved: list[tuple[Path, Path]] = []
    try:
        names = sorted((p.name for p in ctx.result_dir.iterdir() if p.is_file()), key=lambda n: (n == "result.json", n))
        for name in names:
            os.replace(ctx.result_dir / name, final / name)
            moved.append((ctx.result_dir / name, final / name))
    except OSError as exc:
        _unpublish(moved)
        raise storage.StorageError(storage.fault_message(exc, final)) from None
    return moved


def _unpublish(moved: list[tuple[Path, Path]]) -> None:
    for src, dst in reversed(moved):
        try:
            os.replace(dst, src)
        except OSError:
            pass


def record_end(
    ctx: JobContext, worker_id: str | None, status: JobStatus, *, result: dict | None = None, error: str | None = None
) -> str:
    """Record the job's end for this attempt, in one transaction: :data:`RECORDED`; or nothing, because the job
    already ended under this attempt (:data:`ENDED`) or is no longer this attempt's (:data:`LOST`). ``done``
    publishes the attempt's files in the same transaction (a file that cannot be moved fails the job with the
    storage message instead). A storage fault is raised (nothing recorded).

    Only ``done`` records a result: a job that ends failed or cancelled records none, whatever the caller passes
    (a job whose ``result.json`` met a full disk computed its result but released nothing). Every attempt of every
    kind of job ends here, so this is the one place the rule lives."""
    moved: list[tuple[Path, Path]] = []
    if status is not JobStatus.DONE:
        result = None
    with connection() as conn:
        try:
            with transaction(conn):
                row = conn.execute(
                    "SELECT status, attempt, target, params, owner, parent, "
                    "(SELECT p.target FROM jobs p WHERE p.id = jobs.parent) AS parent_kind FROM jobs WHERE id = ?",
                    (ctx.job_id,),
                ).fetchone()
                if row is None or row["attempt"] != ctx.attempt:
                    return LOST
                if row["status"] != JobStatus.RUNNING:
                    return ENDED if JobStatus(row["status"]).finished else LOST
                _flush(conn, ctx)
                if status is JobStatus.DONE:
                    try:
                        moved = _publish(ctx)
                    except storage.StorageError as exc:
                        status, result, error = JobStatus.FAILED, None, one_line(exc)
                now = time.time()
                conn.execute(
                    "UPDATE jobs SET status = ?, ended = ?, result = ?, error = ?, heartbeat = ?, lease = NULL "
                    "WHERE id = ? AND attempt = ?",
                    (
                        status,
                        now,
                        dumps(result, indent=None) if result is not None else None,
                        error,
                        now,
                        ctx.job_id,
                        ctx.attempt,
                    ),
                )
                if worker_id:
                    conn.execute("UPDATE workers SET job = NULL, heartbeat = ? WHERE id = ?", (now, worker_id))
        except BaseException:
            _unpublish(moved)
            raise
    announce(
        [
            JobEnd(
                ctx.job_id,
                row["target"],
                row["owner"],
                status,
                error,
                json.loads(row["params"]),
                row["parent"],
                row["parent_kind"],
            )
        ]
    )
    return RECORDED


def _disk_full() -> bool:
    try:
        return storage.nearly_full(db_path())
    except storage.StorageError:
        return False


def _end_once(
    ctx: JobContext, worker_id: str | None, status: JobStatus, **kw
) -> tuple[str | None, BaseException | None]:
    """One try at :func:`record_end` (twice on a full disk: again after giving the reserve back)."""
    try:
        return record_end(ctx, worker_id, status, **kw), None
    except (storage.StorageError, sqlite3.Error, OSError) as exc:
        if storage.is_busy(exc) or not _disk_full() or not reserve.free():
            return None, exc
    try:
        return record_end(ctx, worker_id, status, **kw), None
    except (storage.StorageError, sqlite3.Error, OSError) as exc:
        return None, exc


def finish_patiently(ctx: JobContext, worker_id: str | None, status: JobStatus, **kw) -> str | None:
    """:func:`record_end`, retried while the store cannot be written (a full disk frees up, a lock clears), for up
    to ``settings().finish_retry`` seconds; then the fault is logged and None returned."""
    cfg = settings()
    deadline = time.monotonic() + cfg.finish_retry
    while True:
        outcome, exc = _end_once(ctx, worker_id, status, **kw)
        if outcome is not None:
            return outcome
        if time.monotonic() >= deadline:
            log(f"[jobs] could not record the end of job {ctx.job_id} ({status}: {kw.get('error')}): {exc}")
            return None
        time.sleep(cfg.heartbeat)


# --------------------------------------------------------------------------------------------- heartbeat


class Heartbeat(threading.Thread):
    """Renews the claim's lease, flushes progress, turns cancel / storage faults / a lost claim into
    ``ctx.cancelled()``, and gives up other workers' dead jobs. Never waits on the job function."""

    def __init__(self, ctx: JobContext, worker_id: str | None, hard_exit: bool) -> None:
        super().__init__(name=f"heartbeat-{ctx.job_id}", daemon=True)
        self.ctx = ctx
        self.worker_id = worker_id
        self.hard_exit = hard_exit
        self.stop = threading.Event()
        self.cfg = settings()
        self.faults = 0  # storage faults in a row
        self.recorded = False  # this thread recorded the job's end (a storage fault)
        self.halted_at: float | None = None

    def run(self) -> None:
        while not self.stop.wait(self.cfg.heartbeat):
            try:
                self.beat()
                self.faults = 0
            except (sqlite3.Error, storage.StorageError, OSError) as exc:
                self.fault(exc)
            except Exception as exc:  # a heartbeat that dies reads as a dead worker: log and beat on
                log(f"[jobs] heartbeat for {self.ctx.job_id}: {type(exc).__name__}: {exc}")
            self.grace()

    def beat(self) -> None:
        ctx, now = self.ctx, time.time()
        cancel = False
        with connection("NORMAL") as conn:
            with transaction(conn):
                mine = (
                    conn.execute(
                        "UPDATE jobs SET heartbeat = ?, lease = ? WHERE id = ? AND attempt = ? AND status = 'running'",
                        (now, now + self.cfg.lease, ctx.job_id, ctx.attempt),
                    ).rowcount
                    == 1
                )
                if mine:
                    _flush(conn, ctx)
                    cancel = bool(
                        conn.execute("SELECT cancel_requested FROM jobs WHERE id = ?", (ctx.job_id,)).fetchone()[0]
                    )
                if self.worker_id:
                    conn.execute(
                        "UPDATE workers SET heartbeat = ?, registered = 1, job = ? WHERE id = ?",
                        (now, ctx.job_id if mine else None, self.worker_id),
                    )
            try:
                liveness.reap(conn)  # other workers' dead jobs: seen within a heartbeat, nobody needs to look
            except (sqlite3.Error, storage.StorageError):
                pass
        if not mine:
            ctx._halt("lost", f"job {ctx.job_id} is no longer this worker's (given up or run elsewhere)")
        elif cancel:
            ctx._halt("cancel")

    def fault(self, exc: BaseException) -> None:
        if storage.is_busy(exc):  # busy is not dead: the lease covers a store that is slow to lock
            return
        self.faults += 1
        message = one_line(exc)
        if self.faults == 1 or self.faults % 60 == 0:
            log(f"[jobs] heartbeat for {self.ctx.job_id} cannot write the store: {message}")
        if self.faults < FAULT_BEATS:
            return
        self.ctx._halt("fault", message)
        if not self.recorded and self.ctx._why == "fault":
            outcome, _ = _end_once(self.ctx, self.worker_id, JobStatus.FAILED, error=self.ctx._message)
            self.recorded = outcome is not None

    def grace(self) -> None:
        """A job that ignores the stop flag for ``cancel_grace`` seconds gets its worker process ended — once
        whatever is this worker's to record is recorded."""
        ctx = self.ctx
        if not ctx.cancelled() or self.stop.is_set():
            return
        now = time.monotonic()
        if self.halted_at is None:
            self.halted_at = now
            return
        if not self.hard_exit or now - self.halted_at <= self.cfg.cancel_grace:
            return
        if ctx._why == "cancel":
            outcome, _ = _end_once(
                ctx,
                self.worker_id,
                JobStatus.CANCELLED,
                error="cancelled (the job ignored the cancel flag; its worker was stopped)",
            )
            if outcome is None:
                return  # the store cannot be written: try again next beat
        elif ctx._why == "fault" and not self.recorded:
            return
        log(f"[jobs] job {ctx.job_id} ignored the stop flag for {self.cfg.cancel_grace:g} s ({ctx._why}); worker exits")
        try:
            with connection() as conn, transaction(conn):
                conn.execute("DELETE FROM workers WHERE id = ?", (self.worker_id,))
        except (storage.StorageError, sqlite3.Error):
            pass
        shutil.rmtree(ctx.result_dir, ignore_errors=True)
        os._exit(3)
