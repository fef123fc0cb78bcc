"""AppTest for the re-identification page: default scenario, edits, bad input, generalisation, upload."""

import pytest

from dpcore.data import datasets

from .pages import open_page

PAGE = "pages/reidentification.py"


@pytest.fixture(scope="module")
def at():
    import os

    from tests.conftest import ROOT

    old = os.getcwd()
    os.chdir(ROOT)
    try:
        app = open_page(PAGE)
        yield app
    finally:
        os.chdir(old)


def metric(at, label):
    return next(m.value for m in at.metric if m.label == label)


def count(text: str) -> int:
    """'1,234 patients' -> 1234."""
    return int(text.split()[0].replace(",", ""))


def test_page_renders_default_scenario(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.text_input(key="re_known_age").value == "34"
    assert at.text_input(key="re_known_salary").value == "50000-60000"
    # the default neighbour is singled out and her diagnosis shows (was: 17 matches)
    assert metric(at, "Matching records") == "1 patient"
    found = [s.value for s in at.success]
    assert any("Exactly 1 patient matches" in v and "'hypertension'" in v for v in found), found
    # the page leads with the share of patients unique on the quasi-identifiers: a short claim as the heading,
    # the detail in plain weight (the whole sentence as one heading took six bold lines on a phone)
    claim, detail = at.markdown[0].value.split("\n\n")
    assert claim == "#### 99.8% of patients are unique"
    assert detail.startswith("998 of the 1,000 patients are each the only one") and "#" not in detail
    assert len(at.tabs) == 7  # one step per tab, for presenters
    assert metric(at, "Register entries")
    assert metric(at, "k-anonymity")


def test_tables_use_plain_names_and_lead_with_what_is_revealed(at):
    """Headers read like the fields above them (zip code, not zip_code); a phone shows a table's first columns,
    so the neighbour's row and the linked names lead with what the attacker learns."""
    tables = [d.value for d in at.dataframe]
    assert tables and not [c for t in tables for c in t.columns if "_" in str(c)]
    match = next(t for t in tables if len(t) == 1 and "diagnosis" in t.columns)
    assert list(match.columns) == [
        "diagnosis",
        "rare disease",
        "age",
        "sex",
        "zip code",
        "birth year",
        "ethnicity",
        "salary",
    ]
    assert match["diagnosis"].tolist() == ["hypertension"] and match["zip code"].tolist() == [10001]
    linked = next(t for t in tables if "linked diagnosis" in t.columns)
    assert list(linked.columns)[:3] == ["name", "linked diagnosis", "right person?"]
    assert any(list(t.columns) == ["name", "birth year", "age", "sex", "zip code"] for t in tables)  # register
    shares = next(t for t in tables if "unique share" in t.columns)
    assert shares["unique share"].iloc[-1] == "99.8%"  # percentages, not fractions


def test_column_choices_read_as_words(at):
    assert at.multiselect(key="re_qis").options == ["age", "sex", "zip code", "birth year", "ethnicity", "salary"]
    assert at.multiselect(key="re_qis").value == ["age", "sex", "zip_code", "salary"]  # the data's names underneath
    assert at.multiselect(key="re_link_on").options == ["birth year", "age", "sex", "zip code"]
    assert at.selectbox(key="re_sensitive").options == ["rare disease", "diagnosis"]
    assert any(m.value.endswith("of patients are unique on age, sex, zip code, salary.") for m in at.markdown)
    assert any(
        "Quasi-identifiers (facts others can know): age, sex, zip code, birth year" in c.value for c in at.caption
    )


def test_narrowing_caption_adds_what_the_chart_does_not_show(at):
    """The chart (titled "Each fact rules patients out") adds the facts up; its caption gives each fact alone."""
    from dpcore.attacks import reidentification as reid

    rel = reid.release_of(reid.population(1_000, datasets.REID_SEED))
    alone = {
        c: int(n)
        for c, n in (
            ("age", (rel.age == 34).sum()),
            ("zip", (rel.zip_code == 10001).sum()),
            ("salary", rel.salary.between(50_000, 60_000).sum()),
        )
    }
    caption = next(c.value for c in at.caption if c.value.startswith("On its own"))
    assert caption.startswith(
        f"On its own, age 34 fits {alone['age']} patients, zip code 10001 fits {alone['zip']} patients and salary "
    )
    assert f"fits {alone['salary']} patients; together they leave 1 patient." in caption
    assert min(alone.values()) > 1 and "Each fact rules patients out" not in caption


def test_range_hint_is_an_example_that_does_not_split(at):
    hint = next(m.value for m in at.markdown if m.value.startswith("You know a few facts"))
    assert "`30:39`" in hint and "LO-HI" not in hint  # "LO-" / "HI" on a phone; 30:39 holds like a time


def test_register_share_is_a_percentage(at):
    from dpcore.attacks import reidentification as reid

    share = at.slider(key="re_coverage")
    assert (share.value, share.min, share.max, share.proto.format) == (50, 5, 100, "%d%%")
    share.set_value(100).run()
    assert not at.exception and not at.error
    full = reid.story(coverage=1.0).linkage
    assert metric(at, "Register entries") == f"{full.register_size:,} people"
    at.slider(key="re_coverage").set_value(50).run()


def test_page_and_report_agree_on_every_number(at):
    """Same settings, same numbers: the page and the HTML report both run dpcore.attacks.reidentification."""
    from dpcore.attacks import reidentification as reid
    from dpcore.report import document as report

    st = reid.story()
    assert metric(at, "…the right person") == reid.patients(st.linkage.right_person)
    # the metric is the sentence's number: unique right matches plus groups that all share one diagnosis
    assert metric(at, "Diagnoses disclosed") == reid.patients(st.linkage.attribute_disclosed)
    assert st.linkage.attribute_disclosed >= st.linkage.right_person
    assert any(
        f"the diagnoses of **{reid.patients(st.linkage.attribute_disclosed)}** are disclosed" in m.value
        for m in at.markdown
    )
    assert metric(at, "With DP at ε = 1") == f"{st.dp['at_epsilon']:.0%}"
    assert metric(at, "Blind guess (most common value)") == f"{st.dp['prior_guess']:.0%}"
    assert metric(at, "Unique patients") == f"{st.uniqueness.unique_fraction:.1%}"
    html = report.reidentification_section(1.0).tables[0]
    values = dict(zip(html["finding"], html["value"]))
    assert values == dict(zip(st.findings()["finding"], st.findings()["value"]))
    assert any(v.startswith(f"{st.linkage.right_person:,} of ") for v in values.values())


def test_adding_facts_makes_the_matches_fall(at):
    at.text_input(key="re_known_salary").set_value("").run()
    assert not at.exception
    wide = count(metric(at, "Matching records"))
    assert wide > 1
    at.text_input(key="re_known_sex").set_value("F").run()
    assert not at.exception
    assert count(metric(at, "Matching records")) < wide
    at.text_input(key="re_known_sex").set_value("").run()
    at.text_input(key="re_known_salary").set_value("50000-60000").run()
    assert metric(at, "Matching records") == "1 patient"


def test_dp_tab_states_the_guarantee_that_applies(at):
    info = " ".join(i.value for i in at.info)
    assert "replace-one" in info and "ε = 2" in info and "adding or removing one patient" in info


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("re_known_salary", "abc:60000", "must be a number"),
        ("re_known_salary", "60000-50000", "swap them"),
        ("re_known_age", "thirty", "must be a number"),
    ],
)
def test_bad_neighbour_input_shows_an_error(at, field, value, message):
    old = at.text_input(key=field).value
    at.text_input(key=field).set_value(value).run()
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    at.text_input(key=field).set_value(old).run()
    assert not at.error


