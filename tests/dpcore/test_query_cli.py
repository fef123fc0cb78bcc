"""The budget CLI: `admin`, `analyst`, `budget` and `query` — JSON out, exit 2 for bad input, 3 over budget; the admin
token and analysts' keys come from the environment only and are checked against stored hashes."""

import json
import math
import os
import subprocess
import sys

import pytest

from dpcore.budgets import identities, registry, store
from dpcore.cli import main
from dpcore.data import datasets

from ..budgets_helpers import TOKEN
from ..conftest import ROOT

ADMIN = identities.ADMIN_ENV
KEY = identities.ANALYST_KEY_ENV


def _run(capsys, *args):
    code = main(list(args))
    cap = capsys.readouterr()
    return code, (json.loads(cap.out) if cap.out.strip() else None), cap.err


@pytest.fixture
def raw_csv(tmp_path):
    path = tmp_path / "medical.csv"
    datasets.medical(1000, seed=1).to_csv(path, index=False)
    return str(path)


@pytest.fixture
def owner(monkeypatch, capsys):
    """`admin init` done; the data owner's token in the environment."""
    monkeypatch.setenv(ADMIN, TOKEN)
    assert _run(capsys, "admin", "init")[0] == 0
    return TOKEN


@pytest.fixture
def clinic(owner, raw_csv, capsys):
    code, out, err = _run(
        capsys,
        "budget",
        "register",
        "--data",
        raw_csv,
        "--name",
        "clinic",
        "--epsilon",
        "2",
        "--max-query-epsilon",
        "1",
    )
    assert code == 0, err
    return out


def _analyst(monkeypatch, capsys, name="ann", epsilon="1.5", dataset="clinic"):
    """An admin grants `name` a quota; the shell then holds the analyst's key (and no admin token)."""
    code, out, err = _run(capsys, "analyst", "add", name, "--dataset", dataset, "--epsilon", epsilon)
    assert code == 0, err
    monkeypatch.delenv(ADMIN, raising=False)
    monkeypatch.setenv(KEY, out["key"])
    return out["key"]


# --- admin ------------------------------------------------------------------------------------------------------


def test_admin_init_stores_a_hash_once(monkeypatch, capsys, dp_home):
    monkeypatch.setenv(ADMIN, "short")
    code, _, err = _run(capsys, "admin", "init")
    assert code == 2 and "at least 16 characters" in err
    monkeypatch.delenv(ADMIN)
    code, _, err = _run(capsys, "admin", "init")  # no token and no terminal to type it in
    assert code == 2 and ADMIN in err
    assert _run(capsys, "admin", "status")[1]["initialised"] is False
    monkeypatch.setenv(ADMIN, TOKEN)
    code, out, _ = _run(capsys, "admin", "init")
    assert code == 0 and out["admin"] == "initialised" and "hash" in out["stored"]
    assert TOKEN not in (dp_home / "ledger.sqlite").read_bytes().decode("latin-1")
    code, _, err = _run(capsys, "admin", "init")
    assert code == 2 and "--replace" in err
    monkeypatch.setenv("DP_EXPLORER_NEW_ADMIN_TOKEN", "the-new-admin-token-42")
    assert _run(capsys, "admin", "init", "--replace")[1]["admin"] == "replaced"
    assert identities.check_admin_token("the-new-admin-token-42").is_admin


def test_before_admin_init_admin_commands_say_to_run_it(raw_csv, monkeypatch, capsys):
    monkeypatch.setenv(ADMIN, "whatever-the-caller-typed")
    for args in (
        ["budget", "register", "--data", raw_csv, "--name", "x", "--epsilon", "1"],
        ["analyst", "add", "ann", "--dataset", "x", "--epsilon", "1"],
        ["analyst", "list"],
    ):
        code, out, err = _run(capsys, *args)
        assert code == 2 and out is None and "python -m dpcore admin init" in err


