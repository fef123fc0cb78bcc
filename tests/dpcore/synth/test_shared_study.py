"""The default synthetic-data study is everyone's to read (issue 27 follow-up): the sharing rule in the job store,
who may change a shared study, one run for a stampede of clicks, and `synth-study` with its defaults."""

import json
import threading

import pytest

from dpcore.jobs import display, registry, runner, store, workers
from dpcore.jobs.owners import CLI, SYSTEM, Caller, NotYours, SharedRunning
from dpcore.synth import study as ST

from ..cli_helpers import run as cli
from ..jobs.legacy import old_store
from .helpers import fake_result, run

ANN = "session:" + "a" * 32
BOB = "session:" + "b" * 32
AS_ANN, AS_BOB, ADMIN = Caller(ANN), Caller(BOB), Caller(BOB, admin=True)
OTHER = ST.StudyConfig(epsilons=(1.0,), repetitions=1)  # any setting changed: a study of its own


@pytest.fixture(autouse=True)
def no_workers(monkeypatch):
    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: 0)  # submitted jobs stay queued


def _finish(cfg: ST.StudyConfig, owner: str, monkeypatch) -> str:
    result = fake_result({e: [run(), run(), run()] for e in cfg.epsilons}, cfg)
    monkeypatch.setattr(ST, "run", lambda c, **kw: result)
    runner.run_inline(registry.SYNTH_STUDY, cfg.to_dict(), owner=owner, group=ST.GROUP, label=cfg.label())
    return ST.finished(caller=Caller(owner), limit=1, shared=False)[0]["id"]


def test_the_rule_is_the_default_settings_on_the_default_patients_only():
    assert ST.is_default(ST.StudyConfig()) and ST.is_default(ST.StudyConfig().to_dict())
    for other in (
        OTHER,
        ST.StudyConfig(n=2_000),
        ST.StudyConfig(seed=1),
        ST.StudyConfig(generator="aim", delta=1e-6),
        ST.StudyConfig(rows=500),
        ST.StudyConfig(facts=(("age", "35"),)),
    ):
        assert not ST.is_default(other), other
    assert not ST.is_default({"n": 1000}) and not ST.is_default(None)
    assert registry.shared(registry.SYNTH_STUDY, ST.StudyConfig().to_dict())
    assert not registry.shared(registry.SYNTH_STUDY, OTHER.to_dict())
    assert not registry.shared("demo.echo", ST.StudyConfig().to_dict())  # no rule: never shared
    assert not registry.shared(registry.SYNTH_STUDY, {"not": "a study"})


def test_a_finished_default_study_is_read_by_everyone_and_changed_by_its_owner_or_an_admin(monkeypatch):
    jid = _finish(ST.StudyConfig(), ANN, monkeypatch)
    job = store.get(jid, caller=AS_BOB, history=False)  # another session reads it
    assert job.shared and job.owner == ANN and job.status == "done"
    assert ST.from_job(job).epsilons == list(ST.StudyConfig().epsilons)
    assert display.view(jid, caller=AS_BOB)["finished"]
    assert store.result_path(jid, caller=AS_BOB).name == "result.json"
    assert [j.id for j in ST.finished(caller=AS_BOB)] == [jid]  # the report's and the advisor's choices
    assert ST.finished(caller=AS_BOB, shared=False) == [] and store.list_jobs(caller=AS_BOB) == []
    assert ST.find_shared(ST.StudyConfig(), caller=AS_BOB).id == jid
    assert ST.find_shared(OTHER, caller=AS_BOB) is None
    for attempt in (
        lambda: store.cancel(jid, caller=AS_BOB),
        lambda: store.rename(jid, "mine", caller=AS_BOB),
        lambda: store.delete(jid, caller=AS_BOB),
    ):
        with pytest.raises(
            NotYours, match="is shared: everyone may see it, but only the browser or user that started it"
        ):
            attempt()
    assert store.get(jid, caller=AS_ANN).label == ST.StudyConfig().label()
    assert store.rename(jid, "ann's study", caller=AS_ANN).label == "ann's study"
    assert store.rename(jid, "renamed by an admin", caller=ADMIN).label == "renamed by an admin"
    note = ST.shared_note(store.get(jid, caller=AS_BOB, history=False), caller=AS_BOB)
    assert note.startswith(f"**Shared study, finished {display.ran_at(job)}**") and "UTC" in note
    assert ANN not in note and "another visitor" in note
    assert ST.shared_note(job, caller=AS_ANN) is None  # its owner is not told it is someone else's
    store.delete(jid, caller=ADMIN)
    assert ST.finished(caller=AS_BOB) == []


