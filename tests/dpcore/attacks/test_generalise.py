"""Generalisation: known answers on a small table, bad inputs, and lower risk on seeded data."""

import pandas as pd
import pytest

from dpcore.attacks import generalise, linkage
from dpcore.attacks.linkage import link
from dpcore.attacks.uniqueness import uniqueness
from dpcore.data import datasets
from dpcore.errors import DPError


def test_generalise_known_answers(release):
    g = generalise.generalise_medical(release, age_band=10, zip_digits=3, salary_band=10_000)
    assert g["age"].tolist() == [30, 30, 40, 50]
    assert g["zip_code"].tolist() == [10000] * 4
    assert g["salary"].tolist() == [50_000, 50_000, 60_000, 40_000]
    assert g["age"].dtype == release["age"].dtype
    t = generalise.generalise(
        pd.DataFrame({"code": ["ABC12", "ABD99"], "x": [0.26, 0.74]}), bands={"x": 0.5}, prefixes={"code": 2}
    )
    assert t["code"].tolist() == ["AB", "AB"] and t["x"].tolist() == [0.0, 0.5]
    assert generalise.generalise_medical(release).equals(release)  # widths of 1 / 5 digits: unchanged


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(bands={"age": 0}), "must be > 0"),
        (dict(bands={"age": "wide"}), "must be a number"),
        (dict(bands={"sex": 5}), "not numeric, so it cannot be put into bands"),
        (dict(prefixes={"zip_code": 0}), "whole number > 0"),
        (dict(bands={"agee": 5}), "did you mean 'age'"),
    ],
)
def test_generalise_bad_inputs(release, kwargs, message):
    with pytest.raises(DPError, match=message):
        generalise.generalise(release, **kwargs)


def test_generalisation_lowers_risk_on_seeded_data():
    pop = datasets.medical_population(5_000, seed=0)
    reg = linkage.public_register(pop, coverage=0.5, outsiders=0.25, seed=1)
    rel = pop.drop(columns="name")
    qis = ["age", "sex", "zip_code", "salary"]
    gen = dict(age_band=10, zip_digits=3, salary_band=10_000)
    before, after = uniqueness(rel, qis), uniqueness(generalise.generalise_medical(rel, **gen), qis)
    assert before.unique_fraction > 0.8 and after.unique_fraction < 0.05
    assert after.k_anonymity >= before.k_anonymity
    lb = link(rel, reg, linkage.LINKABLE_COLUMNS)
    la = link(
        generalise.generalise_medical(rel, **gen), generalise.generalise_medical(reg, **gen), linkage.LINKABLE_COLUMNS
    )
    assert lb.right_person > 50 and la.right_person < lb.right_person / 5
    with pytest.raises(DPError, match="keep 1 to 5"):
        generalise.generalise_medical(rel, zip_digits=6)
