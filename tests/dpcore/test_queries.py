"""Private queries: true answers and sensitivities, intervals that cover, the release path, bad inputs."""

import math

import numpy as np
import pandas as pd
import pytest

from dpcore import datasets, ledger, queries
from dpcore.errors import BudgetExceededError, DPError
from dpcore.queries import make_query, prepare


@pytest.fixture(scope="module")
def df():
    return datasets.medical(1000, seed=0)


@pytest.fixture(scope="module")
def csv_df(df):
    return datasets.read_csv(df.to_csv(index=False).encode())


def test_count_true_answers(df, csv_df):
    for data in (df, csv_df):
        assert prepare(data, make_query("count", epsilon=1, condition="sex=F")).true_value == (df.sex == "F").sum()
        p = prepare(data, make_query("count", epsilon=1, condition="has_rare_disease=true", where=["age>=65"]))
        assert p.true_value == ((df.age >= 65) & df.has_rare_disease).sum()
        p = prepare(data, make_query("count", epsilon=1, condition="*", where="zip_code=10001, sex!=F"))
        assert p.true_value == ((df.zip_code == 10001) & (df.sex != "F")).sum()
        assert prepare(data, make_query("count", epsilon=1)).true_value == len(df)


def test_sum_clamps_to_public_bounds(df):
    p = prepare(df, make_query("sum", epsilon=1, column="age", bounds=(30, 60)))
    assert p.true_value == pytest.approx(np.clip(df.age, 30, 60).sum())
    assert p.sensitivity == 60
    p = prepare(df, make_query("sum", epsilon=1, column="age", bounds="-100:20"))
    assert p.sensitivity == 100


def test_mean_sensitivities(df):
    p = prepare(df, make_query("mean", epsilon=1, column="age", bounds=(18, 90), where="sex=M"))
    m = df.sex == "M"
    assert p.true_count == m.sum()
    assert p.true_sum == pytest.approx((df.age[m] - 54).sum())
    assert p.sensitivity == 36  # (hi - lo) / 2 for the centred sum
    p = prepare(df, make_query("mean", epsilon=1, column="age", bounds=(18, 90), public_n=True))
    assert p.true_value == pytest.approx(df.age.mean()) and p.sensitivity == pytest.approx(72 / 1000)


def test_histograms(df, csv_df):
    p = prepare(df, make_query("histogram", epsilon=1, column="diagnosis"))
    assert p.labels == list(datasets.DIAGNOSES) and sum(p.true_counts) == len(df)
    p = prepare(csv_df, make_query("histogram", epsilon=1, column="sex", categories="F"))
    assert p.labels == ["F", "(other)"] and p.true_counts == [(df.sex == "F").sum(), (df.sex != "F").sum()]
    p = prepare(df, make_query("histogram", epsilon=1, column="age", bounds=(18, 90), bins=4))
    assert len(p.labels) == 4 and sum(p.true_counts) == len(df)
    p = prepare(df, make_query("histogram", epsilon=1, column="has_rare_disease"))
    assert p.true_counts == [(~df.has_rare_disease).sum(), df.has_rare_disease.sum()]


def test_canonical_ignores_where_order_and_epsilon():
    a = make_query("count", epsilon=0.1, condition="sex=F", where=["age>=65", "zip_code=10001"])
    b = make_query("count", epsilon=0.5, condition="sex=F", where=["zip_code=10001", "age>=65"])
    assert a.canonical() == b.canonical()
    assert a.canonical() != make_query("count", epsilon=0.1, condition="sex=M").canonical()
    g = make_query("count", epsilon=0.1, mechanism="gaussian", delta=1e-5)
    assert g.canonical() != make_query("count", epsilon=0.1, mechanism="gaussian", delta=1e-6).canonical()


def test_same_seed_same_answer_different_seed_different(df):
    q = make_query("mean", epsilon=0.5, column="salary", bounds=(0, 250_000))
    p = prepare(df, q)
    assert p.release(3)["answer"] == p.release(3)["answer"]
    assert p.release(3)["answer"] != p.release(4)["answer"]
    h = prepare(df, make_query("histogram", epsilon=0.5, column="diagnosis")).release(1)["answer"]
    assert len(set(np.array(h) - np.array(prepare(df, make_query("histogram", epsilon=0.5,
                                                                  column="diagnosis")).true_counts))) > 1


