"""The ledger's tables (schema 4) and the migration of ledgers written by earlier versions.

Schema 4 charges every kind of release, not only console answers: each history row that spends names its release
kind (``events.release``: answer, training, sweep, synthetic, planned) and, for a background job, the job
(``events.job``); a job's charge is a **ticket** (``tickets``) held while the job runs, kept when it finishes and
refunded (a ``refund`` event that says why) when it fails or is cancelled before anything left the server. A dataset
records whether its owner declared its number of rows public (``datasets.public_n``; built-in synthetic data: yes).
A schema-3 ledger gains these in one transaction, nothing deleted: its spends are console answers.

Schema 1 (ε only, analyst names as typed, budgets keyed by a hash of the table's CSV) and schema 2 (δ in atto-δ,
canonical names, a registry of datasets, one budget per analyst and dataset) open and are migrated in one
transaction, nothing deleted:

* each (analyst, dataset) budget becomes a **quota** (look-alike names of schema 1 merged: the smallest total,
  the spends added); its analyst keeps the history but has no key until the admin issues one
  (``python -m dpcore analyst key NAME``);
* each registered dataset gets a **cap**: the sum of its budgets' totals, never below what the dataset has
  released (every answer ever charged on it — resets gave budgets back, never the released answers), with a
  history note; the δ cap likewise, kept below 1/n when what was spent allows it;
* a dataset registered before data was kept on the server has no stored copy: the admin attaches one by
  registering the same file again (``budget register``), which keeps its name, cap and history.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from typing import Any

from .. import limits
from ..errors import DPError
from ..storage.sqlite import transaction
from . import amounts

SCHEMA_VERSION = 4

TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS datasets (
    fingerprint      TEXT PRIMARY KEY,
    name             TEXT NOT NULL UNIQUE,
    n_rows           INTEGER NOT NULL CHECK (n_rows > 0),
    columns          TEXT NOT NULL,
    sketch           TEXT NOT NULL,
    profile          TEXT,
    source           TEXT NOT NULL,
    builtin          INTEGER NOT NULL DEFAULT 0,
    cap_micro        INTEGER NOT NULL CHECK (cap_micro >= 0),
    cap_delta_atto   INTEGER NOT NULL CHECK (cap_delta_atto >= 0),
    spent_micro      INTEGER NOT NULL DEFAULT 0 CHECK (spent_micro >= 0),
    delta_spent_atto INTEGER NOT NULL DEFAULT 0 CHECK (delta_spent_atto >= 0),
    max_query_micro  INTEGER CHECK (max_query_micro IS NULL OR max_query_micro > 0),
    created          REAL NOT NULL,
    note             TEXT,
    public_n         INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS analysts (
    name     TEXT PRIMARY KEY,
    display  TEXT NOT NULL,
    kind     TEXT NOT NULL CHECK (kind IN ('key', 'oidc', 'visitors', 'legacy')),
    key_hash TEXT,
    created  REAL NOT NULL,
    revoked  REAL
);
CREATE TABLE IF NOT EXISTS quotas (
    analyst          TEXT NOT NULL,
    dataset          TEXT NOT NULL,
    total_micro      INTEGER NOT NULL CHECK (total_micro > 0),
    spent_micro      INTEGER NOT NULL DEFAULT 0 CHECK (spent_micro >= 0),
    delta_total_atto INTEGER CHECK (delta_total_atto IS NULL OR delta_total_atto >= 0),
    delta_spent_atto INTEGER NOT NULL DEFAULT 0 CHECK (delta_spent_atto >= 0),
    created          REAL NOT NULL,
    closed           REAL,
    PRIMARY KEY (analyst, dataset)
);
CREATE TABLE IF NOT EXISTS events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    analyst     TEXT,
    dataset     TEXT,
    actor       TEXT,
    ts          REAL NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('create', 'grant', 'spend', 'reuse', 'refused', 'reset', 'register',
                                              'cap', 'copy', 'key', 'revoke', 'close', 'migrate', 'refund')),
    query       TEXT,
    description TEXT,
    eps_micro   INTEGER NOT NULL DEFAULT 0,
    delta_atto  INTEGER NOT NULL DEFAULT 0,
    cost_micro  INTEGER NOT NULL DEFAULT 0,
    answer      TEXT,
    note        TEXT,
    release     TEXT CHECK (release IS NULL OR release IN ('answer', 'training', 'sweep', 'synthetic', 'planned')),
    job         TEXT
);
CREATE TABLE IF NOT EXISTS tickets (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    event      INTEGER NOT NULL,
    dataset    TEXT NOT NULL,
    analyst    TEXT NOT NULL,
    release    TEXT NOT NULL,
    part       TEXT NOT NULL,
    eps_micro  INTEGER NOT NULL CHECK (eps_micro >= 0),
    delta_atto INTEGER NOT NULL CHECK (delta_atto >= 0),
    job        TEXT,
    state      TEXT NOT NULL CHECK (state IN ('held', 'kept', 'refunded')),
    created    REAL NOT NULL,
    settled    REAL,
    note       TEXT
);
CREATE INDEX IF NOT EXISTS tickets_by_job ON tickets (job);
CREATE INDEX IF NOT EXISTS answers_by_question ON events (analyst, dataset, query, eps_micro, kind);
CREATE INDEX IF NOT EXISTS events_by_quota ON events (analyst, dataset, id);
CREATE INDEX IF NOT EXISTS events_by_dataset ON events (dataset, id);
"""

