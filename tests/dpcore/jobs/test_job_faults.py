"""Issue 28: a full disk during a training job, or a ``jobs`` folder replaced by a file, ends the job with the
storage message (dpcore.storage.fault_message) — in the store, in ``jobs show`` and on the page — and never
leaves it "running" until "worker died". The worker runs in this process (``run_worker(once=True)``) so the
faults can be injected where a real full disk strikes: the job's own file writes, then the store's (the end an
attempt records, dpcore.jobs.attempt)."""

import errno
import json
import sqlite3
import threading

import pytest

from dpcore import storage
from dpcore.cli import main
from dpcore.jobs import attempt, db, registry, runner, store, workers
from dpcore.jobs.owners import CLI_OWNER, SYSTEM
from dpcore.jobs.records import JobStatus

TINY_TRAIN = {"dataset": "breast_cancer", "model": "logreg", "epsilon": 2.0, "epochs": 1, "batch_size": 64}


@pytest.fixture(autouse=True)
def fast_jobs(monkeypatch):
    monkeypatch.setenv("DP_EXPLORER_JOBS_HEARTBEAT", "0.1")


@pytest.fixture
def full_disk(monkeypatch):
    """The disk fills up while a job runs: its file writes get ENOSPC (a real os.fsync error inside
    storage.atomic_write_bytes), and then the store's next three writes from the worker's own thread fail as
    SQLite fails on a full disk, until space is freed."""
    state = {"full": False, "store_failures_left": 3, "store_failures": 0}
    real_fsync, real_connection = storage.os.fsync, attempt.connection
    main_thread = threading.current_thread()

    def fsync(fd):
        state["full"] = True
        raise OSError(errno.ENOSPC, "No space left on device")

    def connection(*args, **kwargs):
        if state["full"] and threading.current_thread() is main_thread and state["store_failures_left"] > 0:
            state["store_failures_left"] -= 1
            state["store_failures"] += 1
            raise storage.StorageError(
                storage.fault_message(sqlite3.OperationalError("database or disk is full"), db.db_path())
            )
        return real_connection(*args, **kwargs)

    monkeypatch.setattr(storage.os, "fsync", fsync)
    monkeypatch.setattr(attempt, "connection", connection)
    yield state
    monkeypatch.setattr(storage.os, "fsync", real_fsync)


