"""Differencing attack: exact recovery without noise, size refusals, DP noise vs ε, bad inputs, CLI."""

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpcore.attacks import differencing as dif
from dpcore.attacks import differencing_dp as dif_dp
from dpcore.cli import main
from dpcore.errors import DPError
from dpcore.figures import differencing as figs

from ...conftest import ROOT


@pytest.fixture(scope="module")
def pop():
    return dif.population()  # n=5000, seed=2: one "Jan Kees", 96 Peters


@pytest.fixture(scope="module")
def attack(pop):
    return dif.run_attack(pop)


def slides_table():
    """The slides' example: 95 Peters averaging 49, and Jan Kees, 97."""
    ages = [49] * 95 + [97] + [30] * 60
    names = ["Peter Smith"] * 95 + ["Jan Kees"] + ["Anna Jones"] * 60
    first = [s.split()[0] for s in names]
    return pd.DataFrame(
        {
            "person_id": np.arange(len(ages)),
            "name": names,
            "first_name": first,
            "last_name": [s.split()[1] for s in names],
            "age": ages,
        }
    )


# --- without noise --------------------------------------------------------------------------------


def test_slides_known_answer_x96_minus_y95_is_97():
    r = dif.run_attack(slides_table(), target_name="Jan Kees", group="first_name=Peter", min_group=50)
    assert (r.count_with, r.count_group) == (96, 95)
    assert r.avg_with == pytest.approx(49.5) and r.avg_group == pytest.approx(49.0)
    assert r.recovered == 97.0 and r.true_value == 97.0 and r.exact
    assert "49.5·96 − 49·95 = 4752 − 4655 = 97" in r.formula()


def test_default_attack_recovers_the_exact_age(pop, attack):
    assert attack.target_name == "Jan Kees" and attack.group == {"first_name": "Peter"}
    assert attack.count_with == 97 and attack.count_group == 96 == attack.group_size
    truth = float(pop.loc[pop["name"] == "Jan Kees", "age"].iloc[0])
    assert attack.recovered == truth == attack.true_value
    assert attack.exact
    # the direct question was refused, the 4 differencing queries answered
    assert [q.refused for q in attack.queries] == [True, False, False, False, False]
    assert [q.aggregate for q in attack.queries[1:]] == ["COUNT(*)", "AVG(age)", "COUNT(*)", "AVG(age)"]
    assert "name = 'Jan Kees' OR first_name = 'Peter'" in attack.queries[1].sql()


def test_group_in_words_for_the_page(pop):
    assert dif.group_words({"first_name": "Peter"}) == "first name Peter"
    assert dif.group_words(dif.parse_group("zip_code=10004,sex=F", pop)) == "zip code 10004 and sex F"
    assert dif.group_words({"ethnicity": "[x](y)"}, quote=lambda v: f"<{v}>") == "ethnicity <[x](y)>"


@pytest.mark.parametrize("target_id, group", [(7, "zip_code=10005"), (123, None), (4000, "zip_code=10003,sex=M")])
def test_attack_is_exact_for_other_targets_and_groups(pop, target_id, group):
    row = pop.iloc[target_id]
    if group == "zip_code=10003,sex=M" and (row["zip_code"] == 10003 and row["sex"] == "M"):
        group = "zip_code=10003,sex=F"
    if group == "zip_code=10005" and row["zip_code"] == 10005:
        group = "zip_code=10004"
    r = dif.run_attack(pop, target_id=target_id, group=group)
    assert r.target_id == target_id
    assert r.count_with - r.count_group == 1
    assert r.recovered == float(row["age"]) and r.exact


def test_shared_name_is_disambiguated_with_known_facts():
    pop = dif.population(10_000, 0)  # three people named Jan Kees
    ids = pop.index[pop["name"] == "Jan Kees"]
    assert len(ids) > 1
    r = dif.run_attack(pop, target_id=int(pop.loc[ids[0], "person_id"]), min_group=50)
    assert "zip_code" in r.target_sql and r.exact
    with pytest.raises(DPError, match="people are named 'Jan Kees'; pick the target by person id"):
        dif.find_target(pop, name="Jan Kees")