def test_a_made_up_token_in_the_callers_environment_cannot_register_reset_or_raise_a_cap(
    clinic, raw_csv, monkeypatch, capsys
):
    """The issue's 'Done when': after `admin init`, a caller whose own environment holds a made-up token is just a
    caller with a wrong token, for every admin action."""
    _analyst(monkeypatch, capsys)
    monkeypatch.setenv(ADMIN, "made-up-by-the-caller-0000")
    before = registry.info("clinic")
    other = str(raw_csv).replace("medical.csv", "other.csv")
    datasets.medical(700, seed=9).to_csv(other, index=False)
    for args in (
        ["budget", "register", "--data", other, "--name", "mine", "--epsilon", "1000"],
        ["budget", "cap", "--dataset", "clinic", "--epsilon", "1000", "--reason", "more"],
        ["budget", "reset", "--dataset", "clinic", "--analyst", "ann", "--confirm", "--reason", "x", "--total", "1000"],
        ["analyst", "add", "mallory", "--dataset", "clinic", "--epsilon", "1000"],
        ["analyst", "key", "ann"],
        ["analyst", "revoke", "ann"],
        ["analyst", "list"],
    ):
        code, out, err = _run(capsys, *args)
        assert code == 2 and out is None and "admin token is missing or wrong" in err, args
    assert registry.info("mine") is None and registry.info("clinic") == before
    assert [a["analyst"] for a in identities.analysts(identities.check_admin_token(TOKEN))] == ["ann"]
    # --admin-token on the command line is gone (it showed in `ps`)
    code, _, err = _run(
        capsys, "budget", "cap", "--dataset", "clinic", "--epsilon", "9", "--reason", "x", "--admin-token", TOKEN
    )
    assert code == 2 and "unrecognized arguments" in err


# --- budget ------------------------------------------------------------------------------------------------------


def test_register_copies_the_data_and_status_shows_the_cap(clinic, dp_home, capsys):
    assert clinic["name"] == "clinic" and clinic["cap"] == 2.0 and clinic["source"]["kind"] == "file"
    assert (dp_home / clinic["source"]["file"]).stat().st_mode & 0o777 == 0o600
    code, out, _ = _run(capsys, "budget", "status", "--dataset", "clinic")  # the admin: the dataset as a whole
    assert code == 0 and out["cap"] == {
        "epsilon": 2.0,
        "spent": 0.0,
        "remaining": 2.0,
        "delta": 1e-4,
        "delta_spent": 0.0,
        "delta_remaining": 1e-4,
        "max_query_epsilon": 1.0,
        "by_release": {},
    }
    code, out, _ = _run(capsys, "budget", "list")
    assert code == 0 and [d["name"] for d in out] == ["clinic"]
    code, out, _ = _run(capsys, "budget", "cap", "--dataset", "clinic", "--epsilon", "3", "--reason", "approved")
    assert code == 0 and out["cap"] == 3.0 and "reason: approved" in out["note"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["budget", "register", "--name", "x", "--epsilon", "1"], "needs --data FILE, --name NAME and --epsilon E"),
        (["budget", "register", "--data", "RAW", "--name", "x"], "--epsilon E"),
        (["budget", "register", "--data", "RAW", "--name", " ", "--epsilon", "1"], "--name needs a value"),
        (["budget", "register", "--data", "RAW", "--name", "x", "--epsilon", "0"], "must be > 0"),
        (["budget", "register", "--data", "RAW", "--name", "x", "--epsilon", "1", "--delta", "0.01"], "not below 1/n"),
        (
            ["budget", "register", "--data", "RAW", "--name", "x", "--epsilon", "1", "--max-query-epsilon", "200"],
            "at most 100",
        ),
        (["budget", "register", "--data", "/nonexistent.csv", "--name", "x", "--epsilon", "1"], "not found"),
        (["budget", "cap", "--dataset", "clinic", "--epsilon", "3"], "needs a reason"),
        (["budget", "cap", "--dataset", "clinic", "--epsilon=-1", "--reason", "r"], "must be > 0"),
        (["budget", "cap", "--dataset", "nope", "--epsilon", "3", "--reason", "r"], "not a registered dataset"),
        (["budget", "cap", "--epsilon", "3", "--reason", "r"], "needs --dataset NAME"),
        (["budget", "reset", "--dataset", "clinic", "--confirm", "--reason", "r"], "needs --analyst NAME"),
        (
            ["budget", "reset", "--dataset", "clinic", "--analyst", "nobody", "--confirm", "--reason", "r"],
            "no quota on 'clinic'",
        ),
        (["budget", "status", "--dataset", "clinic", "--data", "RAW"], "not both"),
    ],
)
def test_budget_bad_input_is_one_line_and_exit_2(clinic, raw_csv, capsys, args, message):
    import re

    code, out, err = _run(capsys, *[raw_csv if a == "RAW" else a for a in args])
    assert code == 2 and out is None and re.search(message, err) and len(err.strip().splitlines()) == 1


