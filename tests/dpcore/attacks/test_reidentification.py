"""The re-identification story: the default neighbour is singled out, and the numbers are one function's."""

import math

import pandas as pd
import pytest

from dpcore.attacks import linkage
from dpcore.attacks import reidentification as reid
from dpcore.data import datasets


@pytest.fixture(scope="module")
def story():
    return reid.story()


def test_default_neighbour_is_singled_out_with_her_diagnosis(story):
    nb = story.neighbour
    assert (story.settings.n, story.settings.seed) == (1_000, datasets.REID_SEED)
    assert nb.matches == 1 and nb.singled_out  # was 17 on 10,000 patients
    rec = nb.record()
    assert rec["sex"] == "F" and rec["age"] == 34 and rec["zip_code"] == 10001
    assert 50_000 <= rec["salary"] <= 60_000
    assert rec["diagnosis"] == "hypertension"
    text = reid.neighbour_sentence(nb)
    assert text.startswith("Exactly 1 patient matches") and "'hypertension'" in text and "She is" in text


def test_matches_fall_as_facts_are_added(story):
    assert story.neighbour.narrowing["matching patients"].tolist() == [18, 5, 1]
    rel = reid.release_of(reid.population(1_000, datasets.REID_SEED))
    wider = reid.neighbour(rel, (("age", "34"), ("zip_code", "10001")))
    assert wider.matches == 5 and not wider.singled_out
    narrower = reid.neighbour(rel, (("age", "34"), ("zip_code", "10001"), ("sex", "F")))
    assert 1 <= narrower.matches < wider.matches
    assert "add another fact" in reid.neighbour_sentence(wider)


def test_a_fact_field_takes_a_comparison():
    rel = reid.release_of(reid.population(1_000, datasets.REID_SEED))
    nb = reid.neighbour(rel, (("age", ">=80"), ("sex", "f")))
    assert nb.matches == int(((rel.age >= 80) & (rel.sex == "F")).sum()) > 1
    assert nb.narrowing["fact known"].tolist()[0].endswith(">= 80")


def test_headline_is_the_unique_share(story):
    assert story.uniqueness.unique_fraction == pytest.approx(0.998)
    claim, detail = story.headline()  # a short claim for bold type, the detail for plain
    assert claim == "99.8% of patients are unique"
    assert detail.startswith(
        "998 of the 1,000 patients are each the only one in the release with their age, sex, zip code and salary"
    )


def test_headline_counts_one_patient_in_the_singular(story):
    from dataclasses import replace

    one = replace(story.uniqueness, unique_records=1, unique_fraction=0.001)
    assert reid.headline(one) == (
        "0.1% of patients are unique",
        "1 of the 1,000 patients is the only one in the "
        "release with their age, sex, zip code and salary: anyone who knows those facts "
        "about them finds their row.",
    )


def test_dp_figure_does_not_depend_on_the_grid():
    """The page (ε on the slider's grid) and the report (any ε) must get the same figure at the same ε."""
    df = datasets.medical(1_000, seed=3)
    qis = ["age", "sex", "zip_code", "salary"]
    a = linkage.dp_attack_simulation(df, qis, "diagnosis", [1.0], n_releases=50, n_targets=50, seed=4)
    b = linkage.dp_attack_simulation(df, qis, "diagnosis", [0.3, 1.0, 7.0], n_releases=50, n_targets=50, seed=4)
    ra = a["curve"].set_index("epsilon")["success_rate"]
    rb = b["curve"].set_index("epsilon")["success_rate"]
    assert ra[1.0] == rb[1.0]
    part = reid.dp_part(df, qis, "diagnosis", 3.0, 50, 50, 4)  # 3 is not on the slider's grid
    assert part["at_epsilon"] == reid.dp_part(df, qis, "diagnosis", 3.0, 50, 50, 4)["at_epsilon"]


def test_guarantee_for_a_known_patients_diagnosis_is_replace_one():
    g = reid.dp_guarantee(0.5, 0.4)
    assert g["epsilon_add_remove"] == 0.5 and g["epsilon_replace_one"] == 1.0
    assert g["likelihood_ratio"] == pytest.approx(math.e)
    assert g["ceiling"] == pytest.approx(min(1.0, math.e * 0.4))


