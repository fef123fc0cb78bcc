"""Private queries: true answers and sensitivities, intervals that cover, the release path, bad inputs."""

import math

import numpy as np
import pandas as pd
import pytest

from dpcore.budgets import identities, quotas, visitors
from dpcore.data import datasets
from dpcore.data.filters import mask_all
from dpcore.errors import BudgetExceededError, DPError
from dpcore.noise import calibration, mechanisms
from dpcore.queries import answering, fingerprint
from dpcore.queries.answering import prepare
from dpcore.queries.model import make_query


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
    assert (
        len(
            set(
                np.array(h)
                - np.array(prepare(df, make_query("histogram", epsilon=0.5, column="diagnosis")).true_counts)
            )
        )
        > 1
    )


@pytest.mark.parametrize(
    "kw",
    [
        dict(kind="count", condition="sex=F"),
        dict(kind="count", condition="sex=F", mechanism="gaussian", delta=1e-5),
        dict(kind="sum", column="age", bounds=(18, 90)),
        dict(kind="mean", column="age", bounds=(18, 90), where="sex=F"),
        dict(kind="mean", column="age", bounds=(18, 90), mechanism="gaussian", delta=1e-5),
    ],
)
def test_95_percent_interval_covers_the_truth(df, kw):
    q = make_query(epsilon=0.5, **kw)
    p = prepare(df, q)
    if q.kind == "mean":
        lo, hi = q.bounds
        m = mask_all(df, q.where)
        truth = np.clip(df.age[m], lo, hi).mean()
    else:
        truth = p.true_value
    n = 300
    hits = sum(r["interval"][0] <= truth <= r["interval"][1] for r in (p.release(s) for s in range(n)))
    # 95% nominal (mean: >= 95%); binomial sd at n=300 is 1.3%, so 0.91 is a > 3-sd lower bound
    assert hits / n >= 0.91


@pytest.mark.parametrize(
    "kw",
    [
        dict(kind="sum", column="salary", bounds=(0, 500_000)),
        dict(kind="sum", column="age", bounds=(18, 90), mechanism="gaussian", delta=1e-6),
        dict(kind="mean", column="age", bounds=(18, 90), public_n=True),
    ],
)
def test_interval_ends_are_written_on_the_answers_grid(df, kw):
    """The interval's ends come from whole grid steps like the answer (v ± t·g in floating point wrote
    500310.03774999996 beside an answer on a grid of 0.0001)."""
    from fractions import Fraction

    q = make_query(epsilon=0.5, **kw)
    p = prepare(df, q)
    for seed in range(20):
        r = p.release(seed)
        step = Fraction(r["grid"]["step_text"].replace(",", "")) if isinstance(r.get("grid"), dict) else None
        for end in r["interval"]:
            assert len(repr(end).split(".")[-1]) <= 8, (r["interval"], r["answer"])  # no float noise digits
            if step is not None and q.kind == "sum":
                assert (Fraction(repr(end)) / step).denominator == 1, (end, step)


def test_geometric_halfwidth_is_the_smallest_integer_with_95_percent():
    for eps in (0.05, 0.3, 1.0, 3.0):
        t = mechanisms.halfwidth("geometric", epsilon=eps, sensitivity=1)
        a = math.exp(-eps)

        def tail(k, a=a):  # P(|Z| > k)
            return 2 * a ** (k + 1) / (1 + a)

        assert tail(t) <= 0.05 and (t == 0 or tail(t - 1) > 0.05)
    assert mechanisms.halfwidth("laplace", epsilon=1, sensitivity=2) == pytest.approx(2 * math.log(20))
    sig = calibration.gaussian_analytic_sigma(1.0, 1e-5, 1.0)
    assert mechanisms.halfwidth("gaussian", epsilon=1, delta=1e-5, sensitivity=1) == pytest.approx(
        1.959964 * sig, rel=1e-5
    )