def test_no_facts_and_empty_qis_show_errors(at):
    olds = {f: at.text_input(key=f"re_known_{f}").value for f in ("age", "zip_code", "salary")}
    for f in olds:
        at.text_input(key=f"re_known_{f}").set_value("")
    at.multiselect(key="re_qis").set_value([]).run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "at least one known fact" in errors
    assert "at least one quasi-identifier" in errors
    for f, v in olds.items():
        at.text_input(key=f"re_known_{f}").set_value(v)
    at.multiselect(key="re_qis").set_value(["age", "sex", "zip_code", "salary"]).run()
    assert not at.error


def test_generalisation_raises_k(at):
    at.select_slider(key="re_age_band").set_value(20).run()
    assert not at.exception
    ks = [m.value for m in at.metric if m.label == "k-anonymity"]
    assert len(ks) >= 3  # uniqueness tab, and before / after on the generalisation tab
    assert count(ks[-1]) >= count(ks[-2])


def test_generalisation_metrics_say_what_changed_in_words(at):
    """At the default bands k stays 1: the "after" metric showed a grey "0" chip (read as 0 patients); the unique
    share's change read "-98.2 pp"; and "k-anonymity" had no gloss."""
    k_before, k_after = [m for m in at.metric if m.label == "k-anonymity"][-2:]
    assert k_before.value == k_after.value == "1 patient" and not k_after.proto.delta, k_after.proto
    unique_after = [m for m in at.metric if m.label == "Unique patients"][-1]
    assert unique_after.proto.delta.endswith(" percentage points"), unique_after.proto.delta
    assert "smallest group" in k_before.proto.help and "smallest group" in k_after.proto.help


