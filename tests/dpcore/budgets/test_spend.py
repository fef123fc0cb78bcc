"""The spend transaction: the dataset's cap and the asker's quota charged together, atomically, across processes."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from dpcore import storage
from dpcore.budgets import amounts, identities, quotas, registry, spend, store
from dpcore.errors import BudgetExceededError, DPError
from dpcore.noise.charge import Charge, Neighbour

from ...budgets_helpers import admin, analyst, dataset, grant_key
from ...conftest import ROOT

DS = "d" * 64

# A child process: sign in with its key, wait for the start file, then try to spend 0.1; print the outcome.
SPENDER = r"""
import os, sys, time
from dpcore.budgets import identities, spend
from dpcore.errors import BudgetExceededError
start, i, name, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
who = identities.sign_in(name, key)
while not os.path.exists(start):
    time.sleep(0.005)
try:
    r = spend.spend(who, "d" * 64, f"q{i}", 0.1, lambda: {"answer": i})
    print("OK", r["remaining"], r["dataset_remaining"])
except BudgetExceededError:
    print("REFUSED")
"""

# A child that takes the write lock, draws, signals and then hangs inside the transaction until killed.
HANGER = r"""
import sys, time, pathlib
from dpcore.budgets import identities, spend
flag = pathlib.Path(sys.argv[1])
who = identities.sign_in("alice", sys.argv[2])
def compute():
    flag.write_text("drawn")
    time.sleep(60)
    return {"answer": 1}
spend.spend(who, "d" * 64, "hang", 0.3, compute)
"""

# A child that commits a spend and is SIGKILLed before it can print (a crash between spend and display).
COMMIT_THEN_DIE = r"""
import os, signal, sys
from dpcore.budgets import identities, spend
who = identities.sign_in("alice", sys.argv[1])
spend.spend(who, "d" * 64, "q-crash", 0.25, lambda: {"answer": 41.5})
os.kill(os.getpid(), signal.SIGKILL)
print("never")
"""


def _env():
    return dict(os.environ)  # dpcore is installed: no path to set


def _py(code, *args, **kw):
    return subprocess.Popen(
        [sys.executable, "-c", code, *map(str, args)],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def _answer(value):
    return lambda: {"answer": value}


def _spend(who, q, eps, value=1, **kw):
    return spend.spend(who, DS, q, eps, _answer(value), **kw)


@pytest.fixture
def alice():
    dataset(DS, cap=5.0)
    return analyst("alice", DS, 1.0)


def _race(tmp_path, n, people):
    """n processes, round-robin over ``people`` ((name, key) pairs), all released at once."""
    start = tmp_path / "go"
    procs = [_py(SPENDER, start, i, *people[i % len(people)]) for i in range(n)]
    time.sleep(1.0)  # let them all sign in and wait at the barrier
    start.write_text("go")
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        outs.append(out.strip())
    return outs


@pytest.mark.slow  # 40 processes race
def test_three_analysts_whose_quotas_exceed_the_cap_spend_at_most_the_cap_under_40_racing_processes(tmp_path):
    """The issue's 'Done when': quotas 0.5 + 0.5 + 0.5 on a cap of 1.0; 40 processes ask ε = 0.1 at once."""
    dataset(DS, cap=1.0)
    people = [(name, grant_key(name, DS, 0.5)) for name in ("ann", "bob", "cy")]
    outs = _race(tmp_path, 40, people)
    assert sum(o.startswith("OK") for o in outs) == 10 and sum(o == "REFUSED" for o in outs) == 30
    d = registry.info(DS)
    assert d["spent"] == 1.0 and d["remaining"] == 0.0  # the cap, exactly: never more, whoever asked
    admin_view = quotas.status(analyst_admin(), DS)
    spends = [e for e in admin_view["history"] if e["kind"] == "spend"]
    assert len(spends) == 10 and sum(e["cost"] for e in spends) == pytest.approx(1.0)
    assert all(quotas.status(analyst_admin(), DS, analyst=n)["quota"]["spent"] <= 0.5 for n, _ in people)
    refused = [e["note"] for e in admin_view["history"] if e["kind"] == "refused"]
    assert len(refused) == 30 and any("the dataset's cap" in r for r in refused)


def analyst_admin():
    from ...budgets_helpers import admin

    return admin()


