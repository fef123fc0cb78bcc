"""Worker processes on this machine: the worker itself (``python -m dpcore.jobs [--id ID] [--once]``), starting
them, knowing which are alive, asking them to stop.

A worker claims queued jobs from the store under ``$DP_EXPLORER_HOME`` and runs them one at a time
(:mod:`dpcore.jobs.runner`); heartbeats while idle, gives up dead workers' jobs (:mod:`dpcore.jobs.liveness`),
and exits after ``DP_EXPLORER_JOBS_IDLE_EXIT`` seconds without work (default 600) or when asked to stop. SIGTERM
records the running job ``failed`` at once. A storage fault (full disk, a file where a folder belongs) ends the job
it hits with the storage message and never the worker: it logs one line and goes on.

Workers *pull* jobs from the store, so starting one is the only hand-off from the store to compute:
:func:`start_process` starts one detached process with the given environment (a cluster would run the same
command where ``DP_EXPLORER_HOME`` is shared). :func:`ensure_workers` is cheap and idempotent — pages call it on
every submit. Where a unit of work runs (these processes or a Ray cluster) is :mod:`dpcore.jobs.executors`'.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time

from .. import limits, storage
from ..storage import reserve
from . import liveness
from .attempt import WorkerStopped, log
from .db import connection, reader, reap, transaction
from .runner import claim, execute
from .settings import settings, under_pytest

LOG_MAX_BYTES = limits.JOBS_LOG_MAX_BYTES  # workers.log is rotated (one old copy) past this size
WORKER_MODULE = "dpcore.jobs"  # what `python -m` runs in a worker process (dpcore/jobs/__main__.py)


# --------------------------------------------------------------------------------------------- liveness


def _pid_alive(pid: int | None, start: str | None = None) -> bool:
    return bool(pid) and not liveness.process_gone(pid, start)


def _live_workers(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    cfg = settings()
    now = time.time()
    host = socket.gethostname()
    live = []
    for w in conn.execute("SELECT * FROM workers WHERE stop = 0").fetchall():
        if w["host"] == host and w["executor"] == "local" and not _pid_alive(w["pid"], w["pid_start"]):
            continue  # this machine's worker whose process is gone
        if w["heartbeat"] >= now - cfg.lease:  # silent for less than a lease: slow, not dead
            live.append(w)
        elif not w["registered"] and w["started"] >= now - cfg.startup_grace:
            live.append(w)  # started, still importing
    return live


def list_workers() -> list[dict]:
    """Live workers (id, pid, host, executor, started, heartbeat, job)."""
    with reader() as conn:
        if conn is None:
            return []
        return [
            {k: w[k] for k in ("id", "pid", "host", "executor", "started", "heartbeat", "job")}
            for w in _live_workers(conn)
        ]


# --------------------------------------------------------------------------------------------- the worker


def _on_sigterm(signum, frame):
    raise WorkerStopped("the worker was stopped (SIGTERM); submit the job again")


def run_worker(worker_id: str | None = None, *, once: bool = False) -> int:
    """The worker loop (``python -m dpcore.jobs``): claim, run, repeat; exit when idle too long.

    Returns how many jobs it ran.
    """
    cfg = settings()
    worker_id = worker_id or f"w-{secrets.token_hex(4)}"
    now = time.time()
    with connection() as conn, transaction(conn):
        conn.execute(
            "INSERT INTO workers (id, pid, host, executor, started, heartbeat, registered, pid_start) "
            "VALUES (?, ?, ?, 'local', ?, ?, 1, ?) "
            "ON CONFLICT(id) DO UPDATE SET pid = excluded.pid, host = excluded.host, heartbeat = excluded.heartbeat, "
            "registered = 1, pid_start = excluded.pid_start",
            (worker_id, os.getpid(), socket.gethostname(), now, now, liveness.process_start()),
        )
    reserve.keep()  # room to record a job's end should the disk fill up
    log(f"[jobs] worker {worker_id} pid {os.getpid()} started, home {storage.home()}")
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)  # a running job ends `failed` at once, not after its lease
    parent = os.getppid() if under_pytest() else None  # test workers do not outlive the test run
    ran = 0
    idle_since = time.monotonic()
    last_beat = 0.0
    try:
        while True:
            try:
                if time.monotonic() - last_beat >= cfg.heartbeat:
                    last_beat = time.monotonic()
                    with connection() as conn:
                        reap(conn)
                        with transaction(conn):
                            conn.execute(
                                "UPDATE workers SET heartbeat = ?, registered = 1 WHERE id = ?",
                                (time.time(), worker_id),
                            )
                            row = conn.execute("SELECT stop FROM workers WHERE id = ?", (worker_id,)).fetchone()
                    if row is None or row["stop"]:
                        log(f"[jobs] worker {worker_id} asked to stop")
                        break
                job = claim(worker_id)
            except storage.StorageError as exc:  # the store cannot be written now: wait, do not die
                log(f"[jobs] worker {worker_id}: {exc}")
                job = None
            if job is None:
                if once or time.monotonic() - idle_since > cfg.idle_exit:
                    break
                if parent is not None and os.getppid() != parent:
                    log(f"[jobs] worker {worker_id}: test process gone")
                    break
                time.sleep(cfg.poll)
                continue
            log(f"[jobs] worker {worker_id} runs job {job['id']} ({job['target']}, attempt {job['attempt']})")
            status, _ = execute(
                job["id"],
                job["target"],
                json.loads(job["params"]),
                worker_id,
                attempt=job["attempt"],
                hard_exit=True,
                reraise=False,
            )
            log(f"[jobs] job {job['id']} {status or 'not recorded by this worker'}")
            reserve.keep()
            ran += 1
            idle_since = time.monotonic()
            if once:
                break
    finally:
        try:
            with connection() as conn, transaction(conn):
                conn.execute("DELETE FROM workers WHERE id = ?", (worker_id,))
        except storage.StorageError as exc:  # its row goes stale and is forgotten by ensure_workers
            log(f"[jobs] worker {worker_id}: {exc}")
        log(f"[jobs] worker {worker_id} exits after {ran} job(s)")
    return ran


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dpcore.jobs", description="a background job worker process")
    parser.add_argument("--id", default=None, help="worker id (given by the executor that started it)")
    parser.add_argument("--once", action="store_true", help="run at most one job, then exit")
    args = parser.parse_args(argv)
    try:
        run_worker(args.id, once=args.once)
    except KeyboardInterrupt:
        return 130
    return 0


# --------------------------------------------------------------------------------------------- starting workers

_children: list[subprocess.Popen] = []  # the worker processes this process started (tests end them)


def children() -> list[subprocess.Popen]:
    """The worker processes this process started and that may still run."""
    return list(_children)


def _collect() -> None:
    _children[:] = [p for p in _children if p.poll() is None]  # no zombies left behind


def start_process(worker_id: str, env: dict[str, str]) -> int:
    """Start one detached worker process (its own session: it outlives a Streamlit rerun or restart); its pid."""
    _collect()
    log_dir = storage.subdir("logs")
    log_path = log_dir / "workers.log"
    try:
        if log_path.stat().st_size > LOG_MAX_BYTES:  # keep one old log, never grow without bound
            os.replace(log_path, log_dir / "workers.log.1")
    except FileNotFoundError:
        pass
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", WORKER_MODULE, "--id", worker_id],
            cwd=str(storage.home()),  # any folder: the worker imports the installed package
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    _children.append(proc)
    return proc.pid


def ensure_workers(n: int = 2) -> int:
    """Start workers until ``n`` are alive; return how many were started. Idempotent and cheap.

    ``n`` is 0 .. :data:`dpcore.limits.WORKERS_MAX` (each worker is a process on this machine).
    """
    n = limits.check_int_range(
        n, 0, limits.WORKERS_MAX, "number of workers", "each worker is a process on this machine; 2 suits most laptops"
    )
    started = 0
    _collect()
    with connection() as conn:
        reap(conn)
        with transaction(conn):
            live = _live_workers(conn)
            live_ids = {w["id"] for w in live}
            # forget workers that are gone (never touch the jobs they ran: reap handles those)
            for w in conn.execute("SELECT id FROM workers").fetchall():
                if w["id"] not in live_ids:
                    conn.execute("DELETE FROM workers WHERE id = ?", (w["id"],))
            env = dict(os.environ)
            env[storage.ENV_VAR] = str(storage.home())
            for _ in range(max(0, n - len(live))):
                worker_id = f"w-{secrets.token_hex(4)}"
                pid = start_process(worker_id, env)
                now = time.time()
                conn.execute(
                    "INSERT INTO workers (id, pid, host, executor, started, heartbeat, pid_start) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        worker_id,
                        pid,
                        socket.gethostname(),
                        "local",
                        now,
                        now,
                        liveness.process_start(pid),
                    ),
                )
                started += 1
    return started


def shutdown_workers(timeout: float = 5.0) -> int:
    """Ask every worker to exit after its current job; wait up to ``timeout`` s. Returns how many were asked."""
    with connection() as conn, transaction(conn):
        ids = [w["id"] for w in conn.execute("SELECT id FROM workers WHERE stop = 0")]
        conn.execute("UPDATE workers SET stop = 1")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection() as conn:
            rows = conn.execute("SELECT pid, host, executor FROM workers").fetchall()
        if not any(
            r["host"] == socket.gethostname() and r["executor"] == "local" and _pid_alive(r["pid"]) for r in rows
        ):
            break
        time.sleep(0.05)
    return len(ids)
