"""`python -m dpcore query` and `python -m dpcore budget`: JSON out, exit code 3 when over budget."""

import json
import subprocess
import sys

import pytest

from dpcore import datasets
from dpcore.cli import main

from ..conftest import ROOT


@pytest.fixture
def csv(tmp_path):
    path = tmp_path / "medical.csv"
    datasets.medical(1000, seed=1).to_csv(path, index=False)
    return str(path)


def _run(capsys, *args):
    code = main(list(args))
    cap = capsys.readouterr()
    return code, (json.loads(cap.out) if cap.out.strip() else None), cap.err


def test_query_spends_repeats_and_refuses(csv, capsys):
    base = ["query", "--data", csv, "--analyst", "ann", "--seed", "1"]
    code, out, _ = _run(capsys, *base, "--budget", "1.0", "--epsilon", "0.5", "--count", "sex=F", "--where",
                        "age>=40")
    assert code == 0 and out["epsilon_spent"] == 0.5 and out["remaining"] == 0.5 and not out["reused"]
    assert out["query"] == "COUNT(*) WHERE sex=F AND age>=40" and out["secure"] is False
    code, again, _ = _run(capsys, *base, "--epsilon", "0.5", "--where", "age>=40", "--count", "sex=F")
    assert code == 0 and again["reused"] and again["answer"] == out["answer"] and again["epsilon_spent"] == 0
    code, mean, _ = _run(capsys, *base, "--epsilon", "0.4", "--mean", "age", "--bounds", "18:90")
    assert code == 0 and 18 <= mean["answer"] <= 90 and mean["remaining"] == pytest.approx(0.1)
    assert "ε/2" in mean["cost_note"]
    code, _, err = _run(capsys, *base, "--epsilon", "0.2", "--sum", "salary", "--bounds", "0:250000")
    assert code == 3 and "only ε = 0.1 of 1 is left" in err
    code, hist, _ = _run(capsys, *base, "--epsilon", "0.1", "--histogram", "sex", "--categories", "F,M")
    assert code == 0 and hist["labels"] == ["F", "M", "(other)"] and hist["remaining"] == 0
    code, st, _ = _run(capsys, "budget", "status", "--data", csv, "--analyst", "ann")
    assert code == 0 and st["remaining"] == 0 and st["total"] == 1.0
    assert [e["kind"] for e in st["history"]] == ["create", "spend", "reuse", "spend", "refused", "spend"]
    code, r, _ = _run(capsys, "budget", "reset", "--data", csv, "--analyst", "ann", "--admin", "root", "--confirm",
                      "--total", "2")
    assert code == 0 and r["remaining"] == 2.0
    code, _, err = _run(capsys, "budget", "reset", "--data", csv, "--analyst", "ann", "--admin", "root")
    assert code == 2 and "confirmed" in err


def test_budget_mismatch_and_missing(csv, capsys):
    base = ["query", "--data", csv, "--analyst", "bob", "--epsilon", "0.1", "--count", "*"]
    code, _, err = _run(capsys, *base)
    assert code == 2 and "no budget" in err and "--budget" in err
    assert _run(capsys, *base, "--budget", "1")[0] == 0
    code, _, err = _run(capsys, *base, "--budget", "3")
    assert code == 2 and "already has a budget of ε = 1" in err


@pytest.mark.parametrize("args, message", [
    (["--epsilon", "0", "--count", "sex=F"], "epsilon must be > 0"),
    (["--epsilon", "-1", "--count", "sex=F"], "epsilon must be > 0"),
    (["--epsilon", "0.1", "--mean", "height", "--bounds", "0:1"], "unknown column 'height'"),
    (["--epsilon", "0.1", "--mean", "age", "--bounds", "90:18"], "lower must be < upper"),
    (["--epsilon", "0.1", "--mean", "diagnosis", "--bounds", "0:1"], "needs a numeric column"),
    (["--epsilon", "0.1", "--mean", "age"], "needs public bounds"),
    (["--epsilon", "0.1", "--histogram", "diagnosis"], "public list of categories"),
])
def test_bad_inputs_exit_2_with_one_line(csv, capsys, args, message):
    code, out, err = _run(capsys, "query", "--data", csv, "--analyst", "cy", "--budget", "1", *args)
    assert code == 2 and out is None and message in err and len(err.strip().splitlines()) == 1


def test_exit_code_3_from_a_real_process(csv, tmp_path):
    env_home = str(tmp_path / "home")
    cmd = [sys.executable, "-m", "dpcore", "query", "--data", csv, "--analyst", "dee", "--budget", "0.1",
           "--epsilon", "0.5", "--count", "sex=F"]
    import os

    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "DP_EXPLORER_HOME": env_home})
    assert r.returncode == 3 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "budget exceeded" in r.stderr