def _show(capsys, job_id):
    capsys.readouterr()
    assert main(["jobs", "show", job_id, "--no-history"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_full_disk_during_a_training_job_ends_it_with_the_storage_message(full_disk, capsys):
    job_id = store.submit(registry.TRAIN, TINY_TRAIN, owner=CLI_OWNER, group="train", label="fills the disk")
    assert workers.run_worker("w-full", once=True) == 1  # the worker itself survives the full disk
    assert full_disk["store_failures"] == 3  # its end state could not be written at first; it kept trying
    job = store.get(job_id, caller=SYSTEM, history=False)
    assert job.status == "failed"
    assert "is full" in job.error and "free some space" in job.error and "worker died" not in job.error
    shown = _show(capsys, job_id)
    assert shown["status"] == "failed" and shown["error"] == job.error  # what `jobs show` prints


def test_a_reader_never_calls_a_worker_that_cannot_write_dead(full_disk, monkeypatch):
    """While the worker cannot write its end (the store's disk is full), a page that looks sees the job running —
    its worker's process is alive and its lease holds — not "worker died"; once space is back the storage message
    is the job's end."""
    job_id = store.submit("demo.sleep", {"steps": 1}, owner=CLI_OWNER)
    real = attempt.connection
    seen = []

    def connection(*args, **kwargs):
        if full_disk["store_failures_left"] == 1 and not seen:  # meanwhile a page looks (and reaps)
            seen.append(store.get(job_id, caller=SYSTEM, history=False))
        return real(*args, **kwargs)

    monkeypatch.setattr(attempt, "connection", connection)
    assert workers.run_worker("w-full", once=True) == 1
    job = store.get(job_id, caller=SYSTEM, history=False)
    assert seen and seen[0].status == "running" and seen[0].error is None
    assert job.status == "failed" and "is full" in job.error and "died" not in job.error


def test_a_jobs_folder_replaced_by_a_file_is_refused_before_anything_queues(dp_home, capsys):
    store.list_jobs(caller=SYSTEM)
    (dp_home / "jobs").mkdir(exist_ok=True)
    (dp_home / "jobs").rmdir()
    (dp_home / "jobs").write_text("not a folder")
    with pytest.raises(storage.StorageError, match="a file is in its place"):
        store.submit("demo.echo", {}, owner=CLI_OWNER)
    assert main(["train", "--dataset", "breast_cancer", "--model", "logreg", "--epsilon", "1", "--background"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a file is in its place" in err[0]  # not "queued"
    assert store.list_jobs(caller=SYSTEM) == []


def test_a_jobs_folder_replaced_while_jobs_wait_ends_each_with_the_storage_message(dp_home, capsys):
    waiting = [store.submit("demo.echo", {"n": i}, owner=CLI_OWNER) for i in range(2)]
    (dp_home / "jobs").rmdir()
    (dp_home / "jobs").write_text("not a folder")
    assert workers.run_worker("w-file", once=True) == 1  # no crash: the job ends, the worker goes on
    first = store.get(waiting[0], caller=SYSTEM)
    assert first.status == "failed" and "a file is in its place" in first.error
    assert _show(capsys, waiting[0])["error"] == first.error
    (dp_home / "jobs").unlink()  # fixed: the next job runs
    assert workers.run_worker("w-file", once=True) == 1
    assert store.get(waiting[1], caller=SYSTEM).status == "done"


def test_a_full_disk_under_result_json_fails_the_job_with_no_result(dp_home, monkeypatch):
    """The job computed its result, then ``result.json`` met a full disk: it ends failed with the storage message
    and records no result — nothing of it is released, and a look once space is back finds the same end."""

    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    real_fsync = storage.os.fsync
    job_id = store.submit("demo.echo", {"n": 1}, owner=CLI_OWNER)
    monkeypatch.setattr(storage.os, "fsync", fsync)
    assert workers.run_worker("w-full", once=True) == 1
    monkeypatch.setattr(storage.os, "fsync", real_fsync)  # space is back
    job = store.get(job_id, caller=SYSTEM, history=False)
    assert (job.status, job.result) == ("failed", None) and "is full" in job.error and "free some space" in job.error
    assert not (dp_home / "jobs" / job_id / "result.json").exists()
    assert workers.run_worker("w-full", once=True) == 0  # nothing runs it again
    again = store.get(job_id, caller=SYSTEM, history=False)
    assert (again.status, again.error, again.result) == ("failed", job.error, None)


@pytest.mark.parametrize("status", [JobStatus.FAILED, JobStatus.CANCELLED])
def test_the_fenced_end_records_a_result_only_with_done(dp_home, status):
    """Whatever a caller passes, an end other than ``done`` records no result; and an end is final: a late ``done``
    of the same attempt changes nothing."""
    job_id = store.submit("demo.echo", {}, owner=CLI_OWNER)
    row = runner.claim("w-end")
    ctx = attempt.JobContext(job_id=job_id, result_dir=dp_home / "jobs" / job_id / f".attempt-{row['attempt']}")
    ctx.attempt = row["attempt"]
    assert attempt.record_end(ctx, "w-end", status, result={"rows": 3}, error="stopped") == attempt.RECORDED
    assert attempt.record_end(ctx, "w-end", JobStatus.DONE, result={"rows": 3}) == attempt.ENDED
    job = store.get(job_id, caller=SYSTEM, history=False)
    assert (job.status, job.error, job.result) == (status, "stopped", None)