@pytest.mark.slow  # processes race
def test_one_quota_under_racing_processes_accepts_exactly_its_total(tmp_path):
    dataset(DS, cap=5.0)
    outs = _race(tmp_path, 30, [("alice", grant_key("alice", DS, 1.0))])
    assert sum(o.startswith("OK") for o in outs) == 10 and sum(o == "REFUSED" for o in outs) == 20
    q = quotas.status(analyst_admin(), DS, analyst="alice")["quota"]
    assert q["spent"] == 1.0 and q["remaining"] == 0.0
    assert registry.info(DS)["spent"] == 1.0  # the dataset was charged the same answers


def test_micro_epsilon_has_no_rounding_drift(alice):
    for i in range(10):
        _spend(alice, f"q{i}", 0.1, i)
    r = quotas.status(alice, DS, with_history=False)
    assert r["quota"]["spent"] == 1.0 and r["quota"]["remaining"] == 0.0  # 10 × 0.1 in floats: 0.9999999999999999
    with pytest.raises(BudgetExceededError):
        _spend(alice, "one more", 0.000001)


def test_charge_rounds_up_and_totals_round_down():
    assert amounts.to_micro(0.1) == 100_000 and amounts.to_micro(0.1234567) == 123_457
    assert amounts.total_micro(1.0000009, name="cap") == 1_000_000
    dataset(DS, cap=5.0)
    who = analyst("alice", DS, 1.0000009)
    r = _spend(who, "q", 0.1234567)
    assert r["total"] == 1.0 and r["epsilon_spent"] == 0.123457


def test_refused_query_draws_no_noise_and_says_what_is_left(alice):
    _spend(alice, "q1", 0.7)
    called = []
    with pytest.raises(BudgetExceededError, match=r"only ε = 0.3 of 1 is left in the quota of analyst 'alice'") as exc:
        spend.spend(alice, DS, "q2", 0.5, lambda: called.append(1) or {"answer": 2})
    assert exc.value.exit_code == 3 and called == []
    st = quotas.status(alice, DS)
    assert st["quota"]["spent"] == 0.7 and st["cap"]["spent"] == 0.7
    assert st["history"][-1]["kind"] == "refused"  # recorded, not silently dropped


def test_the_dataset_cap_refuses_what_a_quota_would_allow():
    dataset(DS, cap=1.0)
    ann, bob = analyst("ann", DS, 0.8), analyst("bob", DS, 0.8)
    _spend(ann, "a", 0.8)
    with pytest.raises(BudgetExceededError, match=r"only ε = 0.2 of 1 is left in the dataset's cap"):
        _spend(bob, "b", 0.5)  # bob's quota has 0.8 left; the patients' guarantee has 0.2
    assert _spend(bob, "b", 0.2)["dataset_remaining"] == 0.0


def test_the_per_query_cap_refuses_before_any_noise():
    dataset(DS, cap=10.0, per_query=1.0)
    who = analyst("ann", DS, 5.0)
    called = []
    with pytest.raises(BudgetExceededError, match="allows at most ε = 1 per query") as exc:
        spend.spend(who, DS, "q", 1.5, lambda: called.append(1) or {"answer": 1})
    assert exc.value.exit_code == 3 and called == [] and registry.info(DS)["spent"] == 0.0
    assert _spend(who, "q", 1.0)["epsilon_spent"] == 1.0


def test_identical_query_is_free_and_returns_the_same_answer():
    dataset(DS, cap=5.0)
    who = analyst("alice", DS, 0.6)
    calls = []

    def draw():
        calls.append(1)
        return {"answer": 1000 + len(calls)}

    a = spend.spend(who, DS, "count sex=F", 0.5, draw)
    b = spend.spend(who, DS, "count sex=F", 0.5, draw)
    assert a["answer"] == b["answer"] == {"answer": 1001}
    assert b["reused"] and b["epsilon_spent"] == 0.0 and b["epsilon_charged"] == 0.5
    assert b["remaining"] == pytest.approx(0.1) and b["dataset_spent"] == 0.5
    assert len(calls) == 1
    with pytest.raises(BudgetExceededError):  # another question, or the same one at another ε, is a new release
        spend.spend(who, DS, "count sex=M", 0.5, draw)
    with pytest.raises(BudgetExceededError):
        spend.spend(who, DS, "count sex=F", 0.4, draw)
    assert spend.spend(who, DS, "count sex=F", 0.5, draw)["answer"] == {"answer": 1001}  # free, even now


