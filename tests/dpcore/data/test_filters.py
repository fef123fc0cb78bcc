"""dpcore.data.filters: the one Condition, its parsers and its mask, typed by the column."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpcore.data.filters import (
    BETWEEN,
    Condition,
    column_kind,
    condition_mask,
    mask_all,
    mask_any,
    parse_condition,
    parse_conditions,
    parse_field,
    parse_range,
    require_column,
    require_rows,
)
from dpcore.errors import DPError


@pytest.fixture
def df():
    return pd.DataFrame(
        {
            "age": [34.0, 70.0, np.nan, 18.0, 65.0],
            "n": pd.array([1, None, 3, 4, 5], dtype="Int64"),
            "sex": ["F", " f ", None, "M", "F"],
            "flag": [True, False, True, False, True],
            "maybe": pd.array([True, None, False, True, None], dtype="boolean"),
            "cat": pd.Categorical(["a", "b", None, "a", "B"]),
        }
    )


def rows(df, text):
    return np.flatnonzero(condition_mask(df, parse_condition(text))).tolist()


@pytest.mark.parametrize(
    "text,expected",
    [
        ("age=34", [0]),
        ("age>=65", [1, 4]),
        ("age<65", [0, 3]),
        ("age!=34", [1, 3, 4]),
        ("age>18", [0, 1, 4]),
        ("age<=18", [3]),
        ("age=3.4e1", [0]),
        ("age < inf", [0, 1, 3, 4]),
        ("n=3", [2]),
        ("n!=3", [0, 3, 4]),
        ("n>=4", [3, 4]),
        ("sex=F", [0, 1, 4]),
        ("sex=f", [0, 1, 4]),
        ("sex!=F", [3]),
        ("flag=yes", [0, 2, 4]),
        ("flag!=TRUE", [1, 3]),
        ("flag=0", [1, 3]),
        ("maybe=true", [0, 3]),
        ("maybe!=true", [2]),
        ("maybe=false", [2]),
        ("cat=a", [0, 3]),
        ("cat=b", [1, 4]),
        ("cat!=a", [1, 4]),
    ],
)
def test_mask_by_column_type_missing_never_matches(df, text, expected):
    assert rows(df, text) == expected


def test_column_kinds(df):
    assert [column_kind(df, c) for c in ("age", "n", "sex", "flag", "maybe", "cat")] == [
        "numeric",
        "numeric",
        "text",
        "bool",
        "bool",
        "categorical",
    ]


def test_ranges_inclusive_and_numbers_only(df):
    c = Condition("age", low=18, high=65)
    assert c.op == BETWEEN and (c.low, c.high) == (18.0, 65.0) and c.is_range
    assert np.flatnonzero(c.mask(df)).tolist() == [0, 3, 4]
    with pytest.raises(DPError, match="not numeric, so it cannot take a range"):
        Condition("sex", low=1, high=2).mask(df)
    with pytest.raises(DPError, match="LO must be <= HI"):
        Condition("age", low=5, high=1)
    with pytest.raises(DPError, match="finite"):
        Condition("age", low=0, high=math.inf)


@pytest.mark.parametrize("text", ["age=nan", "age>=NaN", "age!=nan", "n=nan"])
def test_value_that_can_never_match_is_refused(df, text):
    with pytest.raises(DPError, match="can never match"):
        rows(df, text)


@pytest.mark.parametrize(
    "text,message",
    [
        ("age=old", "compare it with a number"),
        ("sex>F", "use = or !="),
        ("cat<=a", "use = or !="),
        ("flag=maybe", "true or false"),
        ("flag>1", "use = or !="),
        ("agee=3", "did you mean 'age'"),
    ],
)
def test_bad_comparisons_say_what_to_do(df, text, message):
    with pytest.raises(DPError, match=message):
        rows(df, text)


def test_parsers_and_text_round_trip():
    for text in ("sex=F", "age>=65", "age!=3", "zip_code<10005", "name=a=b"):
        c = parse_condition(text)
        assert parse_condition(c.text()) == c
    assert parse_condition(" age >= 65 ") == Condition("age", ">=", "65")
    assert parse_field("age", "34") == Condition("age", value="34") == Condition("age", "=", "34")
    for text in ("30-39", "30:39", "30..39", "30 to 39", "30 – 39"):
        assert parse_field("age", text) == Condition("age", low=30, high=39)
    assert parse_field("salary", "50,000-60,000") == Condition("salary", low=50_000, high=60_000)
    assert parse_field("age", ">= 65") == Condition("age", ">=", "65") and parse_field("sex", "!=F").op == "!="
    assert parse_field("age", "  ") is None
    with pytest.raises(DPError, match="no value given after '<'"):
        parse_field("age", "<")
    r = parse_range("salary=50000:60000")
    assert parse_range(r.text()) == r and r.describe() == "salary in [50000, 60000]"
    assert parse_conditions("zip_code=10001, sex!=F and age>3") == (
        Condition("zip_code", "=", "10001"),
        Condition("sex", "!=", "F"),
        Condition("age", ">", "3"),
    )
    assert parse_conditions(None) == ()
    assert len({Condition("a", "=", "1"), Condition("a", value="1")}) == 1  # hashable, one identity
    with pytest.raises(DPError, match="unknown operator"):
        Condition("a", "~", "1")


@pytest.mark.parametrize(
    "text,message", [("", "empty"), ("sex", "not COLUMN=VALUE"), ("=F", "not COLUMN=VALUE"), ("sex=", "no value given")]
)
def test_bad_condition_text(text, message):
    with pytest.raises(DPError, match=message):
        parse_condition(text)


def test_and_or(df):
    f, old = parse_condition("sex=F"), parse_condition("age>=65")
    assert np.flatnonzero(mask_all(df, [f, old])).tolist() == [1, 4]
    assert mask_all(df, []).all()
    assert np.flatnonzero(mask_any(df, [[old], [parse_condition("sex=M")]])).tolist() == [1, 3, 4]
    assert not mask_any(df, []).any()


def test_column_and_table_checks(df):
    assert require_column(df, "age") == "age"
    with pytest.raises(DPError, match=r"unknown register column 'agee' \(did you mean 'age'\?\); available: age, n"):
        require_column(df, "agee", "register column")
    with pytest.raises(DPError, match="unknown column 'height'; available: age"):
        require_column(df, "height")
    with pytest.raises(DPError, match="no rows"):
        require_rows(df.iloc[:0])
    with pytest.raises(DPError, match="expected a table"):
        require_rows([1, 2])


def _reference(df, cond):
    """The row loop the vectorised mask must agree with."""
    out = []
    for v in df[cond.column]:
        if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            out.append(False)
        elif cond.is_range:
            out.append(cond.low <= v <= cond.high)
        elif isinstance(v, str):
            same = v.strip().lower() == str(cond.value).strip().lower()
            out.append(same if cond.op == "=" else not same)
        else:
            x = float(cond.value)
            out.append({"=": v == x, "!=": v != x, "<": v < x, "<=": v <= x, ">": v > x, ">=": v >= x}[cond.op])
    return np.array(out, dtype=bool)


def test_vectorised_mask_agrees_with_the_row_loop():
    rng = np.random.default_rng(3)
    n = 400
    x = rng.integers(0, 6, n).astype(float)
    x[rng.random(n) < 0.2] = np.nan
    t = np.array(["a", "B", " b", "c", None], dtype=object)[rng.integers(0, 5, n)]
    df = pd.DataFrame({"x": x, "t": t})
    conds = [Condition("x", op, str(v)) for op in ("=", "!=", "<", "<=", ">", ">=") for v in (0, 2.5, 5)]
    conds += [Condition("x", low=1, high=3), Condition("x", low=2, high=2)]
    conds += [Condition("t", op, v) for op in ("=", "!=") for v in ("a", "b", "zz")]
    for c in conds:
        assert (condition_mask(df, c) == _reference(df, c)).all(), c


def test_differencing_where_is_an_or_of_filters_conditions(df):
    from dpcore.attacks.differencing import Where

    w = Where.of({"sex": "f", "age": 70}) | Where.of({"sex": "M"})
    assert w.any_of[0] == (Condition("sex", "=", "f"), Condition("age", "=", 70))
    assert np.flatnonzero(w.mask(df)).tolist() == [1, 3]
    assert w.sql() == "(sex = 'f' AND age = 70) OR sex = 'M'" and w.as_dicts()[1] == {"sex": "M"}
    with pytest.raises(DPError, match="did you mean 'sex'"):  # was a KeyError
        Where.of({"sx": "F"}).mask(df)


def test_query_console_conditions_use_the_same_rule(df):
    """COUNT/WHERE in the query console: a missing value never matches (``!=`` counted them before), text
    ignores case and spaces (``sex=f`` found nothing before), as the attacker's facts always did."""
    from dpcore.queries.answering import prepare
    from dpcore.queries.model import make_query

    def count(condition, where=()):
        return prepare(df, make_query("count", epsilon=1, condition=condition, where=where)).true_value

    assert count("sex!=F") == 1 and count("age!=34") == 3 and count("maybe!=true") == 1
    assert count("sex=f") == 3 and count("*", where="sex=F, age>=65") == 2
