"""Jobs and sweeps belong to whoever started them (issue 24.7, issue 28): another owner can neither see, download,
cancel, rename nor delete them; the finished default demo is shared read-only; one owner's flood never starves
another's job; a visitor's share is bounded; a repeated click queues nothing; names are distinct; rename and
delete (all or nothing) for the owner and admins."""

import json

import pytest

from dpcore import storage
from dpcore.cli import main
from dpcore.errors import DPError, JobError
from dpcore.jobs import display, owners, runner, store
from dpcore.jobs.owners import CLI, CLI_OWNER, SYSTEM, AlreadySubmitted, Caller, NotYours, QueueFull
from dpcore.statements import sweep as sweep_st
from dpcore.statements import training as training_st
from dpcore.sweep import runs as sweep_runs
from dpcore.sweep.config import SweepConfig

ANN = "session:" + "a" * 32
BOB = "session:" + "b" * 32
AS_ANN, AS_BOB, ADMIN = Caller(ANN), Caller(BOB), Caller(BOB, admin=True)


# ------------------------------------------------------------------------------------------ jobs


def test_another_owner_can_neither_see_nor_download_nor_change_a_job(dp_home):
    runner.run_inline("demo.sleep", {"steps": 2, "seconds": 0.0}, owner=ANN, group="train", label="ann's run")
    (job,) = store.list_jobs(caller=AS_ANN)
    assert job.owner == ANN and store.result_path(job.id, "model.bin", caller=AS_ANN).read_bytes() == b"2"
    assert store.list_jobs(caller=AS_BOB) == [] and store.list_jobs(caller=AS_BOB, group="train") == []
    for attempt in (
        lambda: store.get(job.id, caller=AS_BOB),
        lambda: store.wait(job.id, caller=AS_BOB, timeout=0.1),
        lambda: store.result_path(job.id, "model.bin", caller=AS_BOB),  # the weights
        lambda: display.view(job.id, caller=AS_BOB),
        lambda: training_st.for_job(job.id, caller=AS_BOB),
        lambda: store.cancel(job.id, caller=AS_BOB),
        lambda: store.rename(job.id, "mine now", caller=AS_BOB),
        lambda: store.delete(job.id, caller=AS_BOB),
    ):
        with pytest.raises(NotYours, match="not yours") as refused:
            attempt()
        assert "ann's run" not in str(refused.value)  # the refusal names nothing of the run
    assert store.get(job.id, caller=AS_ANN).label == "ann's run"  # nothing changed
    assert (dp_home / "jobs" / job.id / "model.bin").exists()
    # an admin sees and manages everyone's; the machinery itself (SYSTEM) reads all
    assert store.get(job.id, caller=ADMIN).id == job.id and [j.id for j in store.list_jobs(caller=ADMIN)] == [job.id]
    with pytest.raises(JobError, match="say who asks"):
        store.get(job.id, caller=ANN)  # an owner string is not a caller: no way around the check


def test_a_queued_job_of_someone_else_cannot_be_cancelled():
    job_id = store.submit("demo.sleep", {"steps": 1}, owner=ANN)
    with pytest.raises(NotYours):
        store.cancel(job_id, caller=AS_BOB)
    assert store.cancel_group("g", caller=AS_BOB) == 0
    assert store.get(job_id, caller=AS_ANN).status == "queued"
    assert store.cancel(job_id, caller=AS_ANN).status == "cancelled"


