"""Public bounds of an uploaded table (issue 26.1): the CLI's and the file's forms, what a run does with them (known
answers for the scaling), that a run with every bound declared has no preprocessing leak and its statement says so,
that learning a bound from the rows is labelled, and that the editor's pre-fill never comes from the rows."""

import json

import numpy as np
import pandas as pd
import pytest

from dpcore.errors import DPError
from dpcore.training import bounds
from dpcore.training.config import TrainConfig
from dpcore.training.data import load_split, record_view

ALL = {
    "age": {"lower": 0.0, "upper": 120.0},
    "income": {"lower": 0.0, "upper": 200.0},
    "city": {"categories": ["a", "b"]},
    "label": {"categories": ["no", "yes"]},
}


@pytest.fixture
def table(tmp_path):
    df = pd.DataFrame(
        {
            "age": [30, 200, 60, -5, 45, 90, 20, 75, 33, 58],
            "income": [10.0, 50.0, np.nan, 80.0, 300.0, 20.0, 40.0, 60.0, 70.0, 90.0],
            "city": ["a", "b", "z", "a", "b", "a", "b", "a", "b", "a"],
            "label": ["no", "yes"] * 5,
        }
    )
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    return path, df


def _cfg(path, b, **kw):
    return TrainConfig(
        dataset=f"csv:{path}", target="label", model="logreg", epsilon=None, bounds=b, test_size=0.2, **kw
    )


@pytest.mark.parametrize(
    "text, want",
    [
        ("age=0:120", ("age", {"lower": 0.0, "upper": 120.0})),
        ("temp=-40:50.5", ("temp", {"lower": -40.0, "upper": 50.5})),
        ("sex=F,M", ("sex", {"categories": ["F", "M"]})),
        ("sex= F , M ", ("sex", {"categories": ["F", "M"]})),
        ("time=10:30,11:45", ("time", {"categories": ["10:30", "11:45"]})),
        ("income=from-data", ("income", {"from_data": True})),
    ],
)
def test_cli_forms(text, want):
    assert bounds.parse_spec(text) == want


@pytest.mark.parametrize(
    "text, words",
    [
        ("age", "COLUMN=LOW:HIGH"),
        ("=1:2", "COLUMN=LOW:HIGH"),
        ("age=", "COLUMN=LOW:HIGH"),
        ("age=5:1", "lower must be below upper"),
        ("age=-1e308:1e308", "finite number of at most"),
        ("age=1:inf", "finite number"),
        ("sex=F,,M", "no empty ones"),
        ("sex=F,F", "listed twice"),
    ],
)
def test_bad_cli_forms_say_what_to_fix(text, words):
    with pytest.raises(DPError, match=words):
        bounds.parse_spec(text)


def test_a_bounds_file_in_shorthand_or_stored_form(tmp_path):
    p = tmp_path / "b.json"
    p.write_text(
        json.dumps(
            {
                "age": [0, 120],
                "sex": ["F", "M"],
                "grade": {"categories": [1, 2, 3]},
                "income": "from-data",
                "x": {"lower": -1, "upper": 1},
            }
        )
    )
    assert bounds.read_file(p) == {
        "age": {"lower": 0.0, "upper": 120.0},
        "sex": {"categories": ["F", "M"]},
        "grade": {"categories": ["1", "2", "3"]},
        "income": {"from_data": True},
        "x": {"lower": -1.0, "upper": 1.0},
    }
    assert bounds.from_cli(["age=1:2"], p)["age"] == {"lower": 1.0, "upper": 2.0}  # --bounds wins over the file
    for bad, words in (
        ("[1, 2]", "JSON object"),
        ("{", "not valid JSON"),
        ('{"a": [1, "x"]}', "two numbers"),
        ('{"a": {"lower": 1}}', "keys"),
        ("[" * 100_000, "not valid JSON"),
    ):
        p.write_text(bad)
        with pytest.raises(DPError, match=words):
            bounds.read_file(p)
    with pytest.raises(DPError, match="not found"):
        bounds.read_file(tmp_path / "none.json")


