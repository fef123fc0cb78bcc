"""People, not rows: a person with ten rows, removed or added, moves each statistic's noisy inputs by at most the
sensitivity its design states (brute force, every statistic and cell of the five-statistic plan)."""

import numpy as np
import pandas as pd
import pytest

from dpcore.data import datasets
from dpcore.noise import release
from dpcore.plan import bounding, compute, design, model

from .helpers import five


def _visits_with_a_ten_row_patient(seed: int = 1) -> tuple[pd.DataFrame, int]:
    df = datasets.medical_visits(300, seed)
    counts = df.groupby("patient_id").size()
    ten = counts[counts == 10]
    assert len(ten), "the generator draws patients with ten visits"
    return df, int(ten.index[0])


def _l1(a, b) -> int:
    return int(np.abs(np.asarray(a, dtype=np.int64) - np.asarray(b, dtype=np.int64)).sum())


def _check(plan: model.Plan, with_p: pd.DataFrame, without: pd.DataFrame) -> None:
    d = design.design(plan)
    a = compute.prepare(with_p, plan, d)
    b = compute.prepare(without, plan, d)
    for x, ta, tb in zip(d.designs, a.truths, b.truths):
        if x.quantile is None:
            assert _l1(ta.units, tb.units) <= x.parts[0].sensitivity, x.statistic.label()
            if ta.counts:
                assert _l1(ta.counts, tb.counts) <= x.parts[1].sensitivity, x.statistic.label()
            continue
        q = x.quantile
        moved = sum(abs(len(u) - len(v)) for u, v in zip(ta.values, tb.values))
        assert moved <= x.parts[0].sensitivity == plan.unit.contributions  # rows added or removed, all cells
        stab = release._score_space(q.candidates, q.alpha).map(plan.unit.contributions)
        for u, v in zip(ta.values, tb.values):
            su = np.asarray(release.quantile_scores(u, q.candidates, q.alpha))
            sv = np.asarray(release.quantile_scores(v, q.candidates, q.alpha))
            assert np.abs(su - sv).max() <= stab  # what OpenDP's privacy map is computed from


@pytest.mark.parametrize("k", [1, 3, 5, 10])
def test_removing_a_person_with_ten_rows_moves_nothing_beyond_the_sensitivity(k):
    df, pid = _visits_with_a_ten_row_patient()
    plan = five(1.0, k=k)
    _check(plan, df, df[df.patient_id != pid])


def test_adding_a_person_with_ten_extreme_rows_moves_nothing_beyond_the_sensitivity():
    df, _ = _visits_with_a_ten_row_patient()
    new = df.head(10).copy()
    new["patient_id"] = 10**9
    new["cost"] = 10**7  # far beyond the public bounds: clamped
    new["length_of_stay"] = -50
    new["age"] = 200
    new["department"] = "not a listed one"
    new["sex"] = pd.Categorical(["M"] * 10, categories=datasets.SEXES)
    _check(five(1.0, k=4), pd.concat([df, new], ignore_index=True), df)


def test_bounding_keeps_the_first_k_rows_of_each_person_and_drops_rows_without_an_id():
    df = pd.DataFrame({"pid": [1, 1, 1, 2, None, 2, 1], "x": range(7)})
    kept = bounding.bound(df, model.Unit(person="pid", max_rows=2))
    assert kept["x"].tolist() == [0, 1, 3, 5]
    assert bounding.bound(df, model.Unit()) is df


def test_a_row_level_release_on_visits_costs_a_patient_ten_times_its_epsilon():
    rows = design.design(five(0.5, person=False))
    assert rows.epsilon_per_row == 0.5 and rows.epsilon_per_person == 5.0
    # removing a patient with ten visits moves a row-level count by ten: the row-level noise (Δ = 1) covers them
    # only at 10·ε, which is what the plan states and charges per patient
    df, pid = _visits_with_a_ten_row_patient()
    plan = five(0.5, person=False)
    d = design.design(plan)
    a, b = compute.prepare(df, plan, d), compute.prepare(df[df.patient_id != pid], plan, d)
    assert _l1(a.truths[0].units, b.truths[0].units) == 10 == 10 * d.designs[0].parts[0].sensitivity
