"""How long a lost job takes to be given up (issue 32 §1), in heartbeats: a worker killed with SIGKILL while nobody
reads the store (another worker's heartbeat notices), the same with a page polling, and — as root, on a 48 MiB
tmpfs home — a disk that fills up under a running job. Also that a worker paused for several heartbeats keeps its
job. Prints medians and maxima over ``--trials`` runs, in seconds and in heartbeats; ``--quick``: one trial each.

    .venv/bin/python bench/liveness.py [--trials 5] [--heartbeat 1.0] [--quick]
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sqlite3
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def _setup(home: Path, heartbeat: float) -> None:
    os.environ.update(
        DP_EXPLORER_HOME=str(home),
        DP_EXPLORER_JOBS_HEARTBEAT=str(heartbeat),
        DP_EXPLORER_JOBS_POLL="0.05",
        DP_EXPLORER_JOBS_IDLE_EXIT="60",
    )


def _raw_status(job_id: str) -> str:
    from dpcore.jobs import db

    conn = sqlite3.connect(f"{db.db_path().as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT status FROM jobs WHERE id = ?", (job_id,)).fetchone()[0]
    finally:
        conn.close()


def _running_pid(job_id: str) -> int:
    from dpcore.jobs import store, workers
    from dpcore.jobs.owners import SYSTEM

    while not (job := store.get(job_id, caller=SYSTEM, history=False)).progress.get("step"):
        time.sleep(0.02)
    return next(w["pid"] for w in workers.list_workers() if w["id"] == job.worker)


def _stop_all() -> None:
    from dpcore.jobs import workers

    for proc in workers.children():
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
        proc.wait(timeout=10)


def kill_trial(heartbeat: float, *, looking: bool) -> float:
    from dpcore.jobs import store, workers
    from dpcore.jobs.owners import CLI_OWNER, SYSTEM

    _setup(Path(tempfile.mkdtemp(prefix="dpx-live-")), heartbeat)
    try:
        job_id = store.submit("demo.sleep", {"steps": 100_000, "seconds": 0.01}, owner=CLI_OWNER)
        workers.ensure_workers(2)
        pid = _running_pid(job_id)
        while len(workers.list_workers()) < 2:
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        t0 = time.monotonic()
        while True:
            status = store.get(job_id, caller=SYSTEM, history=False).status if looking else _raw_status(job_id)
            if status != "running":
                return time.monotonic() - t0
            time.sleep(0.01)
    finally:
        _stop_all()


def pause_trial(heartbeat: float, beats: int) -> bool:
    from dpcore.jobs import store, workers
    from dpcore.jobs.owners import CLI_OWNER, SYSTEM

    _setup(Path(tempfile.mkdtemp(prefix="dpx-live-")), heartbeat)
    try:
        job_id = store.submit("demo.sleep", {"steps": 20, "seconds": 0.05}, owner=CLI_OWNER)
        workers.ensure_workers(1)
        pid = _running_pid(job_id)
        os.kill(pid, signal.SIGSTOP)
        t0 = time.monotonic()
        while time.monotonic() - t0 < beats * heartbeat:
            store.get(job_id, caller=SYSTEM, history=False)
            time.sleep(0.2)
        os.kill(pid, signal.SIGCONT)
        return store.wait(job_id, timeout=60, caller=SYSTEM).status == "done"
    finally:
        _stop_all()


def disk_trial(heartbeat: float) -> float | None:
    from dpcore.jobs import store, workers
    from dpcore.jobs.owners import CLI_OWNER, SYSTEM

    if os.geteuid() != 0:
        return None
    home = Path(tempfile.mkdtemp(prefix="dpx-full-"))
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(home)], capture_output=True).returncode:
        return None
    try:
        _setup(home, heartbeat)
        job_id = store.submit("demo.sleep", {"steps": 100_000, "seconds": 0.01}, owner=CLI_OWNER)
        workers.ensure_workers(1)
        _running_pid(job_id)
        fd = os.open(home / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
        for size in (1 << 20, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        os.close(fd)
        t0 = time.monotonic()
        while (job := store.get(job_id, caller=SYSTEM, history=False)).status == "running":
            time.sleep(0.01)
        assert "is full" in job.error, job.error
        return time.monotonic() - t0
    finally:
        _stop_all()
        subprocess.run(["umount", "-l", str(home)], capture_output=True)


def _line(what: str, xs: list[float], heartbeat: float) -> str:
    med, top = statistics.median(xs), max(xs)
    return (
        f"{what:<44} median {med:5.2f} s = {med / heartbeat:4.2f} heartbeats, "
        f"max {top:5.2f} s = {top / heartbeat:4.2f} (n={len(xs)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--heartbeat", type=float, default=1.0)
    parser.add_argument("--quick", action="store_true", help="one trial of each")
    args = parser.parse_args()
    n, hb = (1 if args.quick else args.trials), args.heartbeat
    print(f"load average {os.getloadavg()[0]:.1f}; heartbeat {hb:g} s")
    print(_line("SIGKILL -> failed, nobody reading the store", [kill_trial(hb, looking=False) for _ in range(n)], hb))
    print(_line("SIGKILL -> failed, a page polling", [kill_trial(hb, looking=True) for _ in range(n)], hb))
    disk = [d for d in (disk_trial(hb) for _ in range(n)) if d is not None]
    print(
        _line("disk full -> failed with the storage message", disk, hb) if disk else "disk full: skipped (needs root)"
    )
    beats = 5 if args.quick else 20
    kept = sum(pause_trial(hb, beats) for _ in range(n))
    print(f"paused {beats} heartbeats (SIGSTOP, SIGCONT) and finished done: {kept} of {n}")


if __name__ == "__main__":
    main()
