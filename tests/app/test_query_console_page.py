"""AppTest: the private query console — visitors on the built-in data, analysts signed in with a key, the admin's
panel; a near-exact answer asks first; errors are one message; user text is shown as text."""

import json
import re

import pandas as pd
import pytest

from dpcore.budgets import identities, quotas, registry, store, visitors
from dpcore.data import datasets
from dpcore.figures import query_console as figs
from dpcore.queries import fingerprint

from ..budgets_helpers import TOKEN, admin
from .pages import open_page, shown

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


def _demo_spent(n=2000, seed=0) -> float:
    return registry.info(fingerprint.dataset_key(datasets.medical(n, seed)))["spent"]


def _console(n=2000):
    at = open_page("pages/query_console.py")
    assert not at.exception, [e.value for e in at.exception]
    at.number_input(key="qc_n").set_value(n).run()
    return at


def test_a_visitor_spends_the_shared_quota_repeats_free_and_is_refused():
    at = _console()
    assert at.title[0].value == "Private query console"
    assert any(
        "**You are asking as a visitor: this dataset has ε = 20 of 20" in m.value and "left for everyone" in m.value
        for m in at.markdown
    )
    assert any("another synthetic population" in c.value for c in at.caption)
    at.number_input(key="qc_eps").set_value(3.5).run()
    _ask(at)
    m = _metrics(at)
    assert m["ε spent now"] == "3.5" and m["ε remaining"] == "6.5"
    first = m["Noisy answer (DP)"]
    _ask(at)  # the same question again: the stored answer, free
    m = _metrics(at)
    assert m["Noisy answer (DP)"] == first and m["ε spent now"] == "0" and m["ε remaining"] == "6.5"
    assert any("stored answer" in s.value for s in at.success)
    assert any(c.value.startswith("When first drawn:") and "free" in c.value for c in at.caption)
    assert any("has ε = 16.5 of 20" in m.value for m in at.markdown)  # the sentence follows the spend
    at.text_input(key="qc_condition").input("sex=F").run()
    _ask(at)
    at.selectbox(key="qc_kind").set_value("MEAN").run()
    at.selectbox(key="qc_column").set_value("salary").run()
    assert (at.number_input(key="qc_lo").value, at.number_input(key="qc_hi").value) == (0.0, 250_000.0)
    _ask(at)  # needs 3.5: only 3 left in the visitors' quota
    assert any(
        "Budget exceeded" in e and "only ε = 3 of 10 is left in the visitors' shared quota" in e for e in _errors(at)
    ), _errors(at)
    assert "Noisy answer (DP)" not in _metrics(at)  # the earlier answer does not stay under the error
    hist = at.dataframe[0].value
    assert list(hist["event"]) == ["grant", "spend", "reuse", "spend", "refused"]
    assert list(hist.columns[:3]) == ["query", "answer", "ε charged"]  # what a phone shows before it scrolls
    assert list(hist["query"])[1:4] == ["Q1 · COUNT(*) WHERE has_rare_disease=true"] * 2 + ["Q2 · COUNT(*) WHERE sex=F"]
    notes = list(hist["note"])
    assert notes[0].startswith("The visitors' shared quota") and notes[4].startswith("The visitors' shared quota")
    # the grant is no question: it says what happened and leaves the amounts blank (it read "ε 0, δ 0", a grant of
    # nothing); the reuse shows the answer it returned again (its answer cell was empty)
    grant = hist.iloc[0]
    assert grant["query"] == "(quota granted)" and all(pd.isna(grant[c]) for c in ("ε charged", "ε", "δ")), grant
    assert at.dataframe[0].proto.placeholder == "—"  # shown as the other tables' missing cells, not a grey "None"
    assert hist.iloc[2]["answer"] == hist.iloc[1]["answer"] == first and hist.iloc[2]["ε charged"] == 0
    assert _demo_spent() == 7.0
    at2 = _console()  # another session (a new tab, an app restart): the same shared quota and history
    assert len(at2.dataframe[0].value) == 5 and any("has ε = 13 of 20" in m.value for m in at2.markdown)