@pytest.mark.parametrize("kw", [
    dict(kind="count", condition="sex=F"),
    dict(kind="count", condition="sex=F", mechanism="gaussian", delta=1e-5),
    dict(kind="sum", column="age", bounds=(18, 90)),
    dict(kind="mean", column="age", bounds=(18, 90), where="sex=F"),
    dict(kind="mean", column="age", bounds=(18, 90), mechanism="gaussian", delta=1e-5),
])
def test_95_percent_interval_covers_the_truth(df, kw):
    q = make_query(epsilon=0.5, **kw)
    p = prepare(df, q)
    if q.kind == "mean":
        lo, hi = q.bounds
        m = queries._where_mask(df, q.where)
        truth = np.clip(df.age[m], lo, hi).mean()
    else:
        truth = p.true_value
    n = 300
    hits = sum(r["interval"][0] <= truth <= r["interval"][1] for r in (p.release(s) for s in range(n)))
    # 95% nominal (mean: >= 95%); binomial sd at n=300 is 1.3%, so 0.91 is a > 3-sd lower bound
    assert hits / n >= 0.91


def test_geometric_halfwidth_is_the_smallest_integer_with_95_percent():
    for eps in (0.05, 0.3, 1.0, 3.0):
        t = queries.noise_halfwidth("geometric", epsilon=eps, sensitivity=1)
        a = math.exp(-eps)
        tail = lambda k: 2 * a ** (k + 1) / (1 + a)  # P(|Z| > k)
        assert tail(t) <= 0.05 and (t == 0 or tail(t - 1) > 0.05)
    assert queries.noise_halfwidth("laplace", epsilon=1, sensitivity=2) == pytest.approx(2 * math.log(20))
    sig = queries.gaussian_sigma(1.0, 1e-5, 1.0)
    assert queries.noise_halfwidth("gaussian", epsilon=1, delta=1e-5, sensitivity=1) == pytest.approx(1.959964 * sig,
                                                                                                      rel=1e-5)


def test_laplace_noise_scale_statistically(df):
    p = prepare(df, make_query("sum", epsilon=1.0, column="age", bounds=(0, 100)))
    noise = np.array([p.release(s)["answer"] for s in range(400)]) - p.true_value
    # Laplace(b = 100): mean |noise| = b; the mean of 400 draws has sd b/20
    assert abs(np.abs(noise).mean() - 100) < 4 * 100 / 20
    assert abs(noise.mean()) < 4 * 100 * math.sqrt(2) / 20


def test_mean_cost_is_stated_and_split(df):
    r = prepare(df, make_query("mean", epsilon=1.0, column="age", bounds=(18, 90))).release(0)
    assert "ε/2 = 0.5" in r["cost_note"] and r["epsilon"] == 1.0
    assert r["rho"] == pytest.approx(2 * 0.5 ** 2 / 2)
    assert 18 <= r["answer"] <= 90 and r["interval"][0] <= r["answer"] <= r["interval"][1]


def test_noise_is_drawn_only_by_the_release_path(df, monkeypatch):
    calls = []
    real_v, real_c = queries.release_value, queries.release_count
    monkeypatch.setattr(queries, "release_value", lambda *a, **k: calls.append("v") or real_v(*a, **k))
    monkeypatch.setattr(queries, "release_count", lambda *a, **k: calls.append("c") or real_c(*a, **k))
    prepare(df, make_query("mean", epsilon=1, column="age", bounds=(18, 90))).release(0)
    assert calls == ["v", "c"]
    calls.clear()
    prepare(df, make_query("histogram", epsilon=1, column="diagnosis")).release(0)
    assert calls == ["c"] * len(datasets.DIAGNOSES)


def test_ask_spends_repeats_free_and_refuses_without_noise(df, monkeypatch):
    q = make_query("count", epsilon=0.6, condition="sex=F")
    a = queries.ask(df, "ann", q, budget=1.0)
    b = queries.ask(df, "ann", q)
    assert b["reused"] and b["answer"]["answer"] == a["answer"]["answer"] and b["remaining"] == pytest.approx(0.4)
    monkeypatch.setattr(queries, "release_count", lambda *a, **k: pytest.fail("noise drawn for a refused query"))
    with pytest.raises(BudgetExceededError, match="only ε = 0.4"):
        queries.ask(df, "ann", make_query("count", epsilon=0.6, condition="sex=M"))
    # the same data re-read from CSV is the same dataset (same budget)
    csv = datasets.read_csv(df.to_csv(index=False).encode())
    assert queries.dataset_key(csv) == queries.dataset_key(df)
    assert ledger.status("ann", queries.dataset_key(csv), with_history=False)["spent"] == pytest.approx(0.6)


