"""AppTest for the privacy–utility page: empty state, bad input, a started sweep's progress, a stored sweep."""

import pytest

from dpcore import jobs, sweep

from .pages import open_page

PAGE = "pages/privacy_utility.py"
TINY = dict(dataset="breast_cancer", model="logreg", epsilons=(1.0, 4.0), seeds=1, epochs=2, batch_size=32,
            lr=0.5, train_size=60, hidden=None)


def _texts(at):
    return " ".join(m.value for m in at.markdown) + " " + " ".join(c.value for c in at.caption)


def test_empty_state_and_controls(chdir_root):
    at = open_page(PAGE)
    assert not at.exception
    assert at.title[0].value == "Privacy–utility curve"
    assert any("No sweep yet" in i.value for i in at.info)
    assert at.multiselect(key="pu_eps").value == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
    assert at.number_input(key="pu_train_size").value == sweep.SweepConfig().train_size


def test_empty_epsilon_grid_is_an_error(chdir_root):
    at = open_page(PAGE)
    at.multiselect(key="pu_eps").set_value([])
    at.button(key="pu_start").click().run()
    assert not at.exception
    assert any("at least one ε" in e.value for e in at.error)


def test_start_queues_jobs_and_shows_progress(chdir_root, monkeypatch):
    monkeypatch.setattr(jobs, "ensure_workers", lambda n=2: 0)  # keep the jobs queued: no worker processes
    at = open_page(PAGE)
    at.multiselect(key="pu_eps").set_value([1.0, 8.0])
    at.button(key="pu_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    queued = jobs.list_jobs()
    assert len(queued) == 3 and all(j["target"] == sweep.POINT_TARGET for j in queued)
    assert any("0 of 3 models finished" in (p.proto.text or "") for p in at.get("progress"))
    assert any("Waiting for the first model" in i.value for i in at.info)
    at.button(key="pu_cancel").click().run()
    assert not at.exception
    assert {j["status"] for j in jobs.list_jobs()} == {"cancelled"}


@pytest.fixture
def stored(dp_home):
    a = sweep.run_sweep_inline(sweep.SweepConfig(**TINY), name="tiny A")
    b = sweep.run_sweep_inline(sweep.SweepConfig(**{**TINY, "epsilons": (2.0,)}), name="tiny B")
    return a, b


def test_stored_sweep_reopens_with_charts_reading_and_compare(chdir_root, stored):
    a, b = stored
    at = open_page(PAGE)
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="pu_sweep").set_value(a["id"]).run()
    assert not at.exception
    charts = at.get("plotly_chart")
    assert len(charts) >= 5
    before = _texts(at)
    assert "At ε = 1 " in before
    at.select_slider(key="pu_point").set_value(4.0).run()
    after = _texts(at)
    assert "At ε = 4 " in after and after != before
    at.select_slider(key="pu_point").set_value("baseline").run()
    assert "Non-private baseline" in _texts(at)
    n = len(at.get("plotly_chart"))
    at.multiselect(key="pu_compare").set_value([b["id"]]).run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == n + 2
