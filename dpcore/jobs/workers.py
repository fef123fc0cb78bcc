"""Worker processes on this machine: starting them, knowing which are alive, asking them to stop.

Workers *pull* jobs from the store (:mod:`dpcore.jobs.store`), so the only hand-off from the store to
compute is :class:`Executor`: it starts one worker process (``python -m dpcore.jobs.worker --id ID``) with
the given environment. :func:`ensure_workers` is cheap and idempotent — pages call it on every submit.
"""

from __future__ import annotations

import os
import secrets
import socket
import sqlite3
import subprocess
import sys
import time

from .. import limits, storage
from . import liveness
from .db import connection, reader, reap, transaction
from .settings import settings

LOG_MAX_BYTES = limits.JOBS_LOG_MAX_BYTES  # workers.log is rotated (one old copy) past this size
WORKER_MODULE = "dpcore.jobs.worker"  # what `python -m` runs in a worker process


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


# --------------------------------------------------------------------------------------------- starting workers


class Executor:
    """Starts worker processes. The only hand-off from the store to compute: workers pull jobs themselves.

    A cluster executor would submit ``python -m dpcore.jobs.worker --id WORKER_ID`` to the cluster with the
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
        env = dict(env)  # dpcore is the installed package: a worker finds it from any folder
        log_path = log_dir / "workers.log"
        try:
            if log_path.stat().st_size > LOG_MAX_BYTES:  # keep one old log, never grow without bound
                os.replace(log_path, log_dir / "workers.log.1")
        except FileNotFoundError:
            pass
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", WORKER_MODULE, "--id", worker_id],
                cwd=str(storage.home()),  # any folder: the worker imports the installed package
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
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
    n = limits.check_int_range(
        n, 0, limits.WORKERS_MAX, "number of workers", "each worker is a process on this machine; 2 suits most laptops"
    )
    started = 0
    _executor.reap()
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
                pid = _executor.start_worker(worker_id, env)
                now = time.time()
                conn.execute(
                    "INSERT INTO workers (id, pid, host, executor, started, heartbeat, pid_start) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        worker_id,
                        pid,
                        socket.gethostname(),
                        _executor.name,
                        now,
                        now,
                        liveness.process_start(pid) if pid else None,
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
