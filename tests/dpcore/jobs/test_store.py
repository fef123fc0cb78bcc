"""Background jobs through the store: lifecycle, cancel, dead workers, restart, no double claim, bad input.

Workers are real detached processes (``python -m dpcore.jobs``) on a per-test DP_EXPLORER_HOME, with
short heartbeat intervals so every test stays fast. Time limits below are generous multiples of the
heartbeat (0.2 s), not benchmarks.
"""

import hashlib
import json
import os
import signal
import threading
import time

import pytest

from dpcore.cli import main
from dpcore.errors import DPError, JobError
from dpcore.jobs import attempt, db, display, liveness, records, runner, store, workers
from dpcore.jobs.owners import CLI_OWNER as OWNER
from dpcore.jobs.owners import SYSTEM

SLEEP = "demo.sleep"


@pytest.fixture(autouse=True)
def fast_jobs(monkeypatch):
    monkeypatch.setenv("DP_EXPLORER_JOBS_HEARTBEAT", "0.2")
    monkeypatch.setenv("DP_EXPLORER_JOBS_POLL", "0.05")
    monkeypatch.setenv("DP_EXPLORER_JOBS_IDLE_EXIT", "30")
    monkeypatch.setenv("DP_EXPLORER_JOBS_CANCEL_GRACE", "1.0")
    yield
    workers.shutdown_workers(timeout=2.0)
    for proc in workers.children():  # only the processes this test started
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def wait_for(predicate, timeout=60.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def file_hashes(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


# ------------------------------------------------------------------------------------------ lifecycle


def test_lifecycle_submit_progress_done(dp_home):
    job_id = store.submit(
        SLEEP, {"steps": 30, "seconds": 0.05, "steps_per_epoch": 10}, group="g1", label="demo", owner=OWNER
    )
    job = store.get(job_id, caller=SYSTEM)
    assert job["status"] == "queued" and job["group"] == "g1" and job["label"] == "demo"
    assert job["params"] == {"steps": 30, "seconds": 0.05, "steps_per_epoch": 10}
    assert workers.ensure_workers(1) == 1
    # live progress is visible while it runs
    running = wait_for(
        lambda: (j := store.get(job_id, caller=SYSTEM))["status"] == "running" and j["progress"].get("step") and j,
        what="running with progress",
    )
    assert 0 < running["progress"]["step"] <= 30 and running["progress"]["total_steps"] == 30
    done = store.wait(job_id, timeout=60, caller=SYSTEM)
    assert done["status"] == "done" and done["error"] is None
    assert done["result"]["steps"] == 30
    assert done["progress"]["step"] == 30 and done["progress"]["epoch"] == 3
    epochs = [h["epoch"] for h in done["history"] if "epoch" in h]
    assert epochs == [1, 2, 3]
    assert all("t" in h for h in done["history"])
    assert done["created"] <= done["started"] <= done["ended"]
    # result written atomically next to the job's own files
    result_dir = dp_home / "jobs" / job_id
    assert done["result_dir"] == str(result_dir)
    on_disk = json.loads((result_dir / "result.json").read_text())
    assert on_disk["result"] == done["result"] and on_disk["job_id"] == job_id
    assert (result_dir / "model.bin").read_bytes() == b"30"
    assert not [p for p in result_dir.iterdir() if p.name.endswith(".tmp")]
    # page helper: data only
    v = display.view(done)
    assert v["finished"] and v["fraction"] == 1.0 and v["x"] == "epoch"
    assert [x for x, _ in v["series"]["epsilon"]] == [1, 2, 3]
    assert "done" in v["text"]
    frame = display.history_frame(done)
    assert len(frame) == len(done["history"]) and {"t", "step", "loss", "epsilon"} <= set(frame.columns)
    # listing
    listed = store.list_jobs(group="g1", caller=SYSTEM)
    assert [j["id"] for j in listed] == [job_id] and "history" not in listed[0]
    assert store.list_jobs(group="other", caller=SYSTEM) == []


def test_run_inline_returns_result_and_records_job(dp_home):
    result = runner.run_inline(SLEEP, {"steps": 3, "seconds": 0.0}, owner=OWNER)
    assert result["steps"] == 3 and result["pid"] == os.getpid()
    (job,) = store.list_jobs(caller=SYSTEM)
    assert job["status"] == "done" and job["result"] == result
    assert (dp_home / "jobs" / job["id"] / "result.json").exists()


def test_run_inline_reraises_job_errors():
    with pytest.raises(DPError, match="epsilon must be > 0"):
        runner.run_inline("demo.fail", {"kind": "dp"}, owner=OWNER)
    (job,) = store.list_jobs(caller=SYSTEM)
    assert job["status"] == "failed" and job["error"] == "epsilon must be > 0; try 0.1-10"


def test_failed_jobs_record_one_line_and_log_the_traceback(dp_home):
    runtime = store.submit("demo.fail", {"kind": "runtime"}, owner=OWNER)
    dperr = store.submit("demo.fail", {"kind": "dp", "message": "delta must be < 1/n; try 1e-6"}, owner=OWNER)
    wrong = store.submit("demo.not_a_dict", {}, owner=OWNER)
    workers.ensure_workers(1)
    r = store.wait(runtime, timeout=60, caller=SYSTEM)
    assert r["status"] == "failed" and r["error"] == "RuntimeError: boom" and r["result"] is None
    assert r["progress"] == {"step": 1, "total_steps": 2}
    assert store.wait(dperr, timeout=60, caller=SYSTEM)["error"] == "delta must be < 1/n; try 1e-6"
    w = store.wait(wrong, timeout=60, caller=SYSTEM)
    assert w["status"] == "failed" and "expected a dict" in w["error"]
    assert not (dp_home / "jobs" / runtime / "result.json").exists()
    log = (dp_home / "logs" / "workers.log").read_text()
    assert "Traceback" in log and "second line only in the log" in log


# ------------------------------------------------------------------------------------------ cancel


def test_cancel_running_job_within_two_seconds():
    job_id = store.submit(SLEEP, {"steps": 2000, "seconds": 0.01}, owner=OWNER)
    workers.ensure_workers(1)
    wait_for(lambda: store.get(job_id, caller=SYSTEM)["progress"].get("step"), what="job running")
    t0 = time.monotonic()
    assert store.cancel(job_id, caller=SYSTEM)["cancel_requested"]
    job = store.wait(job_id, timeout=2.0, caller=SYSTEM)
    assert job["status"] == "cancelled" and time.monotonic() - t0 < 2.0
    assert job["progress"]["step"] < 2000
    # the worker carries on with the next job
    nxt = store.submit(SLEEP, {"steps": 2, "seconds": 0.0}, owner=OWNER)
    assert store.wait(nxt, timeout=60, caller=SYSTEM)["status"] == "done"


def test_cancel_queued_job_is_immediate_and_it_never_runs():
    job_id = store.submit(SLEEP, {"steps": 2, "seconds": 0.0}, owner=OWNER)
    job = store.cancel(job_id, caller=SYSTEM)
    assert job["status"] == "cancelled" and job["ended"] is not None
    other = store.submit(SLEEP, {"steps": 2, "seconds": 0.0}, owner=OWNER)
    workers.ensure_workers(1)
    assert store.wait(other, timeout=60, caller=SYSTEM)["status"] == "done"
    job = store.get(job_id, caller=SYSTEM)
    assert job["status"] == "cancelled" and job["started"] is None
    # cancelling a finished job changes nothing
    assert store.cancel(other, caller=SYSTEM)["status"] == "done"


def test_cancel_group_cancels_only_that_group():
    a = [store.submit(SLEEP, {"steps": 1}, group="sweep-a", owner=OWNER) for _ in range(3)]
    b = store.submit(SLEEP, {"steps": 1}, group="sweep-b", owner=OWNER)
    assert store.cancel_group("sweep-a", caller=SYSTEM) == 3
    assert {store.get(i, caller=SYSTEM)["status"] for i in a} == {"cancelled"}
    assert store.get(b, caller=SYSTEM)["status"] == "queued"


def test_job_ignoring_cancel_is_stopped_with_its_worker():
    job_id = store.submit("demo.ignore_cancel", {"seconds": 60}, owner=OWNER)
    workers.ensure_workers(1)
    wait_for(lambda: store.get(job_id, caller=SYSTEM)["status"] == "running", what="job running")
    (worker,) = workers.list_workers()
    store.cancel(job_id, caller=SYSTEM)
    job = store.wait(job_id, timeout=8, caller=SYSTEM)
    assert job["status"] == "cancelled" and "ignored" in job["error"]
    proc = next(p for p in workers.children() if p.pid == worker["pid"])
    assert proc.wait(timeout=10) == 3


# ------------------------------------------------------------------------------------------ failures, restarts


def test_sigkilled_worker_fails_its_job_and_leaves_earlier_results_alone(dp_home):
    first = store.submit(SLEEP, {"steps": 3, "seconds": 0.0}, owner=OWNER)
    workers.ensure_workers(1)
    before = store.wait(first, timeout=60, caller=SYSTEM)
    first_dir = dp_home / "jobs" / first
    hashes = file_hashes(first_dir)
    assert set(hashes) == {"result.json", "model.bin"}

    victim = store.submit(SLEEP, {"steps": 5000, "seconds": 0.01}, owner=OWNER)
    wait_for(lambda: store.get(victim, caller=SYSTEM)["progress"].get("step"), what="victim running")
    worker_id = store.get(victim, caller=SYSTEM)["worker"]
    (worker,) = [w for w in workers.list_workers() if w["id"] == worker_id]
    os.kill(worker["pid"], signal.SIGKILL)

    job = store.wait(victim, timeout=10, caller=SYSTEM)  # its process is gone: given up at the next look
    assert job["status"] == "failed" and job["error"] == liveness.GONE
    assert file_hashes(first_dir) == hashes
    after = store.get(first, caller=SYSTEM)
    assert {k: after[k] for k in ("status", "result", "ended", "history")} == {
        k: before[k] for k in ("status", "result", "ended", "history")
    }
    # a fresh worker is started in place of the dead one, and later jobs run
    assert workers.ensure_workers(1) == 1
    later = store.submit(SLEEP, {"steps": 2, "seconds": 0.0}, owner=OWNER)
    assert store.wait(later, timeout=60, caller=SYSTEM)["status"] == "done"
    assert store.get(victim, caller=SYSTEM)["status"] == "failed"


def test_sigterm_fails_the_running_job_at_once():
    job_id = store.submit(SLEEP, {"steps": 5000, "seconds": 0.01}, owner=OWNER)
    workers.ensure_workers(1)
    wait_for(lambda: store.get(job_id, caller=SYSTEM)["progress"].get("step"), what="job running")
    (worker,) = workers.list_workers()
    os.kill(worker["pid"], signal.SIGTERM)
    job = store.wait(job_id, timeout=5, caller=SYSTEM)
    assert job["status"] == "failed" and job["error"] == "the worker was stopped (SIGTERM); submit the job again"
    wait_for(lambda: workers.list_workers() == [], what="worker gone")


def test_queued_jobs_survive_a_restart():
    ids = [store.submit(SLEEP, {"steps": 2, "seconds": 0.0}, owner=OWNER) for _ in range(3)]
    time.sleep(0.3)
    assert [store.get(i, caller=SYSTEM)["status"] for i in ids] == ["queued"] * 3  # nobody runs them
    db._initialised.clear()  # a new app process: nothing cached in memory
    assert workers.ensure_workers(2) == 2
    assert [store.wait(i, timeout=60, caller=SYSTEM)["status"] for i in ids] == ["done"] * 3


def test_two_workers_never_claim_the_same_job(dp_home):
    log = dp_home / "claims.log"
    ids = [store.submit("demo.echo", {"seconds": 0.02, "log": str(log)}, owner=OWNER) for _ in range(12)]
    assert workers.ensure_workers(2) == 2
    assert workers.ensure_workers(2) == 0  # idempotent
    assert all(store.wait(i, timeout=60, caller=SYSTEM)["status"] == "done" for i in ids)
    lines = log.read_text().split()
    claimed = lines[0::2]
    assert sorted(claimed) == sorted(ids)  # every job ran exactly once


def test_concurrent_claims_are_disjoint():
    ids = {store.submit(SLEEP, {"steps": 1}, owner=OWNER) for _ in range(40)}
    got: dict[str, list] = {"a": [], "b": [], "c": []}

    def grab(name):
        while (row := runner.claim(f"t-{name}")) is not None:
            got[name].append(row["id"])

    threads = [threading.Thread(target=grab, args=(n,)) for n in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    claimed = got["a"] + got["b"] + got["c"]
    assert sorted(claimed) == sorted(ids)


def test_idle_worker_exits_on_its_own(monkeypatch):
    monkeypatch.setenv("DP_EXPLORER_JOBS_IDLE_EXIT", "0.3")
    workers.ensure_workers(1)
    proc = workers.children()[-1]
    assert proc.wait(timeout=15) == 0
    assert workers.list_workers() == []


# ------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "target",
    [
        "os:system",
        "dpcore",
        "dpcore.jobs.demo_jobs",
        "dpcore.nope:run",
        "dpcore.jobs.demo_jobs:missing",
        "dpcore.demo_jobs:missing",
        "dpcore.jobs.demo_jobs:sleep; rm",
        "demo.nope",
        "",
        None,
    ],
)
def test_bad_target_is_a_job_error(target):
    with pytest.raises(JobError, match="job target"):
        store.submit(target, {}, owner=OWNER)
    assert store.list_jobs(caller=SYSTEM) == []


@pytest.mark.parametrize("params", [{"x": object()}, {"x": float("nan")}, [1, 2], None])
def test_params_must_be_a_json_dict(params):
    with pytest.raises(JobError, match="params"):
        store.submit(SLEEP, params, owner=OWNER)


@pytest.mark.parametrize("job_id", ["nope", "../../etc", "", 7])
def test_unknown_job_id_is_a_job_error(job_id):
    with pytest.raises(JobError, match="unknown job id"):
        store.get(job_id, caller=SYSTEM)
    with pytest.raises(JobError, match="unknown job id"):
        store.cancel(job_id, caller=SYSTEM)
    with pytest.raises(JobError, match="unknown job id"):
        store.wait(job_id, timeout=0.1, caller=SYSTEM)


def test_wait_times_out_with_a_job_error():
    job_id = store.submit(SLEEP, {"steps": 1}, owner=OWNER)
    with pytest.raises(JobError, match="still queued"):
        store.wait(job_id, timeout=0.1, caller=SYSTEM)


def test_save_bytes_rejects_paths():
    ctx = attempt.JobContext(job_id="x", result_dir=db.jobs_dir() / "x")
    with pytest.raises(JobError, match="plain name"):
        ctx.save_bytes("../evil", b"")
    assert ctx.save_bytes("ok.bin", b"1").read_bytes() == b"1"


# ------------------------------------------------------------------------------------------ CLI


def test_cli_list_show_cancel(capsys):
    job_id = store.submit(SLEEP, {"steps": 1}, label="cli", owner=OWNER)
    assert main(["jobs", "list"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["count"] == 1 and listed["jobs"][0]["id"] == job_id
    assert main(["jobs", "show", job_id]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["status"] == "queued" and shown["label"] == "cli" and shown["history"] == []
    assert main(["jobs", "cancel", job_id]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "cancelled"


def test_cli_unknown_id_is_one_clear_line(capsys):
    assert main(["jobs", "show", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown job id 'nope'" in err[0]
    assert main(["jobs", "cancel", "nope"]) == 2


# ------------------------------------------------------------------------------------------ typed boundary


def test_record_is_frozen_typed_and_still_reads_like_the_old_dict():
    job_id = store.submit("demo.echo", {"x": 1}, group="g", label="typed", owner=OWNER)
    rec = store.get(job_id, caller=SYSTEM)
    assert isinstance(rec, records.JobRecord) and rec.status is records.JobStatus.QUEUED and not rec.finished
    assert rec["status"] == "queued" and rec.get("label") == "typed" and rec["history"] == []
    assert "history" not in store.get(job_id, history=False, caller=SYSTEM) and "history" in rec
    with pytest.raises(AttributeError):
        rec.status = records.JobStatus.DONE  # frozen
    plain = json.loads(json.dumps(rec.to_dict()))
    assert plain["status"] == "queued" and plain["params"] == {"x": 1} and plain["target"] == "demo.echo"
    assert set(records.STATUSES) == {"queued", "running", "done", "failed", "cancelled"}
    assert "done" in records.FINISHED and records.JobStatus("cancelled").finished


# ------------------------------------------------------------------------------------------ one cancel signal


def test_a_cancelled_inline_run_raises_cancelled_not_a_dp_error():
    """A cancel used to reach the CLI as JobError (a DPError: exit 2)."""
    from dpcore.errors import Cancelled

    box = {}

    def run():
        try:
            box["result"] = runner.run_inline(SLEEP, {"steps": 400, "seconds": 0.02}, owner=OWNER)
        except BaseException as exc:
            box["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    job_id = wait_for(
        lambda: next((j.id for j in store.list_jobs(caller=SYSTEM) if j.status == "running"), None),
        what="inline job running",
    )
    store.cancel(job_id, caller=SYSTEM)
    t.join(timeout=20)
    assert isinstance(box.get("error"), Cancelled) and not isinstance(box["error"], DPError)
    assert store.get(job_id, caller=SYSTEM).status == "cancelled"


def test_cli_exits_130_on_a_cancel(monkeypatch, capsys):
    from dpcore.commands import jobs as jobs_cmd
    from dpcore.errors import Cancelled

    def cancelled(args):
        raise Cancelled("job 123 was cancelled")

    monkeypatch.setattr(jobs_cmd, "run_list", cancelled)
    assert main(["jobs", "list"]) == 130
    assert capsys.readouterr().err.strip() == "error: job 123 was cancelled"
