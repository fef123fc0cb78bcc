"""The budget ledger: atomic check-and-spend across processes, persistence, crashes, free repeats."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from dpcore import storage
from dpcore.queries import ledger
from dpcore.errors import BudgetExceededError, DPError

from ...conftest import ROOT

DS = "d" * 64

# A child process: wait for the start file, then try to spend 0.1 of a 1.0 budget; print the outcome.
SPENDER = r"""
import os, sys, time
from dpcore.queries import ledger
from dpcore.errors import BudgetExceededError
start, i = sys.argv[1], int(sys.argv[2])
while not os.path.exists(start):
    time.sleep(0.005)
try:
    r = ledger.spend("alice", "d" * 64, f"q{i}", 0.1, lambda: {"answer": i}, budget=1.0)
    print("OK", r["remaining"])
except BudgetExceededError:
    print("REFUSED")
"""

# A child that takes the write lock, draws, signals and then hangs inside the transaction until killed.
HANGER = r"""
import sys, time, pathlib
from dpcore.queries import ledger
flag = pathlib.Path(sys.argv[1])
def compute():
    flag.write_text("drawn")
    time.sleep(60)
    return {"answer": 1}
ledger.spend("alice", "d" * 64, "hang", 0.3, compute, budget=1.0)
"""

# A child that commits a spend and is SIGKILLed before it can print (a crash between spend and display).
COMMIT_THEN_DIE = r"""
import os, signal
from dpcore.queries import ledger
ledger.spend("alice", "d" * 64, "q-crash", 0.25, lambda: {"answer": 41.5}, budget=1.0)
os.kill(os.getpid(), signal.SIGKILL)
print("never")
"""


def _identity(fp, n=1000):
    return {"fingerprint": fp, "n_rows": n, "columns": ["a"], "sketch": {"": []}}


@pytest.fixture(autouse=True)
def registered():
    """Budgets belong to registered datasets: DS and "e"*64 stand for two registered tables of 1,000 rows."""
    ledger.register_builtin("test data", _identity(DS))
    ledger.register_builtin("other data", _identity("e" * 64))


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _py(code, *args, **kw):
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], cwd=ROOT, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _answer(value):
    return lambda: {"answer": value}


def test_concurrent_processes_accept_exactly_ten(tmp_path):
    start = tmp_path / "go"
    n = 30
    procs = [_py(SPENDER, start, i) for i in range(n)]
    time.sleep(0.5)  # let them all start and wait at the barrier
    start.write_text("go")
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(out.strip())
    assert sum(o.startswith("OK") for o in outs) == 10
    assert sum(o == "REFUSED" for o in outs) == n - 10
    st = ledger.status("alice", DS)
    assert st["spent"] == 1.0 and st["remaining"] == 0.0
    kinds = [e["kind"] for e in st["history"]]
    assert kinds.count("spend") == 10 and kinds.count("refused") == n - 10 and kinds.count("create") == 1


def test_micro_epsilon_has_no_rounding_drift():
    for i in range(10):
        ledger.spend("alice", DS, f"q{i}", 0.1, _answer(i), budget=1.0)
    st = ledger.status("alice", DS, with_history=False)
    assert st["spent"] == 1.0 and st["remaining"] == 0.0  # 10 × 0.1 in floats would be 0.9999999999999999
    with pytest.raises(BudgetExceededError):
        ledger.spend("alice", DS, "one more", 0.000001, _answer(0))


def test_charge_rounds_up_and_budget_rounds_down():
    assert ledger.to_micro(0.1) == 100_000
    assert ledger.to_micro(0.1234567) == 123_457
    r = ledger.spend("alice", DS, "q", 0.1234567, _answer(1), budget=1.0000009)
    assert r["total"] == 1.0 and r["epsilon_spent"] == 0.123457


def test_refused_query_draws_no_noise_and_says_what_is_left():
    ledger.spend("alice", DS, "q1", 0.7, _answer(1), budget=1.0)
    called = []
    with pytest.raises(BudgetExceededError, match=r"only ε = 0.3 of 1 is left") as exc:
        ledger.spend("alice", DS, "q2", 0.5, lambda: called.append(1) or {"answer": 2})
    assert exc.value.exit_code == 3
    assert called == []
    st = ledger.status("alice", DS)
    assert st["spent"] == 0.7
    assert st["history"][-1]["kind"] == "refused"  # recorded, not silently dropped


def test_identical_query_is_free_and_returns_the_same_answer():
    calls = []

    def draw():
        calls.append(1)
        return {"answer": 1000 + len(calls)}

    a = ledger.spend("alice", DS, "count sex=F", 0.5, draw, budget=0.6)
    b = ledger.spend("alice", DS, "count sex=F", 0.5, draw)
    assert a["answer"] == b["answer"] == {"answer": 1001}
    assert b["reused"] and b["epsilon_spent"] == 0.0 and b["epsilon_charged"] == 0.5
    assert b["remaining"] == pytest.approx(0.1)
    assert len(calls) == 1
    # a different query (or the same query with another ε) is a new release and is refused now
    with pytest.raises(BudgetExceededError):
        ledger.spend("alice", DS, "count sex=M", 0.5, draw)
    with pytest.raises(BudgetExceededError):
        ledger.spend("alice", DS, "count sex=F", 0.4, draw)
    # ...while the repeat stays free, even once the budget is exhausted
    assert ledger.spend("alice", DS, "count sex=F", 0.5, draw)["answer"] == {"answer": 1001}


def test_separate_analysts_and_datasets_have_separate_budgets():
    ledger.spend("alice", DS, "q", 1.0, _answer(1), budget=1.0)
    with pytest.raises(BudgetExceededError):
        ledger.spend("alice", DS, "q2", 0.1, _answer(2))
    assert ledger.spend("bob", DS, "q2", 0.1, _answer(2), budget=1.0)["remaining"] == pytest.approx(0.9)
    assert ledger.spend("alice", "e" * 64, "q2", 0.1, _answer(2), budget=2.0)["remaining"] == pytest.approx(1.9)
    # bob's identical question is not alice's stored answer: bob pays for his own
    assert ledger.spend("bob", DS, "q", 0.5, _answer(3))["answer"] == {"answer": 3}


def test_persists_across_restart(dp_home):
    ledger.spend("alice", DS, "q1", 0.4, _answer(7), budget=1.0)
    # a fresh interpreter (an app restart) sees the same budget and the stored answer
    code = ("from dpcore.queries import ledger; import json; r = ledger.spend('alice', 'd'*64, 'q1', 0.4, lambda: 1/0); "
            "print(json.dumps(r))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["reused"] and r["answer"] == {"answer": 7} and r["remaining"] == pytest.approx(0.6)
    assert (dp_home / "ledger.sqlite").exists()
    conn = sqlite3.connect(dp_home / "ledger.sqlite")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_process_killed_mid_spend_leaves_consistent_total(tmp_path):
    ledger.spend("alice", DS, "before", 0.2, _answer(0), budget=1.0)
    flag = tmp_path / "drawn"
    p = _py(HANGER, flag)
    deadline = time.time() + 60
    while not flag.exists():
        assert p.poll() is None, p.communicate()[1]
        assert time.time() < deadline
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=30)
    st = ledger.status("alice", DS)  # also checks spent == sum of spend events
    assert st["spent"] == pytest.approx(0.2)
    assert [e["kind"] for e in st["history"]] == ["create", "spend"]
    # the lock died with the process: others can spend again at once
    assert ledger.spend("alice", DS, "after", 0.3, _answer(1))["spent"] == pytest.approx(0.5)


def test_crash_after_commit_never_double_charges():
    out = subprocess.run([sys.executable, "-c", COMMIT_THEN_DIE], cwd=ROOT, env=_env(), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == -signal.SIGKILL and "never" not in out.stdout
    r = ledger.spend("alice", DS, "q-crash", 0.25, lambda: {"answer": -1})
    assert r["reused"] and r["answer"] == {"answer": 41.5}
    assert ledger.status("alice", DS, with_history=False)["spent"] == pytest.approx(0.25)


def test_compute_error_spends_nothing():
    with pytest.raises(ZeroDivisionError):
        ledger.spend("alice", DS, "q", 0.5, lambda: 1 / 0, budget=1.0)
    assert not ledger.status("alice", DS, with_history=False)["exists"]  # creation rolled back too


def test_reset_is_an_explicit_recorded_admin_action(monkeypatch):
    ledger.spend("alice", DS, "q", 1.0, _answer(5), budget=1.0)
    with pytest.raises(DPError, match="admin actions are disabled.*DP_EXPLORER_ADMIN_TOKEN"):
        ledger.reset("alice", DS, admin="root", token="", confirm=True)
    monkeypatch.setenv(ledger.ADMIN_ENV, "s3cret")
    with pytest.raises(DPError, match="admin token is missing or wrong"):
        ledger.reset("alice", DS, admin="root", token="guess", confirm=True)
    with pytest.raises(DPError, match="confirmed"):
        ledger.reset("alice", DS, admin="root", token="s3cret")
    with pytest.raises(DPError, match="admin"):
        ledger.reset("alice", DS, admin="", token="s3cret", confirm=True)
    assert ledger.status("alice", DS, with_history=False)["remaining"] == 0.0  # none of these reset anything
    r = ledger.reset("alice", DS, admin="root", token="s3cret", reason="new quarter", total=2.0, confirm=True)
    assert r["remaining"] == 2.0 and r["previous_spent"] == 1.0
    st = ledger.status("alice", DS)
    kinds = [e["kind"] for e in st["history"]]
    assert kinds == ["create", "spend", "reset"]  # nothing deleted
    assert "root" in st["history"][-1]["note"] and "new quarter" in st["history"][-1]["note"]
    assert ledger.spend("alice", DS, "q2", 1.5, _answer(6))["remaining"] == pytest.approx(0.5)
    assert ledger.spends_since_reset("alice", DS)[0]["canonical"] == "q2"
    with pytest.raises(DPError, match="nothing to reset"):
        ledger.reset("nobody", DS, admin="root", token="s3cret", confirm=True)


def test_budget_must_be_set_first_and_match_later():
    with pytest.raises(DPError, match="no budget"):
        ledger.spend("alice", DS, "q", 0.1, _answer(1))
    ledger.spend("alice", DS, "q", 0.1, _answer(1), budget=1.0)
    with pytest.raises(DPError, match="already has a budget of ε = 1"):
        ledger.spend("alice", DS, "q2", 0.1, _answer(1), budget=2.0)
    ledger.spend("alice", DS, "q2", 0.1, _answer(1), budget=1.0)  # matching is fine


@pytest.mark.parametrize("eps", [0, -0.1, float("nan"), float("inf"), "abc", True])
def test_bad_epsilon(eps):
    with pytest.raises(DPError, match="epsilon"):
        ledger.spend("alice", DS, "q", eps, _answer(1), budget=1.0)


def test_bad_budget_and_analyst():
    with pytest.raises(DPError, match="budget must be > 0"):
        ledger.spend("alice", DS, "q", 0.1, _answer(1), budget=0)
    with pytest.raises(DPError, match="analyst name is empty"):
        ledger.spend("  ", DS, "q", 0.1, _answer(1), budget=1)


def test_busy_ledger_is_a_clear_error_not_a_traceback(monkeypatch, dp_home):
    ledger.spend("alice", DS, "q0", 0.1, _answer(0), budget=1.0)
    monkeypatch.setattr(ledger, "BUSY_TIMEOUT_S", 0.2)
    ledger._drop()  # reconnect with the short timeout
    holder = sqlite3.connect(dp_home / "ledger.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        with pytest.raises(DPError, match="the budget ledger .* is busy .*nothing was spent"):
            ledger.spend("alice", DS, "q1", 0.1, _answer(1))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert ledger.spend("alice", DS, "q1", 0.1, _answer(1))["spent"] == pytest.approx(0.2)


# --- δ is budgeted (issue 11.1) --------------------------------------------------------------------


def test_delta_is_budgeted_with_a_default_of_one_over_ten_n():
    # 1,000 rows: default δ total 1e-4; the old ledger added δ up to 90 without refusing
    r = ledger.spend("alice", DS, "g1", 0.01, _answer(1), budget=1.0, delta=4e-5)
    assert r["delta_total"] == pytest.approx(1e-4) and r["delta_remaining"] == pytest.approx(6e-5)
    called = []
    with pytest.raises(BudgetExceededError, match=r"needs δ = 7e-5 but only δ = 6e-5 of 0.0001 is left") as exc:
        ledger.spend("alice", DS, "g2", 0.01, lambda: called.append(1), delta=7e-5)
    assert exc.value.exit_code == 3 and called == []
    st = ledger.status("alice", DS, with_history=False)
    assert st["spent"] == pytest.approx(0.01) and st["delta_spent"] == pytest.approx(4e-5)
    ledger.spend("alice", DS, "laplace", 0.01, _answer(2))  # δ = 0 still fits
    assert ledger.spend("alice", DS, "g3", 0.01, _answer(3), delta=6e-5)["delta_remaining"] == 0.0


def test_one_query_delta_is_capped_below_one_over_n():
    with pytest.raises(DPError, match=r"not below 1/n = 0.001") as exc:
        ledger.spend("alice", DS, "g", 0.001, _answer(1), budget=1.0, delta=0.49)
    assert exc.value.exit_code == 2
    with pytest.raises(DPError, match="not below 1/n"):
        ledger.spend("alice", DS, "g", 0.001, _answer(1), budget=1.0, delta=1e-3)
    assert not ledger.status("alice", DS, with_history=False)["exists"]


def test_delta_total_can_not_exceed_one_over_n():
    with pytest.raises(DPError, match=r"above 1/n = 0.001"):
        ledger.spend("alice", DS, "q", 0.1, _answer(1), budget=1.0, delta_budget=2e-3)
    r = ledger.spend("alice", DS, "q", 0.1, _answer(1), budget=1.0, delta_budget=1e-3)
    assert r["delta_total"] == 1e-3


def test_delta_has_no_rounding_drift():
    # 10 × 1e-5 is 0.00010000000000000002 in floats: exactly the total in atto-δ
    for i in range(10):
        ledger.spend("alice", DS, f"g{i}", 0.01, _answer(i), budget=1.0, delta=1e-5)
    st = ledger.status("alice", DS, with_history=False)
    assert st["delta_spent"] == st["delta_total"] == 1e-4 and st["delta_remaining"] == 0.0
    with pytest.raises(BudgetExceededError):
        ledger.spend("alice", DS, "one more", 0.01, _answer(0), delta=1e-18)
    assert ledger.to_atto(1e-5) == 10 ** 13 and ledger.to_atto(1.5e-19) == 1  # rounded up, never down


# --- who owns a budget (issue 11.4) ----------------------------------------------------------------


def test_look_alike_analyst_names_share_one_budget():
    ledger.spend("Alice Smith", DS, "q1", 0.6, _answer(1), budget=1.0)
    for name in ("alice smith", "  ALICE   SMITH ", "Ａｌｉｃｅ Ｓｍｉｔｈ", "Alice\u200b Smith", "Alice\tSmith"):
        with pytest.raises(BudgetExceededError, match="only ε = 0.4"):
            ledger.spend(name, DS, "q2", 0.5, _answer(2))
    st = ledger.status("ALICE SMITH", DS)
    assert st["analyst"] == "Alice Smith" and st["spent"] == pytest.approx(0.6)


def test_unregistered_data_has_no_budget():
    with pytest.raises(DPError, match="not a registered dataset.*budget register"):
        ledger.spend("alice", "f" * 64, "q", 0.1, _answer(1), budget=1.0)
    st = ledger.status("alice", "f" * 64)
    assert not st["registered"] and not st["exists"]


def test_registering_needs_the_admin_token(monkeypatch):
    ident = _identity("a" * 64)
    with pytest.raises(DPError, match="disabled"):
        ledger.register_dataset("clinic", ident, token="x")
    monkeypatch.setenv(ledger.ADMIN_ENV, "tok")
    with pytest.raises(DPError, match="wrong"):
        ledger.register_dataset("clinic", ident, token="tak")
    assert ledger.dataset_info("a" * 64) is None
    r = ledger.register_dataset("clinic", ident, token="tok")
    assert r["name"] == "clinic" and ledger.dataset_info("a" * 64)["n_rows"] == 1000
    with pytest.raises(DPError, match="already registered as 'clinic'"):
        ledger.register_dataset("clinic 2", ident, token="tok")
    with pytest.raises(DPError, match="taken"):
        ledger.register_dataset("clinic", _identity("b" * 64), token="tok")


# --- storage faults (issue 12) ---------------------------------------------------------------------


def test_ledger_file_is_readable_by_its_owner_only(dp_home):
    ledger.spend("alice", DS, "q", 0.1, _answer(1), budget=1.0)
    assert (dp_home / "ledger.sqlite").stat().st_mode & 0o777 == 0o600


def test_corrupted_ledger_is_one_clear_error(dp_home):
    ledger._drop()
    (dp_home / "ledger.sqlite").write_bytes(b"this is not a database" * 200)
    for wal in ("ledger.sqlite-wal", "ledger.sqlite-shm"):
        (dp_home / wal).unlink(missing_ok=True)
    with pytest.raises(DPError, match="(?i)is damaged.*nothing was spent.*move the file aside"):
        ledger.spend("alice", DS, "q", 0.1, _answer(1), budget=1.0)
    with pytest.raises(DPError, match="is damaged"):
        ledger.status("alice", DS)


def test_status_reads_without_writing(dp_home, monkeypatch):
    # No ledger yet: status answers and creates nothing.
    ledger._drop()
    (dp_home / "ledger.sqlite").unlink()
    for wal in ("ledger.sqlite-wal", "ledger.sqlite-shm"):
        (dp_home / wal).unlink(missing_ok=True)
    assert not ledger.status("alice", DS)["exists"] and not (dp_home / "ledger.sqlite").exists()
    ledger.register_builtin("test data", _identity(DS))
    ledger.spend("alice", DS, "q", 0.1, _answer(1), budget=1.0)
    ledger._drop()

    # A read-only home (tests run as root, where chmod does not stop writes): every read-write open fails, as
    # it would there; status still works because it opens the file read-only (a mode=ro URI).
    real = sqlite3.connect

    def read_only_home(database, *a, uri=False, **k):
        if not (uri and "mode=ro" in str(database)):
            raise sqlite3.OperationalError("attempt to write a readonly database")
        return real(database, *a, uri=uri, **k)

    monkeypatch.setattr(sqlite3, "connect", read_only_home)
    st = ledger.status("alice", DS)
    assert st["spent"] == pytest.approx(0.1) and [e["kind"] for e in st["history"]] == ["create", "spend"]
    with pytest.raises(DPError, match="read-only or not accessible; nothing was spent: reading works"):
        ledger.spend("alice", DS, "q2", 0.1, _answer(2))


def test_full_disk_spends_nothing(monkeypatch):
    ledger.spend("alice", DS, "q", 0.1, _answer(1), budget=1.0)
    real = ledger._event

    def full(conn, *a, **k):
        if a[2] == "spend":
            raise sqlite3.OperationalError("database or disk is full")
        return real(conn, *a, **k)

    monkeypatch.setattr(ledger, "_event", full)
    with pytest.raises(storage.StorageError, match="is full; nothing was spent"):  # storage's one fault message
        ledger.spend("alice", DS, "q2", 0.2, _answer(2))
    monkeypatch.setattr(ledger, "_event", real)
    st = ledger.status("alice", DS)
    assert st["spent"] == pytest.approx(0.1) and [e["kind"] for e in st["history"]] == ["create", "spend"]


# --- a schema-1 ledger still opens (migration) -----------------------------------------------------

V1 = """
CREATE TABLE budgets (analyst TEXT NOT NULL, dataset TEXT NOT NULL, total_micro INTEGER NOT NULL CHECK (total_micro > 0),
    spent_micro INTEGER NOT NULL DEFAULT 0 CHECK (spent_micro >= 0 AND spent_micro <= total_micro), created REAL NOT NULL,
    PRIMARY KEY (analyst, dataset));
CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, analyst TEXT NOT NULL, dataset TEXT NOT NULL, ts REAL NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('create', 'spend', 'reuse', 'refused', 'reset')), query TEXT, description TEXT,
    eps_micro INTEGER NOT NULL DEFAULT 0, delta REAL NOT NULL DEFAULT 0, cost_micro INTEGER NOT NULL DEFAULT 0,
    answer TEXT, note TEXT);
CREATE UNIQUE INDEX one_answer_per_question ON events (analyst, dataset, query, eps_micro) WHERE kind = 'spend';
INSERT INTO budgets VALUES ('Bob', 'LEGACY', 1000000, 300000, 1.0);
INSERT INTO budgets VALUES ('bob ', 'LEGACY', 2000000, 200000, 2.0);
INSERT INTO events VALUES (1, 'Bob', 'LEGACY', 1.0, 'create', NULL, NULL, 0, 0, 0, NULL, 'budget set');
INSERT INTO events VALUES (2, 'Bob', 'LEGACY', 1.5, 'spend', 'q1', 'Q1', 300000, 0.4, 300000, '{"answer": 5}', NULL);
INSERT INTO events VALUES (3, 'bob ', 'LEGACY', 2.0, 'create', NULL, NULL, 0, 0, 0, NULL, 'budget set');
INSERT INTO events VALUES (4, 'bob ', 'LEGACY', 2.5, 'spend', 'q2', 'Q2', 200000, 0, 200000, '{"answer": 6}', NULL);
"""


def test_schema_1_ledger_opens_and_migrates(tmp_path):
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(V1)
    conn.commit()
    conn.close()
    st = ledger.status("bob", "LEGACY", path=path)  # read-only, before any migration
    assert st["exists"] and st["delta_total"] is None
    ledger.register_builtin("old data", {**_identity("NEW", n=500), "legacy_keys": ["LEGACY"]}, path=path)
    st = ledger.status("BOB", "NEW", path=path)
    # look-alike names merged: the smaller total, the spends added; δ total = the default 1/(10n) for the data
    assert st["total"] == 1.0 and st["spent"] == pytest.approx(0.5) and st["delta_total"] == pytest.approx(2e-4)
    assert st["delta_spent"] == pytest.approx(0.4) and st["delta_remaining"] == 0.0  # old δ overspend shows
    assert [e["kind"] for e in st["history"]] == ["create", "spend", "create", "spend"]
    with pytest.raises(BudgetExceededError, match="δ"):
        ledger.spend("bob", "NEW", "g", 0.1, _answer(1), delta=1e-6, path=path)
    assert ledger.spend("bob", "NEW", "q1", 0.3, _answer(9), path=path)["answer"] == {"answer": 5}  # stored answer
