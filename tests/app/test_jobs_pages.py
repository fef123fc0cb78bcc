"""Jobs on the pages (issue 24.7, issue 28): a run or sweep is shown, downloaded, cancelled, renamed and deleted
only by the session that started it (and admins); a link to someone else's says "not yours" and shows nothing of
it; a double click queues once; the form agrees with the run a link opens; an upload's server path is never
shown; a cancelled sweep is nobody's default view and is summed up in one box."""

import json

import pytest

from dpcore.jobs import attempt, registry, runner, store, workers
from dpcore.jobs.owners import SYSTEM
from dpcore.sweep import runs as sweep_runs
from dpcore.sweep.config import SweepConfig

from .pages import ME, SOMEONE_ELSE, open_page

TRAINING, CURVE = "pages/training.py", "pages/privacy_utility.py"
RUN = {"dataset": "breast_cancer", "model": "logreg", "epsilon": 2.0, "epochs": 1, "batch_size": 64}


def _texts(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [w.value for w in at.warning]
    parts += [i.value for i in at.info] + [e.value for e in at.error] + [h.value for h in at.subheader]
    for box in at.selectbox:
        parts += [str(o) for o in box.options]
    return " ".join(parts)


def _downloads(at) -> set[str]:
    return {d.key for d in at.get("download_button")}


@pytest.fixture
def no_workers(monkeypatch):
    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: 0)  # jobs stay queued


@pytest.fixture
def my_run():
    runner.run_inline(registry.TRAIN, RUN, owner=ME, group="train", label="ann's private run")
    (job,) = store.list_jobs(caller=SYSTEM)
    return job


# ------------------------------------------------------------------------------------------ training page


def test_a_link_to_someone_elses_run_says_not_yours_and_shows_nothing_of_it(chdir_root, my_run):
    mine = open_page(TRAINING, owner=ME, query={"tr_pick": my_run.id})
    assert not mine.exception and mine.selectbox(key="tr_pick").value == my_run.id
    assert {"tr_dl_release", "tr_dl_diagnostics", "tr_dl_statement"} <= _downloads(mine)

    other = open_page(TRAINING, owner=SOMEONE_ELSE, query={"tr_pick": my_run.id})
    assert not other.exception, [e.value for e in other.exception]
    assert any("not yours" in w.value for w in other.warning)
    text = _texts(other)
    assert "ann's private run" not in text and "DP costs" not in text and "No cost shown" not in text
    assert "Test accuracy" not in text
    assert not _downloads(other) - {"tr_recent_dl_csv", "tr_recent_dl_json"}  # no weights, metrics, statement
    assert not [m for m in other.metric] and not [b for b in other.selectbox if b.key == "tr_pick"]
    assert not [b for b in other.button if b.key == "tr_cancel"]

    admin = open_page(TRAINING, owner=SOMEONE_ELSE, admin=True, query={"tr_pick": my_run.id})
    assert admin.selectbox(key="tr_pick").value == my_run.id and "tr_dl_release" in _downloads(admin)


def test_an_admin_may_cancel_someone_elses_queued_run(chdir_root, no_workers):
    job_id = store.submit(registry.TRAIN, RUN, owner=ME, group="train", label="queued")
    other = open_page(TRAINING, owner=SOMEONE_ELSE, query={"tr_pick": job_id})
    assert not [b for b in other.button if b.key == "tr_cancel"]
    admin = open_page(TRAINING, owner=SOMEONE_ELSE, admin=True, query={"tr_pick": job_id})
    admin.button(key="tr_cancel").click().run()
    assert store.get(job_id, caller=SYSTEM).status == "cancelled"


