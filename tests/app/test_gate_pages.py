"""Issue 33 §1, §2 on the pages: an upload that is a registered dataset's rows is charged to its cap and the
session's quota before its job is queued (refused as one message otherwise); the console shows an analyst no exact
number of rows unless its owner declared it public."""

import io

from dpcore.budgets import gate, quotas, registry
from dpcore.data import datasets
from dpcore.jobs import store, workers
from dpcore.jobs.owners import SYSTEM

from ..budgets_helpers import admin, analyst
from .pages import ME, open_page


def _csv(df) -> bytes:
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    return buf.getvalue().encode()


def _upload_and_train(at, data: bytes):
    at.selectbox(key="tr_dataset").set_value("csv").run()
    at.file_uploader(key="tr_csv").set_value(("mine.csv", data, "text/csv")).run()
    at.selectbox(key="tr_csv_target").set_value("has_rare_disease").run()
    (learn,) = [c for c in at.checkbox if "learned from the data: not covered by ε" in c.label]
    learn.check().run()
    at.number_input(key="tr_epochs").set_value(1)
    at.number_input(key="tr_eps").set_value(0.5)
    at.button(key="tr_train_dp").click().run()
    assert not at.exception, [e.value for e in at.exception]


def test_an_upload_of_a_registered_dataset_on_the_training_page_is_charged_or_refused(chdir_root, monkeypatch):
    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: 0)
    df = datasets.medical(300, seed=8)
    registry.register(admin(), "clinic", df, epsilon=1.0, public_n=True)
    data = _csv(df.sample(frac=1.0, random_state=1))  # the same rows, in another order
    at = open_page("pages/training.py", owner=ME)
    _upload_and_train(at, data)  # a visitor: refused, nothing queued, nothing spent
    assert any("registered dataset's" in e.value and "no quota on it" in e.value for e in at.error)
    assert store.list_jobs(caller=SYSTEM) == [] and registry.info("clinic")["spent"] == 0.0
    at.session_state["_dp_identity"] = analyst("ann", "clinic", 0.8)
    at.button(key="tr_train_dp").click().run()
    assert not at.error, [e.value for e in at.error]
    (job,) = store.list_jobs(caller=SYSTEM)  # no non-private twin of a registered dataset's rows (ε = ∞)
    (ticket,) = gate.tickets_of(job["id"])
    assert ticket["dataset"] == "clinic" and ticket["state"] == "held" and ticket["release"] == "training"
    spent = registry.info("clinic")["spent"]
    assert 0.49 <= spent <= 0.5  # the accountant's ε of the run at its δ: at most the target, within 2% of it
    assert any("Charged to 'clinic'" in c.value for c in at.caption)
    store.cancel(job["id"], caller=SYSTEM)  # cancelled before it started: its charge comes back
    assert registry.info("clinic")["spent"] == 0.0 and gate.tickets_of(job["id"])[0]["state"] == "refunded"


def test_the_console_shows_an_analyst_no_exact_n_unless_it_is_public(chdir_root):
    registry.register(admin(), "hidden", datasets.medical(432, seed=3), epsilon=1.0)
    registry.register(admin(), "open", datasets.medical(321, seed=4), epsilon=1.0, public_n=True)
    ann = analyst("ann", "hidden", 0.5)
    quotas.grant(admin(), "ann", "open", epsilon=0.5)
    at = open_page("pages/query_console.py")
    at.session_state["_dp_identity"] = ann
    at.run()
    for name, shown in (("hidden", False), ("open", True)):
        at.selectbox(key="qc_dataset").set_value(name).run()
        assert not at.exception, [e.value for e in at.exception]
        text = " ".join(c.value for c in at.caption) + " ".join(m.value for m in at.markdown)
        n = registry.info(name)["n_rows"]
        assert (f"{n:,} rows" in text) == shown and (str(n) in text.replace(",", "")) == shown, name
        assert ("the number of rows is public" in text) == shown
    at.session_state["_dp_identity"] = admin()
    at.run()
    at.selectbox(key="qc_dataset").set_value("hidden").run()
    assert any("432 rows" in c.value for c in at.caption)  # the admin reads it