def test_interface_refuses_groups_smaller_than_n(pop):
    api = dif.AggregateInterface(pop, min_group=50)
    with pytest.raises(dif.GroupSizeRefused, match="at least 50"):
        api.avg(dif.Where.of({"name": "Jan Kees"}))
    with pytest.raises(DPError, match="fewer than 50 people"):
        api.count(dif.Where.of({"first_name": "Nobody"}))
    assert api.log[0].refused and api.log[0].answer is None
    assert api.count(dif.Where.of({"first_name": "Peter"})) == 96
    # boundary: a group of exactly N is answered, N + 1 is refused
    assert dif.AggregateInterface(pop, 96).count(dif.Where.of({"first_name": "Peter"})) == 96
    with pytest.raises(dif.GroupSizeRefused):
        dif.AggregateInterface(pop, 97).avg(dif.Where.of({"first_name": "Peter"}))


def test_refusal_does_not_reveal_the_group_size(pop):
    with pytest.raises(dif.GroupSizeRefused) as err:
        dif.AggregateInterface(pop, 50).count(dif.Where.of({"name": "Jan Kees"}))
    assert " 1 " not in str(err.value) and "fewer than 50" in str(err.value)


def test_group_too_small_or_containing_target_is_a_clear_error(pop, attack):
    with pytest.raises(DPError, match="fewer than 200 people.*pick a larger group"):
        dif.run_attack(pop, min_group=200)
    row = pop.iloc[attack.target_id]
    with pytest.raises(DPError, match="target is already in the group"):
        dif.run_attack(pop, group={"zip_code": int(row["zip_code"])})


# --- bad inputs -----------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0, -1, float("nan"), float("inf"), "abc"])
def test_bad_epsilon(attack, pop, eps):
    with pytest.raises(DPError, match="epsilon must"):
        dif_dp.privacy_cost(eps)
    with pytest.raises(DPError, match="epsilon must"):
        dif_dp.simulate(attack, eps, trials=10)
    with pytest.raises(DPError, match="epsilon must"):
        dif_dp.noisy_release(pop, attack, eps, seed=0)


@pytest.mark.parametrize("n", [0, -3, 2.5, "x"])
def test_bad_min_group(pop, n):
    with pytest.raises(DPError, match="minimum group size N must be a whole number > 0"):
        dif.run_attack(pop, min_group=n)
    with pytest.raises(DPError, match="minimum group size N"):
        dif.AggregateInterface(pop, n)


def test_unknown_target_name(pop):
    with pytest.raises(DPError, match="unknown target: no one is named 'Nobody Here'.*try e.g."):
        dif.run_attack(pop, target_name="Nobody Here")


@pytest.mark.parametrize("pid", [5000, 10**9])
def test_unknown_target_id(pop, pid):
    with pytest.raises(DPError, match="unknown target: no person with id"):
        dif.run_attack(pop, target_id=pid)


@pytest.mark.parametrize("pid", [-1, 1.5, "x", True])
def test_bad_target_id(pop, pid):
    with pytest.raises(DPError, match="person id must be a whole number >= 0"):
        dif.find_target(pop, person_id=pid)


def test_target_by_both_name_and_id(pop):
    with pytest.raises(DPError, match="either by name or by person id"):
        dif.find_target(pop, name="Jan Kees", person_id=1)


@pytest.mark.parametrize("k", [-1, -0.5, float("inf"), "many"])
def test_bad_k(attack, k):
    with pytest.raises(DPError, match=r"k \(years\) must be"):
        dif_dp.simulate(attack, 1.0, k=k, trials=10)
    with pytest.raises(DPError, match=r"k \(years\) must be"):
        dif_dp.success_curve(attack, k=k, trials=10)


@pytest.mark.parametrize("trials", [0, -5, 2_000_000])
def test_bad_trials(attack, trials):
    with pytest.raises(DPError, match="number of simulated releases"):
        dif_dp.simulate(attack, 1.0, trials=trials)


@pytest.mark.parametrize(
    "spec, msg",
    [
        ("", "group is empty"),
        ("first_name", "not COLUMN=VALUE"),
        ("salary=5", "unknown group column 'salary'"),
        ("name=Jan Kees", "full name is one person"),
        ("zip_code=abc", "zip_code must be a whole number"),
    ],
)
def test_bad_group_spec(pop, spec, msg):
    with pytest.raises(DPError, match=msg):
        dif.run_attack(pop, group=spec)