def test_an_answer_and_its_interval_show_the_same_decimals():
    """A MEAN read "65" beside "[61.76, 68.76]": the answer and both ends now take the decimals of the interval's
    half-width at two significant digits (±3.2 here: one decimal each), and the history shows the answer so too."""
    at = _console()
    at.selectbox(key="qc_kind").set_value("MEAN").run()
    at.number_input(key="qc_eps").set_value(0.05).run()
    _ask(at)
    m = _metrics(at)
    lo, hi = re.fullmatch(r"\[(.+), (.+)\]", m["95% interval"]).groups()
    assert all(re.fullmatch(r"\d+\.\d", x) for x in (m["Noisy answer (DP)"], lo, hi)), m
    assert 1 <= (float(hi) - float(lo)) / 2 < 10
    assert at.dataframe[0].value["answer"].iloc[-1] == m["Noisy answer (DP)"]
    # the ends are rounded outwards: the interval shown holds the one computed
    true_lo, true_hi = at.session_state["qc_last"]["result"]["answer"]["interval"]
    assert float(lo.replace(",", "")) <= true_lo and float(hi.replace(",", "")) >= true_hi


def test_a_near_exact_answer_asks_first_and_the_per_query_cap_refuses():
    """Item 6: at ε = 4 a count's 95% interval is ±0 — the page says what that means and asks; nothing is spent
    until confirmed. Above the built-in data's per-query cap (5) the answer is refused, confirmed or not."""
    at = _console()
    at.number_input(key="qc_eps").set_value(4.0).run()
    _ask(at)
    warn = [w.value for w in at.warning if "protect almost nobody" in w.value]
    assert warn and "95% noise interval is ±0, narrower than what one person changes it by (±1)" in warn[0]
    assert "Noisy answer (DP)" not in _metrics(at) and _demo_spent() == 0.0  # asked first, nothing drawn
    at.button(key="qc_cancel").click().run()
    assert not any("protect almost nobody" in w.value for w in at.warning) and _demo_spent() == 0.0
    _ask(at)
    at.button(key="qc_confirm").click().run()
    assert not at.exception
    m = _metrics(at)
    assert m["ε spent now"] == "4" and re.fullmatch(r"\[(\d+), \1\]", m["95% interval"])  # [n, n]: exact, as warned
    assert _demo_spent() == 4.0
    # above "weak" (ε > ln 99): asked first, then the per-query cap refuses — nothing spent
    at.number_input(key="qc_eps").set_value(6.0).run()
    at.text_input(key="qc_condition").input("sex=F").run()
    _ask(at)
    assert any('above the "weak" privacy level' in w.value for w in at.warning)
    at.button(key="qc_confirm").click().run()
    assert any("allows at most ε = 5 per query" in e for e in _errors(at)) and _demo_spent() == 4.0
    # an ordinary ε asks straight away
    at.number_input(key="qc_eps").set_value(0.5).run()
    _ask(at)
    assert _metrics(at)["ε spent now"] == "0.5" and not any("protect almost nobody" in w.value for w in at.warning)


@pytest.fixture
def clinic():
    df = datasets.medical(800, seed=4)
    registry.register(admin(), "clinic", df, epsilon=2.0, max_query_epsilon=1.0)
    key = quotas.grant(admin(), "Ann", "clinic", epsilon=1.5)["key"]
    return df, key


def _sign_in(at, name, key):
    at.text_input(key="id_name").input(name)
    at.text_input(key="id_key").input(key)
    at.button(key="id_sign_in").click().run()
    assert not at.exception, [e.value for e in at.exception]


