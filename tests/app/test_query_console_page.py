"""AppTest: the private query console spends, repeats for free, refuses, shows errors and resets."""

import json
import re

import pytest

from dpcore.data import datasets
from dpcore.figures import query_console as figs
from dpcore.queries import fingerprint, ledger

from .pages import open_page

pytestmark = pytest.mark.usefixtures("chdir_root")


def _metrics(at):
    return {m.label: m.value for m in at.metric}


def _errors(at):
    """Error texts as a reader sees them (pages escape markdown in messages: `\\<` shows as `<`)."""
    return [re.sub(r"\\(.)", r"\1", e.value) for e in at.error]


def _ask(at):
    at.button(key="qc_ask").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_spend_repeat_free_refuse_and_reset(monkeypatch):
    monkeypatch.setenv(ledger.ADMIN_ENV, "tok")
    at = open_page("pages/query_console.py")
    assert not at.exception and at.title[0].value == "Private query console"
    at.number_input(key="qc_n").set_value(2000).run()
    at.number_input(key="qc_eps").set_value(0.6).run()
    _ask(at)
    m = _metrics(at)
    assert m["ε spent now"] == "0.6" and m["ε remaining"] == "0.4"
    first = m["Noisy answer (DP)"]
    # the same question again: the stored answer, free
    _ask(at)
    m = _metrics(at)
    assert m["Noisy answer (DP)"] == first and m["ε spent now"] == "0" and m["ε remaining"] == "0.4"
    assert any("stored answer" in s.value for s in at.success)
    assert any(c.value.startswith("When first drawn:") and "free" in c.value for c in at.caption)  # not "How ε is spent"
    # a different question that does not fit: refused, with what is left
    at.selectbox(key="qc_kind").set_value("MEAN").run()
    at.selectbox(key="qc_column").set_value("salary").run()
    assert (at.number_input(key="qc_lo").value, at.number_input(key="qc_hi").value) == (0.0, 250_000.0)
    _ask(at)
    assert any("Budget exceeded" in e and "only ε = 0.4 of 1 is left" in e for e in _errors(at))
    assert "Noisy answer (DP)" not in _metrics(at)  # the earlier answer does not stay under the error
    hist = at.dataframe[0].value
    assert list(hist["event"]) == ["create", "spend", "reuse", "refused"]
    assert list(hist.columns[:3]) == ["query", "answer", "ε charged"]  # what a phone shows before it scrolls
    # dpcore's notes start lower-case; a cell stands alone, so it starts a sentence like an error box does
    notes = list(hist["note"])
    assert notes[0].startswith("Budget set to ε = 1") and notes[1] == ""
    assert notes[2].startswith("Same question as event") and notes[3] == "Budget would be exceeded; no noise drawn"
    # the budget survives a new session (a new tab / app restart)
    at2 = open_page("pages/query_console.py")
    at2.number_input(key="qc_n").set_value(2000).run()
    assert len(at2.dataframe[0].value) == 4
    # admin reset: the button is disabled until confirmed, then recorded
    assert at.button(key="qc_reset").disabled
    at.text_input(key="qc_admin").input("root")
    at.text_input(key="qc_token").input("tok")
    at.checkbox(key="qc_reset_confirm").check().run()
    at.button(key="qc_reset").click().run()
    assert not at.exception
    assert any("Reset by admin 'root'" in s.value for s in at.success)
    assert list(at.dataframe[0].value["event"])[-1] == "reset"
    assert list(at.dataframe[0].value["note"])[-1].startswith("Reset by admin 'root'")
    assert not at.checkbox(key="qc_reset_confirm").value
    at.number_input(key="qc_eps").set_value(0.5).run()
    _ask(at)
    m = _metrics(at)
    assert m["ε remaining"] == "0.5" and 0 <= float(m["Noisy answer (DP)"].replace(",", "")) <= 250_000


def _gauge(at):
    """The remaining-ε gauge's indicator (value and title) as the browser gets it."""
    spec = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if '"indicator"' in c.proto.spec)
    ind = spec["data"][0]
    return ind["value"], ind["title"]["text"]


def test_budget_gauge_before_any_budget_shows_the_one_that_opens_full():
    """Figure level: a budget about to open is full and says it opens with the first question; an existing one
    says what was spent; with nothing known it still says no budget is set."""
    ind = figs.budget_gauge(None, 2.5, opens=True).data[0]
    assert ind.value == 2.5 and ind.gauge.axis.range == (0, 2.5)
    assert ind.title.text.startswith("ε remaining of 2.5<br>") and "opens with the first question" in ind.title.text
    assert "spent" not in ind.title.text
    assert figs.budget_gauge(0.4, 1.0).data[0].title.text == "ε remaining of 1 (0.6 spent)"
    assert figs.budget_gauge(None, None).data[0].title.text == "ε remaining (no budget set yet)"


