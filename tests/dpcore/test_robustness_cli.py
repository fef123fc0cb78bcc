"""Issue 12: every bad CLI input is one line on stderr and exit 2 (no traceback, no silent success)."""

import io
import subprocess
import sys

import pytest

from dpcore import limits
from dpcore.cli import main
from dpcore.data import datasets
from dpcore.jobs.owners import SYSTEM

from ..conftest import ROOT
from .cli_helpers import one_line, run


@pytest.mark.parametrize(
    "args",
    [
        ["data", "medical", "--n", "10", "--seed", "-1", "--out", "x.csv"],
        ["data", "medical", "--n", "10", "--seed", str(2**32), "--out", "x.csv"],
        [
            "noise",
            "--mechanism",
            "laplace",
            "--epsilon",
            "1",
            "--sensitivity",
            "1",
            "--value",
            "0",
            "--draws",
            "2",
            "--seed",
            "-5",
        ],
        ["differencing", "--seed", "-1"],
        ["differencing", "--epsilon", "1", "--sim-seed", "-1"],
        ["differencing", "--sim-seed", str(2**53 + 1)],
        ["differencing", "--n", "5000000"],
        ["report", "--out", "r.html", "--seed", "-3"],
        ["jobs", "workers", "--start", "-1"],
        ["jobs", "workers", "--start", "100000"],
        ["jobs", "list", "--limit", "0"],
    ],
)
def test_out_of_range_numbers_are_refused(capsys, tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, *args)
    assert rc == 2 and out == "" and one_line(err), err
    assert "must be" in err


def test_noise_epsilon_1e_320_is_refused_not_null_draws(capsys):
    rc, out, err = run(
        capsys,
        "noise",
        "--mechanism",
        "laplace",
        "--epsilon",
        "1e-320",
        "--sensitivity",
        "1",
        "--value",
        "0",
        "--draws",
        "3",
    )
    assert rc == 2 and out == "" and one_line(err)
    assert f"at least {limits.EPSILON_MIN:g}" in err


def test_report_out_into_missing_folder(capsys, tmp_path):
    rc, out, err = run(capsys, "report", "--out", str(tmp_path / "nope" / "r.html"))
    assert rc == 2 and one_line(err) and "does not exist" in err
    assert not (tmp_path / "nope").exists()


def test_report_empty_sweep_is_refused(capsys, tmp_path):
    rc, out, err = run(capsys, "report", "--out", str(tmp_path / "r.html"), "--sweep", "")
    assert rc == 2 and one_line(err) and "--sweep needs a sweep id" in err
    assert not (tmp_path / "r.html").exists()


def test_data_out_into_missing_folder(capsys, tmp_path):
    rc, out, err = run(capsys, "data", "medical", "--n", "10", "--out", str(tmp_path / "nope" / "m.csv"))
    assert rc == 2 and one_line(err) and "does not exist" in err


def test_duplicate_columns_are_detected_from_the_header():
    with pytest.raises(datasets.DPError, match="duplicate column names: 'age'"):
        datasets.read_csv(b"age,sex,age\n34,F,35\n")
    with pytest.raises(datasets.DPError, match="duplicate"):
        datasets.read_csv(io.BytesIO(b"\xef\xbb\xbfa, a\n1,2\n"))
    assert list(datasets.read_csv(b"age,age.1\n1,2\n").columns) == ["age", "age.1"]  # distinct names are fine


def test_overlong_column_names_are_refused_with_the_limit(capsys, tmp_path):
    """A column name is shown in chart titles, menus and tables: one past the limit is refused, page and CLI."""
    ok = "n" * limits.UPLOAD_MAX_NAME_CHARS
    assert list(datasets.read_csv(f"age,{ok}\n1,2\n".encode()).columns) == ["age", ok]
    with pytest.raises(
        datasets.DPError,
        match=rf"is {limits.UPLOAD_MAX_NAME_CHARS + 1} characters long; at most "
        rf"{limits.UPLOAD_MAX_NAME_CHARS} are supported",
    ):
        datasets.read_csv(f"age,{ok}x\n1,2\n".encode())
    csv = tmp_path / "long.csv"
    csv.write_text("age," + "<b>" * 400 + "\n1,2\n")
    rc, out, err = run(capsys, "uniqueness", "--data", str(csv), "--qi", "age")
    assert rc == 2 and out == "" and one_line(err)
    assert "1,200 characters long" in err and len(err) < 300  # the name is shown cut short


def test_upload_limit_message_says_mib():
    with pytest.raises(datasets.DPError, match=r"larger than 1 MiB"):
        datasets.read_csv(b"a\n" + b"1\n" * (2**20), max_bytes=2**20)


def test_broken_pipe_is_one_line_exit_2():
    """`python -m dpcore ... | head`: the reader goes away; one line on stderr, exit 2, no traceback.

    The read end is closed before the command writes (it is still importing), so its write fails for sure.
    """
    cmd = [
        sys.executable,
        "-m",
        "dpcore",
        "noise",
        "--mechanism",
        "laplace",
        "--epsilon",
        "1",
        "--sensitivity",
        "1",
        "--value",
        "0",
        "--draws",
        "20000",
        "--seed",
        "1",
    ]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    p.stdout.close()  # what `head` does once it has what it wants
    err = p.stderr.read().decode()
    rc = p.wait(timeout=120)
    assert rc == 2, err
    assert one_line(err) and "broken pipe" in err


def test_broken_pipe_in_process(capsys, monkeypatch):
    class Closed(io.StringIO):
        def write(self, s):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    monkeypatch.setattr("dpcore.cli._quiet_stdout", lambda: None)
    rc = main(
        [
            "noise",
            "--mechanism",
            "laplace",
            "--epsilon",
            "1",
            "--sensitivity",
            "1",
            "--value",
            "0",
            "--draws",
            "3",
            "--seed",
            "1",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and one_line(err) and "broken pipe" in err


def test_sweep_workers_upper_bound_refused_before_any_job(capsys):
    from dpcore.jobs import store

    rc, out, err = run(capsys, "sweep", "--workers", "100000", "--epsilons", "1")
    assert rc == 2 and one_line(err) and "--workers must be 0" in err
    assert store.list_jobs(caller=SYSTEM) == []  # nothing was submitted