def test_bad_input_costs_nothing(df):
    with pytest.raises(DPError, match="unknown column"):
        queries.ask(df, "ann", make_query("sum", epsilon=0.5, column="nope", bounds=(0, 1)), budget=1.0)
    assert not ledger.status("ann", queries.dataset_key(df), with_history=False)["exists"]


# --- one test per bad input ------------------------------------------------------------------------

@pytest.mark.parametrize("eps", [0, -1, float("nan"), float("inf"), "x"])
def test_bad_epsilon(eps):
    with pytest.raises(DPError, match="epsilon"):
        make_query("count", epsilon=eps)


def test_unknown_column(df):
    with pytest.raises(DPError, match="unknown column 'height'; available: age"):
        prepare(df, make_query("mean", epsilon=1, column="height", bounds=(0, 1)))
    with pytest.raises(DPError, match="unknown column 'nope'"):
        prepare(df, make_query("count", epsilon=1, where="nope=1"))


def test_bounds_reversed():
    with pytest.raises(DPError, match="lower must be < upper"):
        make_query("sum", epsilon=1, column="age", bounds=(90, 18))
    with pytest.raises(DPError, match="LO:HI"):
        make_query("sum", epsilon=1, column="age", bounds="18-90")


def test_missing_bounds():
    with pytest.raises(DPError, match="needs public bounds"):
        make_query("mean", epsilon=1, column="age")


def test_non_numeric_column_for_mean(df, csv_df):
    for data in (df, csv_df):
        with pytest.raises(DPError, match="MEAN needs a numeric column; 'diagnosis' holds text"):
            prepare(data, make_query("mean", epsilon=1, column="diagnosis", bounds=(0, 1)))


def test_text_histogram_needs_categories(csv_df):
    with pytest.raises(DPError, match="public list of categories"):
        prepare(csv_df, make_query("histogram", epsilon=1, column="diagnosis"))
    with pytest.raises(DPError, match="needs public bounds"):
        prepare(csv_df, make_query("histogram", epsilon=1, column="age"))


def test_bad_conditions(df):
    with pytest.raises(DPError, match="not COLUMN=VALUE"):
        make_query("count", epsilon=1, condition="sex")
    with pytest.raises(DPError, match="no value"):
        make_query("count", epsilon=1, condition="sex=")
    with pytest.raises(DPError, match="compare it with a number"):
        prepare(df, make_query("count", epsilon=1, condition="age=old"))
    with pytest.raises(DPError, match="use = or !="):
        prepare(df, make_query("count", epsilon=1, condition="sex>F"))
    with pytest.raises(DPError, match="true or false"):
        prepare(df, make_query("count", epsilon=1, condition="has_rare_disease=maybe"))


def test_bad_mechanism_delta_kind_public_n():
    with pytest.raises(DPError, match="delta must be in"):
        make_query("count", epsilon=1, mechanism="gaussian", delta=0)
    with pytest.raises(DPError, match="unknown mechanism"):
        make_query("count", epsilon=1, mechanism="cauchy")
    with pytest.raises(DPError, match="unknown query kind"):
        make_query("median", epsilon=1, column="age")
    with pytest.raises(DPError, match="public n cannot have a WHERE"):
        make_query("mean", epsilon=1, column="age", bounds=(18, 90), public_n=True, where="sex=F")
    with pytest.raises(DPError, match="bins must be at most"):
        make_query("histogram", epsilon=1, column="age", bounds=(18, 90), bins=10_000)


def test_not_a_dataframe():
    with pytest.raises(DPError, match="DataFrame"):
        prepare([1, 2, 3], make_query("count", epsilon=1))


def test_empty_selection_still_answers(df):
    r = prepare(df, make_query("mean", epsilon=1, column="age", bounds=(18, 90), where="age>200")).release(0)
    assert 18 <= r["answer"] <= 90
    assert prepare(pd.DataFrame({"a": [1.0]}), make_query("count", epsilon=1, condition="a=1")).true_value == 1


def test_public_n_mean_imputes_missing_values_with_the_midpoint():
    data = pd.DataFrame({"x": [0.0, 10.0, np.nan, 10.0]})
    p = prepare(data, make_query("mean", epsilon=1, column="x", bounds=(0, 10), public_n=True))
    assert p.true_value == pytest.approx((0 + 10 + 5 + 10) / 4) and p.sensitivity == pytest.approx(10 / 4)
    p = prepare(data, make_query("mean", epsilon=1, column="x", bounds=(0, 10)))
    assert p.true_count == 3  # without public n, missing values are left out of the noisy count