def test_an_analyst_signs_in_with_name_and_key_and_spends_their_quota(clinic):
    df, key = clinic
    at = _console()
    assert at.selectbox(key="qc_dataset").options == ["Built-in synthetic medical data"]  # a visitor sees no clinic
    _sign_in(at, "ann", key)
    assert at.session_state["id_key"] == ""  # the key leaves its box at once
    assert any("Signed in as analyst 'Ann'" in shown(m.value) for m in at.markdown)
    assert at.selectbox(key="qc_dataset").options == ["Built-in synthetic medical data", "clinic"]
    assert at.selectbox(key="qc_dataset").value == "clinic"  # issue 34.5: sign-in lands on the analyst's own data
    said = " ".join(m.value for m in at.markdown)
    assert "#### ε\u00a0=\u00a01.5 left to ask with" in said and "Your quota: ε = 1.5 of 1.5;" in said
    assert "the dataset's cap, for everyone: ε = 2 of 2" in said
    at.selectbox(key="qc_dataset").set_value("Built-in synthetic medical data").run()  # still a choice
    assert at.selectbox(key="qc_dataset").value == "Built-in synthetic medical data"
    at.selectbox(key="qc_dataset").set_value("clinic").run()
    assert any("**Your quota: ε = 1.5 of 1.5" in m.value and "ε = 2 of 2" in m.value for m in at.markdown)
    assert any("No answer may spend more than ε = 1" in c.value for c in at.caption)
    at.number_input(key="qc_eps").set_value(0.5).run()
    _ask(at)
    assert _metrics(at)["ε remaining"] == "1"
    assert registry.info("clinic")["spent"] == 0.5
    st = quotas.status(admin(), "clinic", analyst="ann")
    assert st["quota"]["spent"] == 0.5
    assert not any("share_in_url" in k for k in at.query_params) and "id_name" not in at.query_params
    at.button(key="id_sign_out").click().run()
    assert at.selectbox(key="qc_dataset").value == "Built-in synthetic medical data"


def test_the_headline_is_what_the_next_answer_can_spend_never_more_than_the_cap_has_left(clinic):
    """Issue 34.1: the console's headline states one number, what the next answers can spend: the analyst's quota,
    but never more than the dataset's cap has left after everyone else's answers (Ann 1.5 of 1.5; Bob spent 1 of the
    cap's 2, so Ann can spend 1), with δ and the neighbour relation beside it."""
    from dpcore.queries import answering, model

    df, key = clinic
    bob = quotas.grant(admin(), "Bob", "clinic", epsilon=1.0)["key"]
    answering.ask(df, identities.sign_in("Bob", bob), model.make_query("count", epsilon=1.0, condition="age>50"))
    at = _console()
    _sign_in(at, "ann", key)
    said = " ".join(m.value for m in at.markdown)
    assert "#### ε\u00a0=\u00a01 left to ask with" in said, said[:300]
    assert "Your quota: ε = 1.5 of 1.5; the dataset's cap, for everyone: ε = 1 of 2, δ = " in said
    assert "(neighbours: add or remove one" in said


def test_closing_a_quota_says_whose_and_where_without_a_quoted_possessive(clinic):
    """It read "Closed 'ann''s quota on 'clinic'"."""
    at = _console()
    at.session_state["_dp_identity"] = admin()
    at.run()
    at.selectbox(key="qc_dataset").set_value("clinic").run()
    at.text_input(key="adm_reset_who").input("Ann")
    at.button(key="adm_close").click().run()
    assert not at.exception, [e.value for e in at.exception]
    said = [shown(s.value) for s in at.success]
    assert any(s.startswith("Closed the quota of analyst 'Ann' on dataset 'clinic'") for s in said), said


def test_a_typed_name_alone_or_a_wrong_key_gets_nothing(clinic):
    df, key = clinic
    at = _console()
    for name, k in (("ann", ""), ("ann", "dpx_guess"), ("Ann ", key + "x"), ("bob", key)):
        _sign_in(at, name, k)
        assert any("analyst name or key is wrong" in e for e in _errors(at)), (name, k)
        assert "_dp_identity" not in at.session_state
        assert at.selectbox(key="qc_dataset").options == ["Built-in synthetic medical data"]
    assert registry.info("clinic")["spent"] == 0.0