def test_laplace_noise_scale_statistically(df):
    p = prepare(df, make_query("sum", epsilon=1.0, column="age", bounds=(0, 100)))
    noise = np.array([p.release(s)["answer"] for s in range(400)]) - p.true_value
    # Laplace(b = 100): mean |noise| = b; the mean of 400 draws has sd b/20
    assert abs(np.abs(noise).mean() - 100) < 4 * 100 / 20
    assert abs(noise.mean()) < 4 * 100 * math.sqrt(2) / 20


def test_mean_cost_is_stated_and_split(df):
    r = prepare(df, make_query("mean", epsilon=1.0, column="age", bounds=(18, 90))).release(0)
    assert "ε/2 = 0.5" in r["cost_note"] and r["epsilon"] == 1.0
    assert r["rho"] == pytest.approx(2 * 0.5**2 / 2)
    assert 18 <= r["answer"] <= 90 and r["interval"][0] <= r["answer"] <= r["interval"][1]


def test_noise_is_drawn_only_by_the_release_path(df, monkeypatch):
    """Every noisy number comes from dpcore.noise.release.draw: whole numbers plus discrete noise."""
    from dpcore.noise import release

    calls = []
    real = release.draw
    monkeypatch.setattr(
        release,
        "draw",
        lambda values, noise, rs=None: calls.append((len(values), type(noise).__name__)) or real(values, noise, rs),
    )
    prepare(df, make_query("mean", epsilon=1, column="age", bounds=(18, 90))).release(0)
    assert calls == [(1, "Geometric"), (1, "Geometric")]  # the centred sum in grid steps, then the count
    calls.clear()
    prepare(df, make_query("histogram", epsilon=1, column="diagnosis", mechanism="gaussian", delta=1e-6)).release(0)
    assert calls == [(len(datasets.DIAGNOSES), "DiscreteGaussian")]  # all bins in one draw


VISITOR = identities.VISITOR


def _spent(df) -> float:
    return quotas.status(VISITOR, fingerprint.dataset_key(df), with_history=False)["quota"]["spent"]


@pytest.fixture
def demo(df):
    """``df`` is the built-in synthetic population (1,000 rows, seed 0): visitors ask from its shared quota (ε 10)."""
    visitors.open_builtin(1000, 0, fingerprint.dataset_identity(df))
    return df


def test_ask_spends_repeats_free_and_refuses_without_noise(demo, monkeypatch):
    q = make_query("count", epsilon=4.6, condition="sex=F")
    a = answering.ask(demo, VISITOR, q)
    b = answering.ask(demo, VISITOR, q)
    assert b["reused"] and b["answer"]["answer"] == a["answer"]["answer"] and b["remaining"] == pytest.approx(5.4)
    answering.ask(demo, VISITOR, make_query("count", epsilon=4.6, condition="sex=M"))
    from dpcore.noise import release

    monkeypatch.setattr(release, "draw", lambda *a, **k: pytest.fail("noise drawn for a refused query"))
    with pytest.raises(BudgetExceededError, match="only ε = 0.8"):
        answering.ask(demo, VISITOR, make_query("count", epsilon=1, condition="age>40"))
    # the same data re-read from CSV is the same dataset (same budget)
    csv = datasets.read_csv(demo.to_csv(index=False).encode())
    assert fingerprint.dataset_key(csv) == fingerprint.dataset_key(demo)
    assert _spent(csv) == pytest.approx(9.2)


def test_bad_input_costs_nothing(demo):
    with pytest.raises(DPError, match="unknown column"):
        answering.ask(demo, VISITOR, make_query("sum", epsilon=0.5, column="nope", bounds=(0, 1)))
    assert _spent(demo) == 0


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


# --- issue 11: budget bypasses ---------------------------------------------------------------------


