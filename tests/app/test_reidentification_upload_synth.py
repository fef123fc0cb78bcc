"""AppTest for the re-identification page's "7 · Your own data" synthetic release beyond MST at pure ε (issue 27
follow-up): AIM with δ as on the CLI, the pairs that matter, and what the table keeps measured in the background
(marginals at the declared bins; a model trained on the synthetic rows, tested on held-out rows), labelled as
computed on the private rows; the tab says why there is no attack study on an upload."""

import json

import pytest

from dpcore.jobs import registry, store, workers
from dpcore.jobs.owners import SYSTEM
from dpcore.storage import home

from .pages import declare
from .test_reidentification_synth import page

TAB = "7 · Your own data"
CSV = b"ward,stay,age\n" + b"".join(
    b"%s,%d,%d\n" % (b"AB"[(i % 70 > 40) : (i % 70 > 40) + 1], i % 9, 20 + i % 70) for i in range(600)
)
DECL = ["ward=A,B", "stay=0:10:1", "age=18:90:1"]


@pytest.fixture(autouse=True)
def no_workers(monkeypatch):
    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: 0)  # a test runs the job itself


def _uploaded():
    at = page({"re_tab": TAB})
    at.file_uploader(key="re_upload").set_value(("ward.csv", CSV, "text/csv")).run()
    assert not at.exception
    return at


@pytest.mark.slow
def test_aim_with_delta_and_the_model_are_chosen_from_the_declarations(chdir_root):
    at = _uploaded()
    assert at.select_slider(key="re_up_syn_delta").disabled  # MST: pure ε, δ = 0
    # nothing declared from the rows: only age's public range is pre-filled, and it says "check this"
    assert at.selectbox(key="re_up_syn_target").options == ["(no model)", "age"]
    assert any("**age** · number :orange-badge[pre-filled: check this]" in m.value for m in at.markdown)
    assert any("No attack study here" in c.value and "independent population" in c.value for c in at.caption)
    declare(at, DECL)
    assert at.selectbox(key="re_up_syn_target").options == ["(no model)", "ward", "stay", "age"]
    at.selectbox(key="re_up_syn_target").set_value("age").run()
    assert at.number_input(key="re_up_syn_thr_age").value == 54.0  # the middle of the declared bounds: public
    at.radio(key="re_up_syn_gen").set_value("aim").run()
    assert not at.select_slider(key="re_up_syn_delta").disabled
    at.text_input(key="re_up_syn_pairs").set_value("ward+nope").run()
    at.button(key="re_up_syn_go").click().run()
    assert any("nope" in e.value for e in at.error)  # refused before anything is kept or queued
    assert not store.list_jobs(caller=SYSTEM, group=registry.SYNTH_RELEASE_GROUP)
    assert not list((home() / "uploads").glob("*"))
    at.text_input(key="re_up_syn_pairs").set_value("ward+age, stay+age").run()
    at.select_slider(key="re_up_syn_delta").set_value(1e-7).run()
    at.button(key="re_up_syn_go").click().run()
    assert not at.error, [e.value for e in at.error]
    (job,) = store.list_jobs(caller=SYSTEM, group=registry.SYNTH_RELEASE_GROUP)
    p = job.params
    assert (p["config"]["generator"], p["config"]["delta"]) == ("aim", 1e-7)
    assert p["config"]["pairs"] == [["ward", "age"], ["stay", "age"]]
    assert p["utility"] == {"target": "age", "threshold": 54.0} and p["dataset"].startswith("upload:")


@pytest.mark.slow
def test_the_release_shows_what_it_keeps_labelled_not_covered(chdir_root):
    from dpcore.jobs import workers

    at = _uploaded()
    declare(at, DECL)
    at.selectbox(key="re_up_syn_target").set_value("ward").run()
    at.radio(key="re_up_syn_gen").set_value("aim").run()
    at.button(key="re_up_syn_go").click().run()
    (job,) = store.list_jobs(caller=SYSTEM, group=registry.SYNTH_RELEASE_GROUP)
    assert workers.run_worker(once=True) == 1
    at.run()
    assert store.get(job.id, caller=SYSTEM)["status"] == "done"
    assert not at.error, [e.value for e in at.error]
    box = " ".join(i.value for i in at.info)
    assert "**Released.** ε = 1, δ = 1e-6 (AIM); add/remove one record" in box
    said = " ".join(m.value for m in at.markdown)
    assert (
        "**What the synthetic table keeps.** :orange-badge[Not covered by ε] Computed on your private rows: not "
        "covered by ε."
    ) in said
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["1-way marginals, worst cell"].endswith(" points")
    assert metrics["Model on synthetic rows"].endswith("%") and metrics["Model on your rows"].endswith("%")
    assert any("Rows read: a random part of the upload" in c.value for c in at.caption)
    (fig,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "re_up_syn_utility_chart" in c.proto.id]
    assert "not covered by ε" in fig["layout"]["meta"]["title"]
    assert set(fig["layout"]["yaxis"]["ticktext"]) == {  # every declared column, and (no pairs named) every pair
        "ward",
        "stay",
        "age",
        "ward × stay",
        "ward × age",
        "stay × age",
    }