def test_admin_sign_in_is_checked_against_the_stored_hash(monkeypatch):
    at = _console()
    at.text_input(key="id_token").input(TOKEN)
    at.button(key="id_admin").click().run()
    assert any("python -m dpcore admin init" in e for e in _errors(at))  # not initialised: refused, says what to run
    identities.init_admin(TOKEN)
    monkeypatch.setenv(identities.ADMIN_ENV, "made-up-in-the-server-env-0")  # never compared with the environment
    at.text_input(key="id_token").input("made-up-in-the-server-env-0")
    at.button(key="id_admin").click().run()
    assert any("admin token is missing or wrong" in e for e in _errors(at)) and "_dp_identity" not in at.session_state
    at.text_input(key="id_token").input(TOKEN)
    at.button(key="id_admin").click().run()
    assert at.session_state["_dp_identity"].is_admin and at.subheader[-1].value == "Admin"


def test_the_admin_registers_an_upload_grants_a_quota_shown_once_and_resets_it(dp_home):
    at = _console()
    at.session_state["_dp_identity"] = admin()
    at.run()
    df = datasets.medical(500, 3).assign(patient_id=range(500))
    at.file_uploader(key="adm_upload").set_value(("d.csv", df.to_csv(index=False).encode(), "text/csv")).run()
    at.text_input(key="adm_name").input("ward 7")
    at.number_input(key="adm_eps").set_value(3.0).run()
    at.button(key="adm_register").click().run()
    assert not at.exception and any("Registered 'ward 7'" in s.value for s in at.success)
    info = registry.info("ward 7")
    assert info["cap"] == 3.0 and (dp_home / info["source"]["file"]).stat().st_mode & 0o777 == 0o600
    # the same people, a column renamed and a quarter of the rows dropped: refused unless confirmed
    near = df.sample(frac=0.75, random_state=1).rename(columns={"age": "years"})
    at.file_uploader(key="adm_upload").set_value(("n.csv", near.to_csv(index=False).encode(), "text/csv")).run()
    at.text_input(key="adm_name").input("ward 7 again")
    at.button(key="adm_register").click().run()
    assert any("holds the same people as the registered dataset 'ward 7'" in e for e in _errors(at))
    at.selectbox(key="qc_dataset").set_value("ward 7").run()
    assert any("You administer this dataset" in m.value for m in at.markdown)
    assert any("'patient\\_id'" in w.value and "k rows" in w.value for w in at.warning)  # a person identifier
    at.text_input(key="adm_analyst").input("Cy")
    at.number_input(key="adm_quota").set_value(1.0).run()
    at.button(key="adm_grant").click().run()
    shown = [c.value for c in at.code]
    assert len(shown) == 1 and shown[0].startswith("dpx_")
    assert identities.sign_in("cy", shown[0]).name == "cy"
    at.run()
    assert not at.code  # shown once
    at.number_input(key="adm_cap").set_value(4.0).run()
    at.button(key="adm_set_cap").click().run()
    assert any("Changing a dataset's cap needs a reason" in e for e in _errors(at))
    at.text_input(key="adm_cap_reason").input("second study")
    at.button(key="adm_set_cap").click().run()
    assert registry.info("ward 7")["cap"] == 4.0
    hist = at.dataframe[0].value
    assert "cap" in list(hist["event"]) and "analyst" in hist.columns


def test_budget_gauge_before_any_budget_shows_the_one_that_opens_full():
    ind = figs.budget_gauge(None, 2.5, opens=True).data[0]
    assert ind.value == 2.5 and ind.gauge.axis.range == (0, 2.5)
    assert ind.title.text.startswith("ε remaining of 2.5<br>") and "opens with the first question" in ind.title.text
    assert figs.budget_gauge(0.4, 1.0).data[0].title.text == "ε remaining of 1 (0.6 spent)"
    assert figs.budget_gauge(None, None).data[0].title.text == "ε remaining (no budget set yet)"


def _gauge(at):
    spec = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if '"indicator"' in c.proto.spec)
    ind = spec["data"][0]
    return ind["value"], ind["title"]["text"]


