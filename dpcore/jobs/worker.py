"""``python -m dpcore.jobs.worker [--id ID] [--once]``: a background job worker process.

Claims queued jobs from the store under ``$DP_EXPLORER_HOME`` and runs them one at a time
(:mod:`dpcore.jobs.runner`); heartbeats while idle, reaps jobs of dead workers, and exits after
``DP_EXPLORER_JOBS_IDLE_EXIT`` seconds without work (default 600) or when asked to stop. SIGTERM records
the running job ``failed`` at once. A storage fault (full disk, a file where a folder belongs) ends the job it
hits with the storage message (:mod:`dpcore.jobs.runner`) and never the worker: it logs one line and goes on.
Normally started by :func:`dpcore.jobs.workers.ensure_workers`, not by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import sys
import threading
import time

from .. import storage
from ..storage import reserve
from . import liveness
from .db import connection, reap, transaction
from .runner import WorkerStopped, claim, execute, log
from .settings import settings, under_pytest


def _on_sigterm(signum, frame):
    raise WorkerStopped("the worker was stopped (SIGTERM); submit the job again")


def run_worker(worker_id: str | None = None, *, once: bool = False) -> int:
    """The worker loop (``python -m dpcore.jobs.worker``): claim, run, repeat; exit when idle too long.

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
        signal.signal(signal.SIGTERM, _on_sigterm)  # a running job ends `failed` at once, not after dead_after
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
    parser = argparse.ArgumentParser(prog="python -m dpcore.jobs.worker", description=__doc__.splitlines()[0])
    parser.add_argument("--id", default=None, help="worker id (given by the executor that started it)")
    parser.add_argument("--once", action="store_true", help="run at most one job, then exit")
    args = parser.parse_args(argv)
    try:
        run_worker(args.id, once=args.once)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
