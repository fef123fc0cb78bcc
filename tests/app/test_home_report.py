"""Home's report picker: finished training runs and query ledgers each add a privacy statement section."""

import re

from dpcore.data import datasets
from dpcore.jobs import store
from dpcore.queries import answering, fingerprint, ledger, model

from .pages import open_page

EVIL = "<img src=x onerror=alert(1)>**bold**"
RUN = {"id": "job-1", "status": "done", "label": "DP logreg on breast cancer, ε = 2", "group": "train", "result": {
    "private": True, "dataset": "breast_cancer", "model": "logreg", "n_train": 400, "noise_multiplier": 1.1,
    "sample_rate": 0.1, "steps": 50, "accountant": "rdp", "epsilon": 2.0, "delta": 1e-5, "clip": 1.0,
    "reproducible_noise": False, "noise_source": "secrets.SystemRandom", "dp_release": True}}


def test_home_report_includes_picked_runs_and_ledgers(chdir_root, monkeypatch):
    real_get, real_list = store.get, store.list_jobs
    monkeypatch.setattr(store, "get", lambda j, *, caller, history=True:
                        RUN if j == "job-1" else real_get(j, caller=caller, history=history))
    monkeypatch.setattr(store, "list_jobs", lambda *, caller, group=None, limit=100: [RUN] if group == "train"
                        else real_list(caller=caller, group=group, limit=limit))
    df = datasets.medical(1500, 0)
    ledger.register_builtin("medical 1500", fingerprint.dataset_identity(df))
    answering.ask(df, EVIL, model.make_query("count", epsilon=0.5, condition="age>50"), budget=2.0)
    key = fingerprint.dataset_key(df)

    at = open_page("pages/home.py")
    assert not at.exception
    runs, books = at.multiselect(key="home_report_jobs"), at.multiselect(key="home_report_ledgers")
    assert runs.options == ["DP logreg on breast cancer, ε = 2"]
    assert books.options == [f"{EVIL} · medical 1500 (ε 0.5 spent)"]  # plain text in a widget: never rendered
    runs.select("job-1")
    books.select((EVIL, key))
    at.run()
    at.button(key="home_report_prepare").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    html = at.session_state["home_report_html"]
    heads = re.findall(r"<h2>(Privacy statement: .*?)</h2>", html)
    assert len(heads) == 2, heads  # the run and the ledger
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img src=x" not in html
    for d in ("1e-5", "1e-6", "0.0025"):  # the run's ε at δ = 1e-5, 1e-6 and 1/n (n = 400)
        assert f"<td>{d}</td>" in html


def test_home_report_picker_is_empty_and_disabled_without_runs_or_ledgers(chdir_root):
    at = open_page("pages/home.py")
    assert not at.exception
    assert at.multiselect(key="home_report_jobs").disabled and at.multiselect(key="home_report_ledgers").disabled
    at.button(key="home_report_prepare").click().run()
    assert "Privacy statement" not in at.session_state["home_report_html"]
