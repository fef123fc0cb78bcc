"""The linkage on a synthetic table and the utility measures, on tables with known answers (no release runs)."""

import numpy as np
import pandas as pd
import pytest

from dpcore.attacks import linkage
from dpcore.attacks import reidentification as reid
from dpcore.data import datasets
from dpcore.synth import attack, utility
from dpcore.synth import schema as S


@pytest.fixture(scope="module")
def story():
    sch = S.medical()
    real = reid.release_of(reid.population(1_000, datasets.REID_SEED))[list(sch.names)]
    codes = sch.encode(real)
    targets = linkage.pick_targets(len(real), 200, 0)
    att = attack.attacker(
        real,
        codes,
        ("age", "sex", "zip_code", "salary"),
        "diagnosis",
        reid.conditions(reid.StorySettings().facts),
        targets,
    )
    return sch, real, codes, att


def test_the_attacker_knows_her_and_the_blind_guess(story):
    sch, real, codes, att = story
    assert att.neighbour_code == sch.column("diagnosis").categories.index("hypertension")
    assert att.prior_code == sch.column("diagnosis").categories.index("none")
    assert len(att.targets) == 200 and 0 < len(att.unique) < len(real)


def test_the_real_table_as_synthetic_gives_everyone_away(story):
    """Releasing the table itself (the worst 'synthetic' table): her row is found and read, every unique patient's
    combination and diagnosis appear."""
    sch, real, codes, att = story
    r = attack.attack_table(att, real, codes)
    assert r.neighbour_matches == 1 and r.neighbour_right is True
    assert r.unique_exposed == 1.0 and r.targets_matched == 1.0
    assert r.targets_right > 0.85  # ties at the salary bins' resolution keep it under 100%


def test_a_table_of_other_people_reveals_nothing_specific(story):
    """Another population from the same generator: her row is not in it; the guess rate is near the blind one."""
    sch, real, codes, att = story
    other = datasets.medical(1_000, 12345)[list(sch.names)]
    r = attack.attack_table(att, other, sch.encode(other))
    blind = float(np.mean(att.targets["diagnosis"] == att.prior_code))
    assert r.unique_exposed < 0.1
    assert abs(r.targets_right - blind) < 0.12  # 200 targets: a few points either way


def test_attribute_guess_known_answer():
    release = pd.DataFrame({"a": [1, 1, 1, 2, 3], "s": ["x", "x", "y", "z", "z"]})
    targets = pd.DataFrame({"a": [1, 2, 4]})
    guess, matched = linkage.attribute_guess(release, targets, ["a"], "s", fallback="blind")
    assert guess.tolist() == ["x", "z", "blind"] and matched.tolist() == [3, 1, 0]
    guess, _ = linkage.attribute_guess(release, targets, ["a"], "s")
    assert guess[2] in ("x", "z")  # the release's most common value (x and z both twice: the first counted)


def test_pick_targets_are_the_dp_simulations_targets():
    df = reid.release_of(reid.population(1_000, datasets.REID_SEED))
    rng = np.random.default_rng(0)
    assert (linkage.pick_targets(1_000, 200, 0) == rng.choice(1_000, size=200, replace=False)).all()
    assert len(set(linkage.pick_targets(len(df), 5_000, 1))) == len(df)


def test_membership_scores_count_identical_records():
    sch = S.Schema((S.Column("a", categories=(0, 1, 2)), S.Column("b", categories=("u", "v"))))
    synth = sch.encode(pd.DataFrame({"a": [0, 0, 1], "b": ["u", "u", "v"]}))
    pool = sch.encode(pd.DataFrame({"a": [0, 1, 2, 0], "b": ["u", "v", "v", "v"]}))
    assert attack.membership_scores(synth, pool, sch).tolist() == [2, 1, 0, 0]


def test_membership_audit_catches_a_table_that_copies_its_members():
    """The one-run audit has power: a "synthetic" table that is the members' own rows proves a large ε."""
    sch = S.medical()
    pool = datasets.medical(2_000, 99)[list(sch.names)]
    included = np.random.default_rng(1).random(len(pool)) < 0.5
    codes = sch.encode(pool)
    leak = attack.membership_test(codes[included], codes, included, sch, delta=0.0)
    assert leak["auc"] > 0.9 and leak["lower_bound"] > 2.0
    other = sch.encode(datasets.medical(1_000, 7)[list(sch.names)])
    fair = attack.membership_test(other, codes, included, sch, delta=0.0)
    assert fair["lower_bound"] < 0.5 and abs(fair["auc"] - 0.5) < 0.05


def test_cell_errors_known_answer():
    sch = S.Schema((S.Column("a", categories=(0, 1)), S.Column("b", categories=(0, 1))))
    real = pd.DataFrame({"a": [0, 0, 1, 1], "b": [0, 1, 0, 1]})
    synth = pd.DataFrame({"a": [0, 0, 0, 1], "b": [0, 0, 1, 1]})
    e = utility.marginal_errors(sch.encode(real), sch.encode(synth), sch)
    assert e["one_way"] == {"a": 25.0, "b": 0.0}  # a = 0: 75% of the synthetic rows against 50%
    assert e["two_way"] == {"a+b": 25.0}  # (0, 0): 50% against 25%
    assert e["two_way_max"] == 25.0 and e["one_way_mean"] == 12.5
    same = utility.marginal_errors(sch.encode(real), sch.encode(real), sch)
    assert same["two_way_max"] == 0.0


def test_standard_questions_on_the_same_table_have_no_error():
    df = datasets.medical(2_000, 3)
    ans = utility.standard_answers(df, df)
    assert {a["question"] for a in ans} >= {"patients 65 or older", "mean age", "mean salary"}
    assert all(a["error"] == 0 for a in ans)
    mean_age = next(a for a in ans if a["question"] == "mean age")
    assert mean_age["real"] == pytest.approx(df["age"].mean())
    # a synthetic table without the rare-disease column skips its question
    assert "patients with the rare disease" not in {
        a["question"] for a in utility.standard_answers(df, df.drop(columns=["has_rare_disease"]))
    }


def test_model_accuracy_trained_on_real_rows_and_on_noise():
    sch = S.medical()
    train, test = datasets.medical(1_000, 1)[sch.names], datasets.medical(2_000, 2)[sch.names]
    good = utility.model_accuracy(train, test, sch)
    assert good > 0.85
    shuffled = train.assign(salary=np.random.default_rng(0).permutation(train["salary"].to_numpy()))
    below = float(np.mean(test["salary"] < 60_000))
    majority = max(below, 1 - below)
    assert utility.model_accuracy(shuffled, test, sch) < majority + 0.03  # the relation gone: no better than "below"