def test_gauge_is_full_before_the_first_question_then_follows_the_ledger():
    at = open_page("pages/query_console.py")
    at.number_input(key="qc_n").set_value(2000).run()
    at.number_input(key="qc_budget").set_value(2.0).run()
    value, title = _gauge(at)
    assert value == 2.0 and title.startswith("ε remaining of 2<br>") and "opens with the first question" in title
    assert any("A new budget: ε = 2" in m.value for m in at.markdown)  # the gauge and the sentence agree
    notes = [a["text"] for c in at.get("plotly_chart")
             for a in json.loads(c.proto.spec)["layout"].get("annotations", [])]
    assert "this analyst's budget ε = 2" in notes  # the composition chart draws the budget about to open, too
    at.number_input(key="qc_eps").set_value(0.5).run()
    _ask(at)
    value, title = _gauge(at)
    assert value == 1.5 and title == "ε remaining of 2 (0.5 spent)"


def test_histogram_and_composition_panel():
    at = open_page("pages/query_console.py")
    at.number_input(key="qc_n").set_value(2000).run()
    at.selectbox(key="qc_kind").set_value("HISTOGRAM").run()
    at.selectbox(key="qc_column").set_value("diagnosis").run()
    _ask(at)
    assert _metrics(at)["ε remaining"] == "0.9"
    charts = at.get("plotly_chart")
    assert len(charts) == 3  # noisy histogram, remaining-ε gauge, composition vs k
    costs = at.dataframe[1].value
    assert list(costs["rule"]) == ["basic", "advanced", "zCDP", "RDP"]
    assert costs["total ε"][0] == pytest.approx(0.1)
    # each note a cell on its own, capitalised by the one rule (errors.sentence) like the history's notes;
    # a name or a symbol keeps its case ("Dwork–…", "ρ = …"). It mixed "sum of ε …" with "Dwork–…"
    how = list(costs["how"])
    assert how[0].startswith("Sum of ε and of δ") and how[1].startswith("Dwork–Rothblum–Vadhan")
    assert how[2].startswith("Total ρ = ") and how[3].startswith("ρ = ")
    before = costs["total ε"][1]
    at.select_slider(key="qc_dprime").set_value(1e-9).run()
    assert not at.exception
    assert at.dataframe[1].value["total ε"][1] > before  # smaller δ′ -> larger advanced ε
    at.radio(key="qc_mech").set_value("gaussian").run()
    assert not at.exception and at.selectbox(key="qc_delta").value == pytest.approx(1e-7)
    assert all(float(o) <= 5e-5 for o in at.selectbox(key="qc_delta").options)


def test_mechanisms_are_shown_by_name_and_kept_by_value():
    at = open_page("pages/query_console.py")
    at.number_input(key="qc_n").set_value(2000).run()
    radio = at.radio(key="qc_mech")
    assert radio.options == ["Laplace", "Gaussian"] and radio.value == "laplace"
    assert any(c.value.endswith("with Laplace.") for c in at.caption)
    _ask(at)
    assert any(" · Laplace · ε = 0.1" in m.value for m in at.markdown)  # the answer's line
    at.radio(key="qc_mech").set_value("gaussian").run()
    assert not at.exception and at.query_params["qc_mech"] == "gaussian"  # links keep the stored value
    assert any("with Gaussian, δ = " in c.value for c in at.caption)


@pytest.mark.parametrize("setup, message", [
    (lambda at: at.number_input(key="qc_eps").set_value(0.0), "Epsilon must be > 0"),
    (lambda at: at.text_input(key="qc_condition").input("height=3"), "Unknown column 'height'"),
    (lambda at: at.text_input(key="qc_condition").input("sex"), "not COLUMN=VALUE"),
    (lambda at: (at.selectbox(key="qc_kind").set_value("SUM").run(),
                 at.number_input(key="qc_lo").set_value(100.0)), "lower must be < upper"),
    (lambda at: (at.selectbox(key="qc_kind").set_value("MEAN").run(),
                 at.selectbox(key="qc_column").set_value("ethnicity")), "MEAN needs a numeric column"),
    (lambda at: at.text_input(key="qc_analyst").input(" "), "Analyst name is empty"),
])
def test_bad_inputs_show_errors_and_spend_nothing(setup, message):
    at = open_page("pages/query_console.py")
    at.number_input(key="qc_n").set_value(2000).run()
    setup(at)
    at.run()
    if any(b.key == "qc_ask" for b in at.button):  # an empty analyst name stops the page before the builder
        at.button(key="qc_ask").click().run()
    assert not at.exception
    assert any(message in e for e in _errors(at)), _errors(at)
    key = fingerprint.dataset_key(datasets.medical(2000, 0))
    st = ledger.status("analyst-1", key, with_history=False)
    assert st["spent"] == 0.0


