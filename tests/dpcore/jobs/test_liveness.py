"""Liveness (issue 32 §1): a slow worker is not a dead one. Real detached worker processes, paused with SIGSTOP,
killed with SIGKILL; jobs given up only when their worker's process is gone or their lease lapsed; a worker that
comes back after its job was taken away writes nothing; a lost sweep point runs once more.

Heartbeats are short (0.2 s unless a test says otherwise) and the lease a minute, so a test's pause is long
against the heartbeat (a hundred beats) and short against the lease."""

import json
import os
import signal
import sqlite3
import time

import pytest

from dpcore.jobs import attempt, db, liveness, registry, runner, store, workers
from dpcore.jobs.owners import CLI_OWNER as OWNER
from dpcore.jobs.owners import SYSTEM
from dpcore.jobs.records import JobStatus


@pytest.fixture(autouse=True)
def fast_jobs(monkeypatch):
    monkeypatch.setenv("DP_EXPLORER_JOBS_HEARTBEAT", "0.2")
    monkeypatch.setenv("DP_EXPLORER_JOBS_LEASE", "60")
    monkeypatch.setenv("DP_EXPLORER_JOBS_POLL", "0.05")
    monkeypatch.setenv("DP_EXPLORER_JOBS_IDLE_EXIT", "60")
    monkeypatch.setenv("DP_EXPLORER_JOBS_CANCEL_GRACE", "2")
    yield
    for proc in workers.children():  # only the processes this test started
        if proc.poll() is None:
            try:
                os.kill(proc.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
    workers.shutdown_workers(timeout=2.0)
    for proc in workers.children():
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def wait_for(predicate, timeout=90.0, what="condition", every=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _get(job_id):
    return store.get(job_id, caller=SYSTEM, history=False)


def _raw(job_id):
    """The job's row as stored, read without reaping (nobody looking but the workers)."""
    conn = sqlite3.connect(f"{db.db_path().as_uri()}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
    finally:
        conn.close()


def _worker_pid(job_id):
    wid = wait_for(lambda: _get(job_id).worker, what="a worker on the job")
    return next(w["pid"] for w in workers.list_workers() if w["id"] == wid)


def _running(job_id):
    wait_for(lambda: _get(job_id).progress.get("step"), what="the job running")
    return _worker_pid(job_id)


@pytest.mark.slow
def test_a_worker_paused_20_s_and_resumed_finishes_its_job_done(dp_home):
    """A suspended laptop, a swapped VM: 20 s without a heartbeat (a hundred beats) while pages keep looking. The
    job stays running — its worker's process is there and its lease holds — and finishes when the worker
    resumes (on the old 6 s rule it was failed 'worker died' for good)."""
    job_id = store.submit("demo.sleep", {"steps": 40, "seconds": 0.05}, owner=OWNER)
    workers.ensure_workers(1)
    pid = _running(job_id)
    os.kill(pid, signal.SIGSTOP)
    try:
        paused = time.monotonic()
        while time.monotonic() - paused < 20:
            job = _get(job_id)  # a page polling: every read gives up dead workers' jobs
            assert job.status == "running" and job.error is None
            time.sleep(0.5)
        assert workers.ensure_workers(1) == 0  # a paused worker is not replaced either: it is not dead
    finally:
        os.kill(pid, signal.SIGCONT)
    job = store.wait(job_id, timeout=90, caller=SYSTEM)
    assert job.status == "done" and job.result["steps"] == 40 and job.result["pid"] == pid
    assert (dp_home / "jobs" / job_id / "model.bin").read_bytes() == b"40"


def test_a_killed_workers_job_fails_within_three_heartbeats_without_anyone_looking(monkeypatch):
    """SIGKILL: the job is given up by the other worker's heartbeat (nobody reads the store) within three
    heartbeats, with a message that says what was seen — its process ended — and blames no crash."""
    monkeypatch.setenv("DP_EXPLORER_JOBS_HEARTBEAT", "1.0")
    victim = store.submit("demo.sleep", {"steps": 5000, "seconds": 0.01}, owner=OWNER)
    workers.ensure_workers(2)
    pid = _running(victim)
    wait_for(lambda: len(workers.list_workers()) == 2, what="the second worker beating")
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    row = wait_for(lambda: (r := _raw(victim))["status"] != "running" and r, timeout=90, what="the job given up")
    after = time.monotonic() - killed
    assert row["status"] == "failed" and row["error"] == liveness.GONE
    assert "crash" not in row["error"] and "died" not in row["error"]
    assert after < 3 * 1.0, f"given up {after:.2f} s after the kill"


def test_a_pid_reused_by_another_process_is_not_the_worker():
    """Same host, the pid alive — but started at another time than the worker that claimed the job: gone."""
    job_id = store.submit("demo.sleep", {}, owner=OWNER)

    def claimed_by(start):
        with db.connection() as conn, db.transaction(conn):
            conn.execute(
                "UPDATE jobs SET status = 'running', worker = 'w-x', attempt = 1, pid = ?, host = ?, pid_start = ?, "
                "heartbeat = ?, lease = ? WHERE id = ?",
                (os.getpid(), liveness.host(), start, time.time(), time.time() + 600, job_id),
            )

    claimed_by(liveness.process_start())  # this very process: alive
    assert _get(job_id).status == "running"
    claimed_by("another-boot:12345")  # the pid, but not the process that claimed it
    job = _get(job_id)
    assert job.status == "failed" and job.error == liveness.GONE


def test_a_worker_silent_past_its_lease_is_given_up_and_hands_the_job_back(dp_home, monkeypatch):
    """A worker frozen longer than the lease: its job is failed with what was seen (silence, not a crash); when
    the worker comes back it finds the job no longer its own, writes nothing — no result, no files — and goes
    on with the next job."""
    monkeypatch.setenv("DP_EXPLORER_JOBS_LEASE", "1.5")
    job_id = store.submit("demo.sleep", {"steps": 60, "seconds": 0.05}, owner=OWNER)
    workers.ensure_workers(1)
    pid = _running(job_id)
    os.kill(pid, signal.SIGSTOP)
    try:
        job = wait_for(lambda: (j := _get(job_id)).status != "running" and j, what="the lease lapsing")
    finally:
        os.kill(pid, signal.SIGCONT)
    assert job.status == "failed" and "no sign of life" in job.error and "lease" in job.error
    assert "crash" not in job.error and "died" not in job.error
    later = store.submit("demo.sleep", {"steps": 2, "seconds": 0.0}, owner=OWNER)
    done = store.wait(later, timeout=90, caller=SYSTEM)
    assert done.status == "done" and done.result["pid"] == pid  # the same worker, back at work
    again = _get(job_id)
    assert (again.status, again.error, again.result) == ("failed", job.error, None)  # never both
    assert not (dp_home / "jobs" / job_id / "model.bin").exists()
    assert not (dp_home / "jobs" / job_id / "result.json").exists()


@pytest.mark.slow
def test_a_lost_job_that_may_run_again_is_finished_once_by_the_next_worker(dp_home, monkeypatch):
    """demo.again (one retry, like a sweep point): its frozen worker's job goes back to the queue, a new worker
    runs it to the end, and the first worker, resumed, drops its own run of it."""
    monkeypatch.setenv("DP_EXPLORER_JOBS_LEASE", "1.5")
    job_id = store.submit(registry.DEMO_RETRIED, {"steps": 30, "seconds": 0.1}, owner=OWNER)
    workers.ensure_workers(1)
    first = _running(job_id)
    os.kill(first, signal.SIGSTOP)
    try:
        wait_for(lambda: _get(job_id).status == "queued", what="the job queued again")
        assert _get(job_id).progress["attempt"] == 2
        assert workers.ensure_workers(1) == 1  # the frozen worker is past its lease: another starts
        second = wait_for(lambda: _get(job_id).status == "running" and _worker_pid(job_id), what="the second run")
        assert second != first
    finally:
        os.kill(first, signal.SIGCONT)
    job = store.wait(job_id, timeout=60, caller=SYSTEM)
    assert job.status == "done" and job.result["pid"] == second
    time.sleep(1.0)  # the first worker has woken up by now, and found the job taken
    assert _get(job_id).result["pid"] == second and _raw(job_id)["attempt"] == 2
    saved = json.loads((dp_home / "jobs" / job_id / "result.json").read_text())
    assert saved["result"]["pid"] == second
    assert sorted(p.name for p in (dp_home / "jobs" / job_id).iterdir()) == ["model.bin", "result.json"]


def test_every_write_is_fenced_by_the_attempt(dp_home):
    """A run whose attempt is over records nothing: not its progress, not its end, not its files."""
    job_id = store.submit("demo.sleep", {}, owner=OWNER)
    row = runner.claim("w-a")
    assert row["id"] == job_id and row["attempt"] == 1
    ctx = attempt.JobContext(job_id=job_id, result_dir=store.folder_path(job_id) / ".attempt-1", attempt=1)
    ctx.result_dir.mkdir(parents=True)
    ctx.save_bytes("model.bin", b"from attempt 1")
    with db.connection() as conn, db.transaction(conn):  # given up and queued again meanwhile
        conn.execute("UPDATE jobs SET status = 'queued', worker = NULL WHERE id = ?", (job_id,))
    assert runner.claim("w-b")["attempt"] == 2
    ctx.progress(step=99)
    assert attempt.record_end(ctx, "w-a", JobStatus.DONE, result={"from": 1}) == attempt.LOST
    job = _get(job_id)
    assert (job.status, job.worker, job.result, job.progress) == ("running", "w-b", None, {})
    assert not (dp_home / "jobs" / job_id / "model.bin").exists()


@pytest.mark.slow
def test_a_sweep_point_whose_worker_was_killed_runs_again_and_the_sweep_finishes():
    from dpcore.sweep import runs as sweep_runs
    from tests.dpcore.sweep.helpers import TINY

    caller = SYSTEM
    sid = sweep_runs.start_sweep(dict(TINY, epsilons=(1.0,)), owner=OWNER, workers=1)
    points = [e["job_id"] for e in sweep_runs.load(sid, caller=caller)["jobs"]]
    victim = wait_for(
        lambda: next((j for j in points if _get(j).status == "running"), None), timeout=60, what="a point running"
    )
    os.kill(_worker_pid(victim), signal.SIGKILL)

    def finished():
        workers.ensure_workers(1)  # as the page does when it polls
        s = sweep_runs.state(sid, caller=caller)
        return s["status"] != "running" and s

    s = wait_for(finished, timeout=240, what="the sweep finishing", every=0.5)
    assert s["status"] == "done" and s["failed"] == [] and s["done"] == len(points) == 2
    assert _raw(victim)["attempt"] == 2 and _get(victim).status == "done"


def test_every_end_is_announced_once_with_what_it_released(monkeypatch):
    """The hook the budget gate plugs into: done (released), failed (its worker's process gone: nothing released)
    and a queued job cancelled before it started, each announced once after its end is committed; a job put back
    in the queue is not announced."""
    from dpcore.jobs import hooks

    seen = []
    monkeypatch.setattr(hooks, "_HOOKS", ["dpcore.tests:seen"])
    monkeypatch.setattr(hooks, "import_path", lambda path, what: seen.append)
    plain = store.submit("demo.echo", {}, owner=OWNER)
    runner.run_inline("demo.echo", {}, owner=OWNER)
    waiting = store.submit("demo.echo", {}, owner=OWNER)
    store.cancel(waiting, caller=SYSTEM)
    lost = store.submit(registry.DEMO_RETRIED, {}, owner=OWNER)
    for n, job_id in ((1, lost), (2, lost), (1, plain)):
        with db.connection() as conn, db.transaction(conn):  # claimed by a process that is gone
            conn.execute(
                "UPDATE jobs SET status = 'running', worker = 'w-gone', attempt = ?, pid = ?, host = ?, "
                "pid_start = 'gone:1' WHERE id = ?",
                (n, os.getpid(), liveness.host(), job_id),
            )
        _get(job_id)  # a reader gives it up
    ends = {(e.job_id, e.status, e.released, e.error) for e in seen}
    inline = next(e.job_id for e in seen if e.job_id not in (plain, waiting, lost))
    assert ends == {
        (inline, "done", True, None),
        (waiting, "cancelled", False, "cancelled before it started"),
        (lost, "failed", False, liveness.GONE_TWICE),  # announced once: the first loss only queued it again
        (plain, "failed", False, liveness.GONE),
    }
    assert len(seen) == 4 and {e.owner for e in seen} == {OWNER}
