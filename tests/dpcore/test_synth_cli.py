"""`python -m dpcore synth`: a synthetic CSV with its statement beside it; every bad request one line, exit 2."""

import json

import pandas as pd
import pytest

from dpcore import limits
from dpcore.data import datasets

from .cli_helpers import one_line, run


@pytest.mark.slow
def test_builtin_release_writes_a_csv_and_its_statement(tmp_path, capsys):
    out = tmp_path / "synthetic.csv"
    rc, stdout, err = run(capsys, "synth", "--builtin", "--epsilon", "2", "--rows", "300", "--out", str(out))
    assert rc == 0, err
    info = json.loads(stdout)
    df = pd.read_csv(out)
    assert len(df) == 300 == info["rows"] and list(df.columns) == ["age", "sex", "zip_code", "salary", "diagnosis"]
    assert df["age"].between(18, 90).all() and set(df["sex"]) <= {"F", "M"}
    st = json.loads((tmp_path / "synthetic.statement.json").read_text())
    assert info["statement"] == str(tmp_path / "synthetic.statement.json")
    assert st["kind"] == "synthetic_release" and st["epsilon"] <= 2 and st["delta"] == 0
    assert st["neighbour_relation"] == "add/remove one record" and st["synthetic_rows"] == 300
    assert st["declared_public"]["rows"] == "declared: 300"
    assert info["summary"] == st["summary"]


@pytest.mark.slow
def test_upload_release_uses_the_declared_columns_only(tmp_path, capsys):
    src = tmp_path / "ward.csv"
    pd.DataFrame({"ward": ["A", "B", "=cmd|x"] * 200, "stay": [1, 4, 9] * 200, "secret": range(600)}).to_csv(
        src, index=False
    )
    out = tmp_path / "out.csv"
    rc, stdout, err = run(
        capsys,
        "synth",
        "--data",
        str(src),
        "--epsilon",
        "3",
        "--column",
        "ward=A,B,=cmd|x",
        "--column",
        "stay=0:10:1",
        "--out",
        str(out),
    )
    assert rc == 0, err
    text = out.read_text()
    assert "secret" not in text.splitlines()[0]  # a column not declared is not released
    assert "\n=cmd" not in text and ",=cmd" not in text  # a formula cell is neutralised in the CSV
    st = json.loads((tmp_path / "out.statement.json").read_text())
    assert [c["declared"] for c in st["declared_public"]["columns"]] == [
        "categories A, B, =cmd|x",
        "whole numbers 0 to 10 (clamped), 11 bins of width 1",
    ]
    assert st["subject"] == "upload ward.csv"


@pytest.mark.parametrize(
    "args,message",
    [
        (["--builtin", "--epsilon", "1"], "the following arguments are required: --out"),
        (["--epsilon", "1", "--out", "x.csv"], "one of the arguments --data --builtin is required"),
        (["--builtin", "--epsilon", "0", "--out", "x.csv"], "epsilon must be > 0"),
        (["--builtin", "--epsilon", "500", "--out", "x.csv"], "must be from 0.01 to 100"),
        (["--builtin", "--epsilon", "1", "--generator", "aim", "--out", "x.csv"], "AIM needs δ > 0"),
        (["--builtin", "--epsilon", "1", "--delta", "1", "--out", "x.csv"], "delta must be in [0, 1)"),
        (["--builtin", "--epsilon", "1", "--rows", "0", "--out", "x.csv"], "argument --rows: must be from 1"),
        (["--builtin", "--epsilon", "1", "--columns", "age,name", "--out", "x.csv"], "unknown medical column 'name'"),
        (["--builtin", "--epsilon", "1", "--column", "age=1:2", "--out", "x.csv"], "with --builtin use --columns"),
        (["--builtin", "--epsilon", "1", "--pairs", "age", "--out", "x.csv"], "two names joined by '+'"),
        (["--builtin", "--epsilon", "1", "--pairs", "age+name", "--out", "x.csv"], "column 'name' is not declared"),
        (["--builtin", "--epsilon", "1", "--out", "/no/such/folder/x.csv"], "does not exist"),
    ],
)
def test_bad_requests_are_one_line_exit_2(capsys, args, message):
    rc, _, err = run(capsys, "synth", *args)
    assert rc == 2 and one_line(err), err
    assert message in err, err


def test_an_upload_needs_its_columns_declared(tmp_path, capsys):
    src = tmp_path / "m.csv"
    datasets.medical(100, 0).to_csv(src, index=False)
    rc, _, err = run(capsys, "synth", "--data", str(src), "--epsilon", "1", "--out", str(tmp_path / "o.csv"))
    assert rc == 2 and one_line(err) and "declare each column to release with --column" in err
    rc, _, err = run(
        capsys,
        "synth",
        "--data",
        str(src),
        "--epsilon",
        "1",
        "--column",
        "age=18:90:1",
        "--column",
        "nope=a,b",
        "--out",
        str(tmp_path / "o.csv"),
    )
    assert rc == 2 and one_line(err) and "the data has no column 'nope'" in err
    rc, _, err = run(
        capsys,
        "synth",
        "--data",
        str(src),
        "--epsilon",
        "1",
        "--column",
        "age=18:90:0.001",
        "--column",
        "sex=F,M",
        "--out",
        str(tmp_path / "o.csv"),
    )
    assert rc == 2 and one_line(err) and f"at most {limits.SYNTH_MAX_CATEGORIES} are supported" in err
    assert not (tmp_path / "o.csv").exists() and not (tmp_path / "o.statement.json").exists()
