"""A plan released through the dataset's budget: a five-statistic plan charges exactly its total once to the cap
and the quota; a plan that does not fit is refused with nothing spent and nothing drawn; a bad plan costs nothing;
rows uploaded that are a registered dataset are charged to it."""

import pytest

from dpcore.budgets import gate, quotas, registry
from dpcore.data import datasets
from dpcore.errors import BudgetExceededError, DPError
from dpcore.plan import compute, model, run

from ...budgets_helpers import admin, analyst
from .helpers import five


@pytest.fixture
def clinic():
    df = datasets.medical_visits(200, 4)
    info = registry.register(admin(), "clinic", df, epsilon=3)
    return df, registry.info("clinic")["fingerprint"], info


def _spent(fp):
    return registry.info(fp)["spent"]


def test_five_statistics_charge_exactly_their_total_once(clinic):
    df, fp, _ = clinic
    ann = analyst("ann", fp, 2.5)
    out = run.release_on_dataset(five(1.25), df, ann, fp, subject="clinic", source="dataset")
    assert _spent(fp) == pytest.approx(1.25)
    assert out.budget["charged_to"] == [
        {"dataset": "clinic", "epsilon": pytest.approx(1.25), "delta": 0.0, "number_of_rows": gate.NOT_RELEASED}
    ]
    st = quotas.status(ann, fp)
    assert st["cap"]["by_release"]["planned"]["epsilon"] == pytest.approx(1.25)  # charged by the one gate, as a plan
    assert set(out.release.frame()["statistic"]) == {1, 2, 3, 4, 5}
    again = run.release_on_dataset(five(1.25), df, ann, fp, subject="clinic", source="dataset")
    assert again.reused and again.release.rows == out.release.rows and _spent(fp) == pytest.approx(1.25)


def test_a_plan_that_does_not_fit_is_refused_and_draws_nothing(clinic, monkeypatch):
    df, fp, _ = clinic
    ann = analyst("ann", fp, 1.0)
    drawn = []
    real = compute.Prepared.release
    monkeypatch.setattr(compute.Prepared, "release", lambda self, *a, **k: drawn.append(1) or real(self, *a, **k))
    with pytest.raises(BudgetExceededError):
        run.release_on_dataset(five(1.5), df, ann, fp, subject="clinic", source="dataset")
    assert _spent(fp) == 0.0 and drawn == []


def test_a_bad_plan_costs_nothing(clinic):
    df, fp, _ = clinic
    ann = analyst("ann", fp, 2.0)
    bad = model.Plan.from_dict({"epsilon": 1.0, "statistics": [{"kind": "sum", "column": "nope", "bounds": [0, 1]}]})
    with pytest.raises(DPError, match="nope"):
        run.release_on_dataset(bad, df, ann, fp, subject="clinic", source="dataset")
    assert _spent(fp) == 0.0


def test_uploaded_rows_of_a_registered_dataset_are_charged_to_it(clinic):
    df, fp, _ = clinic
    ann = analyst("ann", fp, 2.0)
    out = run.release_upload(five(0.5), df.copy(), ann, name="same.csv")
    assert out.charge is not None and _spent(fp) == pytest.approx(0.5)
    assert out.budget["charged_to"][0]["dataset"] == "clinic"


def test_uploaded_rows_holding_two_registered_datasets_are_refused_with_nothing_drawn_or_spent(monkeypatch):
    """A drawn answer is charged inside one dataset's transaction: rows that are two registered datasets' would be
    charged to only one of them, so the plan is refused and neither cap moves."""
    import pandas as pd

    a, b = datasets.medical_visits(200, 5), datasets.medical_visits(200, 6)
    registry.register(admin(), "a", a, epsilon=3)
    registry.register(admin(), "b", b, epsilon=3)
    ann = analyst("ann", "a", 2.0)
    quotas.grant(admin(), "ann", "b", epsilon=2.0)
    drawn = []
    real = compute.Prepared.release
    monkeypatch.setattr(compute.Prepared, "release", lambda self, *a, **k: drawn.append(1) or real(self, *a, **k))
    with pytest.raises(DPError, match="more than one registered dataset"):
        run.release_upload(five(0.5), pd.concat([a, b], ignore_index=True), ann, name="both.csv")
    assert _spent("a") == 0.0 and _spent("b") == 0.0 and drawn == []


def test_the_builtin_visits_are_charged_to_the_builtin_patients():
    from dpcore.budgets import identities, visitors

    out = run.release_builtin(five(1.0), "visits", 300, 2, identities.VISITOR)
    assert visitors.open_builtin(300, 2)["spent"] == pytest.approx(1.0)
    assert out.source == "builtin:visits"
    with pytest.raises(DPError, match="unknown built-in"):
        run.builtin("nope", 300, 2)