@pytest.mark.slow
def test_a_link_fills_the_form_with_the_runs_settings(chdir_root):
    """Opened from a link, the form showed one model (the default logistic regression) while the run shown was
    another: the form now takes the run's settings, and so does picking another run."""
    runner.run_inline(
        registry.TRAIN,
        {**RUN, "model": "mlp", "hidden": 8, "epochs": 2, "seed": 5, "lr": 0.05},
        owner=ME,
        group="train",
        label="mlp run",
    )
    runner.run_inline(
        registry.TRAIN,
        {**RUN, "dataset": "medical", "target": "diagnosis", "epsilon": 3.0},
        owner=ME,
        group="train",
        label="medical run",
    )
    mlp, med = sorted(store.list_jobs(caller=SYSTEM), key=lambda j: j.label)[::-1][1], None
    jobs = {j.label: j for j in store.list_jobs(caller=SYSTEM)}
    mlp, med = jobs["mlp run"], jobs["medical run"]
    at = open_page(TRAINING, owner=ME, query={"tr_pick": mlp.id})
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="tr_pick").value == mlp.id
    form = {k: at.session_state[k] for k in ("tr_dataset", "tr_model", "tr_epochs", "tr_seed", "tr_eps")}
    assert form == {"tr_dataset": "breast_cancer", "tr_model": "mlp", "tr_epochs": 2, "tr_seed": 5, "tr_eps": 2.0}
    assert at.number_input(key="tr_lr").value == pytest.approx(0.05)
    at.selectbox(key="tr_pick").set_value(med.id).run()
    assert at.selectbox(key="tr_dataset").value == "medical" and at.selectbox(key="tr_target").value == "diagnosis"
    assert at.number_input(key="tr_eps").value == 3.0 and at.selectbox(key="tr_model").value == "logreg"


def test_a_double_click_on_train_queues_one_pair(chdir_root, no_workers):
    at = open_page(TRAINING, owner=ME)
    at.button(key="tr_train_dp").click().run()
    at.button(key="tr_train_dp").click().run()  # the second press of a double click: no run in between
    assert not at.exception, [e.value for e in at.exception]
    assert len(store.list_jobs(caller=SYSTEM)) == 2  # one DP run and its twin
    assert any("Already queued" in i.value for i in at.info)
    at.button(key="tr_train_dp").click().run()  # pressed again after that: a new click
    assert len(store.list_jobs(caller=SYSTEM)) == 3  # another DP run (its twin is already queued)
    labels = [j.label for j in store.list_jobs(caller=SYSTEM)]
    assert len(set(labels)) == 3, labels  # distinct names: "… (2)"


def test_an_uploaded_csv_run_never_shows_the_servers_path(chdir_root, no_workers, dp_home):
    rows = "".join(f"{20 + i % 50},{i % 7},{i % 2}\n" for i in range(120))
    at = open_page(TRAINING, owner=ME)
    at.selectbox(key="tr_dataset").set_value("csv").run()
    at.file_uploader(key="tr_csv").set_value(("mine.csv", f"age,score,label\n{rows}".encode(), "text/csv")).run()
    # the bounds it has no public value for: learned from the rows, by the page's labelled choice (issue 26.1)
    next(c for c in at.checkbox if "learned from the data" in c.label).check().run()
    at.button(key="tr_train_dp").click().run()
    assert not at.exception, [e.value for e in at.exception]
    jobs = store.list_jobs(caller=SYSTEM)
    assert jobs and all(j.params["dataset"].startswith("upload:") for j in jobs)
    home = str(dp_home)
    assert all(home not in json.dumps(j.params) + j.label for j in jobs)  # what the page and the JSON export hold
    assert home not in _texts(at) and "uploads/" not in _texts(at)
    assert "mine.csv" in str(at.selectbox(key="tr_pick").options)  # the upload by its own name, not a path


def test_rename_and_delete_a_run_on_the_page(chdir_root, my_run, dp_home):
    at = open_page(TRAINING, owner=ME)
    key = f"tr_manage_{my_run.id}"
    at.text_input(key=f"{key}_name").set_value("the one for the board").run()
    at.button(key=f"{key}_rename").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert store.get(my_run.id, caller=SYSTEM).label == "the one for the board"
    assert "the one for the board" in at.selectbox(key="tr_pick").options
    assert at.button(key=f"{key}_delete").disabled  # asks first
    at.checkbox(key=f"{key}_sure").check().run()
    at.button(key=f"{key}_delete").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert store.list_jobs(caller=SYSTEM) == [] and not (dp_home / "jobs" / my_run.id).exists()
    assert any("No training run yet" in i.value for i in at.info)


