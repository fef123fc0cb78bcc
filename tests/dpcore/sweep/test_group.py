"""One job model (issue 36 §5): a sweep is a group of jobs in the one store. Its row follows its points, the job
store's one ownership check, rename, cancel and delete act on it, a caller's work lists it once (not its points),
and sweeps stored by earlier versions as ``sweeps/<id>.json`` are moved into the store and still open."""

import json
import sqlite3

import pytest

from dpcore import storage
from dpcore.errors import DPError, JobError
from dpcore.jobs import db, groups, store, workers
from dpcore.jobs.owners import SYSTEM, Caller, NotYours
from dpcore.sweep import runs as sweep_runs
from dpcore.sweep.config import SweepConfig
from tests.dpcore.jobs.legacy import old_store
from tests.dpcore.sweep.helpers import TINY, multi_seed_result

ANN, BOB = "session:" + "a" * 32, "session:" + "b" * 32
AS_ANN, AS_BOB = Caller(ANN), Caller(BOB)


def test_a_sweep_is_a_group_row_whose_points_are_its_members():
    sid = sweep_runs.start_sweep(dict(TINY, epsilons=(1.0,)), workers=0, owner=ANN, name="mine")
    row = store.get(sid, caller=AS_ANN)
    points = [e["job_id"] for e in sweep_runs.load(sid, caller=AS_ANN)["jobs"]]
    assert (row.target, row.label, row.owner, row.status) == ("sweep", "mine", ANN, "running")
    # the jobs workers run: the points, not the sweep; a caller's work: the sweep, not its points
    assert {j.id for j in store.list_jobs(caller=AS_ANN)} == set(points)
    assert [j.id for j in store.list_jobs(caller=AS_ANN, work=True)] == [sid]
    assert [j.id for j in store.list_jobs(caller=AS_ANN, target="sweep")] == [sid]
    # one ownership check: the store refuses another visitor the sweep, as it refuses a job, and names it a sweep
    for attempt in (
        lambda: store.get(sid, caller=AS_BOB),
        lambda: sweep_runs.load(sid, caller=AS_BOB),
        lambda: sweep_runs.cancel(sid, caller=AS_BOB),
        lambda: sweep_runs.rename(sid, "theirs", caller=AS_BOB),
    ):
        with pytest.raises(NotYours, match=f"sweep {sid} is not yours"):
            attempt()
    assert store.list_jobs(caller=AS_BOB, work=True) == [] and sweep_runs.list_sweeps(caller=AS_BOB) == []
    # the store's rename and cancel act on the sweep (its cancel reaches every point)
    assert sweep_runs.rename(sid, "renamed", caller=AS_ANN)["name"] == "renamed"
    with pytest.raises(JobError, match="already called"):
        store.rename(store.submit("demo.echo", {}, owner=ANN, label="other"), "renamed", caller=AS_ANN)
    with pytest.raises(JobError, match="still running"):
        sweep_runs.delete(sid, caller=AS_ANN)
    sweep_runs.cancel(sid, caller=AS_ANN)
    assert {store.get(p, caller=AS_ANN).status for p in points} == {"cancelled"}
    assert sweep_runs.state(sid, caller=AS_ANN)["status"] == "cancelled"
    sweep_runs.delete(sid, caller=AS_ANN)  # with its points, in one transaction
    assert store.get_many([sid, *points], caller=SYSTEM) == {}


def test_the_sweeps_row_records_its_end_when_its_last_point_ends(monkeypatch):
    """Nobody looks: the worker that ends the last point records the sweep done, with its assembled result."""
    sid = sweep_runs.start_sweep(dict(TINY, epsilons=(2.0,)), workers=0, owner=ANN)
    assert workers.run_worker("w-a", once=True) == 1
    assert store.get(sid, caller=AS_ANN).status == "running"  # one point of two
    assert workers.run_worker("w-a", once=True) == 1
    row = store.get(sid, caller=AS_ANN)
    assert row.status == "done" and row.ended is not None and [p["epsilon"] for p in row.result["result"]["points"]]
    assert row.result["failed"] == [] and row.result["result"]["baseline"]["epsilon"] is None


def _legacy_file(home, rec):
    folder = home / "sweeps"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{rec['id']}.json").write_text(json.dumps(rec, indent=1))


