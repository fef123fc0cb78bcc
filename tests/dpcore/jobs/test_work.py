"""'My work' (dpcore.jobs.work.list_work): a caller's own runs, sweeps, studies and releases, newest first, and
nobody else's — not even for an admin, whose own list is theirs."""

import time

from dpcore.jobs import registry, store, work
from dpcore.jobs.owners import Caller, visitor_owner
from dpcore.sweep import runs as sweep_runs

ANN = visitor_owner("a" * 43)
BOB = visitor_owner("b" * 43)


def _job(owner: str, group: str, label: str) -> str:
    time.sleep(0.01)  # distinct creation times: the order below is by time
    return store.submit("demo.echo", {"x": 1}, owner=owner, group=group, label=label)


def _sweep(owner: str, sweep_id: str, name: str) -> None:
    time.sleep(0.01)
    sweep_runs.save(
        {"id": sweep_id, "name": name, "created": time.time(), "status": "done", "owner": owner, "jobs": []}
    )


def test_my_work_lists_every_kind_of_mine_newest_first_and_nothing_of_anyone_elses():
    run = _job(ANN, registry.TRAIN_GROUP, "DP logreg ε 1")
    _job(ANN, "sweep-xyz", "sweep xyz: ε=1 seed 0")  # a sweep's point belongs to its sweep, not listed
    _job(BOB, registry.TRAIN_GROUP, "Bob's run")
    _sweep(ANN, "ann-sweep", "Ann's sweep")
    _sweep(BOB, "bob-sweep", "Bob's sweep")
    study = _job(ANN, registry.SYNTH_GROUP, "MST · ε 1")
    release = _job(ANN, registry.SYNTH_RELEASE_GROUP, "synthetic clinic.csv · ε 1")

    mine = work.list_work(Caller(ANN))
    assert [(w.kind, w.id) for w in mine] == [
        ("release", release),
        ("study", study),
        ("sweep", "ann-sweep"),
        ("run", run),
    ]
    assert [w.what for w in mine] == [
        "synthetic release",
        "synthetic-data study",
        "privacy–utility sweep",
        "training run",
    ]
    assert all(w.status == "queued" and w.active for w in mine if w.kind != "sweep")
    assert mine[2].name == "Ann's sweep" and mine[2].status == "done" and not mine[2].active
    assert [w.name for w in work.list_work(Caller(BOB))] == ["Bob's sweep", "Bob's run"]
    # an admin's "my work" is their own, not everyone's
    assert [w.id for w in work.list_work(Caller(ANN, admin=True))] == [w.id for w in mine]
    assert work.list_work(Caller(visitor_owner("c" * 43))) == []


def test_my_work_on_a_fresh_home_is_empty():
    assert work.list_work(Caller(ANN)) == []