def test_a_full_disk_run_shows_the_storage_message_on_the_page(chdir_root, monkeypatch):
    """The job's own write and then the store's first two writes fail (as in tests/dpcore/jobs/test_job_faults.py):
    the page shows the storage message, not "running" and not "worker died"."""
    import errno
    import threading

    from dpcore import storage
    from dpcore.jobs import workers

    monkeypatch.setenv("DP_EXPLORER_JOBS_HEARTBEAT", "0.1")
    calls = {"n": 0}
    real = attempt.connection
    here = threading.current_thread()

    def fsync(fd):
        calls["full"] = True
        raise OSError(errno.ENOSPC, "No space left on device")

    def connection(*a, **k):
        if calls.get("full") and threading.current_thread() is here and calls["n"] < 2:
            calls["n"] += 1
            raise storage.StorageError("the disk holding $DP_EXPLORER_HOME is full; free some space")
        return real(*a, **k)

    real_fsync = storage.os.fsync
    monkeypatch.setattr(storage.os, "fsync", fsync)
    monkeypatch.setattr(attempt, "connection", connection)
    job_id = store.submit(registry.TRAIN, RUN, owner=ME, group="train", label="full disk")
    assert workers.run_worker("w-page", once=True) == 1
    monkeypatch.setattr(storage.os, "fsync", real_fsync)  # space freed
    at = open_page(TRAINING, owner=ME)
    assert at.selectbox(key="tr_pick").value == job_id and "Status: **failed**" in _texts(at)
    assert any(
        "The run failed" in e.value and "is full" in e.value and "free some space" in e.value for e in at.error
    ), [e.value for e in at.error]
    assert str(storage.home()) not in _texts(at)  # the message names $DP_EXPLORER_HOME, not the server's folder


# ------------------------------------------------------------------------------------------ privacy–utility page

TINY = dict(
    dataset="breast_cancer",
    model="logreg",
    epsilons=(1.0,),
    seeds=1,
    epochs=1,
    batch_size=32,
    lr=0.5,
    train_size=80,
    hidden=None,
    attacks=("threshold",),
    canaries=0,
    size_fractions=(),
)


def test_a_double_click_on_start_queues_one_sweep(chdir_root, no_workers):
    at = open_page(CURVE, owner=ME)
    at.multiselect(key="pu_eps").set_value([1.0])
    at.button(key="pu_start").click().run()
    at.button(key="pu_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    n = len(SweepConfig(epsilons=(1.0,)).validate().point_params())
    assert len(store.list_jobs(caller=SYSTEM, limit=500)) == n
    assert len(sweep_runs.list_sweeps(caller=SYSTEM)) == 1 and any("Already queued" in i.value for i in at.info)


def test_a_cancelled_sweep_is_nobodys_default_and_one_box_says_so(chdir_root, no_workers):
    sid = sweep_runs.start_sweep(SweepConfig(), owner=ME, workers=0)  # the default demo: 33 models, queued
    sweep_runs.cancel(sid, caller=SYSTEM)
    assert sweep_runs.state(sid, caller=SYSTEM)["status"] == "cancelled"
    done = sweep_runs.run_sweep_inline(SweepConfig(**TINY), owner=ME, name="a finished one")["id"]
    at = open_page(CURVE, owner=ME)
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="pu_sweep").value == done  # the newest is cancelled: not the default
    at.selectbox(key="pu_sweep").set_value(sid).run()
    warnings = [w.value for w in at.warning]
    assert len(warnings) == 1 and "33 of 33 models were cancelled" in warnings[0], warnings  # not 33 boxes
    # another visitor: a cancelled demo is not shared; nothing to show but the empty state
    other = open_page(CURVE, owner=SOMEONE_ELSE)
    assert not other.exception and any("No sweep yet" in i.value for i in other.info)
    assert not [b for b in other.selectbox if b.key == "pu_sweep"]