def test_true_value_outside_public_bounds():
    with pytest.raises(DPError, match="public bounds"):
        dif_dp.simulate(120.0, 1.0, trials=10)


# --- with noise -----------------------------------------------------------------------------------


def test_composition_is_4_epsilon_total_and_2_epsilon_for_the_target():
    c = dif_dp.privacy_cost(0.5)
    assert c["total_epsilon"] == 2.0 and c["target_epsilon"] == 1.0 and c["delta"] == 0.0
    assert c["noise_scale_sum"] == 144.0 and c["noise_scale_count"] == 2.0
    assert "sequential composition" in c["composition"]


def test_analytic_success_known_answers():
    assert dif_dp.analytic_success(1.0, 0) == 0.0
    # b = 72/ε = 1, k = 1: 1 − e^{-1}·1.5
    assert dif_dp.analytic_success(72.0, 1) == pytest.approx(1 - math.exp(-1) * 1.5)
    vals = dif_dp.analytic_success(np.array([0.1, 1, 10, 100]), 5)
    assert np.all(np.diff(vals) > 0)


def test_success_is_low_at_small_epsilon_and_high_at_large(attack):
    low = dif_dp.simulate(attack, 0.01, k=5, trials=20_000, seed=1)
    high = dif_dp.simulate(attack, 1000.0, k=5, trials=20_000, seed=1)
    assert low["success_probability"] < 0.03
    assert high["success_probability"] > 0.99
    assert low["mean_abs_error"] > 20 and high["mean_abs_error"] < 0.5
    assert low["label"].startswith("simulation")


def test_simulation_matches_the_exact_formula(attack):
    # ε = 30: b = 2.4, clipping at 18/90 is essentially never hit for a 54-year-old
    sim = dif_dp.simulate(attack, 30.0, k=5, trials=40_000, seed=3)
    p = sim["analytic_success_unclipped"]
    sd = math.sqrt(p * (1 - p) / 40_000)
    assert abs(sim["success_probability"] - p) < 5 * sd
    assert 0.70 < p < 0.80


def test_clipped_simulation_never_worse_than_unclipped(attack):
    curve = dif_dp.success_curve(attack, k=3, trials=20_000, seed=4)
    sd = np.sqrt(np.maximum(curve["analytic_unclipped"] * (1 - curve["analytic_unclipped"]), 1e-4) / 20_000)
    assert np.all(curve["simulated"] >= curve["analytic_unclipped"] - 5 * sd)
    assert curve["simulated"].iloc[0] < 0.02 and curve["simulated"].iloc[-1] > 0.99
    assert np.allclose(curve["total_epsilon"], 4 * curve["epsilon_per_query"])


def test_simulation_is_reproducible_and_estimates_stay_in_bounds(attack):
    a = dif_dp.simulate(attack, 1.0, trials=2_000, seed=9)["estimates"]
    b = dif_dp.simulate(attack, 1.0, trials=2_000, seed=9)["estimates"]
    c = dif_dp.simulate(attack, 1.0, trials=2_000, seed=10)["estimates"]
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert a.min() >= 18 and a.max() <= 90


def test_noisy_release_reproducible_and_accurate_at_huge_epsilon(pop, attack):
    r1 = dif_dp.noisy_release(pop, attack, 1.0, seed=5)
    r2 = dif_dp.noisy_release(pop, attack, 1.0, seed=5)
    assert r1 == r2 and r1["seeded"]
    assert 18 <= r1["estimate"] <= 90 and r1["total_epsilon"] == 4.0
    assert r1["label"] == "reproducible noise: not a DP release" and "0.00001 years" in r1["sum_rounding"]
    big = dif_dp.noisy_release(pop, attack, 1000.0, seed=5)  # the largest ε a release takes (dpcore.limits)
    assert [a["count_noisy"] for a in big["answers"]] == [97, 96]
    assert abs(big["estimate"] - attack.true_value) < 1  # Lap(0.072) twice: off by a year with P < 1e-5


# --- figures --------------------------------------------------------------------------------------


