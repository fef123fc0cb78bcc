"""Uniqueness, k-anonymity, ℓ-diversity, prosecutor risk: known answers, oracle, CLI, bad inputs."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpcore.attacks.uniqueness import class_size_per_record, incremental, uniqueness, uniqueness_loop
from dpcore.cli import main
from dpcore.data import datasets
from dpcore.errors import DPError

from ...conftest import ROOT

QIS = ["age", "sex", "zip"]


@pytest.fixture
def table():
    # classes on (age, sex, zip): (30,F,1) x3 diag {a,b}, (40,M,2) x2 diag {a}, (50,F,1) x1 diag {c}
    return pd.DataFrame(
        {
            "age": [30, 30, 30, 40, 40, 50],
            "sex": ["F", "F", "F", "M", "M", "F"],
            "zip": [1, 1, 1, 2, 2, 1],
            "diag": ["a", "b", "a", "a", "a", "c"],
        }
    )


def test_known_answer_small_table(table):
    r = uniqueness(table, QIS, "diag")
    assert r.n == 6 and r.n_classes == 3
    assert r.unique_records == 1 and r.unique_fraction == pytest.approx(1 / 6)
    assert r.k_anonymity == 1
    assert r.l_diversity == 1
    assert r.homogeneous_records == 3  # the (40,M,2) pair and the unique record
    assert r.prosecutor_risk_max == 1.0
    assert r.prosecutor_risk_avg == pytest.approx(0.5)
    assert r.class_sizes == {1: 1, 2: 1, 3: 1}
    assert class_size_per_record(table, QIS).tolist() == [3, 3, 3, 2, 2, 1]


def test_known_answer_without_the_unique_record(table):
    r = uniqueness(table.iloc[:5], QIS, "diag")
    assert r.k_anonymity == 2 and r.unique_fraction == 0
    assert r.l_diversity == 1 and r.prosecutor_risk_max == 0.5
    assert r.prosecutor_risk_avg == pytest.approx(2 / 5)
    r = uniqueness(table, ["sex"], "diag")
    assert r.k_anonymity == 2 and r.class_sizes == {2: 1, 4: 1} and r.l_diversity == 1
    r = uniqueness(table.iloc[:3], ["age"], "diag")
    assert r.l_diversity == 2 and r.k_anonymity == 3


def test_without_sensitive_column(table):
    r = uniqueness(table, "age,sex")
    assert r.l_diversity is None and r.homogeneous_records is None and r.n_classes == 3


def test_incremental_known_answer(table):
    steps = incremental(table, ["sex", "age", "zip"], "diag")
    assert steps["added"].tolist() == ["sex", "age", "zip"]
    assert steps["classes"].tolist() == [2, 3, 3]
    assert steps["k_anonymity"].tolist() == [2, 1, 1]
    assert steps["unique_records"].tolist() == [0, 1, 1]
    assert steps["l_diversity"].tolist() == [1, 1, 1]


def test_missing_values_form_their_own_class():
    df = pd.DataFrame({"a": [1.0, np.nan, np.nan, 2.0], "s": ["x", "y", "x", "y"]})
    r = uniqueness(df, ["a"], "s")
    assert r.n_classes == 3 and r.class_sizes == {1: 2, 2: 1} and r.l_diversity == 1


def test_matches_the_per_row_loop_on_seeded_data():
    df = datasets.medical(3000, seed=4)
    for qis in (["age"], ["age", "sex", "zip_code"], ["zip_code", "ethnicity", "salary"]):
        fast = uniqueness(df, qis, "diagnosis")
        slow = uniqueness_loop(df, qis, "diagnosis")
        for key in ("n_classes", "unique_fraction", "k_anonymity", "l_diversity", "prosecutor_risk_avg"):
            assert getattr(fast, key) == pytest.approx(slow[key]), key


def test_default_qis_on_seeded_data_single_out_most_people():
    df = datasets.medical(10_000, seed=0)
    steps = incremental(df, ["age", "sex", "zip_code", "salary"], "diagnosis")
    u = steps["unique_fraction"].tolist()
    assert u == sorted(u)  # adding a QI never makes anyone less unique
    assert u[0] == 0.0 and u[-1] > 0.9  # age alone: nobody unique; + sex, zip, salary: > 90%
    assert steps["k_anonymity"].iloc[-1] == 1


# --- bad inputs ---------------------------------------------------------------------------------------


def test_empty_qi_set(table):
    for qis in ([], "", " , ", None):
        with pytest.raises(DPError, match="at least one quasi-identifier"):
            uniqueness(table, qis)


def test_misspelt_qi_suggests_the_right_name(table):
    with pytest.raises(DPError, match="did you mean 'age'"):
        uniqueness(table, ["agee", "sex"])


def test_missing_qi_lists_columns(table):
    with pytest.raises(DPError, match="available: age, sex, zip, diag"):
        uniqueness(table, ["height"])


def test_duplicate_qi(table):
    with pytest.raises(DPError, match="listed twice"):
        uniqueness(table, ["age", "age"])


def test_sensitive_with_one_value(table):
    with pytest.raises(DPError, match="has only one value"):
        uniqueness(table.assign(diag="a"), QIS, "diag")


def test_sensitive_that_is_also_a_qi(table):
    with pytest.raises(DPError, match="both as a quasi-identifier"):
        uniqueness(table, QIS, "age")


def test_misspelt_sensitive(table):
    with pytest.raises(DPError, match="unknown sensitive column 'dag'"):
        uniqueness(table, QIS, "dag")


def test_no_rows(table):
    with pytest.raises(DPError, match="no rows"):
        uniqueness(table.iloc[:0], QIS)


# --- CLI ------------------------------------------------------------------------------------------------


def test_cli_known_answer(table, tmp_path, capsys):
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    assert main(["uniqueness", "--data", str(path), "--qi", "age,sex,zip", "--sensitive", "diag"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 6 and out["unique_fraction"] == pytest.approx(1 / 6)
    assert out["k_anonymity"] == 1 and out["l_diversity"] == 1
    assert out["class_sizes"] == {"1": 1, "2": 1, "3": 1}
    assert [s["added"] for s in out["incremental"]] == ["age", "sex", "zip"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--qi", ""], "--qi needs a value; got an empty one"),
        (["--qi", " , "], "at least one quasi-identifier"),
        (["--qi", "age,zipp"], "did you mean 'zip'"),
        (["--qi", "age", "--sensitive", "flag"], "has only one value"),
    ],
)
def test_cli_bad_inputs(table, tmp_path, capsys, args, message):
    path = tmp_path / "t.csv"
    table.assign(flag="x").to_csv(path, index=False)
    assert main(["uniqueness", "--data", str(path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "content,message",
    [
        (b"", "CSV is empty"),
        (b"age,sex\n", "no data rows"),
        (b'age,sex\n1,"F\n', "could not be parsed"),
        (b"\xff\xfe\x00a,b\n1,2\n", "not UTF-8"),
    ],
)
def test_cli_bad_csv(tmp_path, capsys, content, message):
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    assert main(["uniqueness", "--data", str(path), "--qi", "age"]) == 2
    assert message in capsys.readouterr().err


def test_cli_oversized_and_missing_csv(tmp_path, capsys):
    big = tmp_path / "big.csv"
    with open(big, "wb") as fh:
        fh.write(b"age\n")
        fh.write(b"30\n" * (datasets.MAX_UPLOAD_BYTES // 3 + 10))
    assert main(["uniqueness", "--data", str(big), "--qi", "age"]) == 2
    assert "larger than" in capsys.readouterr().err
    assert main(["uniqueness", "--data", str(tmp_path / "nope.csv"), "--qi", "age"]) == 2
    assert "not found" in capsys.readouterr().err


def test_cli_error_is_one_line_without_traceback(table, tmp_path):
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    r = subprocess.run(
        [sys.executable, "-m", "dpcore", "uniqueness", "--data", str(path), "--qi", "agee"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "did you mean 'age'" in r.stderr