# --- analysts ------------------------------------------------------------------------------------------------


def test_analyst_add_prints_a_key_once_and_list_key_revoke_work(clinic, capsys, dp_home):
    code, out, _ = _run(capsys, "analyst", "add", "Ann Lee", "--dataset", "clinic", "--epsilon", "1.5")
    assert code == 0 and out["key"].startswith("dpx_") and out["epsilon"] == 1.5
    assert out["key"] not in (dp_home / "ledger.sqlite").read_bytes().decode("latin-1")
    code, again, _ = _run(capsys, "analyst", "list")
    assert code == 0 and again[0]["analyst"] == "Ann Lee" and again[0]["signs_in"] == "with a key"
    assert out["key"] not in json.dumps(again)  # shown once, never listed
    code, listed, _ = _run(capsys, "analyst", "list", "--dataset", "clinic")
    assert [a["analyst"] for a in listed] == ["Ann Lee"]
    code, new, _ = _run(capsys, "analyst", "key", "ann lee")
    assert code == 0 and new["key"] != out["key"]
    code, gone, _ = _run(capsys, "analyst", "revoke", "ANN LEE", "--dataset", "clinic")
    assert code == 0 and gone["closed"]
    code, gone, _ = _run(capsys, "analyst", "revoke", "ann lee")
    assert code == 0 and gone["revoked"]
    code, oidc, _ = _run(
        capsys, "analyst", "add", "bo@example.org", "--dataset", "clinic", "--epsilon", "0.2", "--oidc"
    )
    assert code == 0 and "key" not in oidc and oidc["signs_in"] == "through the identity provider"


@pytest.mark.parametrize(
    "args, message",
    [
        (["analyst", "add"], "needs the analyst's NAME"),
        (["analyst", "add", "ann"], "needs --dataset NAME and --epsilon E"),
        (["analyst", "add", "ann", "--dataset", "clinic"], "--epsilon E"),
        (["analyst", "add", "ann", "--dataset", "nope", "--epsilon", "1"], "not a registered dataset"),
        (["analyst", "add", "ann", "--dataset", "clinic", "--epsilon", "-1"], "must be > 0"),
        (["analyst", "add", "visitors", "--dataset", "clinic", "--epsilon", "1"], "reserved"),
        (["analyst", "add", " ", "--dataset", "clinic", "--epsilon", "1"], "needs the analyst's NAME"),
        (["analyst", "key", "nobody"], "there is no analyst 'nobody'"),
        (["analyst", "revoke", "nobody"], "no analyst 'nobody' to revoke"),
        (["analyst", "list", "--dataset", "nope"], "not a registered dataset"),
        (["analyst", "remove", "ann"], "invalid choice"),
    ],
)
def test_analyst_bad_input_is_one_line_and_exit_2(clinic, capsys, args, message):
    code, out, err = _run(capsys, *args)
    assert code == 2 and out is None and message in err and len(err.strip().splitlines()) == 1


# --- query -------------------------------------------------------------------------------------------------------


