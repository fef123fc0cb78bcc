"""Declared columns: codes from declarations alone (known answers), never from the rows; clear errors."""

import numpy as np
import pandas as pd
import pytest

from dpcore import limits
from dpcore.errors import DPError
from dpcore.synth import schema as S


def test_whole_number_bins_keep_exact_values_with_width_1_and_clamp_to_the_bounds():
    age = S.Column("age", bounds=(18, 90), width=1)
    assert age.whole and age.n_bins == 73
    codes = age.encode(pd.Series([18, 34, 90, 17, 120, None, "x"]))
    assert codes.tolist() == [0, 16, 72, 0, 72, -1, -1]  # 17 and 120 clamped; missing and text: -1
    back = age.decode(np.array([0, 16, 72, -1]), np.random.default_rng(0))
    assert back.iloc[:3].tolist() == [18, 34, 90] and pd.isna(back.iloc[3])


def test_salary_bins_of_5000_and_values_drawn_inside_their_bin():
    sal = S.Column("salary", bounds=(0, 250_000), width=5_000)
    assert sal.n_bins == 51  # 0–4,999 … 245,000–249,999 and 250,000 alone (the upper bound)
    assert sal.encode(pd.Series([0, 4_999, 5_000, 57_200, 250_000, 1e9])).tolist() == [0, 0, 1, 11, 50, 50]
    drawn = sal.decode(np.full(2_000, 11), np.random.default_rng(1)).to_numpy(dtype=float)
    assert drawn.min() >= 55_000 and drawn.max() <= 59_999  # uniform inside [55,000, 59,999]
    assert 56_500 < drawn.mean() < 58_500
    assert sal.labels()[11] == "55,000–59,999" and sal.labels()[-1] == "250,000"


def test_float_bins():
    x = S.Column("score", bounds=(0, 1), width=0.25)
    assert not x.whole and x.n_bins == 4
    assert x.encode(pd.Series([0.0, 0.3, 0.99, 1.0])).tolist() == [0, 1, 3, 3]
    v = x.decode(np.array([1] * 100), np.random.default_rng(0)).to_numpy()
    assert ((v >= 0.25) & (v < 0.5)).all()


def test_categories_match_by_value_whatever_the_columns_type():
    zip_ = S.Column("zip_code", categories=(10001, 10002))
    assert zip_.encode(pd.Series([10001, 10002.0, "10001", 99999, None])).tolist() == [0, 1, 0, -1, -1]
    sex = S.Column("sex", categories=("F", "M"))
    assert sex.encode(pd.Series(pd.Categorical(["M", "F", " f ", "X"]))).tolist() == [1, 0, 0, -1]
    rare = S.Column("has_rare_disease", categories=(False, True))
    assert rare.encode(pd.Series([True, False, "true", 1])).tolist() == [1, 0, 1, -1]  # 1 is a number, not True
    assert rare.decode(np.array([1, 0]), np.random.default_rng(0)).dtype == bool
    assert zip_.decode(np.array([1, 0]), np.random.default_rng(0)).tolist() == [10002, 10001]


def test_codes_never_depend_on_the_other_rows():
    """Encoding is row by row: a row's code is the same in any table (one record changes one row of codes), so
    nothing about the rows decides the bins."""
    sch = S.medical()
    a = pd.DataFrame(
        {
            "age": [34, 90, 18],
            "sex": ["F", "M", "F"],
            "zip_code": [10001, 10005, 10002],
            "salary": [57_200, 250_000, 12_000],
            "diagnosis": ["hypertension", "none", "cancer"],
        }
    )
    b = pd.concat(
        [
            a.iloc[[0]],
            pd.DataFrame(
                {
                    "age": [19] * 50,
                    "sex": ["M"] * 50,
                    "zip_code": [10003] * 50,
                    "salary": [1_000_000] * 50,
                    "diagnosis": ["asthma"] * 50,
                }
            ),
        ]
    )
    assert sch.encode(a).iloc[0].tolist() == sch.encode(b).iloc[0].tolist() == [16, 0, 0, 11, 1]