def test_gauge_follows_the_quota():
    at = _console()
    value, title = _gauge(at)
    assert value == 10.0 and title == "ε remaining of 10 (0 spent)"
    notes = [
        a["text"] for c in at.get("plotly_chart") for a in json.loads(c.proto.spec)["layout"].get("annotations", [])
    ]
    assert "the visitors' quota ε = 10" in notes  # the composition chart draws the quota spent from
    at.number_input(key="qc_eps").set_value(0.5).run()
    _ask(at)
    assert _gauge(at) == (9.5, "ε remaining of 10 (0.5 spent)")


def test_histogram_and_composition_panel_with_its_reading():
    at = _console()
    at.selectbox(key="qc_kind").set_value("HISTOGRAM").run()
    at.selectbox(key="qc_column").set_value("diagnosis").run()
    _ask(at)
    assert _metrics(at)["ε remaining"] == "9.9"
    assert len(at.get("plotly_chart")) == 3  # noisy histogram, remaining-ε gauge, composition vs k
    costs = at.dataframe[1].value
    assert list(costs["rule"]) == ["basic", "advanced", "zCDP", "RDP"] and costs["total ε"][0] == pytest.approx(0.1)
    how = list(costs["how"])
    assert how[0].startswith("Sum of ε and of δ") and how[1].startswith("Dwork–Rothblum–Vadhan")
    # issue 28: "advanced 3.05 / zCDP 2.87" beside a basic 0.9 gets its sentence
    assert any(c.value.startswith("Here basic composition is the tightest (ε = 0.1)") for c in at.caption)
    before = costs["total ε"][1]
    at.select_slider(key="qc_dprime").set_value(1e-9).run()
    assert at.dataframe[1].value["total ε"][1] > before
    at.radio(key="qc_mech").set_value("gaussian").run()
    assert not at.exception and at.selectbox(key="qc_delta").value == pytest.approx(1e-7)
    assert all(float(o) <= 5e-5 for o in at.selectbox(key="qc_delta").options)  # the visitors' δ: 1/(10n)


def test_questions_that_look_alike_when_cut_are_numbered_and_listed_in_full():
    at = _console()
    long = "age>=18, age<=90, sex=F, zip_code!=1, ethnicity!=x, has_rare_disease=false, diagnosis!=none"
    for tail in ("salary>1000", "salary>2000"):
        at.text_input(key="qc_where").input(f"{long}, {tail}").run()
        _ask(at)
    queries = [q for q in at.dataframe[0].value["query"] if q.startswith("Q")]  # the grant row reads "(quota granted)"
    assert [q[:3] for q in queries] == ["Q1 ", "Q2 "]
    full = [shown(m.value) for m in at.markdown if m.value.startswith("- **Q1**")]
    assert full and "salary>1000" in full[0] and "salary>2000" in full[0]


def test_mechanisms_are_shown_by_name_and_kept_by_value():
    at = _console()
    radio = at.radio(key="qc_mech")
    assert radio.options == ["Laplace", "Gaussian"] and radio.value == "laplace"
    assert any(c.value.endswith("with Laplace.") for c in at.caption)
    _ask(at)
    assert any(" · Laplace · ε = 0.1" in m.value for m in at.markdown)
    at.radio(key="qc_mech").set_value("gaussian").run()
    assert not at.exception and at.query_params["qc_mech"] == "gaussian"


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda at: at.number_input(key="qc_eps").set_value(0.0), "Epsilon must be > 0"),
        (lambda at: at.text_input(key="qc_condition").input("height=3"), "Unknown column 'height'"),
        (lambda at: at.text_input(key="qc_condition").input("sex"), "not COLUMN=VALUE"),
        (
            lambda at: (
                at.selectbox(key="qc_kind").set_value("SUM").run(),
                at.number_input(key="qc_lo").set_value(100.0),
            ),
            "lower must be < upper",
        ),
        (
            lambda at: (
                at.selectbox(key="qc_kind").set_value("MEAN").run(),
                at.selectbox(key="qc_column").set_value("ethnicity"),
            ),
            "MEAN needs a numeric column",
        ),
    ],
)
def test_bad_inputs_show_errors_and_spend_nothing(setup, message):
    at = _console()
    setup(at)
    at.run()
    at.button(key="qc_ask").click().run()
    assert not at.exception
    assert any(message in e for e in _errors(at)), _errors(at)
    assert _demo_spent() == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("kind, column", [("HISTOGRAM", "age"), ("SUM", "age"), ("MEAN", "salary")])
