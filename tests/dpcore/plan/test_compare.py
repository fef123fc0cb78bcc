"""An upload beside its DP synthetic twin: the plan's public columns declared, both sides' shares summing to one,
the original side labelled not covered by ε, nothing charged for the uploader's own rows and a registered
dataset's rows refused."""

import pandas as pd
import pytest

from dpcore.budgets import identities, registry
from dpcore.data import datasets
from dpcore.errors import DPError
from dpcore.plan import compare, model

from ...budgets_helpers import admin


def _plan() -> model.Plan:
    return model.Plan.from_dict(
        {
            "title": "ward",
            "epsilon": 1.0,
            "unit": {"person": None},
            "keys": [{"column": "sex", "categories": ["F", "M"]}],
            "statistics": [
                {"kind": "count", "by": ["sex"]},
                {"kind": "mean", "column": "age", "bounds": [18, 90]},
                {"kind": "histogram", "column": "diagnosis", "categories": ["none", "asthma", "cancer"]},
            ],
        }
    )


def test_the_plan_declares_its_public_columns():
    schema = compare.schema_for(_plan())
    assert list(schema.names) == ["sex", "age", "diagnosis"]
    age = schema.columns[1]
    assert age.bounds == (18, 90) and age.n_bins <= compare.BINS


@pytest.mark.slow
def test_own_rows_beside_their_synthetic_twin_charge_nothing():
    df = datasets.medical(400, 5)[["age", "sex", "diagnosis"]]
    cmp = compare.compare(df, _plan(), 2.0, identities.VISITOR)
    assert cmp.epsilon <= 2.0 and cmp.delta == 0.0
    assert cmp.budget["charged_to"] == [] and "own data" in cmp.budget["owner"]
    assert [c.name for c in cmp.columns] == ["sex", "age", "diagnosis"]
    for c in cmp.columns:
        assert len(c.labels) == len(c.original) == len(c.synthetic)
        assert sum(c.synthetic) == pytest.approx(1.0)
    sex = cmp.columns[0]
    assert sex.original == pytest.approx(tuple(df["sex"].value_counts(normalize=True)[["F", "M"]]))
    age = cmp.columns[1]
    assert age.original_mean == pytest.approx(df["age"].mean()) and age.synthetic_mean is not None
    assert "not covered by ε" in compare.NOT_COVERED
    assert set(cmp.synthetic.columns) == {"sex", "age", "diagnosis"}


def test_a_registered_datasets_rows_are_refused():
    df = datasets.medical(300, 9)
    registry.register(admin(), "clinic", df, epsilon=5)
    with pytest.raises(DPError, match="registered dataset"):
        compare.compare(df, _plan(), 1.0, identities.VISITOR)


def test_a_missing_column_is_refused():
    with pytest.raises(DPError, match="not in the upload"):
        compare.compare(pd.DataFrame({"age": [30, 40]}), _plan(), 1.0, identities.VISITOR)