def test_ask_refuses_a_seed_and_spends_nothing(demo):
    df = demo
    with pytest.raises(DPError, match="seeded answer cannot be charged"):
        answering.ask(df, VISITOR, make_query("count", epsilon=0.5, condition="sex=F"), random_state=7)
    assert _spent(df) == 0
    r = answering.ask(df, VISITOR, make_query("count", epsilon=0.5, condition="sex=F"))
    assert r["answer"]["secure"] is True and "label" not in r["answer"]
    # a seeded answer outside the ledger is labelled as what it is
    assert prepare(df, make_query("count", epsilon=1, condition="sex=F")).release(3)["label"] == answering.NOT_DP


def test_ask_refuses_mean_with_public_n(demo):
    q = make_query("mean", epsilon=0.5, column="age", bounds=(18, 90), public_n=True)
    with pytest.raises(DPError, match="replacing one record.*noise page"):
        answering.ask(demo, VISITOR, q)
    assert _spent(demo) == 0


def test_ask_charges_delta_and_refuses_when_it_does_not_fit(demo):
    df = demo  # n = 1000: the visitors' δ quota is the cap's, 1e-4
    q = make_query("count", epsilon=0.001, condition="sex=F", mechanism="gaussian", delta=0.49)
    with pytest.raises(DPError, match="not below 1/n"):  # the audit's ±1 answer for almost nothing
        answering.ask(df, VISITOR, q)
    r = answering.ask(
        df, VISITOR, make_query("count", epsilon=0.1, condition="sex=F", mechanism="gaussian", delta=8e-5)
    )
    assert r["delta_spent_now"] == 8e-5 and r["delta_remaining"] == pytest.approx(2e-5)
    with pytest.raises(BudgetExceededError, match="needs δ"):
        answering.ask(
            df, VISITOR, make_query("count", epsilon=0.1, condition="sex=M", mechanism="gaussian", delta=3e-5)
        )


@pytest.mark.parametrize("cats", ["34,34.0", "34, 3.4e1", "34,+34"])
def test_histogram_spellings_of_one_number_are_refused(df, cats):
    with pytest.raises(DPError, match="same value of column 'age'"):
        prepare(df, make_query("histogram", epsilon=1, column="age", categories=cats))


@pytest.mark.parametrize("cats", ["true,yes", "True,1", "t,y"])
def test_histogram_truthy_words_are_one_category(df, cats):
    with pytest.raises(DPError, match="same value of column 'has_rare_disease'"):
        prepare(df, make_query("histogram", epsilon=1, column="has_rare_disease", categories=cats))


def test_histogram_bins_partition_the_rows(df, csv_df):
    for data in (df, csv_df):
        p = prepare(data, make_query("histogram", epsilon=1, column="age", categories="34,35.0,3.6e1"))
        assert p.labels == ["34", "35", "36", "(other)"] and sum(p.true_counts) == len(df)
        assert p.true_counts[:3] == [int((df.age == a).sum()) for a in (34, 35, 36)]
        assert p.sensitivity == 1.0
        b = prepare(data, make_query("histogram", epsilon=1, column="has_rare_disease", categories="yes,false"))
        assert b.labels == ["True", "False", "(other)"] and b.true_counts[2] == 0


def test_condition_that_can_never_match_is_refused(df):
    for cond in ("age=nan", "age>=NaN", "age!=nan"):
        with pytest.raises(DPError, match="can never match"):
            prepare(df, make_query("count", epsilon=1, condition=cond))


def test_epsilon_above_the_query_limit_is_refused():
    with pytest.raises(DPError, match="at most 100"):
        make_query("count", epsilon=710)


def test_dataset_identity_ignores_order_and_number_format(df):
    key = fingerprint.dataset_key(df)
    shuffled = df.sample(frac=1, random_state=3)[list(reversed(df.columns))].reset_index(drop=True)
    assert fingerprint.dataset_key(shuffled) == key
    text = df.to_csv(index=False).replace(",34,", ",34.0,").encode()
    assert fingerprint.dataset_key(datasets.read_csv(text)) == key
    assert fingerprint.dataset_key(df.iloc[1:]) != key and fingerprint.dataset_key(df.drop(columns="salary")) != key