def test_every_tab_measured_on_the_exact_rows_says_so(at):
    """Tabs 3 (how unique) and 4 (generalisation) show figures measured on every exact row with no label, while
    tabs 1 and 2 carry one: anything from private rows that ε does not cover says so where it appears."""
    badges = [c.value for c in at.caption if "computed on the raw data" in c.value]
    assert any("Uniqueness of the exact rows" in b for b in badges), badges
    assert any("Before and after, from the exact rows" in b for b in badges), badges


def test_dp_slider_moves_the_reading(at):
    before = metric(at, "With DP at ε = 1")
    at.select_slider(key="re_eps").set_value(50.0).run()
    assert not at.exception
    after = metric(at, "With DP at ε = 50")
    assert int(after.rstrip("%")) > int(before.rstrip("%"))


def _upload(at, content: bytes, name="data.csv"):
    at.file_uploader(key="re_upload").set_value((name, content, "text/csv")).run()
    assert not at.exception, [e.value for e in at.exception]


def test_upload_runs_uniqueness_and_generalisation(at):
    csv = datasets.to_csv_bytes(datasets.medical(300, 5))
    _upload(at, csv)
    assert any("300 rows" in c.value for c in at.caption)
    at.multiselect(key="re_up_qis").set_value(["age", "zip_code"]).run()
    at.selectbox(key="re_up_sensitive").set_value("diagnosis").run()
    assert not at.error, [e.value for e in at.error]
    before = [m.value for m in at.markdown if m.value.startswith("k-anonymity **")]
    at.number_input(key="re_up_band_age").set_value(20.0).run()
    assert not at.exception and not at.error
    after = [m.value for m in at.markdown if m.value.startswith("k-anonymity **")]
    assert before and after and before != after


@pytest.mark.parametrize(
    "content,message",
    [
        (b"", "CSV is empty"),
        (b"a,b\n", "no data rows"),
        (b'a,b\n1,"unterminated\n', "could not be parsed"),
    ],
)
def test_bad_uploads_show_an_error(at, content, message):
    _upload(at, content)
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    at.file_uploader(key="re_upload").set_value(None).run()


def test_upload_with_one_value_sensitive_column(at):
    _upload(at, b"age,zip,flag\n30,100,x\n31,100,x\n30,101,x\n")
    at.multiselect(key="re_up_qis").set_value(["age", "zip"]).run()
    at.selectbox(key="re_up_sensitive").set_value("flag").run()
    assert not at.exception
    assert any("has only one value" in e.value for e in at.error), [e.value for e in at.error]
    at.file_uploader(key="re_upload").set_value(None).run()


def test_typed_facts_are_shown_as_literal_text(at):
    at.text_input(key="re_known_ethnicity").set_value("[x](evil.example) <b>").run()
    assert not at.exception
    shown = " ".join(x.value for x in [*at.info, *at.success, *at.caption])
    assert "](evil" not in shown and "\\[x\\]" in shown
    at.text_input(key="re_known_ethnicity").set_value("").run()


def test_an_uploads_quasi_identifiers_are_chosen_not_the_first_two_columns(at):
    """Issue 34.4: the default quasi-identifiers were simply the first two columns; now they are suggested from the
    column names alone (facts anyone can know), and with none such the owner is asked to choose."""
    _upload(at, b"record_id,visit_cost,age,sex,diagnosis\n1,10,30,F,a\n2,12,31,M,b\n3,9,30,F,c\n")
    assert at.multiselect(key="re_up_qis").value == ["age", "sex"]  # named facts, not record_id and visit_cost
    at.file_uploader(key="re_upload").set_value(None).run()
    _upload(at, b"u,v,w\n1,2,3\n4,5,6\n", name="plain.csv")
    assert at.multiselect(key="re_up_qis").value == []
    assert any("Choose the quasi-identifiers above" in i.value for i in at.info)
    assert not at.error and not at.exception, [e.value for e in at.error]
    at.multiselect(key="re_up_qis").set_value(["u"]).run()
    assert any(m.value.startswith("k-anonymity **") for m in at.markdown)  # the analysis runs once chosen
    at.file_uploader(key="re_upload").set_value(None).run()