def test_cli_sees_its_own_jobs_only(capsys):
    mine = store.submit("demo.sleep", {"steps": 1}, owner=CLI_OWNER, label="cli job")
    theirs = store.submit("demo.sleep", {"steps": 1}, owner=ANN, label="a visitor's job")
    assert main(["jobs", "list"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [j["id"] for j in listed["jobs"]] == [mine] and listed["jobs"][0]["owner"] == "cli"
    for cmd in (
        ["jobs", "show", theirs],
        ["jobs", "cancel", theirs],
        ["jobs", "rename", theirs, "x"],
        ["jobs", "delete", theirs],
    ):
        assert main(cmd) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "not yours" in err[0] and "visitor" not in err[0], err
    assert store.get(theirs, caller=AS_ANN).status == "queued"


def test_cli_admin_acts_on_everyones_jobs(capsys, monkeypatch):
    from dpcore.budgets import identities

    theirs = store.submit("demo.sleep", {"steps": 1}, owner=ANN, label="a visitor's job")
    monkeypatch.delenv(identities.ADMIN_ENV, raising=False)
    assert main(["jobs", "show", theirs, "--admin"]) == 2  # no admin configured: refused, one line
    assert "admin init" in capsys.readouterr().err
    identities.init_admin("the-data-owners-token-42")
    monkeypatch.setenv(identities.ADMIN_ENV, "made-up-by-the-caller-0000")  # a caller's own environment: refused
    assert main(["jobs", "show", theirs, "--admin"]) == 2 and "wrong" in capsys.readouterr().err
    checked = []  # --admin goes through the one admin check (whatever it compares with)
    monkeypatch.setattr(identities, "check_admin_token", lambda token: checked.append(token))
    assert main(["jobs", "cancel", theirs, "--admin"]) == 0 and len(checked) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "cancelled"


# ------------------------------------------------------------------------------------------ fairness and shares


def _finish(job_id):
    with store.connection() as conn, store.transaction(conn):
        conn.execute("UPDATE jobs SET status = 'done', ended = started WHERE id = ?", (job_id,))


def test_a_flood_from_one_owner_does_not_starve_another():
    """Two workers; one visitor queues 40 jobs, another one job after them: it starts as soon as a worker is
    free (next), not after the flood — first-come-first-served would start it 39th."""
    flood = store.submit_many([("demo.echo", {"i": i}, "flood") for i in range(40)], owner=ANN)
    first, second = runner.claim("w1"), None
    assert first["id"] == flood[0]  # nobody else waits yet: the flood starts
    lone = store.submit("demo.echo", {}, owner=BOB, label="one job")
    second = runner.claim("w2")
    assert second["id"] == lone  # a free worker takes the other visitor's job next
    _finish(first["id"])
    # and turns go round: with a third owner, each gets the next free worker before the flood's second job
    late = store.submit("demo.echo", {}, owner=CLI_OWNER, label="operator")
    assert runner.claim("w1")["id"] == late
    _finish(lone)
    assert runner.claim("w2")["id"] == flood[1]  # within an owner: oldest first


def test_turns_go_to_the_owner_whose_last_job_started_longest_ago():
    a = store.submit_many([("demo.echo", {}, "a")] * 3, owner=ANN)
    b = store.submit_many([("demo.echo", {}, "b")] * 3, owner=BOB)
    order = []
    for _ in range(6):  # one worker: each job finishes before the next claim
        row = runner.claim("w1")
        order.append(row["owner"])
        _finish(row["id"])
    assert order == [ANN, BOB, ANN, BOB, ANN, BOB] and len(a) == len(b) == 3


def test_a_visitors_share_of_the_queue_is_bounded(monkeypatch):
    from dpcore import limits

    monkeypatch.setattr(limits, "JOBS_QUEUED_PER_OWNER", 5)
    store.submit_many([("demo.echo", {}, "x")] * 4, owner=ANN)
    with pytest.raises(QueueFull, match="already have 4 jobs waiting"):
        store.submit_many([("demo.echo", {}, "y")] * 2, owner=ANN)  # all or none: 4 + 2 > 5
    with pytest.raises(QueueFull, match="at most 5"):
        store.submit_many([("demo.echo", {}, "z")] * 6, owner=BOB)
    assert len(store.list_jobs(caller=AS_ANN)) == 4 and store.list_jobs(caller=AS_BOB) == []
    store.submit("demo.echo", {}, owner=ANN)  # the fifth fits
    assert len(store.submit_many([("demo.echo", {}, "op")] * 20, owner=CLI_OWNER)) == 20  # the operator: no share


def test_one_sweep_click_trains_a_bounded_number_of_models():
    big = SweepConfig(epsilons=(0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 0.1), seeds=10, shadows=64)
    assert sweep_runs.model_trainings(big) == 130 * 65  # the one click: 130 jobs, 8,450 models
    assert sweep_runs.model_trainings(SweepConfig()) == 33 * 9  # the default demo fits
    with pytest.raises(QueueFull, match="would train 8,450 models"):
        sweep_runs.start_sweep(big, owner=ANN, workers=0)
    assert store.list_jobs(caller=SYSTEM) == [] and sweep_runs.list_sweeps(caller=SYSTEM) == []  # nothing queued


# ------------------------------------------------------------------------------------------ one click, one submission


def test_a_repeated_click_queues_nothing():
    first = store.submit_many(
        [("demo.echo", {"run": 1}, "run"), ("demo.echo", {"twin": 1}, "twin")], owner=ANN, key="click-1"
    )
    with pytest.raises(AlreadySubmitted) as again:
        store.submit_many(
            [("demo.echo", {"run": 1}, "run"), ("demo.echo", {"twin": 1}, "twin")], owner=ANN, key="click-1"
        )
    assert again.value.ref == first[0] and len(store.list_jobs(caller=AS_ANN)) == 2
    store.submit("demo.echo", {}, owner=BOB, key="click-1")  # another owner's key is its own
    store.submit("demo.echo", {}, owner=ANN, key="click-2")  # a new click is a new submission
    assert len(store.list_jobs(caller=AS_ANN)) == 3
    with pytest.raises(JobError, match="submission key"):
        store.submit("demo.echo", {}, owner=ANN, key="bad key with spaces")


def test_a_repeated_sweep_click_starts_one_sweep():
    cfg = SweepConfig(
        dataset="breast_cancer",
        model="logreg",
        epsilons=(1.0,),
        seeds=1,
        epochs=1,
        hidden=None,
        attacks=("threshold",),
        canaries=0,
        size_fractions=(),
    )
    sid = sweep_runs.start_sweep(cfg, owner=ANN, key="k", workers=0)
    with pytest.raises(AlreadySubmitted) as again:
        sweep_runs.start_sweep(cfg, owner=ANN, key="k", workers=0)
    assert again.value.ref == sid
    assert [s["id"] for s in sweep_runs.list_sweeps(caller=AS_ANN)] == [sid]
    assert len(store.list_jobs(caller=AS_ANN)) == len(cfg.validate().point_params())


# ------------------------------------------------------------------------------------------ sweeps


def _record(sweep_id, owner, *, demo=False, status="done", created=1.0, name=None):
    cfg = (
        (SweepConfig() if demo else SweepConfig(dataset="breast_cancer", model="logreg", epsilons=(1.0,), hidden=None))
        .validate()
        .to_dict()
    )
    rec = {
        "id": sweep_id,
        "name": name or sweep_id,
        "created": created,
        "status": status,
        "config": cfg,
        "jobs": [],
        "failed": [],
        "owner": owner,
        "shared": demo,
        "result": {"config": cfg, "baseline": None, "points": []},
    }
    sweep_runs.save(rec)
    return rec


def test_sweeps_belong_to_their_owner_and_the_finished_demo_is_shared():
    _record("20250101-000000-aaaa", ANN, created=3.0)
    _record("20250101-000000-d0d0", ANN, demo=True, created=2.0)
    _record("20250101-000000-c0c0", ANN, demo=True, status="cancelled", created=4.0)
    seen = {s["id"]: s for s in sweep_runs.list_sweeps(caller=AS_BOB)}
    assert list(seen) == ["20250101-000000-d0d0"] and seen["20250101-000000-d0d0"]["shared"]
    assert not seen["20250101-000000-d0d0"]["mine"]
    assert sweep_runs.state("20250101-000000-d0d0", caller=AS_BOB)["status"] == "done"  # read: yes
    for attempt in (
        lambda: sweep_runs.load("20250101-000000-aaaa", caller=AS_BOB),
        lambda: sweep_runs.state("20250101-000000-aaaa", caller=AS_BOB),
        lambda: sweep_st.for_sweep("20250101-000000-aaaa", caller=AS_BOB),
        lambda: sweep_runs.load("20250101-000000-c0c0", caller=AS_BOB),  # a cancelled demo: not shared
        lambda: sweep_runs.cancel("20250101-000000-d0d0", caller=AS_BOB),  # change the demo: no
        lambda: sweep_runs.rename("20250101-000000-d0d0", "mine", caller=AS_BOB),
        lambda: sweep_runs.delete("20250101-000000-d0d0", caller=AS_BOB),
    ):
        with pytest.raises(NotYours):
            attempt()
    from dpcore.report import document as report

    with pytest.raises(NotYours):
        report.build(1.0, n=1500, sweep_id="20250101-000000-aaaa", caller=AS_BOB)
    assert len(sweep_runs.list_sweeps(caller=AS_ANN)) == 3 and len(sweep_runs.list_sweeps(caller=ADMIN)) == 3


def test_the_default_view_is_never_a_cancelled_sweep():
    _record("20250101-000000-d0d0", ANN, demo=True, created=2.0)
    _record("20250101-000000-c0c0", ANN, demo=True, status="cancelled", created=4.0)
    _record("20250101-000000-b0b0", BOB, status="cancelled", created=5.0)
    for who, want in (
        (AS_BOB, "20250101-000000-d0d0"),
        (AS_ANN, "20250101-000000-d0d0"),
        (Caller(owners.session_owner()), "20250101-000000-d0d0"),
    ):
        listed = sweep_runs.list_sweeps(caller=who)
        assert sweep_runs.default_view(listed, who) == want, who
    listed = sweep_runs.list_sweeps(caller=AS_BOB)
    assert sweep_runs.default_view(listed, AS_BOB, current="20250101-000000-b0b0") == "20250101-000000-b0b0"
    assert sweep_runs.default_view([], AS_BOB) is None


def test_a_cancelled_sweep_is_summed_up_in_one_sentence():
    failed = [
        {"epsilon": e, "seed": s, "status": "cancelled", "error": "cancelled before it started"}
        for e in (0.25, 0.5, 1.0)
        for s in range(10)
    ] + [{"epsilon": None, "seed": 1, "status": "cancelled", "error": "cancelled while running"}]
    assert sweep_runs.problems({"total": 33, "failed": failed}) == [
        "31 of 33 models were cancelled before they finished; the charts show the ones that did."
    ]
    broken = [
        {"epsilon": 1.0, "seed": 0, "status": "failed", "error": "boom"},
        {"epsilon": None, "seed": 2, "status": "failed", "error": "other"},
    ]
    assert sweep_runs.problems({"total": 33, "failed": broken}) == ["2 models failed (ε = 1 seed 0 and 1 more): boom"]
    assert sweep_runs.problems({"total": 3, "failed": []}) == []


# ------------------------------------------------------------------------------------------ names, rename, delete


def test_names_are_distinct_per_owner():
    a = store.submit("demo.echo", {}, owner=ANN, label="Logistic regression · ε=1")
    b = store.submit("demo.echo", {}, owner=ANN, label="Logistic regression · ε=1")
    c = store.submit("demo.echo", {}, owner=BOB, label="Logistic regression · ε=1")
    labels = [store.get(j, caller=SYSTEM).label for j in (a, b, c)]
    assert labels == ["Logistic regression · ε=1", "Logistic regression · ε=1 (2)", "Logistic regression · ε=1"]
    cfg = SweepConfig(
        dataset="breast_cancer",
        model="logreg",
        epsilons=(1.0,),
        seeds=1,
        epochs=1,
        hidden=None,
        attacks=("threshold",),
        canaries=0,
        size_fractions=(),
    )
    s1, s2 = (sweep_runs.start_sweep(cfg, owner=ANN, workers=0) for _ in range(2))
    names = [sweep_runs.load(s, caller=AS_ANN)["name"] for s in (s1, s2)]
    assert names == [
        "Breast cancer · Logistic regression · 1 ε × 1 seed",
        "Breast cancer · Logistic regression · 1 ε × 1 seed (2)",
    ]


def test_rename_a_job_owner_or_admin_only():
    a = store.submit("demo.echo", {}, owner=ANN, label="first")
    b = store.submit("demo.echo", {}, owner=ANN, label="second")
    assert store.rename(a, "  my   best run ", caller=AS_ANN).label == "my best run"
    with pytest.raises(JobError, match="already called"):
        store.rename(b, "my best run", caller=AS_ANN)
    for bad in ("", "   ", "x" * 101, "bell\x07", "zero\u200bwidth"):
        with pytest.raises(JobError):
            store.rename(b, bad, caller=AS_ANN)
    assert store.rename(b, "two\nlines", caller=AS_ANN).label == "two lines"  # one line, as every picker shows it
    assert store.rename(b, "renamed by the admin", caller=ADMIN).label == "renamed by the admin"


def test_delete_a_finished_job_removes_its_files_and_row(dp_home):
    runner.run_inline("demo.sleep", {"steps": 1}, owner=ANN)
    (job,) = store.list_jobs(caller=AS_ANN)
    queued = store.submit("demo.sleep", {"steps": 1}, owner=ANN)
    with pytest.raises(JobError, match="cancel it first"):
        store.delete(queued, caller=AS_ANN)
    assert store.delete(job.id, caller=AS_ANN) == 1
    assert not (dp_home / "jobs" / job.id).exists() and [j.id for j in store.list_jobs(caller=AS_ANN)] == [queued]
    assert not any((dp_home / storage.TRASH).iterdir())  # nothing left aside
    with pytest.raises(JobError, match="unknown job id"):
        store.get(job.id, caller=AS_ANN)


def test_a_delete_that_cannot_finish_leaves_everything_in_place(dp_home, monkeypatch):
    for _ in range(2):
        runner.run_inline("demo.sleep", {"steps": 1}, owner=ANN)
    ids = [j.id for j in store.list_jobs(caller=AS_ANN)]
    real = storage.move_to_trash
    moves = []

    def second_move_fails(path):
        moves.append(path)
        if len(moves) == 2:
            raise storage.StorageError("storage fault: simulated")
        return real(path)

    monkeypatch.setattr(storage, "move_to_trash", second_move_fails)
    with pytest.raises(DPError, match="simulated"):
        store.delete_many(ids, caller=AS_ANN)
    for j in ids:  # both rows and both folders, whole
        assert store.get(j, caller=AS_ANN).status == "done"
        assert (dp_home / "jobs" / j / "model.bin").read_bytes() == b"1"


def test_delete_a_sweep_with_its_jobs(dp_home):
    sid = sweep_runs.run_sweep_inline(
        dict(
            dataset="breast_cancer",
            model="logreg",
            epsilons=[1.0],
            epochs=1,
            train_size=40,
            hidden=None,
            lr=0.5,
            baseline=False,
            batch_size=16,
            canaries=0,
            size_fractions=[],
            attacks=["threshold"],
        ),
        owner=ANN,
        name="to delete",
    )["id"]
    running = sweep_runs.start_sweep(
        dict(
            dataset="breast_cancer",
            model="logreg",
            epsilons=[1.0],
            epochs=1,
            hidden=None,
            canaries=0,
            size_fractions=[],
            attacks=["threshold"],
        ),
        owner=ANN,
        workers=0,
    )
    with pytest.raises(DPError, match="cancel it first"):
        sweep_runs.delete(running, caller=AS_ANN)
    sweep_runs.cancel(running, caller=AS_ANN)
    sweep_runs.delete(running, caller=AS_ANN)  # cancelled: its jobs go with it
    assert store.list_jobs(caller=AS_ANN) == []
    assert sweep_runs.rename(sid, "kept, renamed", caller=AS_ANN)["name"] == "kept, renamed"
    sweep_runs.delete(sid, caller=AS_ANN)
    assert sweep_runs.list_sweeps(caller=AS_ANN) == [] and not (dp_home / "sweeps" / f"{sid}.json").exists()


def test_cli_rename_and_delete(capsys):
    job = store.submit("demo.sleep", {"steps": 1}, owner=CLI_OWNER, label="cli run")
    assert main(["jobs", "rename", job, "better name"]) == 0
    assert json.loads(capsys.readouterr().out) == {"id": job, "name": "better name"}
    assert main(["jobs", "delete", job]) == 2  # queued: cancel first
    assert "cancel it first" in capsys.readouterr().err
    assert main(["jobs", "cancel", job]) == 0 and main(["jobs", "delete", job]) == 0
    capsys.readouterr()
    assert store.list_jobs(caller=CLI) == []
    _record("20250101-000000-aaaa", CLI_OWNER)
    assert main(["jobs", "rename", "--sweep", "20250101-000000-aaaa", "cli sweep"]) == 0
    assert main(["jobs", "delete", "--sweep", "20250101-000000-aaaa"]) == 0
    assert sweep_runs.list_sweeps(caller=CLI) == []


def test_a_store_from_before_owners_opens_and_its_jobs_are_the_clis(dp_home):
    """An existing jobs.sqlite without the owner column (or the clicks table) is migrated on open; its jobs
    belong to the CLI owner (the server's operator), not to every visitor as before."""
    from .legacy import old_store

    old_store(
        dp_home,
        {
            "id": "old-1",
            "target": "train",
            "params": "{}",
            "grp": "train",
            "label": "an old run",
            "status": "done",
            "created": 1.0,
        },
        owners=False,
    )
    (job,) = store.list_jobs(caller=CLI)
    assert job.id == "old-1" and job.owner == "cli"
    assert store.list_jobs(caller=AS_ANN) == []
    with pytest.raises(NotYours):
        store.get("old-1", caller=AS_ANN)
    store.submit("demo.echo", {}, owner=ANN, key="k")  # the new table and column work on the migrated file
    assert [j.owner for j in store.list_jobs(caller=ADMIN)] == [ANN, "cli"]
