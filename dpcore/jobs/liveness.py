"""Liveness: telling a slow worker from a dead one, and giving a dead worker's job up (or running it again).

A running job carries its **claim**: the worker's id, the worker's process — pid, host and the process's start
time (:func:`process_start`: the boot and the kernel's start tick, so a pid the system reused for another process
is not mistaken for the worker) — an **attempt** number (one more at every claim) and a **lease**, the time until
which the claim holds. The worker's heartbeat thread renews the lease every ``DP_EXPLORER_JOBS_HEARTBEAT``
seconds (default 1) by ``DP_EXPLORER_JOBS_LEASE`` seconds (default 300; see :data:`~dpcore.jobs.settings.
LEASE_DEFAULT` for why). The thread does not wait on the work, so a long step, a busy CPU or a slow disk delays a
beat by seconds, not minutes.

Whoever looks (:func:`reap`: a page or the CLI reading the store, a worker's heartbeat, ``ensure_workers``) gives a
running job up only when

* its worker's process is **gone** — on this host, no process with that pid and start time (seen at the next look,
  well within one heartbeat); or
* its **lease lapsed** — no sign of life for the whole lease: a worker on another machine that cannot be reached,
  or one frozen (suspended, stopped, swapped out) for longer than the lease.

A silent worker within its lease is slow, not dead: a worker paused 20 s (SIGSTOP, then SIGCONT) finishes its job.
A job given up is failed with a message that says what was seen (never a crash that nobody saw), or — when its
target allows (:func:`dpcore.jobs.registry.retries`: a sweep point, once) — put back in the queue for another
worker. Either way its attempt is over: every write the old worker makes is fenced by the attempt number and the
``running`` status, so a worker that comes back after its job was taken away finds nothing to write and drops its
work (it hands the job back); one whose job was not taken away finishes it. Never both.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sqlite3
import time
from dataclasses import dataclass

from ..storage.sqlite import transaction
from .hooks import JobEnd, announce
from .records import JobStatus
from .registry import retries
from .settings import settings

#: What a job given up because its worker's process is gone says (nobody saw why it went: never "crashed").
GONE = "its worker process ended before the job did, and nothing of the run was kept; submit the job again"
GONE_TWICE = (
    "its worker process ended before the job did, twice (it had been run again after the first); submit the job again"
)


def lapsed_message(silent: float, lease: float) -> str:
    """What a job given up because its lease lapsed says: what was seen, and what it can mean."""
    return (
        f"its worker gave no sign of life for {_duration(silent)} (longer than the {_duration(lease)} lease): it "
        "is stalled, suspended or on a machine that cannot be reached, and the job was given up; submit it again"
    )


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds) or seconds < 0:
        return "a while"
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


# --------------------------------------------------------------------------------------------- processes

_boot: str | None = None


def _boot_id() -> str:
    global _boot
    if _boot is None:
        try:
            with open("/proc/sys/kernel/random/boot_id") as fh:
                _boot = fh.read().strip()
        except OSError:
            _boot = ""
    return _boot


def _stat(pid: int) -> list[bytes] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()  # after "pid (comm)": the state is field 3
    except (OSError, IndexError):
        return None


def process_start(pid: int | None = None) -> str | None:
    """``"<boot id>:<start tick>"`` of process ``pid`` (default: this one), or None where /proc cannot say."""
    fields = _stat(os.getpid() if pid is None else pid)
    if fields is None or len(fields) < 20:
        return None
    return f"{_boot_id()}:{int(fields[19])}"  # field 22, starttime: clock ticks after boot


def host() -> str:
    return socket.gethostname()


def process_gone(pid: int | None, start: str | None) -> bool:
    """Whether the process ``pid`` that started at ``start`` (:func:`process_start`) no longer runs on this host:
    no such pid, a zombie (killed, not yet waited for), or the pid now belongs to a process started at another
    time. Without a recorded start (an older row, no /proc) only the pid is checked."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # someone else's process: it exists
    except OverflowError:
        return True
    fields = _stat(pid)
    if fields is None:
        return False  # no /proc to tell: the pid exists, count it alive
    if fields[0] == b"Z":
        return True
    return bool(start) and process_start(pid) != start


# --------------------------------------------------------------------------------------------- reaping


@dataclass(frozen=True)
class Verdict:
    job_id: str
    attempt: int
    error: str


def verdicts(conn: sqlite3.Connection, now: float | None = None) -> list[Verdict]:
    """The running jobs to give up now (no writes): worker's process gone, or lease lapsed."""
    cfg = settings()
    now = time.time() if now is None else now
    here = host()
    out = []
    rows = conn.execute(
        "SELECT id, attempt, lease, heartbeat, pid, host, pid_start FROM jobs WHERE status = 'running' "
        "AND worker IS NOT NULL"
    ).fetchall()
    for r in rows:
        if r["host"] == here and process_gone(r["pid"], r["pid_start"]):
            out.append(Verdict(r["id"], r["attempt"], GONE))
            continue
        last = r["heartbeat"] or 0.0
        lease = r["lease"] if r["lease"] is not None else last + cfg.lease  # a row from before leases
        if lease < now:
            out.append(Verdict(r["id"], r["attempt"], lapsed_message(now - last, cfg.lease)))
    return out


def reap(conn: sqlite3.Connection) -> int:
    """Give up every running job whose worker is gone or whose lease lapsed: fail it, or queue it again where its
    target allows a retry. Returns how many were given up. Cheap when every worker is alive (one read)."""
    found = verdicts(conn)
    if not found:
        return 0
    now = time.time()
    ended, n = [], 0
    with transaction(conn):
        for v in found:
            row = conn.execute(
                "SELECT *, (SELECT p.target FROM jobs p WHERE p.id = jobs.parent) AS parent_kind FROM jobs "
                "WHERE id = ? AND status = 'running' AND attempt = ?",
                (v.job_id, v.attempt),
            ).fetchone()
            if row is None:  # it ended, or was taken, since we looked
                continue
            n += 1
            params = json.loads(row["params"])
            if v.attempt <= retries(row["target"], params):
                note = {"phase": "queued again: " + v.error.split(";")[0], "attempt": v.attempt + 1}
                conn.execute(
                    "UPDATE jobs SET status = 'queued', worker = NULL, heartbeat = NULL, lease = NULL, pid = NULL, "
                    "host = NULL, pid_start = NULL, progress = ? WHERE id = ? AND attempt = ?",
                    (json.dumps(note), v.job_id, v.attempt),
                )
                conn.execute("DELETE FROM history WHERE job_id = ?", (v.job_id,))
                continue
            error = GONE_TWICE if v.error == GONE and v.attempt > 1 else v.error
            conn.execute(
                "UPDATE jobs SET status = 'failed', ended = ?, error = ?, lease = NULL WHERE id = ? AND attempt = ?",
                (now, error, v.job_id, v.attempt),
            )
            ended.append(
                JobEnd(
                    job_id=v.job_id,
                    target=row["target"],
                    owner=row["owner"],
                    status=JobStatus.FAILED,
                    error=error,
                    params=params,
                    parent=row["parent"],
                    parent_kind=row["parent_kind"],
                )
            )
    announce(ended)
    return n
