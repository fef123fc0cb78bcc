"""Neighbour filter, register linkage and the DP attack simulation: known answers,
the default scenario on seeded data, CLI and bad inputs."""

import json

import numpy as np
import pandas as pd
import pytest

from dpcore.attacks import linkage
from dpcore.attacks.linkage import Condition, find_matches, link, parse_field, parse_known, parse_range
from dpcore.attacks.uniqueness import uniqueness
from dpcore.cli import main
from dpcore.data import datasets
from dpcore.errors import DPError

ON = ["age", "sex", "zip_code"]


@pytest.fixture
def register():
    return pd.DataFrame(
        {
            "person_id": [0, 2, -1, -2, 3],
            "name": ["Ann", "Bob", "Eve", "Zed", "Cat"],
            "age": [30, 40, 50, 60, 50],
            "sex": ["F", "M", "F", "M", "F"],
            "zip_code": [10001, 10002, 10001, 10003, 10001],
        }
    )


# --- find your neighbour --------------------------------------------------------------------------


def test_neighbour_known_answer(release):
    r = find_matches(release.drop(columns="person_id"), [parse_field("age", "25-35"), parse_field("sex", "f")])
    assert r.matches == 2 and len(r.records) == 2
    text = " ".join(r.learned)
    assert "2 records match" in text
    assert "has_rare_disease: 0 of 2 matches have it" in text
    assert "cold (1)" in text and "flu (1)" in text
    named = find_matches(
        release.drop(columns="person_id"),
        [parse_field("age", "25-35"), parse_field("sex", "f")],
        label=lambda c: {"has_rare_disease": "rare disease"}.get(c, c),
    )
    assert [line.split(":")[0] for line in named.learned[1:]] == ["rare disease", "diagnosis"]  # display names


def test_neighbour_unique_match_discloses(release):
    r = find_matches(release, [parse_known("zip_code=10001"), parse_range("salary=39000:45000")])
    assert r.matches == 1 and r.records["diagnosis"].tolist() == ["cancer"]
    assert any("learns it for certain" in line for line in r.learned)


def test_neighbour_homogeneous_class(release):
    r = find_matches(release, [parse_field("diagnosis", "flu")], sensitive="diagnosis")
    assert r.matches == 2 and any("homogeneity" in line for line in r.learned)


def test_neighbour_no_match(release):
    r = find_matches(release, [parse_known("age=99")])
    assert r.matches == 0 and "No record matches" in r.learned[0]


def test_yes_no_column(release):
    assert find_matches(release, [parse_known("has_rare_disease=yes")]).matches == 2
    with pytest.raises(DPError, match="give true or false"):
        find_matches(release, [parse_known("has_rare_disease=maybe")])


def test_default_scenario_on_seeded_data():
    df = datasets.medical(10_000, seed=0)
    conds = [parse_field(c, t) for c, t in linkage.DEFAULT_SCENARIO.items()]
    r = find_matches(df, conds)
    assert r.matches == 17
    rec = r.records
    assert (rec["age"] == 34).all() and (rec["zip_code"] == 10001).all()
    assert rec["salary"].between(50_000, 60_000).all()
    assert int(rec["has_rare_disease"].sum()) == 0
    assert find_matches(df, conds + [parse_field("sex", "M")]).matches == 5
    # on a smaller release the same facts single out a handful of people
    assert find_matches(datasets.medical(2_000, seed=0), conds).matches == 4


def test_parse_field_forms():
    assert parse_field("age", "") is None and parse_field("age", None) is None
    assert parse_field("age", "34") == Condition("age", value="34")
    for text in ("30-39", "30:39", "30 to 39", "30..39", "30 – 39"):
        assert parse_field("age", text) == Condition("age", low=30, high=39)
    assert parse_range("salary=50,000:60,000") == Condition("salary", low=50_000, high=60_000)
    assert parse_field("x", "-5:-1") == Condition("x", low=-5, high=-1)


@pytest.mark.parametrize(
    "fn,arg,message",
    [
        (parse_range, "salary=abc:60000", "must be a number"),
        (parse_range, "salary=50000:", "must be a number"),
        (parse_range, "salary=60000:50000", "LO must be <= HI"),
        (parse_range, "salary=50000", "must look like LO:HI"),
        (parse_range, "50000:60000", "must look like COL=LO:HI"),
        (parse_known, "age", "is not COLUMN=VALUE"),
        (parse_known, "age=", "no value given"),
    ],
)
def test_bad_condition_text(fn, arg, message):
    with pytest.raises(DPError, match=message):
        fn(arg)


