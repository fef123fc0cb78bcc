"""AppTest for the re-identification page's DP synthetic data tab, and the page's fixes from issue 28: the open
tab in the link, link warnings where they are seen, the DP tab's guarantee and blind-guess sentences, an upload of
20-digit numbers."""

import pytest
from streamlit.testing.v1 import AppTest

from dpcore import textsafe
from dpcore.jobs import registry, runner, store, workers
from dpcore.jobs.owners import SYSTEM
from dpcore.synth import study as ST

from ..dpcore.synth.helpers import fake_result, run
from .pages import ME, ROOT, SOMEONE_ELSE, declare, open_page

PAGE = "pages/reidentification.py"
SYNTH_TAB = "6 · DP synthetic data"


def page(params=None, timeout=120, owner=ME) -> AppTest:
    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=timeout)
    at.session_state["_job_owner"] = owner
    for k, v in (params or {}).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_open_tab_is_in_the_link_and_a_link_opens_it(chdir_root):
    at = open_page(PAGE)
    assert [t.label for t in at.tabs][5:] == [SYNTH_TAB, "7 · Your own data"]
    assert "re_tab" not in at.query_params  # the first tab is the default: a link leaves it out
    at.session_state["re_tab"] = SYNTH_TAB
    at.run()
    assert at.query_params["re_tab"] == SYNTH_TAB
    link = page({"re_tab": SYNTH_TAB, "re_eps": "2"})
    assert link.session_state["re_tab"] == SYNTH_TAB and link.select_slider(key="re_eps").value == 2.0
    bad = page({"re_tab": "9 · nothing"})
    assert bad.session_state["re_tab"] in ("1 · Your neighbour",) or bad.warning  # a wrong tab is not an error


def test_link_warnings_are_shown_above_the_tabs_not_in_a_closed_expander(chdir_root):
    at = page({"re_n": "99999999", "re_seed": "-3"})
    top = [type(c).__name__ for c in at.main.children.values()]
    assert top.count("Warning") == 2, top  # on the page itself, before the tabs
    assert not [w for e in at.expander for w in e.warning]
    assert any("re_n = 99999999 is outside what this page allows" in w.value for w in at.warning)


def test_dp_guarantee_box_says_when_its_bound_says_nothing(chdir_root):
    at = page()  # ε = 1: e² × the blind guess's 43% is above certainty
    box = " ".join(i.value for i in at.info)
    assert "at most 100%" not in box
    assert "**At ε = 1 that bound says nothing:** 7.39× the blind guess's 43% is more than certainty" in box
    assert "It limits this guess only for ε below 0.42" in box
    at.select_slider(key="re_eps").set_value(0.2).run()
    box = " ".join(i.value for i in at.info)
    assert "here at most 64% for an attacker whose best guess without it was right 43%" in box  # e^0.4 × 42.8%


def test_an_attacker_worse_than_blind_gets_a_sentence_why(chdir_root):
    at = page({"re_eps": "0.05"})
    blind = next(m.value for m in at.metric if m.label == "Blind guess (most common value)")
    dp = next(m.value for m in at.metric if m.label == "With DP at ε = 0.05")
    assert int(dp.rstrip("%")) < int(blind.rstrip("%"))
    why = next(m.value for m in at.markdown if m.value.startswith("**Why the noise defeats the attacker.**"))
    assert f"does **worse than a blind guess** ({dp} against {blind})" in why
    assert "the largest of the 6 noisy counts is close to a random pick" in why
    assert "DP never makes the best guess worse than guessing without the release" in why
    at.select_slider(key="re_eps").set_value(50.0).run()
    why = next(m.value for m in at.markdown if m.value.startswith("**Why the noise defeats the attacker.**"))
    assert "worse than a blind guess" not in why