@pytest.mark.parametrize("kind, column", [("HISTOGRAM", "age"), ("SUM", "age"), ("MEAN", "salary")])
def test_extreme_bounds_never_raise_and_spend_nothing(kind, column):
    """Issue 28: HISTOGRAM bounds ±1e308 raised a page exception; SUM bounds ±1e308 answered "inf, interval [nan,
    inf]" and charged ε. The bounds fields take their range from dpcore.limits (a browser cannot type ±1e308), and
    the largest bounds a release cannot use get one message before anything is spent."""
    from dpcore import limits

    at = open_page("pages/query_console.py")
    at.number_input(key="qc_n").set_value(2000).run()
    at.selectbox(key="qc_kind").set_value(kind).run()
    at.selectbox(key="qc_column").set_value(column).run()
    big = limits.RELEASE_MAGNITUDE_MAX
    for key in ("qc_lo", "qc_hi"):
        p = at.number_input(key=key).proto
        assert (p.min, p.max) == (-big, big)
    at.number_input(key="qc_lo").set_value(-1e308).run()
    at.number_input(key="qc_hi").set_value(1e308).run()
    assert not at.exception
    assert at.number_input(key="qc_lo").value >= -big and at.number_input(key="qc_hi").value <= big
    at.number_input(key="qc_lo").set_value(big - 1).run()
    at.number_input(key="qc_hi").set_value(big).run()
    at.button(key="qc_ask").click().run()
    assert not at.exception, [e.value for e in at.exception]
    key = fingerprint.dataset_key(datasets.medical(2000, 0))
    spent = ledger.status("analyst-1", key, with_history=False)["spent"]
    if kind == "SUM":  # Δ = 1e15 is a SUM a release can take: answered, with finite numbers
        assert spent == pytest.approx(0.1) and "inf" not in _metrics(at)["Noisy answer (DP)"]
    else:  # a bin or a spread of 1 beside 1e15 is finer than the numbers can hold: one message, nothing spent
        assert any("too small beside" in e for e in _errors(at)), _errors(at)
        assert spent == 0.0


def test_a_sum_states_its_grid_and_rounding():
    """Issue 25: the answer says how it was released — clamped, rounded to a public grid, whole-number noise."""
    at = open_page("pages/query_console.py")
    at.number_input(key="qc_n").set_value(2000).run()
    at.selectbox(key="qc_kind").set_value("SUM").run()
    _ask(at)
    shown = [re.sub(r"\\(.)", r"\1", c.value) for c in at.caption]
    assert any("rounded to a multiple of 0.00001" in c and "OpenDP" in c for c in shown), shown


def test_upload_mode_asks_for_a_file():
    at = open_page("pages/query_console.py")
    at.radio(key="qc_source").set_value("Upload a CSV").run()
    assert not at.exception
    assert any("Upload a CSV" in i.value for i in at.info)


def test_plain_sentence_delta_choices_and_no_analyst_in_links():
    at = open_page("pages/query_console.py")
    at.number_input(key="qc_n").set_value(200_000).run()
    assert any("You have ε" in m.value or "A new budget: ε = 1" in m.value for m in at.markdown)
    assert any("add or remove one patient's record" in m.value for m in at.markdown)
    at.radio(key="qc_mech").set_value("gaussian").run()
    options = [float(o) for o in at.selectbox(key="qc_delta").options]
    assert max(options) <= 5e-7 and 1e-7 in options  # δ total 1/(10n) = 5e-7: 1e-5 and 1e-6 are not offered
    at.text_input(key="qc_analyst").input("Dr. Who").run()
    assert "qc_analyst" not in at.query_params and "qc_n" in at.query_params


def test_admin_actions_disabled_without_a_server_token(monkeypatch):
    monkeypatch.delenv(ledger.ADMIN_ENV, raising=False)
    at = open_page("pages/query_console.py")
    at.number_input(key="qc_n").set_value(2000).run()
    _ask(at)
    at.text_input(key="qc_admin").input("root")
    at.checkbox(key="qc_reset_confirm").check().run()
    assert at.button(key="qc_reset").disabled
    assert any(ledger.ADMIN_ENV in c.value and "disabled" in c.value for c in at.caption)