def test_bad_conditions_against_the_data(release):
    with pytest.raises(DPError, match="did you mean 'salary'"):
        find_matches(release, [parse_known("salery=1")])
    with pytest.raises(DPError, match="age must be a number"):
        find_matches(release, [parse_known("age=thirty")])
    with pytest.raises(DPError, match="not numeric, so it cannot take a range"):
        find_matches(release, [parse_range("sex=1:2")])
    with pytest.raises(DPError, match="at least one known fact"):
        find_matches(release, [None, None])


# --- linkage --------------------------------------------------------------------------------------


def test_linkage_known_answer(release, register):
    r = link(release, register, ON)
    assert r.register_size == 5 and r.in_release == 3
    assert (r.matched_none, r.matched_one, r.matched_many) == (1, 3, 1)
    assert r.right_person == 2 and r.wrong_person == 1  # Bob and Cat right; outsider Eve lands on Cat's row
    assert r.diagnoses_disclosed == 2 and r.rare_disclosed == 2
    assert r.attribute_disclosed == 2  # Ann's class holds flu and cold: not disclosed
    assert r.precision == pytest.approx(2 / 3) and r.success_rate == pytest.approx(2 / 3)
    ex = r.examples
    assert set(ex["name"]) == {"Bob", "Eve", "Cat"}
    assert ex.set_index("name")["right person?"].to_dict() == {"Bob": True, "Eve": False, "Cat": True}
    assert ex.set_index("name").loc["Eve", "linked diagnosis"] == "cancer"
    d = r.to_dict()
    assert d["matched_one"] == 3 and d["on"] == ON


def test_linkage_bad_inputs(release, register):
    with pytest.raises(DPError, match="at least one quasi-identifier"):
        link(release, register, [])
    with pytest.raises(DPError, match="unknown register column 'salary'"):
        link(release, register, ["age", "salary"])
    with pytest.raises(DPError, match="hidden person_id"):
        link(release.drop(columns="person_id"), register, ON)


def test_public_register_is_seeded_and_covers_a_fraction():
    pop = datasets.medical_population(2_000, seed=3)
    reg = linkage.public_register(pop, coverage=0.25, outsiders=1.0, seed=7)
    assert list(reg.columns) == ["person_id"] + linkage.REGISTER_COLUMNS
    assert len(reg) == 1_000 and (reg["person_id"] >= 0).sum() == 500
    assert reg["person_id"].is_unique
    inside = reg[reg["person_id"] >= 0].set_index("person_id").sort_index()
    truth = pop.set_index("person_id").loc[inside.index]
    assert (inside["name"] == truth["name"]).all() and (inside["birth_year"] == truth["birth_year"]).all()
    pd.testing.assert_frame_equal(reg, linkage.public_register(pop, coverage=0.25, outsiders=1.0, seed=7))
    assert not reg.equals(linkage.public_register(pop, coverage=0.25, outsiders=1.0, seed=8))
    with pytest.raises(DPError, match="coverage must be between 0 and 1"):
        linkage.public_register(pop, coverage=1.5)


def test_linkage_without_outsiders_is_always_right():
    pop = datasets.medical_population(3_000, seed=1)
    reg = linkage.public_register(pop, coverage=0.5, outsiders=0.0, seed=2)
    r = link(pop.drop(columns="name"), reg, linkage.LINKABLE_COLUMNS)
    assert r.matched_one > 50 and r.right_person == r.matched_one and r.matched_none == 0


# --- DP defence (simulation) ---------------------------------------------------------------------------


def test_dp_simulation_bounds_and_reproducibility():
    df = datasets.medical(3_000, seed=2)
    qis = ["age", "sex", "zip_code", "salary"]
    eps = [0.01, 0.1, 1.0, 10.0, 100.0]
    sim = linkage.dp_attack_simulation(df, qis, "diagnosis", eps, n_releases=100, n_targets=100, seed=5)
    c = sim["curve"]
    assert sim["simulation"] is True and sim["n_values"] == 6
    assert sim["no_noise"] > 0.9  # nearly everyone is unique on these QIs
    rate = dict(zip(c["epsilon"], c["success_rate"]))
    assert rate[100.0] == pytest.approx(sim["no_noise"], abs=0.03)
    assert abs(rate[0.01] - 1 / 6) < 0.03  # pure noise: a guess among 6 diagnoses
    assert rate[0.1] < rate[1.0] < rate[10.0]
    assert (c["ci_low"] <= c["success_rate"]).all() and (c["success_rate"] <= c["ci_high"]).all()
    again = linkage.dp_attack_simulation(df, qis, "diagnosis", eps, n_releases=100, n_targets=100, seed=5)
    pd.testing.assert_frame_equal(c, again["curve"])


