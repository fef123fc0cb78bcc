"""`python -m dpcore query` and `python -m dpcore budget`: JSON out, exit code 3 when over budget."""

import json
import math
import subprocess
import sys

import pytest

from dpcore.data import datasets
from dpcore.queries import ledger
from dpcore.cli import main

from ..conftest import ROOT


TOKEN = "test-admin-token"


@pytest.fixture
def raw_csv(tmp_path):
    path = tmp_path / "medical.csv"
    datasets.medical(1000, seed=1).to_csv(path, index=False)
    return str(path)


@pytest.fixture
def csv(raw_csv, monkeypatch, capsys):
    """The CSV, registered by an admin (only registered datasets have budgets)."""
    monkeypatch.setenv(ledger.ADMIN_ENV, TOKEN)
    assert main(["budget", "register", "--data", raw_csv, "--name", "medical-1"]) == 0
    capsys.readouterr()
    return raw_csv


def _run(capsys, *args):
    code = main(list(args))
    cap = capsys.readouterr()
    return code, (json.loads(cap.out) if cap.out.strip() else None), cap.err


def test_query_spends_repeats_and_refuses(csv, capsys):
    base = ["query", "--data", csv, "--analyst", "ann"]
    code, out, _ = _run(capsys, *base, "--budget", "1.0", "--epsilon", "0.5", "--count", "sex=F", "--where",
                        "age>=40")
    assert code == 0 and out["epsilon_spent"] == 0.5 and out["remaining"] == 0.5 and not out["reused"]
    assert out["query"] == "COUNT(*) WHERE sex=F AND age>=40" and out["secure"] is True
    assert out["dataset_name"] == "medical-1" and out["delta_total"] == pytest.approx(1e-4)
    assert out["neighbour"] == "add or remove one patient's record"
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
                      "--total", "2", "--admin-token", TOKEN)
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


def test_exit_code_3_from_a_real_process(csv, tmp_path, dp_home):
    env_home = str(dp_home)
    cmd = [sys.executable, "-m", "dpcore", "query", "--data", csv, "--analyst", "dee", "--budget", "0.1",
           "--epsilon", "0.5", "--count", "sex=F"]
    import os

    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "DP_EXPLORER_HOME": env_home})
    assert r.returncode == 3 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "budget exceeded" in r.stderr


def _files(home):
    return sorted(p.name for p in home.iterdir()) if home.exists() else []


def test_seed_with_the_ledger_is_refused_and_spends_nothing(csv, capsys):
    for seed in ("1", "-1", str(2 ** 40)):
        code, out, err = _run(capsys, "query", "--data", csv, "--analyst", "ann", "--budget", "1", "--epsilon", "0.5",
                              "--count", "sex=F", "--seed", seed)
        assert code == 2 and out is None and "--seed cannot be used with the budget ledger" in err
    assert not ledger.status("ann", _key(csv), with_history=False)["exists"]


def _key(csv):
    from dpcore.queries import fingerprint

    return fingerprint.dataset_key(datasets.read_csv(csv))


@pytest.mark.parametrize("args, message, code_", [
    (["--epsilon", "0.1", "--sum", ""], "--sum needs a column name", 2),
    (["--epsilon", "0.1", "--mean", " "], "--mean needs a column name", 2),
    (["--epsilon", "0.1", "--histogram", ""], "--histogram needs a column name", 2),
    (["--epsilon", "0.1", "--count", "age=nan"], "can never match", 2),
    (["--epsilon", "710", "--count", "sex=F"], "at most 100", 2),
    (["--epsilon", "0.001", "--count", "sex=F", "--mechanism", "gaussian", "--delta", "0.49"], "not below 1/n", 2),
    (["--epsilon", "0.1", "--count", "sex=F", "--mechanism", "gaussian"], "needs --delta", 2),
    (["--epsilon", "0.1", "--mean", "age", "--bounds", "18:90", "--public-n"], "replacing one record", 2),
    (["--epsilon", "0.1", "--histogram", "age", "--categories", "34,34.0"], "same value", 2),
    (["--epsilon", "0.1", "--count", "sex=F", "--mechanism", "gaussian", "--delta", "2e-4"], "needs δ = 0.0002", 3),
    (["--epsilon", "0.1", "--count", "sex=F", "--delta-budget", "0.01"], "above 1/n", 2),
    # issue 28: a traceback, and a wrong success that answered null and charged ε
    (["--epsilon", "0.1", "--histogram", "age", "--bounds=-1e308:1e308"], "between −1e15 and 1e15", 2),
    (["--epsilon", "0.1", "--sum", "age", "--bounds=-1e308:1e308"], "between −1e15 and 1e15", 2),
    (["--epsilon", "0.1", "--mean", "age", "--bounds=-1e308:1e308"], "between −1e15 and 1e15", 2),
    (["--epsilon", "0.1", "--sum", "age", "--bounds=-1:1000000000000000.5"], "got 1000000000000000.5", 2),
    (["--epsilon", "0.1", "--mean", "age", "--bounds=1e14:100000000000000.01"], "too small beside", 2),
    # issue 28: text categories compare ignoring case, as every filter: a and A are one category
    (["--epsilon", "0.1", "--histogram", "diagnosis", "--categories", "flu,FLU"], "same value", 2),
])
def test_more_bad_inputs_spend_nothing(csv, capsys, args, message, code_):
    code, out, err = _run(capsys, "query", "--data", csv, "--analyst", "cy", "--budget", "1", *args)
    assert code == code_ and out is None and message in err and len(err.strip().splitlines()) == 1
    assert ledger.status("cy", _key(csv), with_history=False)["spent"] == 0.0


