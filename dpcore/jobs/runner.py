"""Running one job: the fair claim, one attempt from start to recorded end, and inline runs.

A worker (:mod:`dpcore.jobs.workers`) claims a queued job (:func:`claim`, ``BEGIN IMMEDIATE``: never two claims of
one job; owners take turns, so one visitor's flood never starves another's job; the claim holds the worker's
process, the attempt number and a lease) and :func:`execute` runs it: the target's function
(:func:`dpcore.jobs.registry.resolve`) is called as ``fn(params, ctx)`` and returns a JSON-serialisable dict of
metrics. ``ctx`` (:class:`~dpcore.jobs.attempt.JobContext`) reports progress, answers "should I stop?", and saves
files into the attempt's own folder; the attempt's heartbeat and its fenced end are :mod:`dpcore.jobs.attempt`.
``result.json`` is written there before the end that publishes it. :func:`run_inline` runs a job in the calling
process the same way.

Cancel: the heartbeat sees a cancel flag within one heartbeat, ``ctx.cancelled()`` turns true, the job function
returns or raises (one exception for every cancel: :class:`dpcore.errors.Cancelled`), and the job ends
``cancelled``. A cancelled inline run raises ``Cancelled`` too, never a DPError (a cancel is not exit 2).

Storage faults — a full disk, a read-only home, a ``jobs`` folder replaced by a file — end any job ``failed`` with
:func:`dpcore.storage.fault_message` (what happened, what to do), never a crashed worker and never a silent
"running": met by the job itself (saving a file), or by its heartbeat (:mod:`dpcore.jobs.attempt`).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import sqlite3
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from .. import storage
from ..errors import Cancelled, JobError
from ..storage.jsonio import dumps, jsonable
from . import liveness, store
from .attempt import (
    RECORDED,
    Heartbeat,
    JobContext,
    finish_patiently,
    log,
    one_line,
    record_end,
)
from .db import connection, jobs_dir, transaction
from .owners import Caller
from .records import JobStatus
from .registry import resolve
from .settings import settings

# --------------------------------------------------------------------------------------------- one run


def _halted(ctx: JobContext) -> tuple[JobStatus, str | None, BaseException]:
    """The end of a job told to stop: cancelled, failed with the storage message, or not this worker's."""
    if ctx._why == "fault":
        message = ctx._message or "the store cannot be written"
        return JobStatus.FAILED, message, storage.StorageError(message)
    if ctx._why == "lost":
        return JobStatus.FAILED, ctx._message, JobError(ctx._message or f"job {ctx.job_id} was taken away")
    return JobStatus.CANCELLED, "cancelled while running", Cancelled(f"job {ctx.job_id} was cancelled")


