"""My work (pages/ui/my_work.py, a section of Home): this browser's runs, sweeps, studies and releases, each opening
its page; nobody else's; a browser that keeps no cookie is told that a reload loses its work."""

import time

import pytest

from dpcore.jobs import registry, runner, store, workers
from dpcore.jobs.owners import Caller, visitor_owner
from dpcore.sweep import runs as sweep_runs
from dpcore.sweep.config import SweepConfig
from dpcore.synth import study as synth_study
from pages.ui import identity

from .pages import ME, SOMEONE_ELSE, open_page, shown

HOME = "pages/home.py"
RUN = {"dataset": "breast_cancer", "model": "logreg", "epsilon": 2.0, "epochs": 1, "batch_size": 64}
STUDY = synth_study.StudyConfig(epsilons=(1.0,), repetitions=1)  # not the shared default study


@pytest.fixture(autouse=True)
def no_workers(monkeypatch):
    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: 0)  # jobs stay queued


def _sweep(owner: str, sweep_id: str, name: str) -> None:
    """A finished sweep's record (no points: nothing to train)."""
    time.sleep(0.01)
    cfg = SweepConfig(epsilons=(1.0,)).validate().to_dict()
    sweep_runs.save(
        {
            "id": sweep_id,
            "name": name,
            "created": time.time(),
            "status": "done",
            "config": cfg,
            "jobs": [],
            "failed": [],
            "result": {"config": cfg, "baseline": None, "points": []},
            "owner": owner,
            "shared": False,
        }
    )


def _texts(at) -> str:
    return shown(" ".join([m.value for m in at.markdown] + [w.value for w in at.warning] + [i.value for i in at.info]))


def test_nothing_to_show_and_a_browser_without_the_cookie_is_told_a_reload_loses_its_work(chdir_root):
    at = open_page(HOME)
    assert not at.exception and "My work" not in _texts(at)  # a first visit: no section
    assert identity.NOT_REMEMBERED in " ".join(c.value for c in at.sidebar.caption)  # on every page
    assert "reload" in identity.NOT_REMEMBERED
    store.submit("demo.echo", {}, owner=ME, group=registry.TRAIN_GROUP, label="this tab's run")
    at = open_page(HOME, owner=ME)
    assert "My work" in _texts(at) and "this tab's run" in _texts(at)
    assert identity.NOT_REMEMBERED in [m.value for m in at.markdown if "My work" in m.value][0]


def test_with_the_visitor_cookie_the_work_is_the_browsers(chdir_root, monkeypatch):
    token = "t" * 43
    monkeypatch.setattr(identity, "_visitor_token", lambda: token)
    store.submit("demo.echo", {}, owner=visitor_owner(token), group=registry.TRAIN_GROUP, label="my browser's run")
    store.submit("demo.echo", {}, owner=ME, group=registry.TRAIN_GROUP, label="another tab's run")
    at = open_page(HOME, owner=ME)  # the cookie wins over a session-only id
    assert not at.exception
    text = _texts(at)
    assert "my browser's run" in text and "another tab's run" not in text
    assert "this browser" in text and identity.NOT_REMEMBERED not in text
    assert not at.sidebar.caption or identity.NOT_REMEMBERED not in " ".join(c.value for c in at.sidebar.caption)


def test_every_kind_of_mine_is_listed_and_nothing_of_anyone_elses(chdir_root):
    runner.run_inline(registry.TRAIN, RUN, owner=ME, group=registry.TRAIN_GROUP, label="ann's run")
    _sweep(ME, "ann-sweep", "ann's sweep")
    store.submit(registry.SYNTH_STUDY, STUDY.to_dict(), owner=ME, group=registry.SYNTH_GROUP, label="ann's study")
    store.submit("demo.echo", {}, owner=ME, group=registry.SYNTH_RELEASE_GROUP, label="ann's release")
    store.submit("demo.echo", {}, owner=SOMEONE_ELSE, group=registry.TRAIN_GROUP, label="bob's run")
    _sweep(SOMEONE_ELSE, "bob-sweep", "bob's sweep")
    at = open_page(HOME, owner=ME)
    assert not at.exception
    text = _texts(at)
    for mine in ("ann's run", "ann's sweep", "ann's study", "ann's release"):
        assert mine in text
    assert "bob's" not in text
    heads = [m.value for m in at.markdown if m.value.startswith("*") and m.value.endswith("(1)")]
    assert heads == [
        "*Training runs* (1)",
        "*Privacy–utility sweeps* (1)",
        "*Synthetic-data studies* (1)",
        "*Synthetic releases* (1)",
    ]
    assert len([b for b in at.button if b.key.startswith("mw_open_")]) == 4


def _open(at, kind: str, ident: str):
    at.button(key=f"mw_open_{kind}_{ident}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_open_a_run_a_sweep_and_a_study_on_their_pages(chdir_root):
    runner.run_inline(registry.TRAIN, RUN, owner=ME, group=registry.TRAIN_GROUP, label="ann's run")
    (run,) = store.list_jobs(caller=Caller(ME))
    _sweep(ME, "ann-sweep", "ann's sweep")
    _sweep(ME, "ann-newer", "ann's newer sweep")  # the page's own default: Open must pick the older one
    study = store.submit(registry.SYNTH_STUDY, STUDY.to_dict(), owner=ME, group=registry.SYNTH_GROUP, label="s")

    at = _open(open_page(HOME, owner=ME), "run", run.id)
    assert at.selectbox(key="tr_pick").value == run.id and at.number_input(key="tr_eps").value == 2.0

    at = _open(open_page(HOME, owner=ME), "sweep", "ann-sweep")
    assert at.selectbox(key="pu_sweep").value == "ann-sweep"

    at = _open(open_page(HOME, owner=ME), "study", study)
    assert at.session_state["re_syn_job"] == study and at.session_state["re_tab"] == "6 · DP synthetic data"
    assert at.multiselect(key="re_syn_eps").value == [1.0] and at.select_slider(key="re_syn_reps").value == 1


def test_a_release_opens_on_my_work(chdir_root):
    rel = store.submit("demo.echo", {}, owner=ME, group=registry.SYNTH_RELEASE_GROUP, label="ann's release")
    at = _open(open_page(HOME, owner=ME), "release", rel)
    assert "**ann's release**" in [shown(m.value) for m in at.markdown] and any("queued" in i.value for i in at.info)