def test_extreme_bounds_never_raise_and_spend_nothing(kind, column):
    """Issue 28: HISTOGRAM bounds ±1e308 raised a page exception; SUM bounds ±1e308 answered "inf, interval [nan,
    inf]" and charged ε. The bounds fields take their range from dpcore.limits (a browser cannot type ±1e308), and
    the largest bounds a release cannot use get one message before anything is spent."""
    from dpcore import limits

    at = _console()
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
    spent = _demo_spent()
    if kind == "SUM":  # Δ = 1e15 is a SUM a release can take: answered, with finite numbers
        assert spent == pytest.approx(0.1) and "inf" not in _metrics(at)["Noisy answer (DP)"]
    else:  # a bin or a spread of 1 beside 1e15 is finer than the numbers can hold: one message, nothing spent
        assert any("too small beside" in e for e in _errors(at)), _errors(at)
        assert spent == 0.0


def test_a_sum_states_its_grid_and_rounding():
    """Issue 25: the answer says how it was released — clamped, rounded to a public grid, whole-number noise."""
    at = _console()
    at.selectbox(key="qc_kind").set_value("SUM").run()
    _ask(at)
    said = [re.sub(r"\\(.)", r"\1", c.value) for c in at.caption]
    assert any("rounded to a multiple of 0.00001" in c and "OpenDP" in c for c in said), said


def test_delta_choices_fit_and_no_identity_in_links():
    at = _console(200_000)
    assert any("You are asking as a visitor" in m.value for m in at.markdown)
    assert any(
        "any one **row** (add or remove one patient's record)" in c.value and "k·ε" in c.value for c in at.caption
    )  # ε protects a row; a person with k rows: k·ε (issue 25 §4)
    at.radio(key="qc_mech").set_value("gaussian").run()
    options = [float(o) for o in at.selectbox(key="qc_delta").options]
    assert max(options) <= 5e-7 and 1e-7 in options  # the visitors' δ 1/(10n) = 5e-7
    at.text_input(key="id_name").input("Dr. Who").run()
    assert "id_name" not in at.query_params and "qc_n" in at.query_params


def test_storage_fault_is_one_message(dp_home):
    dp_home.mkdir(parents=True, exist_ok=True)
    (dp_home / "ledger.sqlite").write_bytes(b"garbage" * 1000)
    at = _console()
    assert not at.exception and any("damaged" in e for e in _errors(at))


def test_an_emptied_ledger_is_refused_on_the_page(dp_home):
    visitors.open_builtin(2000, 0)
    store.drop()
    (dp_home / "ledger.sqlite").write_bytes(b"")
    at = _console()
    assert not at.exception and any("damaged" in e for e in _errors(at))
    assert (dp_home / "ledger.sqlite").stat().st_size == 0


EVIL = "[x](http://evil/)![i](http://evil/i.png)<b>b</b>"


def _no_live_markup(text: str) -> bool:
    """Markdown source that renders no link, image or HTML: every `](` and `<` is backslash-escaped."""
    return "](" not in text and "<b>" not in text and not re.search(r"(?<!\\)<", text)