def test_a_sweep_stored_by_an_earlier_version_is_moved_into_the_store_and_still_opens(dp_home):
    """A finished sweep as earlier versions wrote it (sweeps/<id>.json, its points' jobs in a store from before
    owners): listed, opened, its state and result, renamed and deleted as before — from the one store."""
    old_store(dp_home, {"id": "20240101-000000-p001", "target": "dpcore.sweep:run_point", "params": "{}",
                        "status": "done", "created": 1.0, "result": "{}"}, owners=False)  # fmt: skip
    res = multi_seed_result(seeds=2)
    rec = {
        "id": "20240101-000000-ab12",
        "name": "an old sweep",
        "created": 5.0,
        "status": "done",
        "group": "sweep-20240101-000000-ab12",
        "config": res["config"],
        "jobs": [{"job_id": "20240101-000000-p001", "epsilon": 8.0, "seed": 0}],
        "executor": {"name": "local", "workers": 2},
        "owner": ANN,
        "shared": False,
        "reproducible_noise": False,
        "result": res,
        "failed": [],
        "finished": 9.0,
    }
    _legacy_file(dp_home, rec)
    listed = sweep_runs.list_sweeps(caller=AS_ANN)
    assert [(s["id"], s["name"], s["status"], s["mine"]) for s in listed] == [(rec["id"], "an old sweep", "done", True)]
    assert not (dp_home / "sweeps" / f"{rec['id']}.json").exists()
    assert json.loads((dp_home / "sweeps" / "migrated" / f"{rec['id']}.json").read_text()) == rec  # kept aside
    assert sweep_runs.load(rec["id"], caller=AS_ANN) == rec  # the very record, from the store
    s = sweep_runs.state(rec["id"], caller=AS_ANN)
    assert s["status"] == "done" and s["result"] == json.loads(json.dumps(res)) and s["total"] == 1
    with pytest.raises(NotYours):
        sweep_runs.load(rec["id"], caller=AS_BOB)
    assert store.get("20240101-000000-p001", caller=SYSTEM).owner == "cli"  # its point, in the migrated store
    _legacy_file(dp_home, dict(rec, name="written again by an old copy"))  # the row already there is kept
    assert sweep_runs.load(rec["id"], caller=AS_ANN)["name"] == "an old sweep"
    assert sweep_runs.rename(rec["id"], "renamed", caller=AS_ANN)["name"] == "renamed"
    sweep_runs.delete(rec["id"], caller=AS_ANN)
    assert sweep_runs.list_sweeps(caller=AS_ANN) == []
    assert store.get_many(["20240101-000000-p001"], caller=SYSTEM) == {}  # its point went with it


def test_an_earlier_versions_running_demo_sweep_finishes_from_the_store_and_is_shared(dp_home):
    cfg = SweepConfig().validate().to_dict()
    point = store.submit("demo.echo", {}, owner=ANN, group="sweep-20240101-000000-d0d0")
    rec = {
        "id": "20240101-000000-d0d0",
        "name": "the demo",
        "created": 5.0,
        "status": "running",
        "group": "sweep-20240101-000000-d0d0",
        "config": cfg,
        "jobs": [{"job_id": point, "epsilon": None, "seed": 0}],
        "executor": {"name": "local", "workers": 2},
        "owner": ANN,
        "shared": True,
    }
    _legacy_file(dp_home, rec)
    assert sweep_runs.list_sweeps(caller=AS_BOB) == []  # a running demo is its owner's
    assert store.get(point, caller=SYSTEM).status == "queued"
    with db.connection() as conn, db.transaction(conn):  # its point ends
        conn.execute(
            "UPDATE jobs SET status = 'done', result = ? WHERE id = ?",
            (json.dumps({"epsilon": None, "seed": 0, "test_accuracy": 0.9, "mia": {}}), point),
        )
    seen = sweep_runs.list_sweeps(caller=AS_BOB)
    assert [(s["id"], s["status"], s["shared"], s["mine"]) for s in seen] == [(rec["id"], "done", True, False)]
    assert sweep_runs.state(rec["id"], caller=AS_BOB)["result"]["baseline"]["test_accuracy"] == 0.9


def test_an_earlier_versions_sweep_still_opens_where_the_home_cannot_take_it(dp_home, monkeypatch):
    res = multi_seed_result(seeds=1)
    rec = {"id": "20240101-000000-ro01", "name": "read only", "created": 1.0, "status": "done", "config": res["config"],
           "jobs": [], "owner": ANN, "result": res, "failed": []}  # fmt: skip
    _legacy_file(dp_home, rec)

    def cannot_write(*a, **k):
        raise storage.StorageError("$DP_EXPLORER_HOME is read-only or not accessible")

    monkeypatch.setattr(groups, "put_group", cannot_write)
    assert [s["id"] for s in sweep_runs.list_sweeps(caller=AS_ANN)] == [rec["id"]]
    assert sweep_runs.load(rec["id"], caller=AS_ANN)["name"] == "read only"
    assert sweep_runs.list_sweeps(caller=AS_BOB) == []
    with pytest.raises(NotYours):
        sweep_runs.load(rec["id"], caller=AS_BOB)
    with pytest.raises(DPError, match="could not be moved"):
        sweep_runs.rename(rec["id"], "x", caller=AS_ANN)
    assert (dp_home / "sweeps" / f"{rec['id']}.json").exists()


def test_a_store_from_before_groups_gains_them(dp_home):
    old_store(dp_home, {"id": "20240101-000000-aaaa", "target": "demo.echo", "params": "{}", "status": "queued",
                        "created": 1.0}, owners=True)  # fmt: skip
    assert [j.id for j in store.list_jobs(caller=SYSTEM, work=True)] == ["20240101-000000-aaaa"]
    cols = {r[1] for r in sqlite3.connect(str(dp_home / "jobs.sqlite")).execute("PRAGMA table_info(jobs)")}
    assert {"parent", "attempt", "lease", "pid", "host", "pid_start"} <= cols
