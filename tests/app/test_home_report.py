"""Home's report picker: finished training runs and query ledgers each add a privacy statement section; the
ledgers offered are only those the session may see (all of them for an admin)."""

import re

from dpcore.budgets import identities, registry, visitors
from dpcore.data import datasets
from dpcore.jobs import store
from dpcore.queries import answering, fingerprint, model

from ..budgets_helpers import admin, analyst
from .pages import open_page

EVIL = "<img src=x onerror=alert(1)>**bold**"
RUN = {
    "id": "job-1",
    "target": "train",
    "status": "done",
    "label": "DP logreg on breast cancer, ε = 2",
    "group": "train",
    "result": {
        "private": True,
        "dataset": "breast_cancer",
        "model": "logreg",
        "n_train": 400,
        "noise_multiplier": 1.1,
        "sample_rate": 0.1,
        "steps": 50,
        "accountant": "rdp",
        "epsilon": 2.0,
        "delta": 1e-5,
        "clip": 1.0,
        "reproducible_noise": False,
        "noise_source": "secrets.SystemRandom",
        "dp_release": True,
    },
}


def test_home_report_includes_picked_runs_and_ledgers(chdir_root, monkeypatch):
    real_get, real_list = store.get, store.list_jobs
    monkeypatch.setattr(
        store,
        "get",
        lambda j, *, caller, history=True: RUN if j == "job-1" else real_get(j, caller=caller, history=history),
    )
    monkeypatch.setattr(
        store,
        "list_jobs",
        lambda *, caller, group=None, **kw: [RUN] if group == "train" else real_list(caller=caller, group=group, **kw),
    )
    df = datasets.medical(1500, 0)
    info = visitors.open_builtin(1500, 0, fingerprint.dataset_identity(df))
    key, name = info["fingerprint"], info["name"]
    who = analyst(EVIL, key, 2.0)
    answering.ask(df, who, model.make_query("count", epsilon=0.5, condition="age>50"))
    clinic = datasets.medical(400, 7)
    registry.register(admin(), "clinic", clinic, epsilon=1.0)
    bob = analyst("bob", "clinic", 1.0)
    answering.ask(clinic, bob, model.make_query("count", epsilon=0.2), dataset="clinic")

    at = open_page("pages/home.py")
    assert not at.exception
    assert at.multiselect(key="home_report_ledgers").disabled  # a visitor: nobody has asked as a visitor yet
    at.session_state["_dp_identity"] = who  # signed in on the console (a checked identity, kept in the session)
    at.run()
    runs, books = at.multiselect(key="home_report_jobs"), at.multiselect(key="home_report_ledgers")
    assert runs.options == ["DP logreg on breast cancer, ε = 2"]
    assert books.options == [f"{name}: {EVIL}'s quota (ε 0.5 spent)"]  # plain text in a widget; never bob's
    runs.select("job-1")
    books.select((key, None))
    at.run()
    at.button(key="home_report_prepare").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    html = at.session_state["home_report_html"]
    heads = re.findall(r"<h2>(Privacy statement: .*?)</h2>", html)
    assert len(heads) == 2, heads  # the run and the ledger
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img src=x" not in html
    for d in ("1e-5", "1e-6"):  # the run's ε at δ = 1e-5 and 1e-6, never at 1/n (n = 400: 0.0025)
        assert f"<td>{d}</td>" in html
    assert "<td>0.0025</td>" not in html
    assert "clinic" not in html
    # an admin sees every ledger: each dataset as a whole and each quota
    at.session_state["_dp_identity"] = admin()
    at.run()
    assert sorted(at.multiselect(key="home_report_ledgers").options) == sorted(
        [
            f"{name}: every answer (ε 0.5 spent)",
            f"{name}: {EVIL}'s quota (ε 0.5 spent)",
            "clinic: every answer (ε 0.2 spent)",
            "clinic: bob's quota (ε 0.2 spent)",
        ]
    )
    at.session_state["_dp_identity"] = identities.VISITOR
    at.run()
    assert at.multiselect(key="home_report_ledgers").options == []


def test_home_report_picker_is_empty_and_disabled_without_runs_or_ledgers(chdir_root):
    at = open_page("pages/home.py")
    assert not at.exception
    assert at.multiselect(key="home_report_jobs").disabled and at.multiselect(key="home_report_ledgers").disabled
    at.button(key="home_report_prepare").click().run()
    assert "Privacy statement" not in at.session_state["home_report_html"]