def execute(
    job_id: str,
    target: str,
    params: dict,
    worker_id: str | None,
    *,
    attempt: int = 1,
    hard_exit: bool,
    reraise: bool,
) -> tuple[JobStatus | None, dict | None]:
    """Run one claimed job (its ``attempt``) to its recorded end. Returns (status, result); status None when
    nothing was recorded (the job was no longer this attempt's, or the store could not be written).

    With ``reraise`` (inline runs) the job's exception is raised again; any way a job stops on a
    cancel (``Cancelled``, another exception after the flag was set, a normal return) raises
    :class:`~dpcore.errors.Cancelled`."""
    staging = store.folder_path(job_id) / f".attempt-{attempt}"
    ctx = JobContext(job_id=job_id, result_dir=staging, attempt=attempt)
    beat = Heartbeat(ctx, worker_id, hard_exit)
    beat.start()
    status, result, error, exc_out = JobStatus.FAILED, None, None, None
    try:
        _make_folder(staging)  # a full disk, or a file where the jobs folder belongs: the job ends with it
        fn = resolve(target)
        out = fn(params, ctx)
        if ctx.cancelled():
            status, error, exc_out = _halted(ctx)
        elif not isinstance(out, dict):
            error = f"job function {target} returned {type(out).__name__}, expected a dict of metrics"
        else:
            computed = jsonable(out)
            payload = dumps({"job_id": job_id, "target": target, "params": params, "result": computed}).encode()
            storage.atomic_write_bytes(staging / "result.json", payload)  # published with `done`
            status, result = JobStatus.DONE, computed  # a result once its file is written (else failed, none)
    except Cancelled as exc:
        status, error, exc_out = _halted(ctx)
        exc_out.__cause__ = exc
    except KeyboardInterrupt as exc:
        status, error, exc_out = JobStatus.CANCELLED, "interrupted", exc
    except Exception as exc:
        if ctx.cancelled():  # whatever the job raised on its way out, it was told to stop
            status, error, exc_out = _halted(ctx)
            exc_out.__cause__ = exc
        else:
            error = one_line(exc, staging)
            log(f"[jobs] job {job_id} ({target}) failed:")
            try:
                traceback.print_exc(file=sys.stderr)
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            exc_out = exc
    except BaseException as exc:  # SystemExit from a job (SIGTERM): record, then let it end the process
        error = one_line(exc) or "the job exited its process"
        try:  # one try: the process is on its way out
            record_end(ctx, worker_id, JobStatus.FAILED, error=error)
        except (storage.StorageError, sqlite3.Error, OSError):
            pass
        beat.stop.set()
        beat.join(timeout=5)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    outcome = None
    if ctx._why != "lost":
        outcome = finish_patiently(ctx, worker_id, status, result=result, error=error)
    beat.stop.set()
    beat.join()
    shutil.rmtree(staging, ignore_errors=True)  # published files moved out; anything else is dropped
    if outcome != RECORDED:
        log(
            f"[jobs] job {job_id} attempt {attempt}: this worker's end ({status}) was not recorded "
            f"({outcome or 'the store could not be written'}); its work is dropped"
        )
        if reraise:
            raise exc_out or JobError(f"job {job_id}: its end could not be recorded; see `jobs show {job_id}`")
        return None, None
    if reraise and exc_out is not None:
        raise exc_out
    return status, result


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
           (SELECT COUNT(*) FROM jobs r WHERE r.owner = q.owner AND r.status = 'running' AND r.worker IS NOT NULL)
               AS running,
           (SELECT MAX(started) FROM jobs s WHERE s.owner = q.owner) AS last,
           q.first AS first
    FROM q ORDER BY running, COALESCE(last, 0), first, owner LIMIT 1
)
SELECT j.* FROM jobs j, pick WHERE j.owner = pick.owner AND j.status = 'queued' ORDER BY j.created, j.rowid LIMIT 1
"""

_CLAIM = (
    "UPDATE jobs SET status = 'running', started = ?, heartbeat = ?, lease = ?, worker = ?, attempt = attempt + 1, "
    "pid = ?, host = ?, pid_start = ? WHERE id = ? AND status = 'queued'"
)


def _claim_args(now: float, worker_id: str, job_id: str) -> tuple:
    return (now, now, now + settings().lease, worker_id, os.getpid(), liveness.host(), liveness.process_start(), job_id)


def claim(worker_id: str) -> sqlite3.Row | None:
    """Atomically move the next queued job to running for this worker (BEGIN IMMEDIATE), as its next attempt,
    held by this process and a lease. Owners take turns (:data:`_FAIR_NEXT`); one owner's jobs run oldest first."""
    with connection() as conn:
        if conn.execute("SELECT 1 FROM jobs WHERE status = 'queued' LIMIT 1").fetchone() is None:
            return None
        with transaction(conn):
            row = conn.execute(_FAIR_NEXT).fetchone()
            if row is None:
                return None
            now = time.time()
            conn.execute(_CLAIM, _claim_args(now, worker_id, row["id"]))
            conn.execute(
                "UPDATE workers SET job = ?, heartbeat = ?, registered = 1 WHERE id = ?", (row["id"], now, worker_id)
            )
            return conn.execute("SELECT * FROM jobs WHERE id = ?", (row["id"],)).fetchone()


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
    ``submitted(job_id)`` is called once the job is recorded, before it runs (the budget ledger ties a charge to it;
    if it raises, the job is cancelled unstarted and its end announced).

    The run is recorded in the store like any job of ``owner`` (visible in its ``jobs list``), with the same
    context, heartbeats and ``result.json``. A job error is raised again here (DPError stays a DPError);
    a cancelled run raises :class:`~dpcore.errors.Cancelled` (not a DPError: a cancel is not exit 2).
    """
    job_id = store.submit(target, params, owner=owner, group=group, label=label)
    if submitted is not None:
        try:
            submitted(job_id)
        except BaseException:
            store.cancel(job_id, caller=Caller(owner))
            raise
    worker_id = f"inline-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"
    with connection() as conn, transaction(conn):
        conn.execute(_CLAIM, _claim_args(time.time(), worker_id, job_id))
        attempt = conn.execute("SELECT attempt FROM jobs WHERE id = ?", (job_id,)).fetchone()[0]
    status, result = execute(job_id, target, params, worker_id, attempt=attempt, hard_exit=False, reraise=True)
    if status is not JobStatus.DONE or result is None:
        job = store.get(job_id, caller=Caller(owner), history=False)
        raise JobError(f"job {job_id} ended {status}: {job['error'] or 'no result'}")
    return result