def test_query_by_name_spends_the_quota_and_the_cap_repeats_free_and_refuses(clinic, monkeypatch, capsys):
    _analyst(monkeypatch, capsys, epsilon="1.5")
    base = ["query", "--dataset", "clinic", "--analyst", "ann"]
    code, out, _ = _run(capsys, *base, "--epsilon", "0.5", "--count", "sex=F", "--where", "age>=40")
    assert code == 0 and out["epsilon_spent"] == 0.5 and out["remaining"] == 1.0 and not out["reused"]
    assert out["query"] == "COUNT(*) WHERE sex=F AND age>=40" and out["secure"] is True
    assert out["dataset"] == "clinic" and out["dataset_remaining"] == 1.5 and out["delta_total"] == pytest.approx(1e-4)
    assert out["neighbour"] == "add or remove one patient's record" and "ann" in out["asked_as"]
    code, again, _ = _run(capsys, *base, "--epsilon", "0.5", "--where", "age>=40", "--count", "sex=F")
    assert code == 0 and again["reused"] and again["answer"] == out["answer"] and again["epsilon_spent"] == 0
    code, mean, _ = _run(capsys, *base, "--epsilon", "0.9", "--mean", "age", "--bounds", "18:90")
    assert code == 0 and 18 <= mean["answer"] <= 90 and mean["remaining"] == pytest.approx(0.1)
    code, _, err = _run(capsys, *base, "--epsilon", "0.2", "--sum", "salary", "--bounds", "0:250000")
    assert code == 3 and "only ε = 0.1 of 1.5 is left in the quota of analyst 'ann'" in err
    code, _, err = _run(capsys, *base, "--epsilon", "1.2", "--count", "sex=M")  # the per-query cap, first
    assert code == 3 and "allows at most ε = 1 per query" in err
    code, st, _ = _run(capsys, "budget", "status", "--dataset", "clinic", "--analyst", "ann")
    assert code == 0 and st["quota"]["remaining"] == pytest.approx(0.1) and st["cap"]["spent"] == pytest.approx(1.4)
    assert [e["kind"] for e in st["history"]] == ["grant", "spend", "reuse", "spend", "refused", "refused"]


def test_names_without_keys_spend_nothing_and_see_nothing(clinic, monkeypatch, capsys):
    """The issue's 'Done when': any number of names without keys spend nothing and see nothing of a registered
    dataset — with no key, a wrong key, another analyst's key, or as a visitor."""
    key = _analyst(monkeypatch, capsys)
    attempts = []
    for name in ("ann", "Ann", "mallory", "ann2", "visitors", "admin"):
        for k in (None, "", "dpx_made_up", key):
            if k is None:
                monkeypatch.delenv(KEY, raising=False)
            else:
                monkeypatch.setenv(KEY, k)
            if name.lower() == "ann" and k == key:
                continue  # ann's own key: the one way in
            attempts.append((name, k))
            for args in (
                ["query", "--dataset", "clinic", "--analyst", name, "--epsilon", "0.1", "--count", "sex=F"],
                ["budget", "status", "--dataset", "clinic", "--analyst", name],
                ["statement", "--ledger", "--dataset", "clinic", "--analyst", name],
            ):
                code, out, err = _run(capsys, *args)
                assert code == 2 and out is None and "clinic" not in err.replace("'clinic'", ""), (name, k, err)
    monkeypatch.delenv(KEY, raising=False)
    for args in (
        ["query", "--dataset", "clinic", "--epsilon", "0.1", "--count", "sex=F"],
        ["budget", "status", "--dataset", "clinic"],
        ["statement", "--ledger", "--dataset", "clinic"],
    ):
        code, out, err = _run(capsys, *args)  # a visitor
        assert code == 2 and out is None and "'clinic' is not a dataset you may use" in err
    code, out, _ = _run(capsys, "budget", "list")
    assert code == 0 and out == []  # a visitor is not told the registered datasets
    assert len(attempts) > 20 and registry.info("clinic")["spent"] == 0.0


