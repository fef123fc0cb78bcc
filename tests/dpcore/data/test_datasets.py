import numpy as np
import pandas as pd
import pytest

from dpcore.data import datasets
from dpcore.errors import DPError


def test_schema_and_ranges():
    df = datasets.medical(20_000, seed=1)
    assert list(df.columns) == datasets.MEDICAL_COLUMNS
    assert df["age"].between(18, 90).all()
    assert set(df["zip_code"].unique()) <= set(datasets.ZIP_CODES.tolist())
    assert set(df["sex"].astype(str).unique()) <= {"F", "M"}
    lo, hi = datasets.PUBLIC_BOUNDS["salary"]
    assert df["salary"].between(lo, hi).all()
    # birth year consistent with age (birthday passed or not)
    diff = datasets.REFERENCE_YEAR - df["age"].astype(int) - df["birth_year"].astype(int)
    assert set(diff.unique()) <= {0, 1}
    assert df["has_rare_disease"].dtype == bool
    assert "name" not in df.columns and "person_id" not in df.columns


def test_same_seed_same_rows_different_seed_different_rows():
    a, b, c = datasets.medical(5000, 7), datasets.medical(5000, 7), datasets.medical(5000, 8)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_population_matches_release_rows():
    pop = datasets.medical_population(3000, 4)
    rel = datasets.medical(3000, 4)
    pd.testing.assert_frame_equal(pop.drop(columns=["person_id", "name"]), rel)
    assert pop["name"].str.contains(" ").all()


def test_marginals_roughly_as_specified():
    df = datasets.medical(200_000, seed=0)
    shares = df["zip_code"].value_counts(normalize=True).sort_index().to_numpy()
    # binomial sd at n=200k is ~0.001; allow 0.01
    np.testing.assert_allclose(shares, datasets.ZIP_PROBS, atol=0.01)
    # salary correlated with age over working ages, rare disease rising with age
    work = df[df["age"] <= 60]
    assert np.corrcoef(work["age"], work["salary"])[0, 1] > 0.5
    young = df.loc[df["age"] < 40, "has_rare_disease"].mean()
    old = df.loc[df["age"] >= 70, "has_rare_disease"].mean()
    assert old > 3 * young
    assert 0.005 < df["has_rare_disease"].mean() < 0.05
    assert df["diagnosis"].nunique() == len(datasets.DIAGNOSES)


@pytest.mark.parametrize("n", [0, -5, 2.5, "x", float("nan")])
def test_bad_n(n):
    with pytest.raises(DPError, match="n"):
        datasets.medical(n)


def test_bundled_datasets_load_without_network():
    bc = datasets.load_breast_cancer()
    assert bc.X.shape == (569, 30) and set(np.unique(bc.y)) == {0, 1}
    assert np.all(bc.lower <= bc.X.min(axis=0)) and np.all(bc.upper >= bc.X.max(axis=0))
    dg = datasets.load_digits()
    assert dg.X.shape[1] == 64 and dg.upper.max() == 16


def test_breast_cancer_bounds_are_the_published_ranges_not_the_rows(monkeypatch):
    import sklearn.datasets

    bc = datasets.load_breast_cancer()
    published = {name: (lo, hi) for name, lo, hi in datasets.BREAST_CANCER_PUBLISHED_RANGES}
    assert set(published) == set(bc.feature_names)  # all 30, named as scikit-learn names them
    lo = np.array([published[n][0] for n in bc.feature_names])
    hi = np.array([published[n][1] for n in bc.feature_names])
    # the data lies within the published table up to its rounding (3-4 digits), and within the bounds used
    assert np.all(bc.X >= lo - 5e-4 * np.maximum(lo, 1)) and np.all(bc.X <= hi * 1.005)
    assert np.all(bc.lower <= bc.X.min(axis=0)) and np.all(bc.upper >= bc.X.max(axis=0))
    assert np.all(bc.lower <= lo) and np.all(bc.upper >= hi)
    # widened by a tenth of the width on each side and no more: never rounded out to whole numbers (failed before:
    # smoothness's [0.053, 0.163] became [0, 1], nine times its published width)
    np.testing.assert_allclose(bc.lower, np.maximum(0.0, lo - 0.1 * (hi - lo)))
    np.testing.assert_allclose(bc.upper, hi + 0.1 * (hi - lo))
    assert np.all(bc.upper - bc.lower <= 1.2 * (hi - lo) + 1e-12)
    # the bounds do not read the rows: rows with other extremes give the same bounds (failed before:
    # bounds were floor(0.9 min) / ceil(1.1 max) of the rows themselves)
    real = sklearn.datasets.load_breast_cancer()
    fake = sklearn.utils.Bunch(**{**real, "data": real.data * 3.0})
    monkeypatch.setattr(sklearn.datasets, "load_breast_cancer", lambda *a, **k: fake)
    other = datasets.load_breast_cancer()
    assert np.array_equal(other.lower, bc.lower) and np.array_equal(other.upper, bc.upper)


def test_read_csv_validates():
    df = datasets.read_csv(b"a,b\n1,2\n3,4\n")
    assert df.shape == (2, 2)
    with pytest.raises(DPError, match="empty"):
        datasets.read_csv(b"   \n")
    with pytest.raises(DPError, match="no data rows"):
        datasets.read_csv(b"a,b\n")
    with pytest.raises(DPError, match="larger than"):
        datasets.read_csv(b"a\n" + b"1\n" * 100, max_bytes=50)
    with pytest.raises(DPError, match="more than"):
        datasets.read_csv(b"a\n" + b"1\n" * 100, max_rows=10)
    with pytest.raises(DPError, match="not UTF-8"):
        datasets.read_csv("a,b\n\xe9,1\n".encode("latin-1"))
    with pytest.raises(DPError, match="not found"):
        datasets.read_csv("/nonexistent/file.csv")
    with pytest.raises(DPError, match="parsed"):
        datasets.read_csv(b'a,b\n"1,2\n3,4,5,6\n')


def test_require_columns_lists_available():
    df = pd.DataFrame({"age": [1], "zip": [2]})
    with pytest.raises(DPError, match=r"unknown column 'agee' \(did you mean 'age'\?\); available: age, zip"):
        datasets.require_columns(df, ["agee"])


def test_preview_turns_objects_arrow_cannot_hold_into_text():
    import io

    import pyarrow as pa

    df = datasets.read_csv(io.BytesIO(b"id,x,mixed\n123456789012345678901234,1,a\n5,2,3\n,3,\n"))
    with pytest.raises(OverflowError):
        pa.Table.from_pandas(df)  # what broke the re-identification page's preview
    shown = datasets.preview(df, 2)
    pa.Table.from_pandas(shown)
    assert shown["id"].tolist() == ["123456789012345678901234", "5"] and shown["x"].tolist() == [1, 2]
    assert len(shown) == 2 and df["id"].iloc[0] == 123456789012345678901234  # the data itself untouched