def test_every_column_declared_no_leak_and_the_known_scaling(table):
    path, df = table
    s = load_split(_cfg(path, ALL))
    assert s.leaks == [] and "declared public by the data owner" in s.bounds_note
    X = np.concatenate([s.X_train, s.X_test])
    rows = np.concatenate([s.train_rows, np.setdiff1d(np.arange(len(df)), s.train_rows)])
    assert sorted(rows) == list(range(len(df)))
    for i in range(s.n_train):
        src = df.iloc[int(s.train_rows[i])]
        age = float(np.clip(src.age, 0, 120))
        assert s.X_train[i][s.feature_names.index("age")] == pytest.approx(2 * age / 120 - 1, abs=1e-6)
        inc = 0.0 if np.isnan(src.income) else float(np.clip(src.income, 0, 200))  # a missing value: the lower bound
        assert s.X_train[i][s.feature_names.index("income")] == pytest.approx(2 * inc / 200 - 1, abs=1e-6)
        hot = [s.X_train[i][s.feature_names.index(f"city={c}")] for c in ("a", "b")]
        assert hot == ([1, 0] if src.city == "a" else [0, 1] if src.city == "b" else [0, 0])  # 'z': neither
        assert s.class_names[s.y_train[i]] == src.label
        view = record_view(s, i)  # what the model saw, in the data's units: clipped, "(other)" for 'z'
        assert view["age"] == pytest.approx(age, abs=1e-4) and view["label"] == src.label
        assert view["city"] == (src.city if src.city in ("a", "b") else "(other)")
    assert X.shape == (10, 4)


def test_declared_classes_fix_the_label_and_refuse_a_stranger(table):
    path, _ = table
    s = load_split(_cfg(path, {**ALL, "label": {"categories": ["yes", "no", "maybe"]}}))
    assert s.class_names == ["yes", "no", "maybe"] and s.n_classes == 3
    with pytest.raises(DPError, match="5 rows of the target column 'label' have a label outside"):
        load_split(_cfg(path, {**ALL, "label": {"categories": ["yes", "maybe"]}}))
    with pytest.raises(DPError, match="needs its classes as categories"):
        load_split(_cfg(path, {**ALL, "label": {"lower": 0, "upper": 1}}))


def test_learned_from_the_rows_only_by_choice_and_labelled(table):
    path, _ = table
    chosen = load_split(_cfg(path, {**ALL, "income": {"from_data": True}}))
    assert len(chosen.leaks) == 1 and "income" in chosen.leaks[0]
    assert "learned from the data: not covered by ε" in chosen.leaks[0]
    old = load_split(_cfg(path, None))  # no bounds at all: as before, every row-read bound listed as a leak
    assert any("income, city" in x and "not covered by ε" in x for x in old.leaks)  # age: its known public range
    assert any("classes of the label" in x for x in old.leaks)


def test_bounds_that_do_not_fit_the_table_are_refused(table):
    path, _ = table
    with pytest.raises(DPError, match="holds text, so a range does not fit"):
        load_split(_cfg(path, {"city": {"lower": 0, "upper": 3}}))
    with pytest.raises(DPError, match="does not have: 'nope'"):
        load_split(_cfg(path, {"nope": {"lower": 0, "upper": 3}}))
    with pytest.raises(DPError, match="for an uploaded CSV"):
        TrainConfig(dataset="breast_cancer", bounds={"x": {"lower": 0, "upper": 1}})


def test_schema_prefills_only_public_values_and_the_page_rule(table):
    path, _ = table
    cols = bounds.schema(path.read_bytes(), "label")
    assert [(c.name, c.kind, c.target) for c in cols] == [
        ("age", "number", False),
        ("income", "number", False),
        ("city", "text", False),
        ("label", "text", True),
    ]
    assert cols[0].public == {"lower": 18.0, "upper": 90.0}  # a known public range, not the rows' -5…200
    assert cols[1].public is None and cols[2].public is None and cols[3].public is None
    with pytest.raises(DPError, match="declare public bounds for city, label"):
        bounds.require_all(cols, {"age": {"lower": 0, "upper": 1}, "income": {"from_data": True}})
    assert bounds.require_all(cols, ALL) == ALL


def test_a_run_with_declared_bounds_says_so_in_its_statement(table, chdir_root):
    from dpcore.jobs import registry, runner, store
    from dpcore.jobs.owners import CLI, CLI_OWNER
    from dpcore.statements import training as training_st

    path, _ = table
    params = _cfg(path, ALL, noise_multiplier=1.0, epochs=1, batch_size=4).to_dict()
    params["epsilon"] = None
    runner.run_inline(registry.TRAIN, params, owner=CLI_OWNER, group="train", label="declared")
    job = store.list_jobs(caller=CLI, group="train")[0]
    st = training_st.for_job(job["id"], caller=CLI)
    assert st["preprocessing"]["declared_public"] and st["preprocessing"]["leaks"] == []
    assert "bounds declared public by the data owner" in st["summary"]
    runner.run_inline(registry.TRAIN, {**params, "bounds": None}, owner=CLI_OWNER, group="train", label="learned")
    st = training_st.for_job(store.list_jobs(caller=CLI, group="train")[0]["id"], caller=CLI)
    assert not st["preprocessing"]["declared_public"] and "not covered by ε" in st["summary"]