#: A schema-2 built-in dataset's name says its synthetic population, so the data can be generated again.
_BUILTIN_NAME = re.compile(r"synthetic medical \(n=([\d,]+), seed=(\d+)\)")


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})").fetchall()}


def version(conn: sqlite3.Connection) -> int:
    """The schema of an open ledger: 0 (empty), 1, 2, 3 or 4."""
    tables = _tables(conn)
    if "meta" in tables:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is not None:
            return int(row[0])
    if "budgets" in tables:
        return 2 if "delta_total_atto" in _columns(conn, "budgets") else 1
    return 0


def migrate(conn: sqlite3.Connection) -> None:
    """Create the tables, or bring a ledger of schema 1, 2 or 3 up to schema 4, in one transaction."""
    v = version(conn)
    if v == SCHEMA_VERSION:
        return
    if v > SCHEMA_VERSION:
        raise DPError(f"the budget ledger was written by a newer DP Explorer (schema {v}); upgrade the app")
    with transaction(conn):
        v = version(conn)  # another process may have migrated it meanwhile
        if v == SCHEMA_VERSION:
            return
        if v == 3:
            _from_v3(conn)
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            return
        old = _tables(conn) & {"datasets", "budgets", "events"}
        for t in old:
            conn.execute(f"ALTER TABLE {t} RENAME TO old_{t}")
        for idx in ("one_answer_per_question", "answers_by_question", "events_by_budget"):
            conn.execute(f"DROP INDEX IF EXISTS {idx}")
        for stmt in TABLES.split(";"):
            if stmt.strip():
                conn.execute(stmt)
        if old:
            _from_old(conn, v)
            for t in old:
                conn.execute(f"DROP TABLE old_{t}")
            conn.execute("UPDATE events SET release = 'answer' WHERE kind IN ('spend', 'reuse', 'refused')")
            conn.execute("UPDATE datasets SET public_n = 1 WHERE builtin = 1")
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)", (str(SCHEMA_VERSION),))


_EVENT_COLUMNS = (
    "id, analyst, dataset, actor, ts, kind, query, description, eps_micro, delta_atto, cost_micro, answer, note"
)


def _from_v3(conn: sqlite3.Connection) -> None:
    """Schema 3 -> 4: the events table rebuilt with its release kind and job (SQLite cannot widen a CHECK in place;
    every row is copied, ids kept), the tickets table, and whether each dataset's n is public (built-in data: yes)."""
    conn.execute("ALTER TABLE datasets ADD COLUMN public_n INTEGER NOT NULL DEFAULT 0")
    conn.execute("UPDATE datasets SET public_n = 1 WHERE builtin = 1")
    conn.execute("ALTER TABLE events RENAME TO old_events")
    for idx in ("answers_by_question", "events_by_quota", "events_by_dataset"):
        conn.execute(f"DROP INDEX IF EXISTS {idx}")
    for stmt in TABLES.split(";"):
        if stmt.strip() and "TABLE IF NOT EXISTS datasets" not in stmt:
            conn.execute(stmt)
    conn.execute(f"INSERT INTO events ({_EVENT_COLUMNS}) SELECT {_EVENT_COLUMNS} FROM old_events ORDER BY id")
    conn.execute("UPDATE events SET release = 'answer' WHERE kind IN ('spend', 'reuse', 'refused')")
    conn.execute("DROP TABLE old_events")


def _canonical(name: str) -> str:
    from .identities import canonical_analyst

    try:
        return canonical_analyst(name)
    except DPError:
        return name