def test_simulated_attacker_stays_under_the_dp_ceiling(story):
    """The simulated success (within its interval) never beats the replace-one ceiling e^(2ε)·blind guess."""
    curve = story.dp["curve"]
    for e, low in zip(curve["epsilon"], curve["ci_low"]):
        assert low <= reid.dp_guarantee(e, story.dp["prior_guess"])["ceiling"] + 1e-12


def test_findings_use_whole_patients_and_plain_names(story):
    f = story.findings()
    assert list(f.columns) == ["finding", "value"]
    values = dict(zip(f["finding"], f["value"]))
    assert values["k-anonymity (smallest group of identical patients)"] == "1 patient"
    assert any(v == "1 patient" for k, v in values.items() if k.startswith("patients matching the neighbour"))
    steps = reid.steps_table(story.steps)
    assert "unique share" in steps.columns and "unique_fraction" not in steps.columns
    assert steps["unique share"].iloc[-1] == "99.8%"
    assert isinstance(steps, pd.DataFrame)


def test_display_names_and_the_revealing_columns_first(story):
    assert reid.label("zip_code") == "zip code" and reid.label("has_rare_disease") == "rare disease"
    assert reid.label("first_name") == "first name"  # any other snake_case name reads with spaces
    assert reid.QI_LABELS == {q: reid.label(q) for q in datasets.QUASI_IDENTIFIERS}
    table = story.neighbour.table()
    assert list(table.columns) == [
        "diagnosis",
        "rare disease",
        "age",
        "sex",
        "zip code",
        "birth year",
        "ethnicity",
        "salary",
    ]
    rec = story.neighbour.record()  # the same row, only renamed and reordered
    assert table.iloc[0].tolist() == [
        rec[c] for c in ["diagnosis", "has_rare_disease", "age", "sex", "zip_code", "birth_year", "ethnicity", "salary"]
    ]
    # what else the attacker learns: in the table's order and words
    assert [line.split(":")[0] for line in story.neighbour.result.learned[1:]] == ["diagnosis", "rare disease"]
    df = pd.DataFrame({"b_x": [1], "a": [2]})
    assert list(reid.shown_table(df, first=("a", "missing")).columns) == ["a", "b x"]
    assert list(df.columns) == ["b_x", "a"]  # the data itself is untouched


def _sim(at, prior, no_noise=0.98, eps=1.0, values=6):
    return {
        "epsilon": eps,
        "n_values": values,
        "sensitive": "diagnosis",
        "typical_noise": 1 / eps,
        "at_epsilon": at,
        "prior_guess": prior,
        "no_noise": no_noise,
        **reid.dp_guarantee(eps, prior),
    }


def test_guarantee_text_says_when_the_bound_says_nothing():
    """e^(2ε) × the blind guess above 100%: the box says the bound does not limit the guess and below which ε it
    would (it read "at most 100%"); below that ε it keeps its ceiling."""
    text = reid.dp_guarantee_text(_sim(0.3, 0.428), label=reid.label)
    assert "at most 100%" not in text and "**At ε = 1 that bound says nothing:** 7.39× the blind guess's 43%" in text
    assert "only for ε below 0.42" in text and reid.useful_epsilon(0.428) == pytest.approx(0.4243, abs=1e-4)
    small = reid.dp_guarantee_text(_sim(0.3, 0.428, eps=0.2), label=reid.label)
    assert "here at most 64% for an attacker whose best guess without it was right 43%" in small


def test_why_text_explains_an_attacker_worse_than_blind():
    worse = reid.dp_why(_sim(0.18, 0.43, eps=0.05), label=reid.label)
    assert "does **worse than a blind guess** (18% against 43%)" in worse
    assert (
        "the largest of the 6 noisy counts is close to a random pick among the 6 values of diagnosis (right about 17%"
        in worse
    )
    assert "worse than a blind guess" not in reid.dp_why(_sim(0.6, 0.43), label=reid.label)
    exact = reid.dp_why(_sim(0.98, 0.43, eps=50), label=reid.label)
    assert "reads the counts as if they were exact" in exact