def test_figures_have_titles_axes_and_log_epsilon(attack):
    sim = dif_dp.simulate(attack, 1.0, trials=500)
    curve = dif_dp.success_curve(attack, trials=200)
    for fig in (
        figs.estimates_histogram(sim["estimates"], attack.true_value, 1.0, 5),
        figs.success_chart(curve, 1.0, 5),
    ):
        assert fig.layout.title.text
        assert fig.layout.yaxis.title.text
    totals = figs.totals_chart(attack)  # two stacked panels of lying bars: each panel's title gives the unit
    assert totals.layout.title.text
    assert [a.text for a in totals.layout.annotations if "(years)" in a.text] == [
        "two allowed totals (years)",
        "their difference: the target's age (years)",
    ]
    assert figs.success_chart(curve, 1.0, 5).layout.xaxis.type == "log"
    assert "ε per query" in figs.success_chart(curve, None, 5).layout.xaxis.title.text
    assert "years" in figs.estimates_histogram(sim["estimates"], 54, 1.0, 5).layout.xaxis.title.text


# --- CLI ------------------------------------------------------------------------------------------


def test_cli_without_noise(capsys):
    assert main(["differencing"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["recovered_value"] == out["true_value"] == 54.0 and out["exact"]
    assert len(out["queries"]) == 5 and out["queries"][0]["refused"]
    assert [q["answer"] for q in out["queries"]][1::2] == [97, 96]
    assert "noisy" not in out


def test_cli_with_noise(capsys):
    assert (
        main(
            [
                "differencing",
                "--epsilon",
                "1000",
                "--trials",
                "5000",
                "--within",
                "2",
                "--target-id",
                "7",
                "--group",
                "zip_code=10004",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["target"]["person_id"] == 7 and out["exact"]
    noisy = out["noisy"]
    assert noisy["total_epsilon"] == 4000 and noisy["success_probability"] > 0.99
    assert noisy["simulation"]["trials"] == 5000 and "estimates" not in noisy["simulation"]
    assert len(noisy["example_release"]["answers"]) == 2


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--epsilon", "0"], "epsilon must be > 0"),
        (["--epsilon", "-2"], "epsilon must be > 0"),
        (["--min-group", "0"], "minimum group size N must be a whole number > 0"),
        (["--target", "Nobody Here"], "unknown target"),
        (["--target-id", "99999"], "unknown target"),
        (["--epsilon", "1", "--within", "-1"], r"k (years) must be"),
        (["--group", "zip_code=abc"], "zip_code must be a whole number"),
    ],
)
def test_cli_bad_input_one_line(capsys, args, msg):
    assert main(["differencing", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and msg in err


def test_cli_subprocess_no_traceback():
    r = subprocess.run(
        [sys.executable, "-m", "dpcore", "differencing", "--min-group", "-1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "minimum group size N" in r.stderr


def test_the_typed_release_cost_and_simulation_read_and_write_their_json():
    """The page reads :class:`NoisyRelease`, :class:`PrivacyCost` and :class:`Simulation`; each holds the JSON the
    CLI prints, field for field, and writes it back unchanged. The release's table keeps its noise's decimals."""
    pop = dif.population(300, seed=2)
    attack = dif.run_attack(pop, min_group=1, group="zip_code=10001")
    d = dif_dp.noisy_release(pop, attack, 1.0, seed=3)
    rel = dif_dp.NoisyRelease.from_dict(d)
    assert rel.to_dict() == d and list(rel.to_dict()) == list(d)
    assert rel.estimate == d["estimate"] and rel.cost.total_epsilon == d["total_epsilon"] and rel.label == d["label"]
    table = rel.table()
    assert list(table.columns) == ["group", "noisy count", "noisy average age", "WHERE clause"]
    assert len(table) == len(d["answers"])
    cost = dif_dp.privacy_cost(2.0)
    assert dif_dp.PrivacyCost.from_dict(cost).to_dict() == cost
    sim = dif_dp.simulate(attack, 1.0, trials=200, seed=1)
    typed = dif_dp.Simulation.from_dict(sim)
    back = typed.to_dict()
    assert back.keys() == sim.keys() and (back["estimates"] == sim["estimates"]).all()
    assert typed.success_probability == sim["success_probability"] and typed.k_years == sim["k_years"]