def _from_old(conn: sqlite3.Connection, v: int) -> None:
    now = time.time()
    # events: δ in atto-δ (schema 1 kept a float), canonical analyst names
    ecols = _columns(conn, "old_events")
    names: dict[str, str] = {}
    for r in conn.execute("SELECT * FROM old_events ORDER BY id").fetchall():
        key = names.setdefault(r["analyst"], _canonical(r["analyst"]))
        d_atto = (
            r["delta_atto"]
            if "delta_atto" in ecols
            else (amounts.to_atto(repr(float(r["delta"]))) if r["delta"] else 0)
        )
        conn.execute(
            "INSERT INTO events (id, analyst, dataset, ts, kind, query, description, eps_micro, delta_atto, "
            "cost_micro, answer, note) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                r["id"],
                key,
                r["dataset"],
                r["ts"],
                r["kind"],
                r["query"],
                r["description"],
                r["eps_micro"],
                int(d_atto),
                r["cost_micro"],
                r["answer"],
                r["note"],
            ),
        )
    # budgets -> quotas (look-alike names of schema 1 merged: the smallest total, the spends added)
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    bcols = _columns(conn, "old_budgets")
    for r in conn.execute("SELECT * FROM old_budgets ORDER BY created").fetchall():
        key = _canonical(r["analyst"])
        display = (r["display"] if "display" in bcols and r["display"] else r["analyst"]).strip() or key
        m = merged.setdefault(
            (key, r["dataset"]),
            {
                "display": display,
                "total": r["total_micro"],
                "spent": 0,
                "dtotal": None,
                "dspent": 0,
                "created": r["created"],
            },
        )
        m["total"] = min(m["total"], r["total_micro"])
        m["spent"] += r["spent_micro"]
        if "delta_total_atto" in bcols:
            m["dtotal"] = r["delta_total_atto"]
            m["dspent"] += r["delta_spent_atto"]
    for (key, ds), m in merged.items():
        if v < 2:  # δ spent since the last reset, from the events
            m["dspent"] = conn.execute(
                "SELECT COALESCE(SUM(delta_atto), 0) FROM events WHERE kind = 'spend' AND analyst = ? AND dataset = ? "
                "AND id > COALESCE((SELECT MAX(id) FROM events WHERE kind = 'reset' AND analyst = ? AND dataset = ?),"
                " 0)",
                (key, ds, key, ds),
            ).fetchone()[0]
        conn.execute(
            "INSERT OR IGNORE INTO analysts (name, display, kind, created) VALUES (?,?,'legacy',?)",
            (key, m["display"], m["created"]),
        )
        conn.execute(
            "INSERT INTO quotas (analyst, dataset, total_micro, spent_micro, delta_total_atto, "
            "delta_spent_atto, created) VALUES (?,?,?,?,?,?,?)",
            (key, ds, m["total"], m["spent"], m["dtotal"], int(m["dspent"]), m["created"]),
        )
    if "old_datasets" not in _tables(conn):
        return
    for r in conn.execute("SELECT * FROM old_datasets").fetchall():
        fp, n = r["fingerprint"], int(r["n_rows"])
        source: dict[str, Any] = {"kind": "none"}
        match = _BUILTIN_NAME.fullmatch(r["name"]) if r["builtin"] else None
        if match:
            source = {"kind": "medical", "n": int(match.group(1).replace(",", "")), "seed": int(match.group(2))}
        for q in conn.execute("SELECT analyst FROM quotas WHERE dataset = ? AND delta_total_atto IS NULL", (fp,)):
            conn.execute(
                "UPDATE quotas SET delta_total_atto = ? WHERE analyst = ? AND dataset = ?",
                (amounts.default_delta_atto(n), q["analyst"], fp),
            )
        totals = conn.execute(
            "SELECT COALESCE(SUM(total_micro), 0), COALESCE(SUM(delta_total_atto), 0) FROM quotas WHERE dataset = ?",
            (fp,),
        ).fetchone()
        released = conn.execute(
            "SELECT COALESCE(SUM(cost_micro), 0), COALESCE(SUM(delta_atto), 0) FROM events "
            "WHERE kind = 'spend' AND dataset = ?",
            (fp,),
        ).fetchone()
        cap, spent = int(totals[0]), int(released[0])
        dcap = max(min(int(totals[1]), amounts.max_delta_atto(n)), int(released[1]))
        if r["builtin"]:  # synthetic data made by the app: at least the documented cap of built-in data
            cap = max(cap, amounts.total_micro(limits.BUILTIN_EPSILON_CAP, name="cap"))
            dcap = max(dcap, amounts.default_delta_atto(n))
        note = (
            f"schema 3: the dataset's cap is the sum of its {conn.execute('SELECT count(*) FROM quotas WHERE dataset = ?', (fp,)).fetchone()[0]} "
            f"budget(s): ε = {amounts.from_micro(cap):g}, never below what it has released (ε = "
            f"{amounts.from_micro(spent):g}); each budget is now a quota inside it"
        )
        if source["kind"] == "none":
            note += "; its data is not on the server yet: the admin registers the same file again to keep a copy"
        conn.execute(
            "INSERT INTO datasets (fingerprint, name, n_rows, columns, sketch, profile, source, builtin, "
            "cap_micro, cap_delta_atto, spent_micro, delta_spent_atto, max_query_micro, created, note) "
            "VALUES (?,?,?,?,?,NULL,?,?,?,?,?,?,NULL,?,?)",
            (
                fp,
                r["name"],
                n,
                r["columns"],
                r["sketch"],
                json.dumps(source),
                int(r["builtin"]),
                max(cap, spent),
                dcap,
                spent,
                int(released[1]),
                r["created"],
                r["note"],
            ),
        )
        conn.execute("INSERT INTO events (dataset, ts, kind, note) VALUES (?,?,'migrate',?)", (fp, now, note))
