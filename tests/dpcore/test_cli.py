import json
import subprocess
import sys

import pandas as pd

from dpcore.cli import main

from ..conftest import ROOT


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "dpcore", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_help_lists_subcommands():
    r = run_cli("--help")
    assert r.returncode == 0
    assert "data" in r.stdout


def test_data_medical_writes_csv(tmp_path, capsys):
    out = tmp_path / "m.csv"
    assert main(["data", "medical", "--n", "500", "--seed", "3", "--out", str(out)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["rows"] == 500
    df = pd.read_csv(out)
    assert len(df) == 500 and "age" in df.columns


def test_bad_input_is_one_line_not_a_traceback(tmp_path):
    r = run_cli("data", "medical", "--n", "0", "--out", str(tmp_path / "x.csv"))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "argument --n: must be from 1 to" in r.stderr
    r = run_cli("data", "medical", "--n", "abc", "--out", "x.csv")
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