def test_sum_states_its_grid_and_rounding(csv, capsys):
    """Issue 25: a SUM is each clamped value rounded to a public grid plus whole-number noise; the answer says so
    (CLI JSON) and lies on that grid."""
    code, out, _ = _run(capsys, "query", "--data", csv, "--analyst", "gi", "--budget", "1", "--epsilon", "0.5",
                        "--sum", "age", "--bounds", "18:90")
    assert code == 0 and out["grid"]["step_text"] == "0.00001" and "rounded to a multiple of 0.00001" in \
        out["grid"]["note"] and out["grid"]["noise"] == "discrete Laplace"
    assert abs(out["answer"] * 1e5 - round(out["answer"] * 1e5)) < 1e-3
    assert out["interval"][1] - out["answer"] == pytest.approx(90 / 0.5 * math.log(20), rel=1e-4)


def test_unregistered_data_cannot_be_queried(raw_csv, capsys):
    code, out, err = _run(capsys, "query", "--data", raw_csv, "--analyst", "ann", "--budget", "1", "--epsilon", "0.1",
                          "--count", "sex=F")
    assert code == 2 and "not a registered dataset" in err and "budget register" in err


def test_admin_commands_need_the_token(raw_csv, capsys, monkeypatch):
    monkeypatch.delenv(ledger.ADMIN_ENV, raising=False)
    code, _, err = _run(capsys, "budget", "register", "--data", raw_csv, "--name", "x")
    assert code == 2 and "admin actions are disabled" in err and ledger.ADMIN_ENV in err
    monkeypatch.setenv(ledger.ADMIN_ENV, TOKEN)
    code, _, err = _run(capsys, "budget", "register", "--data", raw_csv, "--name", "x", "--admin-token", "nope")
    assert code == 2 and "wrong" in err
    code, _, err = _run(capsys, "budget", "reset", "--data", raw_csv, "--analyst", "a", "--admin", "r", "--confirm",
                        "--admin-token", "nope")
    assert code == 2 and "wrong" in err
    code, out, _ = _run(capsys, "budget", "register", "--data", raw_csv, "--name", "x")  # token from the env
    assert code == 0 and out["name"] == "x" and out["n_rows"] == 1000


def test_look_alike_analysts_share_a_budget_on_the_cli(csv, capsys):
    assert _run(capsys, "query", "--data", csv, "--analyst", "Ann Lee", "--budget", "1", "--epsilon", "0.8",
                "--count", "sex=F")[0] == 0
    code, _, err = _run(capsys, "query", "--data", csv, "--analyst", " ANN  lee", "--epsilon", "0.5", "--count",
                        "sex=M")
    assert code == 3 and "only ε = 0.2" in err


def test_budget_status_on_a_corrupted_ledger_is_one_line(csv, capsys, dp_home):
    ledger._drop()
    for f in dp_home.glob("ledger.sqlite*"):
        f.unlink()
    (dp_home / "ledger.sqlite").write_bytes(b"garbage" * 1000)
    code, out, err = _run(capsys, "budget", "status", "--data", csv, "--analyst", "ann")
    assert code == 2 and "damaged" in err and len(err.strip().splitlines()) == 1
    code, out, err = _run(capsys, "query", "--data", csv, "--analyst", "ann", "--budget", "1", "--epsilon", "0.1",
                          "--count", "sex=F")
    assert code == 2 and "damaged" in err and len(err.strip().splitlines()) == 1