def test_untrusted_names_are_shown_as_text_never_as_links_images_or_html():
    df = datasets.medical(300, 5)[["age", "sex"]].copy()
    df[EVIL] = ["<b>b</b>" if i % 2 else "[a](http://evil/)" for i in range(len(df))]
    registry.register(admin(), "<b>clinic</b> [n](http://evil/)", df, epsilon=2.0)
    key = quotas.grant(admin(), "[me](http://evil/)", "<b>clinic</b> [n](http://evil/)", epsilon=1.0)["key"]
    at = _console()
    _sign_in(at, "[me](http://evil/)", key)
    at.selectbox(key="qc_dataset").set_value("<b>clinic</b> [n](http://evil/)").run()
    at.selectbox(key="qc_kind").set_value("HISTOGRAM").run()
    at.selectbox(key="qc_column").set_value(EVIL).run()
    at.text_input(key="qc_categories").input("<b>b</b>,[a](http://evil/)")
    at.text_input(key="qc_where").input("sex=F")
    _ask(at)
    assert "ε remaining" in _metrics(at)
    shown = [e.value for kind in ("markdown", "caption", "success", "warning", "info", "error") for e in at.get(kind)]
    assert any("evil" in t for t in shown)  # the names are shown ...
    assert all(_no_live_markup(t) for t in shown), [t for t in shown if not _no_live_markup(t)]  # ... as text
    assert any(r"HISTOGRAM\(\[x\]\(http" in t for t in shown)
    spec = next(c.proto.spec for c in at.get("plotly_chart") if '"indicator"' not in c.proto.spec)  # the histogram
    assert "&lt;b&gt;b&lt;" in spec and "<b>" not in spec
    # the histogram's title, drawn by the page as HTML: the column's name in it as text, no live tag
    (title,) = [h.proto.body for h in at.get("html") if "Noisy histogram of" in h.proto.body]
    assert "evil" in title and "&lt;b&gt;b&lt;/b&gt;" in title and not re.search(r"<(a|img|b)\b", title)


def test_a_fault_reading_the_registry_is_one_message(monkeypatch):
    import sqlite3

    def broken(*a, **k):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(quotas, "status", broken)
    at = open_page("pages/query_console.py")
    assert not at.exception and len(at.error) == 1


@pytest.mark.parametrize("kind", ["COUNT", "MEAN"])
def test_a_gaussian_answer_states_how_often_its_privacy_loss_exceeds_epsilon(kind):
    """Audit: the δ box read 'The chance the ε bound fails' and the mechanism 'the analytic Gaussian'; the answers
    are discrete Gaussian, and for δ > 0 the reading the house asks for is P[privacy loss > ε] of the release — for
    a count at ε = 1, δ = 1e-7 about 15 × δ. The answer now states it, and the number, summed independently from the
    discrete Gaussian's pmf (a MEAN: its two parts at ε/2, union bound), is never below the true one."""
    import numpy as np

    from dpcore.noise import release

    at = _console()
    at.selectbox(key="qc_kind").set_value(kind).run()
    at.radio(key="qc_mech").set_value("gaussian").run()
    at.number_input(key="qc_eps").set_value(1.0).run()
    at.selectbox(key="qc_delta").set_value(1e-7).run()
    help_text = at.selectbox(key="qc_delta").help + at.radio(key="qc_mech").help
    assert "chance the ε bound fails," not in help_text and "analytic Gaussian" not in help_text
    _ask(at)

    def tail(eps, delta, k):  # P[loss > ε] = P[X < k/2 − εσ²/k], X the discrete Gaussian, from its pmf
        s = release.noise_for("gaussian", epsilon=eps, delta=delta, sensitivity=k).scale
        w = int(40 * s) + 40
        x = np.arange(-w, w + 1)
        p = np.exp(-(x.astype(float) ** 2) / (2 * s * s))
        return float(p[x < k / 2 - eps * s * s / k].sum() / p.sum())

    if kind == "COUNT":
        true = tail(1.0, 1e-7, 1)
    else:  # the noisy count's part is exact; the sum's part (K ~ 1e6 grid steps) is the continuous Gaussian's
        from scipy.stats import norm

        s = release.noise_for("gaussian", epsilon=0.5, delta=5e-8, sensitivity=10**6).scale
        true = tail(0.5, 5e-8, 1) + float(norm.cdf((10**6 / 2 - 0.5 * s * s / 10**6) / s))
    said = [re.sub(r"\\(.)", r"\1", c.value) for c in at.caption]
    (line,) = [c for c in said if "privacy loss exceeds ε = 1 with probability at most" in c]
    shown = float(re.search(r"at most ([0-9.e−-]+)", line).group(1).replace("−", "-"))
    assert shown >= true * (1 - 1e-9) and shown <= true * 1.5, (shown, true)
    assert "is not the chance that this answer's ε bound fails" in line