def test_home_report_adds_the_advisors_decision_from_this_session(chdir_root):
    """The advisor's decision is a section of the HTML report (issue 25 §3): Home offers it once the advisor page
    answered in this session, and the report holds its words for a DPO."""
    at = open_page("pages/home.py")
    assert at.checkbox(key="home_report_advice").disabled  # nothing advised yet in this session
    at.switch_page("pages/advisor.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    record = at.session_state["adv_decision"]
    at.switch_page("pages/home.py")
    at.run()
    box = at.checkbox(key="home_report_advice")
    assert not box.disabled
    box.check().run()
    at.button(key="home_report_prepare").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    html = at.session_state["home_report_html"]
    assert "<h2>Decision record: choosing ε from a risk limit</h2>" in html
    assert record["words"][0].startswith("Risk limit: attacker TPR ≤ 0.05 at FPR 0.01")
    assert (
        "Risk limit: attacker TPR ≤ 0.05 at FPR 0.01" in html
        and "95% error bound (not an expected error): within ±10" in html
    )
    assert any("Report ready" in t.value for t in at.toast)
    # issue 34.3, one number per claim: with the decision in, the whole report explains the advisor's ε (Home's
    # slider says 1), its source beside it, and no sentence says "at the chosen ε = 1"
    chosen = record["decision"]["epsilon_text"]
    assert chosen != "1" and f"(the report then explains its ε = {chosen})" in box.label
    assert f"At the chosen <strong>ε = {chosen}</strong>" in html and "the advisor&#x27;s recommendation" in html
    assert f"Chosen ε = {chosen} and δ = 1e-5 (the advisor" in html.replace("&#x27;", "'")
    assert "ε = 1</strong>" not in html and "Chosen ε = 1 " not in html
    box.uncheck().run()
    at.button(key="home_report_prepare").click().run()
    html = at.session_state["home_report_html"]
    assert "At the chosen <strong>ε = 1</strong>" in html and "Home&#x27;s ε slider" in html


def test_home_report_adds_the_audit_of_your_model_from_this_session(chdir_root):
    """Issue 26.3 "results in the report": the last audit on Audit your model in this session is a section of Home's
    report, built by the one builder the page's own download uses (dpcore.report.audit.audit_section), with its
    verdict in the executive summary; the file's name stays text."""
    from dpcore.attacks import model_audit
    from dpcore.report import audit as report_audit
    from dpcore.report.document import inline_markdown

    at = open_page("pages/home.py")
    assert at.checkbox(key="home_report_audit").disabled  # nothing audited yet in this session
    at.switch_page("pages/audit.py")
    at.run()
    name = "<b>my</b> scores.csv"
    at.file_uploader(key="au_csv").set_value((name, model_audit.example_csv(), "text/csv")).run()
    at.radio(key="au_mech").set_value("epsilon").run()
    at.number_input(key="au_eps").set_value(0.5).run()
    assert not at.exception, [e.value for e in at.exception]
    kept = at.session_state["au_report"]
    assert kept["name"] == name and kept["result"]["verdict"]["contradicts"]
    at.switch_page("pages/home.py")
    at.run()
    box = at.checkbox(key="home_report_audit")
    assert not box.disabled and name in box.help
    box.check().run()
    at.button(key="home_report_prepare").click().run()
    assert not at.error, [e.value for e in at.error]
    html = at.session_state["home_report_html"]
    assert "<h2>Audit of your model: &lt;b&gt;my&lt;/b&gt; scores.csv</h2>" in html and "<b>my</b>" not in html
    section = report_audit.audit_section(kept["result"], name)  # the page's own report: the same section
    for para in section.paragraphs:
        assert inline_markdown(para) in html
    summary = html[html.index("<h2>Executive summary</h2>") : html.index("<h2>Settings</h2>")]
    assert (
        "An audit of your model&#x27;s membership scores (&lt;b&gt;my&lt;/b&gt; scores.csv) proves ε ≥ "
        "<strong>" in summary
    )
    assert "it <strong>contradicts</strong> the claimed ε = 0.5" in summary