def test_a_finished_demo_is_shared_read_only(chdir_root, monkeypatch):
    cfg = SweepConfig().validate().to_dict()
    res = {"config": cfg, "baseline": None, "points": []}
    sweep_runs.save(
        {
            "id": "20250101-000000-d0d0",
            "name": "the demo",
            "created": 1.0,
            "status": "done",
            "config": cfg,
            "jobs": [],
            "failed": [],
            "result": res,
            "owner": ME,
            "shared": True,
        }
    )
    other = open_page(CURVE, owner=SOMEONE_ELSE)
    assert not other.exception, [e.value for e in other.exception]
    assert other.selectbox(key="pu_sweep").value == "20250101-000000-d0d0"
    assert "the demo (shared demo)" in other.selectbox(key="pu_sweep").options
    assert not [t for t in other.text_input if t.key.startswith("pu_manage_")]  # no rename or delete
    # "Shared demo." beside its status, and who may change it in that caption's help
    assert any("only whoever started it" in c.proto.help for c in other.caption if "Shared demo" in c.value)
    mine = open_page(CURVE, owner=ME)
    assert [t for t in mine.text_input if t.key.startswith("pu_manage_")]


def test_an_admin_unlocks_everyones_runs_through_the_one_admin_check(chdir_root, my_run, monkeypatch):
    from dpcore.budgets import identities
    from dpcore.errors import DPError

    def check(token):  # the one check the pages ask (pages/_ui.admin_refusal), whatever it compares with
        if token != "the-admin-token":
            raise DPError("admin token is missing or wrong")

    monkeypatch.setattr(identities, "check_admin_token", check)
    at = open_page(TRAINING, owner=SOMEONE_ELSE, query={"tr_pick": my_run.id})
    assert any("not yours" in w.value for w in at.warning)
    at.text_input(key="tr_admin_token").set_value("a guess")
    at.button(key="tr_admin_unlock").click().run()
    assert any("Admin token is missing or wrong" in e.value for e in at.error)
    assert not [b for b in at.selectbox if b.key == "tr_pick"]
    at.text_input(key="tr_admin_token").set_value("the-admin-token")
    at.button(key="tr_admin_unlock").click().run()
    assert at.selectbox(key="tr_pick").value == my_run.id  # everyone's runs, this one among them
    assert "tr_admin_token" not in at.session_state or at.session_state["tr_admin_token"] == ""  # not kept
    at.button(key="tr_admin_lock").click().run()
    assert not [b for b in at.selectbox if b.key == "tr_pick"]


def test_a_signed_in_analyst_owns_runs_as_their_identity_and_a_signed_in_admin_sees_everyones(chdir_root, my_run):
    """Sign-in (pages/_identity) reaches the job store: an analyst's runs are theirs in every tab (user:NAME), a
    session signed in as the admin sees everyone's — no second token box needed."""
    from dpcore.budgets import identities
    from dpcore.jobs import owners
    from tests.budgets_helpers import admin

    ann = identities.Identity("analyst", "ann", "Ann", "key")
    runner.run_inline(registry.TRAIN, RUN, owner=owners.user_owner("ann"), group="train", label="ann signed in")
    at = _open_as(TRAINING, ann)
    assert at.selectbox(key="tr_pick").options == ["ann signed in"]  # not the session-owned 'ann's private run'
    boss = _open_as(TRAINING, admin(), query={"tr_pick": my_run.id})
    assert not boss.exception and boss.selectbox(key="tr_pick").value == my_run.id


def _open_as(page, who, query=None):
    from streamlit.testing.v1 import AppTest

    from .pages import ROOT

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.session_state["_dp_identity"] = who
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at
