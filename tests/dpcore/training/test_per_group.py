"""Who pays by subgroup (issue 37 §6): a run's test accuracy per category of each categorical feature column (a
built-in table's public code lists, an upload's declared categories), with its test rows and a 95% interval."""

import numpy as np
import pandas as pd
import pytest

from dpcore import claims, limits
from dpcore.training.config import TrainConfig
from dpcore.training.loop import train
from dpcore.training.results import NO_CATEGORY, TrainMetrics, per_group_accuracy


def _layout(n_cats=3, name="city"):
    return [
        {"name": "age", "kind": "number", "lower": 0.0, "upper": 1.0, "index": 0, "source": "declared"},
        {
            "name": name,
            "kind": "categories",
            "categories": [f"c{i}" for i in range(n_cats)],
            "indices": list(range(1, 1 + n_cats)),
            "source": "declared",
        },
    ]


def test_each_category_its_rows_right_answers_and_interval():
    # rows: city c0 ×4 (3 right), c1 ×2 (0 right), c2 ×0, no category ×1 (1 right)
    cats = [0, 0, 0, 0, 1, 1, None]
    X = np.zeros((len(cats), 4), dtype=np.float32)
    for r, c in enumerate(cats):
        if c is not None:
            X[r, 1 + c] = 1.0
    y = np.zeros(len(cats), dtype=np.int64)
    pred = np.array([0, 0, 0, 1, 1, 1, 0])
    out = {e["group"]: e for e in per_group_accuracy(X, y, pred, _layout())}
    assert list(out) == ["c0", "c1", "c2", NO_CATEGORY] and {e["column"] for e in out.values()} == {"city"}
    assert (out["c0"]["n_test"], out["c0"]["accuracy"]) == (4, 0.75)
    assert (out["c1"]["n_test"], out["c1"]["accuracy"]) == (2, 0.0)
    assert out["c2"]["n_test"] == 0 and out["c2"]["accuracy"] is None and out["c2"]["interval"] == [0.0, 1.0]
    assert (out[NO_CATEGORY]["n_test"], out[NO_CATEGORY]["accuracy"]) == (1, 1.0)
    # Clopper–Pearson 95% for 3 of 4: (0.194, 0.994), rounded outwards
    lo, hi = out["c0"]["interval"]
    assert lo <= 0.1941 and 0.9937 <= hi and hi - lo < 0.81


def test_columns_with_too_many_categories_and_past_the_cap_are_not_split():
    big = _layout(limits.SUBGROUP_MAX_GROUPS + 1)
    X = np.zeros((3, 2 + limits.SUBGROUP_MAX_GROUPS), dtype=np.float32)
    assert per_group_accuracy(X, np.zeros(3), np.zeros(3), big) == []
    many = [
        {"name": f"col{i}", "kind": "categories", "categories": ["a", "b"], "indices": [2 * i, 2 * i + 1]}
        for i in range(limits.SUBGROUP_MAX_COLUMNS + 2)
    ]
    X = np.tile([1.0, 0.0], (5, len(many)))
    cols = {e["column"] for e in per_group_accuracy(X, np.zeros(5), np.zeros(5), many)}
    assert cols == {f"col{i}" for i in range(limits.SUBGROUP_MAX_COLUMNS)}  # the first ones, in the table's order


def test_an_upload_run_reports_each_declared_subgroup(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "sex": rng.choice(["F", "M"], n, p=[0.7, 0.3]),
            "label": rng.choice(["no", "yes"], n),
        }
    )
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    bounds = {
        "age": {"lower": 18, "upper": 90},
        "sex": {"categories": ["F", "M"]},
        "label": {"categories": ["no", "yes"]},
    }
    cfg = TrainConfig(
        dataset=f"csv:{path}", target="label", model="logreg", epsilon=2.0, epochs=1, batch_size=32, bounds=bounds
    )
    m = train(cfg).metrics
    groups = {e["group"]: e for e in m.per_group}
    assert set(groups) == {"F", "M"} and {e["column"] for e in m.per_group} == {"sex"}
    assert sum(e["n_test"] for e in m.per_group) == m.n_test
    assert all(e["interval"][0] <= e["accuracy"] <= e["interval"][1] for e in m.per_group)
    stored = m.to_dict()
    assert "per_group" in stored["not_covered_by_epsilon"]  # labelled a diagnostic in the JSON itself
    assert TrainMetrics.from_dict(stored).per_group == m.per_group


@pytest.mark.parametrize("target", ["has_rare_disease", "diagnosis"])
def test_the_medical_tables_subgroups_are_its_public_code_lists(target):
    from dpcore.data import datasets

    m = train(TrainConfig(dataset="medical", target=target, model="logreg", epsilon=None, epochs=1)).metrics
    cols = list(dict.fromkeys(e["column"] for e in m.per_group))
    assert cols[:2] == ["sex", "zip_code"] and ("diagnosis" in cols) == (target != "diagnosis")
    sexes = [e["group"] for e in m.per_group if e["column"] == "sex"]
    assert sexes == [str(s) for s in datasets.SEXES]
    assert sum(e["n_test"] for e in m.per_group if e["column"] == "sex") == m.n_test


def test_accuracy_intervals_and_the_one_rule_for_claiming_a_difference():
    """Known answers: 108 of 114 right is [0.888, 0.981] (Clopper–Pearson 0.88896 and 0.98044, rounded outwards); a headline claims a
    difference only where two such intervals do not overlap (the training page once said "+2.2 points" on 137 rows)."""
    from dpcore.training.results import accuracy_interval, compare_accuracy, majority_share

    assert accuracy_interval(108 / 114, 114) == [0.888, 0.981]
    assert accuracy_interval(0.947, 114) == accuracy_interval(108 / 114, 114)  # from the 3-digit diagnostic
    assert accuracy_interval(None, 114) is None and accuracy_interval(0.9, 0) is None
    assert compare_accuracy(0.912, 114, 0.982, 114) == 0  # 7 points on 114 rows: the intervals overlap
    assert compare_accuracy(0.70, 2000, 0.80, 2000) == -1 and compare_accuracy(0.80, 2000, 0.70, 2000) == 1
    assert compare_accuracy(0.9, None, 0.8, 100) is None
    # 1,104 and 1,142 right of 1,222 are stored as 0.903 and 0.935; rounding back gave 1,103 and 1,143, whose
    # intervals ([0.884, 0.919] and [0.920, 0.949]) no longer overlapped, though the true ones do
    assert compare_accuracy(0.903, 1222, 0.935, 1222) == 0
    for k in (1103, 1104):  # every k stored as 0.903: the interval holds each one's
        assert claims.diagnostic(k / 1222) == 0.903
        lo, hi = accuracy_interval(0.903, 1222)
        assert lo <= k / 1222 <= hi
    per_class = [{"name": "malignant", "n_test": 43}, {"name": "benign", "n_test": 71}]
    assert majority_share(per_class) == ("benign", 0.623) and majority_share([]) is None