def test_quotas_are_separate_but_share_the_cap():
    dataset(DS, cap=1.5)
    dataset("e" * 64, cap=5.0)
    alice, bob = analyst("alice", DS, 1.0), analyst("bob", DS, 1.0)
    _spend(alice, "q", 1.0)
    with pytest.raises(BudgetExceededError):
        _spend(alice, "q2", 0.1)
    r = _spend(bob, "q2", 0.1)
    assert r["remaining"] == pytest.approx(0.9) and r["dataset_remaining"] == pytest.approx(0.4)
    assert _spend(bob, "q", 0.4, 3)["answer"] == {"answer": 3}  # bob pays for his own copy of alice's question
    other = analyst("alice", "e" * 64, 2.0)
    assert spend.spend(other, "e" * 64, "q", 0.1, _answer(1))["remaining"] == pytest.approx(1.9)


def test_a_visitor_and_a_name_without_a_key_spend_nothing_on_a_registered_dataset():
    dataset(DS, cap=5.0)
    analyst("alice", DS, 1.0)
    called = []
    for who in (identities.VISITOR, identities.Identity("analyst", "mallory", "mallory", "key")):
        with pytest.raises(DPError, match="open to signed-in analysts only|no quota"):
            spend.spend(who, DS, "q", 0.1, lambda: called.append(1) or {"answer": 1})
    with pytest.raises(DPError, match="checked identity"):
        spend.spend("alice", DS, "q", 0.1, lambda: called.append(1))
    assert called == [] and registry.info(DS)["spent"] == 0.0


def test_a_revoked_key_or_a_closed_quota_spends_nothing(alice):
    from ...budgets_helpers import admin

    quotas.close(admin(), "alice", DS)
    with pytest.raises(DPError, match="no quota"):
        _spend(alice, "q", 0.1)
    quotas.grant(admin(), "alice", DS, epsilon=1.0)  # opens again
    assert _spend(alice, "q", 0.1)["epsilon_spent"] == 0.1
    identities.revoke(admin(), "alice")
    with pytest.raises(DPError, match="no quota"):  # the identity object lives on; the ledger no longer honours it
        _spend(alice, "q2", 0.1)


def test_persists_across_restart(dp_home):
    dataset(DS, cap=5.0)
    key = grant_key("alice", DS, 1.0)
    who = identities.sign_in("alice", key)
    _spend(who, "q1", 0.4, 7)
    code = (
        "from dpcore.budgets import identities, spend; import json, sys; who = identities.sign_in('alice', sys.argv[1]);"
        " r = spend.spend(who, 'd'*64, 'q1', 0.4, lambda: 1/0); print(json.dumps(r))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, key], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["reused"] and r["answer"] == {"answer": 7} and r["remaining"] == pytest.approx(0.6)
    conn = sqlite3.connect(dp_home / "ledger.sqlite")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_process_killed_mid_spend_leaves_consistent_totals(tmp_path):
    dataset(DS, cap=5.0)
    key = grant_key("alice", DS, 1.0)
    who = identities.sign_in("alice", key)
    _spend(who, "before", 0.2)
    flag = tmp_path / "drawn"
    p = _py(HANGER, flag, key)
    deadline = time.time() + 60
    while not flag.exists():
        assert p.poll() is None, p.communicate()[1]
        assert time.time() < deadline
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=30)
    st = quotas.status(who, DS)
    assert st["quota"]["spent"] == pytest.approx(0.2) and st["cap"]["spent"] == pytest.approx(0.2)
    assert [e["kind"] for e in st["history"]] == ["grant", "spend"]
    assert _spend(who, "after", 0.3)["spent"] == pytest.approx(0.5)  # the lock died with the process


def test_crash_after_commit_never_double_charges():
    dataset(DS, cap=5.0)
    key = grant_key("alice", DS, 1.0)
    out = subprocess.run(
        [sys.executable, "-c", COMMIT_THEN_DIE, key], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=60
    )
    assert out.returncode == -signal.SIGKILL and "never" not in out.stdout
    who = identities.sign_in("alice", key)
    r = spend.spend(who, DS, "q-crash", 0.25, lambda: {"answer": -1})
    assert r["reused"] and r["answer"] == {"answer": 41.5} and r["dataset_spent"] == pytest.approx(0.25)