def test_visitors_query_the_builtin_data_without_signing_in(capsys, monkeypatch):
    monkeypatch.delenv(ADMIN, raising=False)
    monkeypatch.delenv(KEY, raising=False)
    name = "synthetic medical (n=1,000, seed=0)"
    code, out, _ = _run(capsys, "query", "--dataset", name, "--epsilon", "5", "--count", "sex=F")
    assert code == 0 and out["visitors"] and out["remaining"] == 5.0 and out["dataset_remaining"] == 15.0
    code, _, err = _run(capsys, "query", "--dataset", name, "--epsilon", "5.5", "--count", "sex=M")
    assert code == 3 and "allows at most ε = 5 per query" in err  # the per-query cap of built-in data
    code, out, _ = _run(capsys, "query", "--dataset", name, "--epsilon", "5", "--count", "sex=M")
    assert code == 0 and out["remaining"] == 0.0
    code, _, err = _run(capsys, "query", "--dataset", name, "--epsilon", "0.1", "--count", "age>50")
    assert code == 3 and "the visitors' shared quota" in err
    code, st, _ = _run(capsys, "budget", "status", "--dataset", name)
    assert code == 0 and st["quota"]["visitors"] and st["cap"]["spent"] == 10.0 and st["cap"]["remaining"] == 10.0


def test_data_file_names_a_registered_dataset_only(clinic, raw_csv, tmp_path, monkeypatch, capsys):
    _analyst(monkeypatch, capsys)
    code, out, _ = _run(capsys, "query", "--data", raw_csv, "--analyst", "ann", "--epsilon", "0.1", "--count", "*")
    assert code == 0 and out["dataset"] == "clinic"
    other = tmp_path / "other.csv"
    datasets.medical(300, seed=2).to_csv(other, index=False)
    monkeypatch.chdir(tmp_path)  # a short path: a long one is shortened in the message (pytest-xdist's tmp paths)
    code, _, err = _run(capsys, "query", "--data", "other.csv", "--analyst", "ann", "--epsilon", "0.1", "--count", "*")
    assert code == 2 and "other.csv' is not a dataset you may use" in err
    code, _, err = _run(capsys, "query", "--analyst", "ann", "--epsilon", "0.1", "--count", "*")
    assert code == 2 and "--dataset NAME" in err


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, message, code_",
    [
        (["--epsilon", "0", "--count", "sex=F"], "epsilon must be > 0", 2),
        (["--epsilon", "-1", "--count", "sex=F"], "epsilon must be > 0", 2),
        (["--epsilon", "0.1", "--mean", "height", "--bounds", "0:1"], "unknown column 'height'", 2),
        (["--epsilon", "0.1", "--mean", "age", "--bounds", "90:18"], "lower must be < upper", 2),
        (["--epsilon", "0.1", "--mean", "diagnosis", "--bounds", "0:1"], "needs a numeric column", 2),
        (["--epsilon", "0.1", "--mean", "age"], "needs public bounds", 2),
        (["--epsilon", "0.1", "--histogram", "diagnosis"], "public list of categories", 2),
        (["--epsilon", "0.1", "--sum", ""], "--sum needs a column name", 2),
        (["--epsilon", "0.1", "--histogram", ""], "--histogram needs a column name", 2),
        (["--epsilon", "0.1", "--count", "age=nan"], "can never match", 2),
        (["--epsilon", "710", "--count", "sex=F"], "at most 100", 2),
        # n is not public here: the δ cap (below 1/n) refuses, and the message names no n
        (["--epsilon", "0.001", "--count", "sex=F", "--mechanism", "gaussian", "--delta", "0.49"], "δ cap", 3),
        (["--epsilon", "0.1", "--count", "sex=F", "--mechanism", "gaussian"], "needs --delta", 2),
        (["--epsilon", "0.1", "--mean", "age", "--bounds", "18:90", "--public-n"], "replacing one record", 2),
        (["--epsilon", "0.1", "--histogram", "age", "--categories", "34,34.0"], "same value", 2),
        (["--epsilon", "0.1", "--count", "sex=F", "--mechanism", "gaussian", "--delta", "2e-4"], "needs δ = 0.0002", 3),
        (["--epsilon", "0.1", "--count", "sex=F", "--budget", "5"], "unrecognized arguments: --budget", 2),
        (["--epsilon", "0.1", "--count", "sex=F", "--seed", "1"], "--seed cannot be used with the budget ledger", 2),
        # issue 28: a traceback, and a wrong success that answered null and charged ε
        (["--epsilon", "0.1", "--histogram", "age", "--bounds=-1e308:1e308"], "between −1e15 and 1e15", 2),
        (["--epsilon", "0.1", "--sum", "age", "--bounds=-1e308:1e308"], "between −1e15 and 1e15", 2),
        (["--epsilon", "0.1", "--mean", "age", "--bounds=-1e308:1e308"], "between −1e15 and 1e15", 2),
        (["--epsilon", "0.1", "--sum", "age", "--bounds=-1:1000000000000000.5"], "got 1000000000000000.5", 2),
        (["--epsilon", "0.1", "--mean", "age", "--bounds=1e14:100000000000000.01"], "too small beside", 2),
        # issue 28: text categories compare ignoring case, as every filter: a and A are one category
        (["--epsilon", "0.1", "--histogram", "diagnosis", "--categories", "flu,FLU"], "same value", 2),
    ],
)
def test_query_bad_inputs_spend_nothing(clinic, monkeypatch, capsys, args, message, code_):
    _analyst(monkeypatch, capsys)
    code, out, err = _run(capsys, "query", "--dataset", "clinic", "--analyst", "ann", *args)
    assert code == code_ and out is None and message in err and len(err.strip().splitlines()) == 1
    assert registry.info("clinic")["spent"] == 0.0