def test_uploads_are_queried_only_once_registered(monkeypatch):
    monkeypatch.setenv(ledger.ADMIN_ENV, "tok")
    df = datasets.medical(500, 3)
    at = open_page("pages/query_console.py")
    at.radio(key="qc_source").set_value("Upload a CSV").run()
    at.file_uploader(key="qc_upload").set_value(("d.csv", df.to_csv(index=False).encode(), "text/csv")).run()
    assert not at.exception
    assert any("not a registered dataset" in w.value for w in at.warning)
    assert not any(b.key == "qc_ask" for b in at.button)  # nothing can be asked of unregistered data
    at.text_input(key="qc_token").input("wrong")
    at.text_input(key="qc_reg_name").input("clinic")
    at.button(key="qc_register").click().run()
    assert any("wrong" in e for e in _errors(at))
    at.text_input(key="qc_token").input("tok")
    at.button(key="qc_register").click().run()
    assert not at.exception and ledger.dataset_info(fingerprint.dataset_key(df))["name"] == "clinic"
    _ask(at)
    assert _metrics(at)["ε remaining"] == "0.9"
    # the same people with rows reordered and ages written as 34.0 are the same dataset and budget
    again = df.sample(frac=1, random_state=2).astype({"age": float}).to_csv(index=False).encode()
    at.file_uploader(key="qc_upload").set_value(("again.csv", again, "text/csv")).run()
    assert any("'clinic'" in c.value for c in at.caption)
    # one row dropped and a column added: not a fresh budget — refused unless the admin confirms
    near = df.iloc[1:].assign(extra=1).to_csv(index=False).encode()
    at.file_uploader(key="qc_upload").set_value(("near.csv", near, "text/csv")).run()
    at.text_input(key="qc_reg_name").input("clinic copy")
    at.button(key="qc_register").click().run()
    assert any("nearly equals the registered dataset 'clinic'" in e for e in _errors(at))


def test_storage_fault_is_one_message(dp_home):
    (dp_home).mkdir(parents=True, exist_ok=True)
    (dp_home / "ledger.sqlite").write_bytes(b"garbage" * 1000)
    at = open_page("pages/query_console.py")
    at.number_input(key="qc_n").set_value(2000).run()
    assert not at.exception
    assert any("damaged" in e for e in _errors(at))


EVIL = "[x](http://evil/)![i](http://evil/i.png)<b>b</b>"


def _no_live_markup(text: str) -> bool:
    """Markdown source that renders no link, image or HTML: every `](` and `<` is backslash-escaped."""
    return "](" not in text and "<b>" not in text and not re.search(r"(?<!\\)<", text)


def test_untrusted_names_are_shown_as_text_never_as_links_images_or_html(monkeypatch):
    monkeypatch.setenv(ledger.ADMIN_ENV, "tok")
    df = datasets.medical(300, 5)[["age", "sex"]].copy()
    df[EVIL] = ["<b>b</b>" if i % 2 else "[a](http://evil/)" for i in range(len(df))]
    at = open_page("pages/query_console.py")
    at.text_input(key="qc_analyst").input("[me](http://evil/)").run()
    at.radio(key="qc_source").set_value("Upload a CSV").run()
    at.file_uploader(key="qc_upload").set_value(("evil.csv", df.to_csv(index=False).encode(), "text/csv")).run()
    at.text_input(key="qc_token").input("tok")
    at.text_input(key="qc_reg_name").input("<b>clinic</b> [n](http://evil/)")
    at.button(key="qc_register").click().run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="qc_kind").set_value("HISTOGRAM").run()
    at.selectbox(key="qc_column").set_value(EVIL).run()
    at.text_input(key="qc_categories").input("<b>b</b>,[a](http://evil/)")
    at.text_input(key="qc_where").input("sex=F")
    _ask(at)
    assert "ε remaining" in _metrics(at)
    shown = [e.value for kind in ("markdown", "caption", "success", "warning", "info", "error")
             for e in at.get(kind)] + [at.checkbox(key="qc_reset_confirm").label]
    assert any("evil" in t for t in shown)  # the names are shown ...
    assert all(_no_live_markup(t) for t in shown), [t for t in shown if not _no_live_markup(t)]  # ... as text
    assert any(r"HISTOGRAM\(\[x\]\(http" in t for t in shown)  # the question, escaped
    spec = at.get("plotly_chart")[0].proto.spec
    assert "&lt;b&gt;b&lt;" in spec and "<b>" not in spec  # chart title, axis and tick labels


def test_a_fault_reading_the_registry_is_not_called_an_unregistered_dataset(monkeypatch):
    import sqlite3

    def broken(*a, **k):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(ledger, "dataset_info", broken)
    at = open_page("pages/query_console.py")
    assert not at.exception
    assert len(at.error) == 1
    assert not any("not a registered dataset" in w.value for w in at.warning)  # nor an admin form to register it
