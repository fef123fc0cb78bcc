"""Ledgers written by earlier versions open and migrate; an emptied ledger is refused, never re-created."""

import shutil
import sqlite3
from pathlib import Path

import pytest

from dpcore.budgets import identities, quotas, registry, spend, store, visitors
from dpcore.data import datasets
from dpcore.errors import BudgetExceededError, DPError

from ...budgets_helpers import admin, analyst, dataset

DATA = Path(__file__).parent / "data"
# ledger_v2.sqlite was written by the schema-2 code (main before budgets had a package): `register_builtin` of the
# console's synthetic data (n = 2,000, seed 0), `register_dataset('clinic-2024', medical(500, seed 3))`, spends by
# 'Ann Lee' / 'ann lee' and 'bob', a reset of ann's budget on the clinic (0.6 spent -> 0 of 1.5), a refusal.
BUILTIN_FP = "37ee1d36f3d5bd69b66be43c56b0f60ef870a5a4c81f709516eee216567c5e68"
CLINIC_FP = "b7e1f7c5d7dc382318555813612fbb0413446fbb2bc76ac047fca0a75cbce249"


@pytest.fixture
def v2(dp_home):
    dp_home.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / "ledger_v2.sqlite", dp_home / "ledger.sqlite")
    return dp_home / "ledger.sqlite"


def test_a_schema_2_ledger_opens_budgets_become_quotas_and_caps_start_at_their_sum(v2):
    clinic = registry.info("clinic-2024")  # reading migrates it, once
    assert clinic["fingerprint"] == CLINIC_FP
    # the cap: the sum of the budgets' totals (1.5), never below what the dataset released (0.6 + 0.2: the reset
    # gave ann her budget back, not the patients their privacy)
    assert clinic["cap"] == 1.5 and clinic["spent"] == pytest.approx(0.8) and clinic["remaining"] == pytest.approx(0.7)
    assert clinic["delta_cap"] == pytest.approx(2e-4)  # ann's δ total, below 1/n = 0.002
    hist = quotas.status(admin(), "clinic-2024")["history"]
    assert [e["kind"] for e in hist] == ["create", "spend", "reset", "spend", "migrate"]
    assert "the sum of its 1 budget(s): ε = 1.5, never below what it has released (ε = 0.8)" in hist[-1]["note"]
    # each budget is a quota; its analyst keeps the history and signs in once the admin issues a key
    key = identities.issue_key(admin(), "Ann Lee")["key"]
    ann = identities.sign_in("ANN LEE", key)
    mine = quotas.status(ann, "clinic-2024")
    assert mine["quota"]["total"] == 1.5 and mine["quota"]["spent"] == pytest.approx(0.2)
    # the built-in data is the same synthetic population: loadable again from its name, with the documented cap
    builtin = registry.info(BUILTIN_FP)
    assert builtin["builtin"] and builtin["source"] == {"kind": "medical", "n": 2000, "seed": 0}
    assert builtin["cap"] == 20.0 and builtin["spent"] == pytest.approx(1.2)
    assert len(registry.load(builtin)) == 2000
    own = quotas.status(ann, BUILTIN_FP)["quota"]
    assert own["total"] == 1.0 and own["spent"] == pytest.approx(0.7) and own["delta_spent"] == pytest.approx(1e-6)
    # stored answers are still free to repeat
    r = spend.spend(ann, BUILTIN_FP, "q1", 0.4, lambda: pytest.fail("noise drawn for a repeat"))
    assert r["reused"] and r["answer"]["answer"] == 5
    with sqlite3.connect(v2) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == "4"


def test_data_registered_before_copies_were_kept_gets_its_copy_by_registering_the_file_again(v2):
    clinic = registry.info("clinic-2024")
    with pytest.raises(DPError, match="registered before data was kept on the server"):
        registry.load(clinic)
    df = datasets.medical(500, 3)
    r = registry.register(admin(), "another name", df, epsilon=99)  # the same content: name, cap, history kept
    assert r["copied"] and r["name"] == "clinic-2024" and r["cap"] == 1.5
    assert len(registry.load(registry.info("clinic-2024"))) == 500
    assert quotas.status(admin(), "clinic-2024")["history"][-1]["kind"] == "copy"


def test_the_visitors_quota_is_added_to_migrated_builtin_data(v2):
    info = visitors.open_builtin(2000, 0)
    assert info["fingerprint"] == BUILTIN_FP
    st = quotas.status(identities.VISITOR, BUILTIN_FP)
    assert st["quota"]["visitors"] and st["quota"]["total"] == 10.0


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


def test_a_schema_1_ledger_opens_and_its_budgets_move_to_the_data_when_it_is_registered(tmp_path):
    """Schema 1 (the old code's own SQL above): ε only, names as typed, budgets keyed by the table's CSV hash."""
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(V1)
    conn.commit()
    conn.close()
    dataset("NEW" + "0" * 61, n=500, cap=0.1, legacy_keys=["LEGACY"], path=path)
    d = registry.info("NEW" + "0" * 61, path=path)
    # look-alike names merged (the smaller total, the spends added); the cap covers what they released
    assert (
        d["spent"] == pytest.approx(0.5) and d["cap"] == pytest.approx(0.5) and d["delta_spent"] == pytest.approx(0.4)
    )
    key = identities.issue_key(admin(path), "BOB", path=path)["key"]
    bob = identities.sign_in("bob", key, path=path)
    q = quotas.status(bob, d["fingerprint"], path=path)["quota"]
    assert q["total"] == 1.0 and q["spent"] == pytest.approx(0.5) and q["delta_total"] == pytest.approx(2e-4)
    assert q["delta_spent"] == pytest.approx(0.4) and q["delta_remaining"] == 0.0  # the old δ overspend shows
    with pytest.raises(BudgetExceededError):
        spend.spend(bob, d["fingerprint"], "g", 0.01, lambda: {"answer": 1}, delta=1e-6, path=path)
    r = spend.spend(bob, d["fingerprint"], "q1", 0.3, lambda: {"answer": 9}, path=path)
    assert r["answer"] == {"answer": 5} and r["reused"]


def test_an_emptied_ledger_is_refused_not_silently_recreated(dp_home):
    """Issue 28: a zero-byte ledger.sqlite read as a new ledger: every registration, quota and spend gone, budgets
    refilled. It is refused like every damaged store, by reading and by writing, and left in place."""
    fp = dataset("d" * 64, cap=1.0)
    who = analyst("ann", fp, 1.0)
    spend.spend(who, fp, "q", 0.5, lambda: {"answer": 1})
    store.drop()
    (dp_home / "ledger.sqlite").write_bytes(b"")
    for f in ("ledger.sqlite-wal", "ledger.sqlite-shm"):
        (dp_home / f).unlink(missing_ok=True)
    for call in (
        lambda: registry.info(fp),
        lambda: quotas.status(who, fp),
        identities.admin_initialised,
        lambda: spend.spend(who, fp, "q2", 0.1, lambda: {"answer": 2}),
        lambda: visitors.open_builtin(1000, 0),
    ):
        with pytest.raises(DPError, match=r"(?i)budget ledger .* is damaged .*move the file aside"):
            call()
    assert (dp_home / "ledger.sqlite").stat().st_size == 0  # nothing was written over it


def test_a_new_ledger_is_never_seen_half_made(dp_home):
    """New ledgers are built aside and linked into place whole: the file is never empty, so the refusal above can
    never hit a ledger being created, and no temporary file is left."""
    store.connect().close()
    assert (dp_home / "ledger.sqlite").stat().st_size > 0
    assert sorted(p.name for p in dp_home.iterdir() if p.name.startswith(".")) == []