def test_an_upload_with_20_digit_integers_previews(chdir_root):
    at = page()
    csv = b"id,age,zip\n" + b"".join(
        b"%d,%d,1000%d\n" % (123456789012345678901234 + i, 30 + i % 5, i % 3) for i in range(50)
    )
    at.file_uploader(key="re_upload").set_value(("big.csv", csv, "text/csv")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = next(d.value for d in at.dataframe if "id" in d.value.columns)
    assert shown["id"].iloc[0] == "123456789012345678901234"
    assert any("50 rows × 3 columns" in c.value for c in at.caption)


# --- the DP synthetic data tab ---------------------------------------------------------------------------------


def test_no_study_yet_then_run_queues_one_study_once(chdir_root, monkeypatch):
    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: 0)  # no worker: the study stays queued
    at = page({"re_tab": SYNTH_TAB})
    assert any("No study with these settings yet" in i.value for i in at.info)
    at.multiselect(key="re_syn_eps").set_value([1.0]).run()
    at.select_slider(key="re_syn_reps").set_value(1).run()
    at.button(key="re_syn_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    jobs = store.list_jobs(caller=SYSTEM, group=ST.GROUP)
    assert len(jobs) == 1 and jobs[0]["status"] == "queued" and jobs[0]["target"] == registry.SYNTH_STUDY
    assert jobs[0].owner == ME  # the session's study, as its runs
    cfg = ST.StudyConfig.from_dict(jobs[0]["params"])
    assert cfg.epsilons == (1.0,) and cfg.repetitions == 1 and cfg.n == 1_000 and cfg.generator == "mst"
    assert cfg.facts == ST.StudyConfig().facts  # the neighbour's facts as typed on the first tab
    # the study by its readable name (as the picker says it), not its id
    name = textsafe.md(jobs[0]["label"])
    assert any(f"Study “{name}”: queued" in str(p.proto.text) for p in at.get("progress"))
    assert not any(jobs[0]["id"] in str(p.proto.text) for p in at.get("progress"))
    at.button(key="re_syn_run").click().run()  # a second click shows the same study
    assert len(store.list_jobs(caller=SYSTEM, group=ST.GROUP)) == 1
    at.button(key="re_syn_cancel").click().run()
    assert store.get(jobs[0]["id"], caller=SYSTEM)["status"] == "cancelled"
    assert any("The study was cancelled" in w.value for w in at.warning)


@pytest.fixture
def finished(monkeypatch):
    """A finished study with the tab's default settings and known numbers, stored like any job."""
    cfg = ST.StudyConfig()
    result = fake_result(
        {e: [run(neighbour_matches=k % 3, targets_right=0.44 + 0.01 * k) for k in range(3)] for e in cfg.epsilons}, cfg
    )
    monkeypatch.setattr(ST, "run", lambda c, **kw: result)
    runner.run_inline(registry.SYNTH_STUDY, cfg.to_dict(), owner=ME, group=ST.GROUP, label=cfg.label())
    return result


def test_the_studys_time_on_the_page_is_measured(chdir_root, monkeypatch):
    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: 0)
    at = page({"re_tab": SYNTH_TAB})
    said = " ".join(c.value for c in at.caption)
    assert "24 synthetic releases in a background worker; the time they take is measured from the first study" in said
    assert "10–20 s" not in said  # no guess
    cfg = ST.StudyConfig(epsilons=(1.0,), repetitions=1)
    monkeypatch.setattr(ST, "run", lambda c, **kw: fake_result({1.0: [run()]}, cfg))
    runner.run_inline(registry.SYNTH_STUDY, cfg.to_dict(), owner=ME, group=ST.GROUP, label=cfg.label())
    at.run()
    said = " ".join(c.value for c in at.caption)
    assert "24 synthetic releases in a background worker: about " in said
    assert "each on this server (measured over its last 2 releases)" in said


def test_someone_elses_study_is_not_shown(chdir_root, monkeypatch):
    """Any study but the default one stays its session's (the default one is shared: test_reidentification_synth_
    shared.py)."""
    cfg = ST.StudyConfig(epsilons=(1.0,), repetitions=1)
    result = fake_result({1.0: [run()]}, cfg)
    monkeypatch.setattr(ST, "run", lambda c, **kw: result)
    runner.run_inline(registry.SYNTH_STUDY, cfg.to_dict(), owner=ME, group=ST.GROUP, label=cfg.label())
    at = page({"re_tab": SYNTH_TAB}, owner=SOMEONE_ELSE)
    at.multiselect(key="re_syn_eps").set_value([1.0]).run()
    at.select_slider(key="re_syn_reps").set_value(1).run()
    assert any("No study with these settings yet: press **Start the study**." == i.value for i in at.info)
    assert not any(m.value.startswith("#### At ε =") for m in at.markdown)


def test_a_finished_study_tells_the_end_of_the_story(chdir_root, finished):
    at = page({"re_tab": SYNTH_TAB})
    assert not at.error, [e.value for e in at.error]
    assert at.select_slider(key="re_syn_at").value == 1.0  # the DP tab's ε
    claim = next(m.value for m in at.markdown if m.value.startswith("#### At ε = 1"))
    assert claim.startswith("#### At ε = 1 the neighbour is no longer found\n\nIn 3 DP synthetic tables of the 1,000")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows matching her facts"] == "1.0 (0–2)" and metrics["Her diagnosis named"] == "0 of 3"
    assert metrics["Patients' diagnosis named"] == "45%" and metrics["Membership audit proves"] == "ε ≥ 0"
    box = " ".join(i.value for i in at.info)
    assert "Each synthetic table is **ε = 1** (δ = 0) differentially private for adding or removing one patient" in box
    compare = next(d.value for d in at.dataframe if "defence" in d.value.columns)
    assert compare["defence"].tolist()[2:4] == ["noisy counts, ε = 1", "DP synthetic, ε = 1"]
    assert compare.iloc[3]["her diagnosis named"] == "0 of 3 releases"
    assert len(at.get("plotly_chart")) >= 3
    assert any("not covered by ε" in c.value for c in at.caption)
    at.select_slider(key="re_syn_at").set_value(10.0).run()
    assert any(m.value.startswith("#### At ε = 10") for m in at.markdown)