def test_statement_and_report_state_what_the_dataset_released(clinic, monkeypatch, capsys, tmp_path):
    _analyst(monkeypatch, capsys, epsilon="1.5")
    assert (
        _run(capsys, "query", "--dataset", "clinic", "--analyst", "ann", "--epsilon", "0.4", "--count", "sex=F")[0] == 0
    )
    code, st, _ = _run(capsys, "statement", "--ledger", "--dataset", "clinic", "--analyst", "ann")
    assert code == 0 and st["subject"]["dataset"] == "clinic" and st["accountant"]["epsilon"] == pytest.approx(0.4)
    assert st["quota_share"]["answers"] == 1 and "as a whole released 1 answers" in st["summary"]
    out = tmp_path / "r.html"
    code, rep, err = _run(capsys, "report", "--out", str(out), "--n", "1000", "--ledger", "clinic", "--analyst", "ann")
    assert code == 0 and rep["ledgers"] == 1, err
    assert "Privacy statement: dataset clinic, every answer by anyone" in out.read_text()


def test_sum_states_its_grid_and_rounding(clinic, monkeypatch, capsys):
    """Issue 25: a SUM is each clamped value rounded to a public grid plus whole-number noise; the answer says so
    (CLI JSON) and lies on that grid."""
    _analyst(monkeypatch, capsys)
    code, out, _ = _run(
        capsys,
        "query",
        "--dataset",
        "clinic",
        "--analyst",
        "ann",
        "--epsilon",
        "0.5",
        "--sum",
        "age",
        "--bounds",
        "18:90",
    )
    assert (
        code == 0
        and out["grid"]["step_text"] == "0.00001"
        and "rounded to a multiple of 0.00001" in out["grid"]["note"]
        and out["grid"]["noise"] == "discrete Laplace"
    )
    assert abs(out["answer"] * 1e5 - round(out["answer"] * 1e5)) < 1e-3
    assert out["interval"][1] - out["answer"] == pytest.approx(90 / 0.5 * math.log(20), rel=1e-4)


def test_exit_code_3_and_one_line_from_a_real_process(dp_home):
    env = {**os.environ, "DP_EXPLORER_HOME": str(dp_home)}
    env.pop(ADMIN, None)
    cmd = [
        sys.executable,
        "-m",
        "dpcore",
        "query",
        "--dataset",
        "synthetic medical (n=1,000, seed=0)",
        "--epsilon",
        "50",
        "--count",
        "sex=F",
    ]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 3 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "allows at most ε = 5 per query" in r.stderr