def test_medical_declaration_is_the_public_bounds():
    sch = S.medical(S.MEDICAL_COLUMNS)
    assert sch.names == list(S.MEDICAL_COLUMNS) and sch.complete
    assert sch.column("birth_year").n_bins == 74 and sch.column("diagnosis").n_bins == 6
    from dpcore.data import datasets

    codes = sch.encode(datasets.medical(2_000, 0))
    assert (codes.to_numpy() >= 0).all()  # every value of the generator is inside the declaration


@pytest.mark.parametrize(
    "text,kind,value",
    [
        ("age=18:90:1", "number", (18.0, 90.0, 1.0)),
        ("age=18:90", "number", (18.0, 90.0, 1.0)),
        ("score=0:1:0.1", "number", (0.0, 1.0, 0.1)),
        ("sex=F,M", "cat", ("F", "M")),
        ("zip=10001,10002", "cat", (10001, 10002)),
        (" ward = A , B ", "cat", ("A", "B")),
    ],
)
def test_parse_column(text, kind, value):
    c = S.parse_column(text)
    if kind == "number":
        assert (c.bounds[0], c.bounds[1], c.width) == value
    else:
        assert c.categories == value


@pytest.mark.parametrize(
    "text,message",
    [
        ("age", "must look like NAME=LO:HI:WIDTH"),
        ("=1:2", "must look like"),
        ("age=90:18:1", "below the upper"),
        ("age=18:90:0", "bin width must be > 0"),
        ("age=1:2:3:4", "LO:HI or LO:HI:WIDTH"),
        ("age=0:1000000:1", f"at most {limits.SYNTH_MAX_CATEGORIES} are supported per column; use a wider bin"),
        ("sex=F,,M", "no empty ones"),
        ("sex=F,f", "are the same value"),
        ("x=34,34.0", "are the same value"),
        ("age=a:b", "must be a number"),
        ("age=-inf:3", "must be a finite number"),
    ],
)
def test_bad_declarations_say_what_to_write(text, message):
    with pytest.raises(DPError, match=message):
        S.parse_column(text)


def test_schema_limits_and_duplicates():
    with pytest.raises(DPError, match="at least one column"):
        S.Schema(())
    assert S.parse_schema(["a=1,2"]).names == ["a"]  # one column: a noisy histogram, released like any table
    with pytest.raises(DPError, match="declared twice"):
        S.parse_schema(["a=1,2", "a=3,4"])
    with pytest.raises(DPError, match=f"at most {limits.SYNTH_MAX_COLUMNS}"):
        S.parse_schema([f"c{i}=1,2" for i in range(limits.SYNTH_MAX_COLUMNS + 1)])
    with pytest.raises(DPError, match="the data has no column 'x'"):
        S.parse_schema(["x=1,2", "age=1:3"]).encode(pd.DataFrame({"age": [1]}))
    with pytest.raises(DPError, match="unknown medical column 'name'"):
        S.medical(["age", "name"])


def test_round_trip_through_dicts():
    sch = S.medical(S.MEDICAL_COLUMNS)
    assert S.Schema.from_dict(sch.to_dict()) == sch
    assert S.parse_column(sch.column("salary").declaration()) == sch.column("salary")


def test_the_editors_declarations_become_the_same_schema_as_the_cli_syntax():
    """Issue 34.4: one declaration editor for training, sweeps and synthetic releases; its bounds (in
    dpcore.training.bounds' form) give the same schema as the CLI's NAME=LO:HI:WIDTH / NAME=A,B lines."""
    from dpcore.synth.schema import from_bounds, parse_schema

    b = {"age": {"lower": 18.0, "upper": 90.0}, "flag": {"categories": ["0", "1"]}, "sex": {"categories": ["F", "M"]}}
    got = from_bounds(b, {"age": 6.0})
    assert got.to_dict() == parse_schema(["age=18:90:6", "flag=0,1", "sex=F,M"]).to_dict()
    assert got.column("flag").values == (0, 1)  # codes typed in the editor are the numbers the rows hold
    assert from_bounds({"age": {"lower": 0.0, "upper": 10.0}}).column("age").step == 1  # no width given: 1
    with pytest.raises(DPError, match="reads nothing from the rows"):
        from_bounds({"age": {"from_data": True}})
    with pytest.raises(DPError, match="declare at least one column"):
        from_bounds({})