def test_the_advisor_answers_which_epsilon_keeps_marginals_within_k(chdir_root, finished):
    at = open_page("pages/advisor.py", owner=ME)
    assert not at.exception
    at.number_input(key="adv_syn_within").set_value(4.5).run()
    ok = " ".join(s.value for s in at.success)
    assert "ε = 0.3 kept every cell of the 2-way marginals that matter within ±4.5 points in all 3 releases" in ok
    at.number_input(key="adv_syn_within").set_value(1.0).run()
    assert any(
        "No ε can: two real samples of 1,000 patients already differ by 2.5 points" in w.value for w in at.warning
    )


def test_the_advisor_without_a_study_says_where_to_run_one(chdir_root):
    at = open_page("pages/advisor.py")
    assert any("Run a study on the Re-identification page" in i.value for i in at.info)


def test_another_finished_study_of_the_same_patients_is_shown_as_such(chdir_root, monkeypatch):
    cfg = ST.StudyConfig(epsilons=(1.0, 10.0), repetitions=2)
    result = fake_result({1.0: [run(), run()], 10.0: [run(), run()]}, cfg)
    monkeypatch.setattr(ST, "run", lambda c, **kw: result)
    runner.run_inline(registry.SYNTH_STUDY, cfg.to_dict(), owner=ME, group=ST.GROUP, label=cfg.label())
    at = page({"re_tab": SYNTH_TAB})
    note = " ".join(i.value for i in at.info)
    assert (
        "No study with these settings yet" in note
        and f"the newest finished study of the same patients ({textsafe.md(cfg.label())})" in note  # escaped
    )
    assert at.select_slider(key="re_syn_at").options == ["1", "10"]
    assert any(m.value.startswith("#### At ε = 1") for m in at.markdown)


# --- a DP synthetic table of an upload ------------------------------------------------------------------------


@pytest.mark.slow
def test_an_upload_is_released_as_a_synthetic_table_from_declared_columns(chdir_root, monkeypatch):
    from dpcore.jobs import workers
    from dpcore.storage import home

    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: 0)  # the test runs the job itself, below
    at = page({"re_tab": "7 · Your own data"})
    csv = b"ward,stay,secret\n" + b"".join(b"%s,%d,%d\n" % (b"AB"[i % 2 : i % 2 + 1], i % 9, i) for i in range(400))
    at.file_uploader(key="re_upload").set_value(("ward.csv", csv, "text/csv")).run()
    assert not at.exception
    # nothing about the columns is filled in from the rows (ward and stay have no public pre-fill)
    assert all(not t.value for t in at.text_input if t.label.endswith(": categories"))
    assert all(n.value is None for n in at.number_input if n.label.endswith((": lower", ": upper")))
    assert not any("Learn the bounds" in c.label for c in at.checkbox)  # a release learns nothing from the rows
    at.button(key="re_up_syn_go").click().run()
    assert any("declare at least one column" in e.value.lower() for e in at.error)  # refused before anything is kept
    assert not store.list_jobs(caller=SYSTEM, group=registry.SYNTH_RELEASE_GROUP)
    assert not list((home() / "uploads").glob("*"))
    declare(at, ["ward=A,B", "stay=0:10:1"])
    at.select_slider(key="re_up_syn_eps").set_value(3.0).run()
    at.button(key="re_up_syn_go").click().run()
    assert not at.error, [e.value for e in at.error]
    (job,) = store.list_jobs(caller=SYSTEM, group=registry.SYNTH_RELEASE_GROUP)
    assert job.owner == ME and job["status"] == "queued" and job["params"]["dataset"].startswith("upload:")
    assert len(list((home() / "uploads").glob("*"))) == 1  # kept while its job needs it
    assert workers.run_worker(once=True) == 1
    at.run()
    done = store.get(job["id"], caller=SYSTEM)
    assert done["status"] == "done", done["error"]
    assert not list((home() / "uploads").glob("*"))  # gone once the job ended
    box = " ".join(i.value for i in at.info)
    assert "**Released.** ε = 3, δ = 0 (MST); add/remove one record" in box
    shown = next(d.value for d in at.dataframe if "ward" in d.value.columns and "secret" not in d.value.columns)
    assert set(shown.columns) == {"ward", "stay"} and set(shown["ward"]) <= {"A", "B"}
    assert at.get("download_button")