def test_a_damaged_ledger_is_one_line(clinic, monkeypatch, capsys, dp_home):
    _analyst(monkeypatch, capsys)
    store.drop()
    for f in dp_home.glob("ledger.sqlite*"):
        f.unlink()
    (dp_home / "ledger.sqlite").write_bytes(b"garbage" * 1000)
    for args in (
        ["budget", "status", "--dataset", "clinic", "--analyst", "ann"],
        ["query", "--dataset", "clinic", "--analyst", "ann", "--epsilon", "0.1", "--count", "sex=F"],
    ):
        code, out, err = _run(capsys, *args)
        assert code == 2 and "damaged" in err and len(err.strip().splitlines()) == 1
    store.drop()
    (dp_home / "ledger.sqlite").write_bytes(b"")  # emptied: refused the same way, never re-created
    code, out, err = _run(capsys, "budget", "status", "--dataset", "clinic", "--analyst", "ann")
    assert code == 2 and "damaged" in err and (dp_home / "ledger.sqlite").stat().st_size == 0


# --- whatever is typed: exit 0, 2 or 3 and one line, never a traceback ---------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402

FUZZ_VALUES = [
    "",
    " ",
    "clinic",
    "nope",
    "ann",
    "visitors",
    "admin",
    "0",
    "-1",
    "1e308",
    "nan",
    "inf",
    "1e-320",
    "0.5",
    "2",
    "sex=F",
    "age>=40",
    "[x](http://evil/)",
    "x" * 300,
    "M\udcfcller",
    "RAW",
    "synthetic medical (n=1,000, seed=0)",
    "synthetic medical (n=99, seed=0)",
]
FUZZ = {
    "admin": (["init", "status"], ["--replace"]),
    "analyst": (["add", "key", "list", "revoke"], ["--dataset", "--epsilon", "--delta", "--oidc"]),
    "budget": (
        ["status", "list", "register", "cap", "reset"],
        [
            "--dataset",
            "--data",
            "--name",
            "--epsilon",
            "--delta",
            "--max-query-epsilon",
            "--allow-similar",
            "--analyst",
            "--confirm",
            "--total",
            "--delta-total",
            "--reason",
        ],
    ),
    "query": (
        [],
        [
            "--dataset",
            "--data",
            "--analyst",
            "--epsilon",
            "--count",
            "--sum",
            "--mean",
            "--histogram",
            "--bounds",
            "--bins",
            "--categories",
            "--where",
            "--mechanism",
            "--delta",
            "--public-n",
        ],
    ),
}
FLAGS = {"--replace", "--oidc", "--allow-similar", "--confirm", "--public-n"}


@hs.composite
def budget_argv(draw):
    cmd = draw(hs.sampled_from(sorted(FUZZ)))
    actions, opts = FUZZ[cmd]
    head = [cmd] + ([draw(hs.sampled_from(actions))] if actions else [])
    if cmd == "analyst" and draw(hs.booleans()):
        head.append(draw(hs.sampled_from(FUZZ_VALUES)))
    parts = draw(hs.lists(hs.sampled_from(opts), max_size=5))
    out = list(head)
    for opt in parts:
        out += [opt] if opt in FLAGS else [opt, draw(hs.sampled_from(FUZZ_VALUES))]
    return out


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(args=budget_argv(), who=hs.sampled_from(["admin", "ann", "made-up", "nobody"]))
def test_budget_commands_never_traceback(clinic, raw_csv, monkeypatch, args, who):
    monkeypatch.delenv(ADMIN, raising=False)
    monkeypatch.delenv(KEY, raising=False)
    if who == "admin":
        monkeypatch.setenv(ADMIN, TOKEN)
    elif who == "made-up":
        monkeypatch.setenv(ADMIN, "made-up-by-the-caller-0000")
        monkeypatch.setenv(KEY, "dpx_made_up")
    elif who == "ann":
        monkeypatch.setenv(KEY, "dpx_not_anns_key_either")
    import io
    from contextlib import redirect_stderr, redirect_stdout

    before = registry.info("clinic")
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main([raw_csv if a == "RAW" else a for a in args])
    text = err.getvalue()
    assert rc in (0, 2, 3), (args, rc, text)
    assert "Traceback" not in text, (args, text)
    if rc != 0:
        assert len(text.strip().splitlines()) == 1, (args, text)
    if who != "admin":  # nobody but the data owner changes a cap (or anything else the admin owns)
        after = registry.info("clinic")
        assert (after["cap"], after["max_query_epsilon"]) == (before["cap"], before["max_query_epsilon"])


