"""A plan as typed values and as a file: every field checked with a message that says what to do."""

import pytest

from dpcore.errors import DPError
from dpcore.plan import forms, model

from .helpers import five


def test_json_and_yaml_round_trip_to_the_same_plan():
    p = five()
    assert model.loads(model.dumps(p, "json")) == p
    assert model.loads(model.dumps(p, "yaml")) == p
    assert p.canonical() == model.loads(model.dumps(p, "yaml")).canonical()


def test_editor_rows_round_trip():
    p = five()
    again = model.Plan.from_dict({**p.to_dict(), "statistics": forms.from_rows(forms.to_rows(p))})
    assert again == p
    assert forms.from_rows([{"kind": None}, {"kind": "count", "column": float("nan")}]) == [{"kind": "count"}]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"statistics": []}, "at least one statistic"),
        ({"statistics": [{"kind": "sum", "column": "cost"}]}, "needs public bounds"),
        ({"statistics": [{"kind": "median", "column": "age"}]}, "unknown statistic"),
        ({"statistics": [{"kind": "histogram", "column": "sex"}]}, "either its public categories"),
        ({"statistics": [{"kind": "count", "by": ["zip"]}]}, "declare it in keys"),
        ({"statistics": [{"kind": "quantile", "column": "age", "bounds": "18:90", "alpha": 1.5}]}, "between 0 and 1"),
        ({"statistics": [{"kind": "mean", "column": "age", "bounds": "90:18"}]}, "lo < hi"),
        ({"epsilon": 0}, "total ε must be"),
        ({"split": "accuracy"}, "needs a target for every statistic"),
        ({"unit": {"person": None, "max_rows": 3}}, "needs the column that marks"),
        ({"unit": {"person": "patient_id", "max_rows": 1000}}, "rows kept per person"),
        ({"statistics": [{"kind": "count", "colour": "red"}]}, "unknown field"),
        ({"keys": [{"column": "sex", "categories": ["F", "f"]}]}, "listed twice"),
    ],
)
def test_bad_plans_are_refused_with_what_to_do(change, words):
    d = {**forms.EXAMPLES["visits"], **change}
    with pytest.raises(DPError, match=words):
        model.Plan.from_dict(d)


def test_the_person_column_is_never_released():
    d = {**forms.EXAMPLES["visits"], "statistics": [{"kind": "histogram", "column": "patient_id", "categories": "1,2"}]}
    with pytest.raises(DPError, match="person-id column"):
        model.Plan.from_dict(d)


def test_a_file_that_is_neither_json_nor_yaml_is_one_message():
    with pytest.raises(DPError, match="neither JSON nor YAML|a plan is an object"):
        model.loads("{{{: not: [yaml")
    with pytest.raises(DPError, match="a plan is an object"):
        model.loads("[1, 2]")
