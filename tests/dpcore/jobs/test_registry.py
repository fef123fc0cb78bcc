"""Job targets: registered names, and rows that hold the old ``dpcore.module:function`` paths."""

import importlib.util
import sqlite3

import pytest

from dpcore.errors import JobError
from dpcore.jobs import db, demo_jobs, executors, records, registry, runner, store, workers
from dpcore.jobs.owners import CLI_OWNER as OWNER
from dpcore.jobs.owners import SYSTEM


def test_targets_are_named_through_the_registry():
    assert registry.targets()["train"] == "dpcore.training.job:run_job"
    assert registry.targets()["sweep.point"] == "dpcore.sweep.point:run_point"
    assert registry.targets()["ray"] == "dpcore.jobs.executors:ray_job"
    assert registry.target_name("dpcore.sweep:run_point") == registry.SWEEP_POINT == "sweep.point"
    assert registry.register("train", "dpcore.training.job:run_job") == "train"  # the same pair again is fine
    with pytest.raises(JobError, match="already registered"):
        registry.register("train", "dpcore.jobs.demo_jobs:echo")
    with pytest.raises(JobError, match="unknown job target"):
        store.submit("no.such.job", {}, owner=OWNER)
    assert runner.run_inline("demo.echo", {"a": 2}, owner=OWNER)["params"] == {"a": 2}


@pytest.mark.parametrize(
    "old,name",
    [
        ("dpcore.demo_jobs:echo", "demo.echo"),
        ("dpcore.demo_jobs:sleep", "demo.sleep"),
        ("dpcore.executors:ray_job", "ray"),
        ("dpcore.training:run_job", "train"),
        ("dpcore.sweep:run_point", "sweep.point"),
    ],
)
def test_every_old_path_resolves_to_the_function_its_name_runs(old, name):
    assert registry.target_name(old) == name
    assert registry.resolve(old) is registry.resolve(name)
    assert set(registry.MOVED.values()) <= set(registry.targets())


def test_old_paths_of_moved_modules_resolve_although_the_modules_are_gone():
    """No shims: the old modules do not exist; the one translation table runs their rows."""
    for gone in ("dpcore.demo_jobs", "dpcore.executors", "dpcore.worker", "dpcore.accounting"):
        assert importlib.util.find_spec(gone) is None
    assert registry.resolve("dpcore.demo_jobs:sleep") is demo_jobs.sleep
    assert registry.resolve("dpcore.executors:ray_job") is executors.ray_job


def test_a_sweep_point_row_from_before_the_sweep_package_runs_the_moved_function():
    """dpcore/sweep.py became the dpcore/sweep/ package: the package itself has no run_point (no shim), yet rows
    holding "dpcore.sweep:run_point" resolve, through MOVED, to dpcore.sweep.point.run_point."""
    import dpcore.sweep
    from dpcore.sweep import point

    assert not hasattr(dpcore.sweep, "run_point")
    assert registry.MOVED["dpcore.sweep:run_point"] == registry.SWEEP_POINT
    assert registry.resolve("dpcore.sweep:run_point") is point.run_point


def test_submit_stores_the_registered_name():
    job_id = store.submit("dpcore.demo_jobs:echo", {"x": 1}, owner=OWNER)
    assert store.get(job_id, caller=SYSTEM).target == "demo.echo"


@pytest.mark.parametrize("old", ["dpcore.demo_jobs:echo", "dpcore.jobs.demo_jobs:echo"])
def test_a_row_written_with_an_old_target_still_opens_and_runs(dp_home, old):
    """Older versions stored the target as 'dpcore.module:function' (demo_jobs lived at dpcore/demo_jobs.py);
    such rows still open, and a worker runs them."""
    store.list_jobs(caller=SYSTEM)  # creates the store with today's schema (unchanged since those versions)
    conn = sqlite3.connect(str(db.db_path()))
    with conn:
        conn.execute(
            "INSERT INTO jobs (id, target, params, grp, label, status, created) "
            "VALUES ('old-1', ?, '{\"v\": 3}', 'train', '', 'queued', 1.0)",
            (old,),
        )
    conn.close()
    rec = store.get("old-1", caller=SYSTEM)
    assert rec.status == "queued" and rec.target == old and registry.target_name(rec.target) == "demo.echo"
    assert workers.run_worker("w-old", once=True) == 1
    done = store.get("old-1", caller=SYSTEM)
    assert done.status is records.JobStatus.DONE and done.result["params"] == {"v": 3}