def test_a_gaussian_answer_on_the_cli_states_how_often_its_privacy_loss_exceeds_epsilon(capsys, monkeypatch):
    """Audit: a δ > 0 answer says P[privacy loss > ε] of its own release (the discrete Gaussian's), not only δ."""
    from dpcore.noise import release

    monkeypatch.delenv(ADMIN, raising=False)
    monkeypatch.delenv(KEY, raising=False)
    code, out, _ = _run(
        capsys,
        "query",
        "--dataset",
        "synthetic medical (n=1,000, seed=0)",
        "--epsilon",
        "1",
        "--count",
        "sex=F",
        "--mechanism",
        "gaussian",
        "--delta",
        "1e-5",
    )
    assert code == 0
    assert out["loss_tail"] == pytest.approx(
        release.noise_for("gaussian", epsilon=1.0, delta=1e-5, sensitivity=1).loss_exceeds_mass()
    )
    assert 1e-5 < out["loss_tail"] < 1e-3 and "is not the chance" in out["loss_tail_note"]
    code, out, _ = _run(
        capsys, "query", "--dataset", "synthetic medical (n=1,000, seed=0)", "--epsilon", "1", "--count", "sex=M"
    )
    assert code == 0 and "loss_tail" not in out  # Laplace: pure ε-DP, the loss never exceeds ε


def test_an_analyst_reads_no_exact_n_on_the_cli_unless_the_owner_declared_it_public(
    clinic, raw_csv, tmp_path, monkeypatch, capsys
):
    """Issue 33 §2: `budget status`, `budget list` and the ledger statement give an analyst no n (1,000 here)
    unless the owner registered the data with --public-n; the admin reads it either way; a DP count is charged."""
    other = tmp_path / "open.csv"
    datasets.medical(321, seed=6).to_csv(other, index=False)
    code, out, err = _run(
        capsys, "budget", "register", "--data", str(other), "--name", "open", "--epsilon", "2", "--public-n"
    )
    assert code == 0 and out["public_n"], err
    assert _run(capsys, "budget", "status", "--dataset", "clinic")[1]["n_rows"] == 1000  # the admin
    key = _run(capsys, "analyst", "add", "ann", "--dataset", "clinic", "--epsilon", "1.5")[1]["key"]
    assert _run(capsys, "analyst", "add", "ann", "--dataset", "open", "--epsilon", "1")[0] == 0
    monkeypatch.delenv(ADMIN, raising=False)  # from here on the shell is ann's
    monkeypatch.setenv(KEY, key)
    _, st, _ = _run(capsys, "budget", "status", "--dataset", "clinic", "--analyst", "ann")
    _, listed, _ = _run(capsys, "budget", "list", "--analyst", "ann")
    code, ledger, err = _run(capsys, "statement", "--ledger", "--dataset", "clinic", "--analyst", "ann")
    assert code == 0, err
    for seen in (st, {d["name"]: d for d in listed}["clinic"], ledger):
        text = json.dumps(seen, ensure_ascii=False)
        assert '"n_rows"' not in text and "1000" not in text.replace(".", "") and "1,000" not in text
    assert st["number_of_rows"].startswith("the number of rows is not released")
    assert _run(capsys, "budget", "status", "--dataset", "open", "--analyst", "ann")[1]["n_rows"] == 321
    code, out, _ = _run(capsys, "query", "--dataset", "clinic", "--analyst", "ann", "--epsilon", "0.5", "--count", "*")
    assert code == 0 and out["epsilon_spent"] == 0.5  # n as a DP count: charged like any answer