def test_any_other_study_stays_its_owners(monkeypatch):
    jid = _finish(OTHER, ANN, monkeypatch)
    assert not store.get(jid, caller=AS_ANN).shared
    with pytest.raises(NotYours, match="is not yours"):
        store.get(jid, caller=AS_BOB)
    assert ST.finished(caller=AS_BOB) == [] and ST.find_shared(OTHER, caller=AS_BOB) is None
    queued = store.submit(registry.SYNTH_STUDY, OTHER.to_dict(), owner=ANN, group=ST.GROUP)
    with pytest.raises(NotYours):
        store.get(queued, caller=AS_BOB)


def test_a_stampede_of_twenty_visitors_queues_one_default_study():
    """Twenty sessions press Start at the same moment (threads, as Streamlit runs sessions): one job is queued,
    all twenty are given it, nineteen joined it; each can read its progress, none but its owner cancel it."""
    owners = [f"session:{i:032x}" for i in range(20)]
    gate, out = threading.Barrier(20), {}

    def press(owner):
        gate.wait()
        out[owner] = ST.submit(ST.StudyConfig(), owner=owner, key="click-1")

    threads = [threading.Thread(target=press, args=(o,)) for o in owners]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    (job,) = store.list_jobs(caller=SYSTEM, group=ST.GROUP)
    assert job.status == "queued" and job.shared
    assert {jid for jid, _ in out.values()} == {job.id} and len(out) == 20
    assert sum(joined for _, joined in out.values()) == 19 and out[job.owner] == (job.id, False)
    for owner in owners:
        assert store.get(job.id, caller=Caller(owner), history=False).status == "queued"
        if owner != job.owner:
            with pytest.raises(NotYours):
                store.cancel(job.id, caller=Caller(owner))
    with pytest.raises(SharedRunning, match=f"already queued \\(job {job.id}\\)"):
        store.submit(registry.SYNTH_STUDY, ST.StudyConfig().to_dict(), owner=ANN, group=ST.GROUP)
    # another setting is another study; once the shared one has ended, the next press starts a fresh one
    assert ST.submit(OTHER, owner=ANN) != (job.id, True)
    store.cancel(job.id, caller=Caller(job.owner))
    again, joined = ST.submit(ST.StudyConfig(), owner=BOB)
    assert again != job.id and not joined and store.get(again, caller=AS_ANN).shared


def test_a_running_default_study_is_joined_and_a_finished_one_does_not_stop_a_new_one(monkeypatch):
    done = _finish(ST.StudyConfig(), CLI.owner, monkeypatch)  # `synth-study` with its defaults, finished
    assert store.get(done, caller=AS_ANN).shared
    fresh, joined = ST.submit(ST.StudyConfig(), owner=ANN)  # starting another is still possible
    assert fresh != done and not joined
    assert ST.submit(ST.StudyConfig(), owner=BOB) == (fresh, True)
    assert ST.find_shared(ST.StudyConfig(), caller=AS_BOB).id == done  # the finished one is shown first


def test_a_store_from_before_shared_jobs_opens_and_its_studies_stay_their_owners(dp_home):
    old_store(
        dp_home,
        {
            "id": "old-1",
            "target": "synth.study",
            "params": json.dumps(ST.StudyConfig().to_dict()),
            "grp": "synth",
            "label": "old",
            "status": "queued",
            "created": 1.0,
            "owner": ANN,
        },
        owners=True,
    )
    assert store.list_jobs(caller=AS_BOB, shared=True) == []
    with pytest.raises(NotYours):
        store.get("old-1", caller=AS_BOB)
    jid, joined = ST.submit(ST.StudyConfig(), owner=BOB)  # the old row is not a shared run: no join
    assert not joined and store.get(jid, caller=AS_ANN).shared


def test_synth_study_cli_with_its_defaults_is_the_shared_study(capsys, monkeypatch):
    rc, stdout, err = cli(capsys, "synth-study", "--background")
    assert rc == 0, err
    first = json.loads(stdout)
    assert first["status"] == "queued" and first["shared"] and not first["joined"]
    assert store.get(first["job"], caller=AS_ANN).shared  # a visitor reads the CLI's default study
    rc, stdout, _ = cli(capsys, "synth-study", "--background")
    assert rc == 0 and json.loads(stdout) == {**first, "joined": True}
    rc, _, err = cli(capsys, "synth-study")  # in the foreground: one line, exit 2
    assert rc == 2 and f"the default study is already running as job {first['job']}" in err
    assert len(err.strip().splitlines()) == 1
    rc, stdout, _ = cli(capsys, "synth-study", "--epsilons", "1", "--repetitions", "1", "--background")
    assert rc == 0 and not json.loads(stdout)["shared"]
