"""A full disk, for real (issue 32 §1): the home is a small tmpfs, a real worker process runs a DP synthetic release
or a training run, and the disk fills up while it runs. The job ends ``failed`` with the storage message within
three heartbeats — not "running" with a dead heartbeat — and stays so once space is freed; the worker lives on.

Mounting needs root (CI runs as root); elsewhere these tests are skipped and test_job_faults.py's injected faults
still run."""

import errno
import os
import shutil
import signal
import subprocess
import time

import numpy as np
import pandas as pd
import pytest

from dpcore.jobs import registry, store, workers
from dpcore.jobs.owners import CLI_OWNER as OWNER
from dpcore.jobs.owners import SYSTEM

#: slow: a real worker fills a small disk, in processes of its own (the full suite runs them)
pytestmark = pytest.mark.slow

HEARTBEAT = 1.0
DISK_FULL = "is full"


@pytest.fixture
def small_disk(tmp_path, monkeypatch):
    """``$DP_EXPLORER_HOME`` on its own 48 MiB tmpfs; yields a function that fills it (and one that frees it)."""
    home = tmp_path / "small-home"
    home.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs home needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m,mode=0700", "tmpfs", str(home)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    monkeypatch.setenv("DP_EXPLORER_HOME", str(home))
    monkeypatch.setenv("DP_EXPLORER_JOBS_HEARTBEAT", str(HEARTBEAT))
    monkeypatch.setenv("DP_EXPLORER_JOBS_POLL", "0.1")
    monkeypatch.setenv("DP_EXPLORER_JOBS_IDLE_EXIT", "120")
    filler = home / "filler"

    def fill():
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for size in (1 << 20, 4096, 1):  # whole megabytes, then what is left of the last page
                try:
                    while True:
                        os.write(fd, b"\0" * size)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        return time.monotonic()

    def free():
        filler.unlink()

    try:
        yield fill, free
    finally:
        for proc in workers.children():  # only the workers this test started
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        subprocess.run(["umount", "-l", str(home)], capture_output=True)


def _fails_with_the_storage_message(job_id, fill, free, phase):
    workers.ensure_workers(1)
    deadline = time.monotonic() + 180
    while (store.get(job_id, caller=SYSTEM, history=False).progress.get("phase") != phase) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.1)
    job = store.get(job_id, caller=SYSTEM, history=False)
    assert job.status == "running", job.error
    full_at = fill()
    while (job := store.get(job_id, caller=SYSTEM, history=False)).status == "running":
        assert time.monotonic() - full_at < 30, "still running 30 s after the disk filled"
        time.sleep(0.05)
    after = time.monotonic() - full_at
    assert job.status == "failed" and DISK_FULL in job.error and "free some space" in job.error, job.error
    assert job.result is None  # computed or not, a job that did not end done released nothing
    assert "died" not in job.error and "crash" not in job.error
    print(f"failed {after:.2f} s after the disk filled")
    assert after < 3 * HEARTBEAT, f"failed {after:.2f} s after the disk filled"
    free()
    time.sleep(2 * HEARTBEAT)
    again = store.get(job_id, caller=SYSTEM, history=False)
    assert (again.status, again.error, again.result) == ("failed", job.error, None)  # the end stays the end
    return after


def test_a_full_disk_during_a_dp_synthetic_release_ends_it_failed_with_the_storage_message(small_disk):
    from dpcore.synth import job as synth_job
    from dpcore.synth import release, schema
    from dpcore.training.data import save_upload

    fill, free = small_disk
    rng = np.random.default_rng(0)
    age = rng.integers(18, 90, 1_500)
    table = pd.DataFrame({"age": age, "sex": rng.choice(["F", "M"], age.size), "ward": np.where(age > 50, "B", "A")})
    declared = schema.parse_schema(["age=18:90:1", "sex=F,M", "ward=A,B"])
    params = synth_job.params(
        save_upload(table.to_csv(index=False).encode()), declared, release.SynthConfig(1.0, 1e-6, "mst"), "t.csv"
    )
    job_id = store.submit(registry.SYNTH_RELEASE, params, owner=OWNER, group=registry.SYNTH_RELEASE_GROUP)
    _fails_with_the_storage_message(job_id, fill, free, phase="release")


def test_a_full_disk_during_a_training_run_ends_it_failed_and_the_worker_goes_on(small_disk):
    fill, free = small_disk
    # 3,000 epochs: ~6 s of steps on a quiet machine, so the heartbeat (1 s) records the training phase (200 epochs
    # took 0.4 s and sometimes ended before it was ever written)
    train = {"dataset": "breast_cancer", "model": "logreg", "epsilon": 2.0, "epochs": 3000, "batch_size": 64}
    job_id = store.submit(registry.TRAIN, train, owner=OWNER, group=registry.TRAIN_GROUP)
    _fails_with_the_storage_message(job_id, fill, free, phase="training")
    later = store.submit("demo.sleep", {"steps": 2, "seconds": 0.0}, owner=OWNER)
    assert store.wait(later, timeout=120, caller=SYSTEM).status == "done"  # space is back: the next job runs