def test_dp_simulation_bad_inputs(release):
    with pytest.raises(DPError, match="epsilon must be > 0"):
        linkage.dp_attack_simulation(release, ON, "diagnosis", [0.0])
    with pytest.raises(DPError, match="choose a sensitive column"):
        linkage.dp_attack_simulation(release, ON, None, [1.0])
    with pytest.raises(DPError, match="has only one value"):
        linkage.dp_attack_simulation(release.assign(diagnosis="x"), ON, "diagnosis", [1.0])
    many = pd.DataFrame({"q": np.zeros(500), "s": np.arange(500)})
    with pytest.raises(DPError, match="at most 200"):
        linkage.dp_attack_simulation(many, ["q"], "s", [1.0])


def test_noisy_neighbour_count_is_seeded_release(release):
    a = linkage.noisy_neighbour_count(release, [parse_known("sex=F")], epsilon=1.0, random_state=1)
    b = linkage.noisy_neighbour_count(release, [parse_known("sex=F")], epsilon=1.0, random_state=1)
    assert a == b and isinstance(a, int)


# --- CLI ------------------------------------------------------------------------------------------------


@pytest.fixture
def csv(release, tmp_path):
    path = tmp_path / "release.csv"
    release.drop(columns="person_id").to_csv(path, index=False)
    return str(path)


def test_cli_known_answer(csv, capsys):
    assert main(["linkage", "--data", csv, "--known", "sex=F", "--range", "age=25:35"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["matches"] == 2 and len(out["records"]) == 2
    assert {r["diagnosis"] for r in out["records"]} == {"flu", "cold"}
    assert out["conditions"] == ["sex = F", "age in [25, 35]"]


def test_cli_known_fact_with_an_operator(csv, release, capsys):
    """--known takes the same COLUMN op VALUE conditions as the query console (one parser, dpcore.data.filters)."""
    assert main(["linkage", "--data", csv, "--known", "sex=f", "--known", "age>=30"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["matches"] == int(((release.sex == "F") & (release.age >= 30)).sum()) > 0
    assert out["conditions"] == ["sex = f", "age >= 30"]


def test_cli_default_scenario(tmp_path, capsys):
    path = tmp_path / "m.csv"
    datasets.medical(10_000, seed=0).to_csv(path, index=False)
    argv = [
        "linkage",
        "--data",
        str(path),
        "--known",
        "age=34",
        "--known",
        "zip_code=10001",
        "--range",
        "salary=50000:60000",
        "--max-records",
        "3",
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["matches"] == 17 and out["records_shown"] == 3 and out["n"] == 10_000


@pytest.mark.parametrize(
    "args,message",
    [
        (["--known", "agee=34"], "did you mean 'age'"),
        (["--range", "salary=lots:more"], "must be a number"),
        (["--range", "salary=60000:50000"], "LO must be <= HI"),
        ([], "at least one known fact"),
        (["--known", "age=34", "--sensitive", "diagnosys"], "did you mean 'diagnosis'"),
    ],
)
def test_cli_bad_inputs(csv, capsys, args, message):
    assert main(["linkage", "--data", csv, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_cli_empty_csv(tmp_path, capsys):
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    assert main(["linkage", "--data", str(path), "--known", "age=1"]) == 2
    assert "CSV is empty" in capsys.readouterr().err


def test_figures_have_titles_and_axis_titles(release, register):
    from dpcore.figures import reidentification as figs

    sim = linkage.dp_attack_simulation(
        datasets.medical(500, seed=1),
        ["age", "sex"],
        "diagnosis",
        [0.1, 1.0, 10.0],
        n_releases=10,
        n_targets=20,
        seed=0,
    )
    rep = uniqueness(release, ON, "diagnosis")
    for fig in (
        figs.linkage_chart(link(release, register, ON)),
        figs.dp_success_chart(sim, 1.0),
        figs.class_size_chart(rep),
        figs.generalisation_chart({"a": 0.5}, {"a": 0.1}),
    ):
        assert fig.layout.title.text and fig.layout.xaxis.title.text
    fig = figs.dp_success_chart(sim, 1.0)
    assert fig.layout.xaxis.type == "log"
    label = next(a for a in fig.layout.annotations if a.text.strip() == "your ε = 1")
    assert label.x == pytest.approx(0.0)  # log10(1): annotations on log axes take log10 units
