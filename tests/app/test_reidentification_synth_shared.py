"""AppTest across sessions: the default DP synthetic-data study is everyone's to read, at once, without a wait
(issue 27 follow-up). One session (or the CLI) finishes it; another opens the tab and reads its results, labelled
with when it ran, read-only; a run in progress is shown to all and pressing Start joins it; starting another is
still possible once it has ended."""

from html import unescape

import pytest

from dpcore import textsafe
from dpcore.jobs import display, registry, runner, store, workers
from dpcore.jobs.owners import CLI, SYSTEM, Caller
from dpcore.synth import study as ST

from ..dpcore.synth.helpers import fake_result, run
from .pages import ME, SOMEONE_ELSE, open_page
from .test_reidentification_synth import SYNTH_TAB, page

THIRD = "session:" + "c" * 32


@pytest.fixture(autouse=True)
def no_workers(monkeypatch):
    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: 0)  # a pressed Start stays queued


def _finish(owner, monkeypatch) -> str:
    cfg = ST.StudyConfig()
    result = fake_result(
        {e: [run(neighbour_matches=k % 3, targets_right=0.44 + 0.01 * k) for k in range(3)] for e in cfg.epsilons}, cfg
    )
    monkeypatch.setattr(ST, "run", lambda c, **kw: result)
    runner.run_inline(registry.SYNTH_STUDY, cfg.to_dict(), owner=owner, group=ST.GROUP, label=cfg.label())
    (job,) = store.list_jobs(caller=SYSTEM, group=ST.GROUP)
    return job.id


def _infos(at) -> str:
    return " ".join(i.value for i in at.info)


def test_the_tabs_defaults_are_the_shared_default_study(chdir_root):
    at = page({"re_tab": SYNTH_TAB})
    at.button(key="re_syn_run").click().run()
    (job,) = store.list_jobs(caller=SYSTEM, group=ST.GROUP)
    assert ST.is_default(job.params) and job.shared and job.owner == ME


@pytest.mark.parametrize("who", [ME, CLI.owner], ids=["a session", "the CLI"])
def test_another_session_sees_a_finished_default_study_at_once_read_only(chdir_root, monkeypatch, who):
    jid = _finish(who, monkeypatch)
    at = page({"re_tab": SYNTH_TAB}, owner=SOMEONE_ELSE)  # nothing pressed, nothing waited for
    assert not at.error, [e.value for e in at.error]
    assert "No study with these settings yet" not in _infos(at)
    claim = next(m.value for m in at.markdown if m.value.startswith("#### At ε = 1"))
    assert "the neighbour is no longer found" in claim
    job = store.get(jid, caller=SYSTEM, history=False)
    note = next(i.value for i in at.info if i.value.startswith("**Shared study, finished "))
    assert ST.shared_note(job, caller=Caller(SOMEONE_ELSE)) == note
    assert "UTC" in note and ("another visitor" if who == ME else "the server's command line") in note
    assert "only whoever started it (or an admin) can rename or delete it" in note and who not in note
    assert not [b for b in at.button if b.key == "re_syn_cancel"]
    assert len(at.get("plotly_chart")) >= 3 and at.get("download_button")  # the charts and the statement
    assert store.list_jobs(caller=SYSTEM, group=ST.GROUP)[0].id == jid  # reading it queued nothing
    # its owner sees it as their own: no shared label
    if who == ME:
        mine = page({"re_tab": SYNTH_TAB}, owner=ME)
        assert not any(i.value.startswith("**Shared study") for i in mine.info)


@pytest.mark.slow
def test_a_default_study_in_progress_is_shown_to_all_and_a_second_press_joins_it(chdir_root):
    first = page({"re_tab": SYNTH_TAB}, owner=ME)
    first.button(key="re_syn_run").click().run()
    (job,) = store.list_jobs(caller=SYSTEM, group=ST.GROUP)
    others = [page({"re_tab": SYNTH_TAB}, owner=o) for o in (SOMEONE_ELSE, THIRD)]
    for at in others:  # opened while it is queued: its progress, read-only, and no second study
        assert any(f"Study “{textsafe.md(job.label)}”: queued" in str(p.proto.text) for p in at.get("progress"))
        assert "**Shared study in progress, queued " in _infos(at)
        assert not [b for b in at.button if b.key == "re_syn_cancel"]
        at.button(key="re_syn_run").click().run()  # the stampede: each presses Start
        assert not at.error, [e.value for e in at.error]
        assert "The default study is already running for everyone: nothing new was queued" in _infos(at)
    assert [j.id for j in store.list_jobs(caller=SYSTEM, group=ST.GROUP)] == [job.id]
    first.run()
    first.button(key="re_syn_cancel").click().run()  # only its owner has Cancel
    assert store.get(job.id, caller=SYSTEM)["status"] == "cancelled"
    others[0].run()
    assert any("The study was cancelled" in w.value for w in others[0].warning)


def test_starting_another_default_study_is_still_possible(chdir_root, monkeypatch):
    done = _finish(ME, monkeypatch)
    at = page({"re_tab": SYNTH_TAB}, owner=SOMEONE_ELSE)
    assert any(i.value.startswith("**Shared study, finished ") for i in at.info)
    at.button(key="re_syn_run").click().run()
    assert not at.error, [e.value for e in at.error]
    fresh = [j for j in store.list_jobs(caller=SYSTEM, group=ST.GROUP) if j.id != done]
    assert len(fresh) == 1 and fresh[0].owner == SOMEONE_ELSE and fresh[0].status == "queued"
    assert any(f"Study “{textsafe.md(fresh[0].label)}”: queued" in str(p.proto.text) for p in at.get("progress"))
    assert [b for b in at.button if b.key == "re_syn_cancel"]  # their own: they may cancel it


def test_home_offers_the_shared_study_to_another_sessions_report(chdir_root, monkeypatch):
    jid = _finish(ME, monkeypatch)
    at = open_page("pages/home.py", owner=SOMEONE_ELSE)
    pick = at.multiselect(key="home_report_synth")
    job = store.get(jid, caller=SYSTEM, history=False)
    assert pick.options == [f"{job.label} · shared default study, {display.ran_at(job)}"] and not pick.disabled
    pick.select(jid)
    at.run()
    at.button(key="home_report_prepare").click().run()
    assert not at.error, [e.value for e in at.error]
    html = unescape(at.session_state["home_report_html"])
    assert f"DP synthetic data instead of the table ({job.label}, ε = " in html and f"(study {jid}" not in html
    assert (
        f"The shared default study (the page's default settings on the default patients), finished "
        f"{display.ran_at(job)}."
        in html
        and ME not in html
    )