def test_compute_error_spends_nothing(alice):
    with pytest.raises(ZeroDivisionError):
        spend.spend(alice, DS, "q", 0.5, lambda: 1 / 0)
    st = quotas.status(alice, DS)
    assert st["quota"]["spent"] == 0 and st["cap"]["spent"] == 0 and st["history"][-1]["kind"] == "grant"


@pytest.mark.parametrize("eps", [0, -0.1, float("nan"), float("inf"), "abc", True])
def test_bad_epsilon(alice, eps):
    with pytest.raises(DPError, match="epsilon"):
        _spend(alice, "q", eps)


def test_busy_ledger_is_a_clear_error_not_a_traceback(alice, monkeypatch, dp_home):
    _spend(alice, "q0", 0.1)
    monkeypatch.setattr(store, "BUSY_TIMEOUT_S", 0.2)
    store.drop()  # reconnect with the short timeout
    holder = sqlite3.connect(dp_home / "ledger.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        with pytest.raises(DPError, match="the budget ledger .* is busy .*nothing was spent"):
            _spend(alice, "q1", 0.1)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert _spend(alice, "q1", 0.1)["spent"] == pytest.approx(0.2)


def test_a_replace_one_charge_is_refused_before_anything_happens(alice):
    called = []
    with pytest.raises(DPError, match="one relation"):
        spend.spend(
            alice, DS, "q", Charge.pure(0.1, neighbour=Neighbour.REPLACE_ONE), lambda: called.append(1) or {"answer": 1}
        )
    assert called == []
    r = spend.spend(alice, DS, "q", Charge.gaussian(0.2, 1e-6), _answer(1))
    assert r["epsilon_spent"] == pytest.approx(0.2) and r["delta_spent_now"] == pytest.approx(1e-6)


# --- δ is budgeted like ε, in the cap and in the quota ----------------------------------------------------


def test_delta_is_budgeted_in_the_quota_with_a_default_of_one_over_ten_n(alice):
    r = _spend(alice, "g1", 0.01, delta=4e-5)  # 1,000 rows: default δ total 1e-4
    assert r["delta_total"] == pytest.approx(1e-4) and r["delta_remaining"] == pytest.approx(6e-5)
    called = []
    with pytest.raises(BudgetExceededError, match=r"needs δ = 7e-5 but only δ = 6e-5 of 0.0001 is left") as exc:
        spend.spend(alice, DS, "g2", 0.01, lambda: called.append(1), delta=7e-5)
    assert exc.value.exit_code == 3 and called == []
    _spend(alice, "laplace", 0.01)  # δ = 0 still fits
    assert _spend(alice, "g3", 0.01, delta=6e-5)["delta_remaining"] == 0.0


def test_the_dataset_delta_cap_binds_quotas_together():
    dataset(DS, cap=5.0, delta=1e-4)
    ann, bob = analyst("ann", DS, 1.0), analyst("bob", DS, 1.0)
    _spend(ann, "g", 0.1, delta=8e-5)
    with pytest.raises(BudgetExceededError, match="the dataset's δ cap"):
        _spend(bob, "g", 0.1, delta=5e-5)
    assert _spend(bob, "g", 0.1, delta=2e-5)["dataset_delta_remaining"] == 0.0


def test_one_query_delta_is_capped_below_one_over_n():
    dataset(DS, cap=5.0, public_n=True)
    alice = analyst("alice", DS, 1.0)
    with pytest.raises(DPError, match=r"not below 1/n = 0.001") as exc:
        _spend(alice, "g", 0.001, delta=0.49)
    assert exc.value.exit_code == 2
    with pytest.raises(DPError, match="not below 1/n"):
        _spend(alice, "g", 0.001, delta=1e-3)
    assert quotas.status(alice, DS)["quota"]["spent"] == 0


def test_a_delta_above_one_over_n_is_refused_by_the_delta_cap_when_n_is_not_public(alice):
    """n is not free: the refusal of a δ ≥ 1/n must not name n (nor let δs probe it): the δ cap, below 1/n, refuses."""
    for d in (0.49, 1e-3):
        with pytest.raises(BudgetExceededError, match="δ cap") as exc:
            _spend(alice, "g", 0.001, delta=d)
        assert "1/n" not in str(exc.value) and "1,000" not in str(exc.value) and exc.value.exit_code == 3
    assert quotas.status(alice, DS)["quota"]["spent"] == 0


def test_delta_totals_stay_below_one_over_n():
    with pytest.raises(DPError, match=r"not below 1/n = 0.001"):
        amounts.delta_total_atto(1e-3, 1000)
    assert amounts.delta_total_atto(9.99e-4, 1000) == amounts.to_atto(9.99e-4)
    dataset(DS, cap=5.0)
    with pytest.raises(DPError, match="not below 1/n"):
        analyst("alice", DS, 1.0, delta=2e-3)


def test_delta_has_no_rounding_drift(alice):
    for i in range(10):  # 10 × 1e-5 is 0.00010000000000000002 in floats: exactly the total in atto-δ
        _spend(alice, f"g{i}", 0.01, i, delta=1e-5)
    q = quotas.status(alice, DS, with_history=False)["quota"]
    assert q["delta_spent"] == q["delta_total"] == 1e-4 and q["delta_remaining"] == 0.0
    with pytest.raises(BudgetExceededError):
        _spend(alice, "one more", 0.01, delta=1e-18)
    assert amounts.to_atto(1e-5) == 10**13 and amounts.to_atto(1.5e-19) == 1  # rounded up, never down


# --- storage faults --------------------------------------------------------------------------------


def test_ledger_and_copies_are_readable_by_their_owner_only(alice, dp_home):
    _spend(alice, "q", 0.1)
    assert (dp_home / "ledger.sqlite").stat().st_mode & 0o777 == 0o600
    assert dp_home.stat().st_mode & 0o777 == 0o700


def test_unregistered_data_has_no_budget(alice):
    with pytest.raises(DPError, match="not a dataset you may use"):
        spend.spend(alice, "f" * 64, "q", 0.1, _answer(1))
    with pytest.raises(DPError, match="not a registered dataset.*budget register"):  # the admin is told how
        registry.set_cap(admin(), "f" * 64, epsilon=1.0, reason="r")


def test_corrupted_ledger_is_one_clear_error(alice, dp_home):
    store.drop()
    (dp_home / "ledger.sqlite").write_bytes(b"this is not a database" * 200)
    for wal in ("ledger.sqlite-wal", "ledger.sqlite-shm"):
        (dp_home / wal).unlink(missing_ok=True)
    with pytest.raises(DPError, match="(?i)is damaged.*nothing was spent.*move the file aside"):
        _spend(alice, "q", 0.1)
    with pytest.raises(DPError, match="is damaged"):
        quotas.status(alice, DS)


def test_full_disk_spends_nothing(alice, monkeypatch):
    _spend(alice, "q", 0.1)
    real = registry.event

    def full(conn, kind, **k):
        if kind == "spend":
            raise sqlite3.OperationalError("database or disk is full")
        return real(conn, kind, **k)

    monkeypatch.setattr(registry, "event", full)
    with pytest.raises(storage.StorageError, match="is full; nothing was spent"):
        _spend(alice, "q2", 0.2)
    monkeypatch.setattr(registry, "event", real)
    st = quotas.status(alice, DS)
    assert st["quota"]["spent"] == pytest.approx(0.1) and st["cap"]["spent"] == pytest.approx(0.1)
    assert [e["kind"] for e in st["history"]] == ["grant", "spend"]


def test_status_reads_without_writing(dp_home, monkeypatch):
    # No ledger yet: reading answers and creates nothing.
    assert registry.info(DS) is None and not identities.admin_initialised()
    assert not (dp_home / "ledger.sqlite").exists()
    dataset(DS, cap=5.0)
    who = analyst("alice", DS, 1.0)
    _spend(who, "q", 0.1)
    store.drop()
    # A read-only home (tests run as root, where chmod does not stop writes): every read-write open fails, as it
    # would there; reading still works because it opens the file read-only (a mode=ro URI).
    real = sqlite3.connect

    def read_only_home(database, *a, uri=False, **k):
        if not (uri and "mode=ro" in str(database)):
            raise sqlite3.OperationalError("attempt to write a readonly database")
        return real(database, *a, uri=uri, **k)

    monkeypatch.setattr(sqlite3, "connect", read_only_home)
    st = quotas.status(who, DS)
    assert st["quota"]["spent"] == pytest.approx(0.1) and [e["kind"] for e in st["history"]] == ["grant", "spend"]
    with pytest.raises(DPError, match="read-only or not accessible; nothing was spent: reading works"):
        _spend(who, "q2", 0.1)
