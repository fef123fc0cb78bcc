"""The privacy-budget ledger: an embedded SQLite database that makes a budget run out for real.

One budget per (analyst, registered dataset), stored in ``$DP_EXPLORER_HOME/ledger.sqlite`` (WAL mode,
file mode 0600), so a new browser tab, a second process or an app restart does not refill it.
(Over 400 lines because schema, migration, registry and the spend transaction must stay together: every
invariant below is enforced by one piece of SQL in this file, all through the one ``BEGIN IMMEDIATE`` helper and
the private connection cache; split apart, the registry and the spend would import each other's private helpers.
The data-side identity — the fingerprint and sketches — lives in :mod:`dpcore.queries.fingerprint`.)

* **Neighbour relation**: one, for every charge: add or remove one person's record (unbounded DP). Charges
  add up by basic composition, ε and δ separately.
* **Amounts are integers**: ε in micro-ε (1 ε = 10⁶), δ in atto-δ (1 δ = 10¹⁸). A query's ε and δ are
  rounded *up* when charged, a budget total *down*, so float rounding can never let ε or δ overspend.
* **δ is budgeted like ε.** Every budget has a δ total (default 1/(10·n) for a dataset of n rows; never
  above 1/n) and a query's δ must fit in what is left and stay below 1/n.
* **Budgets belong to registered datasets** (table ``datasets``): the built-in synthetic data, or an upload
  that an admin registers under a name. A dataset is keyed by a content fingerprint that ignores row order,
  column order and number formatting (computed by :func:`dpcore.queries.fingerprint.dataset_identity`);
  registering data that is near-identical to a registered dataset is refused unless the admin confirms
  explicitly.
* **Analyst names** are canonicalised (NFKC, casefold, trimmed, inner spaces collapsed): look-alike names
  share one budget; the name as first typed is kept for display.
* **Admin actions** (register, reset, change a total) need the token configured on the server in
  ``$DP_EXPLORER_ADMIN_TOKEN`` (compared with :func:`hmac.compare_digest`); without it they are disabled.
* Check-and-spend is one ``BEGIN IMMEDIATE`` transaction: the write lock is taken before the budget is read,
  so concurrent processes can never overspend. The noise is drawn inside that transaction and the answer is
  stored with the spend: a crash before the commit spends nothing and releases nothing.
* Asking exactly the same question again (same analyst, dataset, canonical query and ε) returns the stored
  answer and costs nothing — re-using a released answer is post-processing.
* A query that would exceed the budget (ε or δ) is refused before any noise is drawn (recorded as refused).
* A reset is an explicit admin action, recorded in the history; nothing is deleted.
* Storage faults (full disk, read-only home, a damaged file) become one :class:`DPError` that says what to do;
  reading (``status``) opens the file read-only and never writes the schema.

This module is deliberately light (stdlib only, with dpcore.noise.charge) so that many processes can use it cheaply.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import sqlite3
import threading
import time
import unicodedata
from contextlib import contextmanager
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation
from pathlib import Path

from .. import claims, limits
from ..errors import BudgetExceededError, DPError
from ..noise.charge import Charge, Neighbour, require_ledger_relation

MICRO = 1_000_000
ATTO = 10 ** 18
BUSY_TIMEOUT_S = 60.0
FILENAME = "ledger.sqlite"
SCHEMA_VERSION = 2
ADMIN_ENV = "DP_EXPLORER_ADMIN_TOKEN"
NEIGHBOUR = Neighbour.ADD_REMOVE.label  # the one relation of every charge
SIMILAR_SHARED = 0.8  # fraction of sampled row hashes shared above which two datasets count as near-identical

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS datasets (
    fingerprint TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    n_rows      INTEGER NOT NULL CHECK (n_rows > 0),
    columns     TEXT NOT NULL,
    sketch      TEXT NOT NULL,
    builtin     INTEGER NOT NULL DEFAULT 0,
    created     REAL NOT NULL,
    note        TEXT
);
CREATE TABLE IF NOT EXISTS budgets (
    analyst     TEXT NOT NULL,
    dataset     TEXT NOT NULL,
    display     TEXT,
    total_micro INTEGER NOT NULL CHECK (total_micro > 0),
    spent_micro INTEGER NOT NULL DEFAULT 0 CHECK (spent_micro >= 0),
    delta_total_atto INTEGER CHECK (delta_total_atto IS NULL OR delta_total_atto >= 0),
    delta_spent_atto INTEGER NOT NULL DEFAULT 0 CHECK (delta_spent_atto >= 0),
    created     REAL NOT NULL,
    PRIMARY KEY (analyst, dataset)
);
CREATE TABLE IF NOT EXISTS events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    analyst     TEXT NOT NULL,
    dataset     TEXT NOT NULL,
    ts          REAL NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('create', 'spend', 'reuse', 'refused', 'reset')),
    query       TEXT,
    description TEXT,
    eps_micro   INTEGER NOT NULL DEFAULT 0,
    delta       REAL NOT NULL DEFAULT 0,
    cost_micro  INTEGER NOT NULL DEFAULT 0,
    answer      TEXT,
    note        TEXT,
    delta_atto  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS answers_by_question ON events (analyst, dataset, query, eps_micro, kind);
CREATE INDEX IF NOT EXISTS events_by_budget ON events (analyst, dataset, id);
"""


def default_path() -> Path:
    from .. import storage

    return storage.home() / FILENAME


def content_hash(data: bytes) -> str:
    """SHA-256 of some bytes (the dataset key of schema 1: the table written as CSV)."""
    return hashlib.sha256(data).hexdigest()


# --- amounts ---------------------------------------------------------------------------------------


def _decimal(value, name: str) -> Decimal:
    if isinstance(value, bool):
        raise DPError(f"{name} must be a number, not {value!r}")
    try:
        d = Decimal(str(value).strip()) if isinstance(value, str) else Decimal(repr(float(value)))
    except (InvalidOperation, TypeError, ValueError, OverflowError):
        raise DPError(f"{name} must be a number, got {value!r}") from None
    if not d.is_finite():
        raise DPError(f"{name} must be finite, got {value!r}")
    return d


def to_micro(epsilon, *, name: str = "epsilon", rounding=ROUND_CEILING) -> int:
    """ε -> integer micro-ε (rounded up by default: a charge never falls below the ε used)."""
    d = _decimal(epsilon, name)
    if d <= 0:
        raise DPError(f"{name} must be > 0, got {epsilon}; try 0.1–10")
    if d > Decimal(repr(limits.BUDGET_EPSILON_MAX)):
        raise DPError(f"{name} must be at most {limits.BUDGET_EPSILON_MAX:g}, got {epsilon}")
    m = int(d.scaleb(6).to_integral_value(rounding=rounding))
    if m <= 0:
        raise DPError(f"{name} must be at least 0.000001 (one micro-ε), got {epsilon}")
    return m


def to_atto(delta, *, name: str = "delta", rounding=ROUND_CEILING) -> int:
    """δ -> integer atto-δ (10⁻¹⁸), rounded up by default (a charge never falls below the δ used)."""
    d = _decimal(delta, name)
    if d < 0 or d >= 1:
        raise DPError(f"{name} must be in [0, 1), got {delta}; typical values are 1e-6 to 1e-9 (below 1/n)")
    return int(d.scaleb(18).to_integral_value(rounding=rounding))


def from_micro(m: int) -> float:
    return m / MICRO


def from_atto(a: int | None) -> float | None:
    return None if a is None else a / ATTO


def default_delta_total(n_rows: int) -> float:
    """The default δ total of a budget on a dataset of ``n_rows`` rows: 1/(10·n) (rounded down)."""
    return from_atto(_default_delta_atto(n_rows))


def _default_delta_atto(n_rows: int) -> int:
    return ATTO // (10 * max(int(n_rows), 1))


def max_query_delta(n_rows: int) -> float:
    """The largest δ one query may use on ``n_rows`` rows is below 1/n (and within the δ left)."""
    return (ATTO - 1) // max(int(n_rows), 1) / ATTO


# --- names and the admin token ---------------------------------------------------------------------


def canonical_analyst(name) -> str:
    """The budget key of an analyst name: NFKC, casefold, trimmed, inner whitespace collapsed."""
    if not isinstance(name, str):
        raise DPError("analyst name is empty; enter a name (the budget belongs to the analyst and the dataset)")
    key = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", name).casefold()).strip()
    key = "".join(ch for ch in key if unicodedata.category(ch) not in ("Cf", "Cc"))  # zero-width and controls
    key = unicodedata.normalize("NFKC", key).strip()
    if not key:
        raise DPError("analyst name is empty; enter a name (the budget belongs to the analyst and the dataset)")
    if len(key) > 100:
        raise DPError("analyst name is longer than 100 characters; use a shorter name")
    return key


def _check_analyst(analyst) -> tuple[str, str]:
    key = canonical_analyst(analyst)
    return key, re.sub(r"\s+", " ", analyst).strip()[:100]


def _check_dataset(dataset) -> str:
    if not isinstance(dataset, str) or not dataset.strip():
        raise DPError("dataset key is empty")
    return dataset.strip()


def admin_enabled() -> bool:
    """True when the server has an admin token configured (``$DP_EXPLORER_ADMIN_TOKEN``)."""
    return bool(os.environ.get(ADMIN_ENV, "").strip())


def check_admin_token(token) -> None:
    """Raise DPError unless ``token`` equals the server's admin token (constant-time comparison)."""
    expected = os.environ.get(ADMIN_ENV, "").strip()
    if not expected:
        raise DPError(f"admin actions are disabled: no admin token is configured on the server; set the "
                      f"environment variable {ADMIN_ENV} before starting the app or the command")
    given = token.strip() if isinstance(token, str) else ""
    if not given or not hmac.compare_digest(given.encode(), expected.encode()):
        raise DPError(f"admin token is missing or wrong; pass the token set in {ADMIN_ENV} (--admin-token, or the "
                      "token box on the page)")


# --- connections and storage faults ----------------------------------------------------------------


def _fault(exc: BaseException, path) -> DPError:
    """A storage fault as one message that says what to do next (:func:`dpcore.storage.fault_message`)."""
    from .. import storage

    return storage.StorageError(storage.fault_message(exc, path, store="the budget ledger",
                                                      unharmed="nothing was spent"))


def _resolve(path) -> Path:
    try:
        return Path(path) if path is not None else default_path()
    except OSError as exc:
        raise _fault(exc, path or "$DP_EXPLORER_HOME") from None


def connect(path=None) -> sqlite3.Connection:
    """Open the ledger for writing (created 0600 on first use, migrated to the current schema), WAL mode,
    autocommit (we issue BEGIN ourselves)."""
    p = _resolve(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        if not p.exists():
            os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o600))  # owner only; WAL/SHM files inherit the mode
        conn = sqlite3.connect(str(p), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":  # pragma: no cover - only on file systems without shared memory
            raise DPError(f"the ledger at {p} could not switch to WAL mode (got {mode}); put DP_EXPLORER_HOME on "
                          "a local disk")
        conn.execute("PRAGMA synchronous = FULL")
        _migrate(conn)
    except (sqlite3.Error, OSError) as exc:
        raise _fault(exc, p) from None
    return conn


def connect_readonly(path=None) -> sqlite3.Connection | None:
    """Open the ledger read-only (no schema write, no file created); None when there is no ledger yet."""
    p = _resolve(path)
    if not p.exists():
        return None
    try:
        conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S,
                               isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        if "not a database" in str(exc).lower():
            raise _fault(exc, p) from None
        try:  # a WAL file in a read-only folder without its -shm: read the file as it is
            conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro&immutable=1", uri=True, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc2:
            raise _fault(exc2, p) from None
    except sqlite3.Error as exc:
        raise _fault(exc, p) from None
    return conn


def _columns(conn, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})").fetchall()}


def _migrate(conn) -> None:
    """Create the schema, or bring a schema-1 ledger (ε only, raw analyst names) up to schema 2."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}
    if "meta" in tables:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is not None and int(row[0]) == SCHEMA_VERSION:
            return
        if row is not None and int(row[0]) > SCHEMA_VERSION:
            raise DPError(f"the budget ledger was written by a newer DP Explorer (schema {row[0]}); upgrade the app")
    conn.execute("BEGIN IMMEDIATE")
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}
        old = "budgets" in tables and "delta_total_atto" not in _columns(conn, "budgets")
        if old:
            conn.execute("ALTER TABLE budgets RENAME TO budgets_v1")
            conn.execute("DROP INDEX IF EXISTS one_answer_per_question")
            if "delta_atto" not in _columns(conn, "events"):
                conn.execute("ALTER TABLE events ADD COLUMN delta_atto INTEGER NOT NULL DEFAULT 0")
        for stmt in SCHEMA.split(";"):
            if stmt.strip():
                conn.execute(stmt)
        if old:
            _migrate_v1(conn)
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _migrate_v1(conn) -> None:
    """Schema 1 -> 2 inside the migration transaction: δ in atto-δ, canonical analyst names (look-alike names
    merged into one budget: smallest total, spends added), δ spent since the last reset from the events. The δ
    total of an old budget is set to the default for its data when that data is registered (its n is needed)."""
    for r in conn.execute("SELECT id, delta FROM events WHERE delta > 0").fetchall():
        conn.execute("UPDATE events SET delta_atto = ? WHERE id = ?", (to_atto(repr(float(r["delta"]))), r["id"]))
    merged: dict[tuple[str, str], dict] = {}
    for r in conn.execute("SELECT * FROM budgets_v1 ORDER BY created").fetchall():
        try:
            key = canonical_analyst(r["analyst"])
        except DPError:
            key = r["analyst"]
        m = merged.setdefault((key, r["dataset"]), {"display": r["analyst"], "total": r["total_micro"],
                                                    "spent": 0, "created": r["created"]})
        m["total"] = min(m["total"], r["total_micro"])
        m["spent"] += r["spent_micro"]
    for r in conn.execute("SELECT DISTINCT analyst FROM events").fetchall():
        try:
            key = canonical_analyst(r["analyst"])
        except DPError:
            continue
        if key != r["analyst"]:
            conn.execute("UPDATE events SET analyst = ? WHERE analyst = ?", (key, r["analyst"]))
    for (key, ds), m in merged.items():
        d = conn.execute(
            "SELECT COALESCE(SUM(delta_atto), 0) FROM events WHERE kind = 'spend' AND analyst = ? AND dataset = ? "
            "AND id > COALESCE((SELECT MAX(id) FROM events WHERE kind = 'reset' AND analyst = ? AND dataset = ?), 0)",
            (key, ds, key, ds)).fetchone()[0]
        conn.execute("INSERT INTO budgets (analyst, dataset, display, total_micro, spent_micro, delta_total_atto, "
                     "delta_spent_atto, created) VALUES (?,?,?,?,?,NULL,?,?)",
                     (key, ds, m["display"], m["total"], m["spent"], int(d), m["created"]))
    conn.execute("DROP TABLE budgets_v1")


_local = threading.local()


def _cached(path=None) -> sqlite3.Connection:
    """This thread's open connection to the ledger at ``path`` (opening one per call would checkpoint the
    WAL on every close, which costs an fsync)."""
    p = str(_resolve(path))
    cache = getattr(_local, "conns", None)
    if cache is None or getattr(_local, "pid", None) != os.getpid():
        cache = _local.conns = {}
        _local.pid = os.getpid()
    conn = cache.get(p)
    if conn is None or not Path(p).exists():
        conn = cache[p] = connect(p)
    return conn


def _drop(path=None) -> None:
    p = str(_resolve(path))
    conn = getattr(_local, "conns", {}).pop(p, None)
    if conn is not None:
        conn.close()


@contextmanager
def _immediate(path=None):
    """One ``BEGIN IMMEDIATE`` transaction: committed on success, rolled back on any error. Storage faults
    (sqlite errors, OS errors) become one DPError; anything else raised inside passes through unchanged."""
    p = _resolve(path)
    conn = _cached(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        _drop(path)
        raise _fault(exc, p) from None
    try:
        yield conn
    except BaseException as exc:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            _drop(path)
        if isinstance(exc, sqlite3.Error):
            raise _fault(exc, p) from None
        raise
    try:
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        _drop(path)
        raise _fault(exc, p) from None
    except BaseException:
        _drop(path)
        raise


@contextmanager
def _reading(path=None):
    """A read-only connection in one read transaction (None inside when there is no ledger file yet)."""
    p = _resolve(path)
    conn = connect_readonly(p)
    if conn is None:
        yield None
        return
    try:
        conn.execute("BEGIN")
        yield conn
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        raise _fault(exc, p) from None
    finally:
        conn.close()


def _event(conn, analyst, dataset, kind, *, query=None, description=None, eps_micro=0, delta_atto=0,
           cost_micro=0, answer=None, note=None) -> int:
    cur = conn.execute(
        "INSERT INTO events (analyst, dataset, ts, kind, query, description, eps_micro, delta, delta_atto, "
        "cost_micro, answer, note) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        (analyst, dataset, time.time(), kind, query, description, eps_micro, delta_atto / ATTO, delta_atto,
         cost_micro, None if answer is None else json.dumps(answer), note))
    return cur.lastrowid


# --- the dataset registry --------------------------------------------------------------------------


def _check_identity(identity: dict) -> dict:
    try:
        fp = _check_dataset(identity["fingerprint"])
        n = int(identity["n_rows"])
        cols = [str(c) for c in identity["columns"]]
        sketch = {str(k): [int(h) for h in v] for k, v in identity["sketch"].items()}
    except (KeyError, TypeError, ValueError, AttributeError):
        raise DPError("dataset identity is incomplete; compute it with "
                      "dpcore.queries.fingerprint.dataset_identity") from None
    if n <= 0:
        raise DPError("a dataset needs at least one row")
    return {"fingerprint": fp, "n_rows": n, "columns": cols, "sketch": sketch,
            "legacy_keys": [str(k) for k in identity.get("legacy_keys", ())]}


def _check_name(name) -> str:
    if not isinstance(name, str) or not name.strip():
        raise DPError("dataset name is empty; give the registered dataset a name, e.g. 'clinic-2024'")
    name = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", name)).strip()
    if len(name) > 100:
        raise DPError("dataset name is longer than 100 characters; use a shorter name")
    return name


def _shared_fraction(a: list[int], b: list[int]) -> float:
    """Fraction of the smaller bottom-k sketch found in the other (as multisets)."""
    if not a or not b:
        return 0.0
    from collections import Counter

    ca, cb = Counter(a), Counter(b)
    return sum((ca & cb).values()) / min(len(a), len(b))


def _similar(conn, ident: dict) -> tuple[str, float] | None:
    """A registered dataset that ``ident`` nearly equals: columns equal up to one added or dropped, and most
    sampled row hashes (over the shared columns) shared. Returns (name, shared fraction) or None."""
    cols = set(ident["columns"])
    best = None
    for r in conn.execute("SELECT name, columns, sketch FROM datasets").fetchall():
        rcols, rsk = set(json.loads(r["columns"])), json.loads(r["sketch"])
        if len(cols ^ rcols) > 1:
            continue
        if cols == rcols:
            mine, theirs = ident["sketch"].get(""), rsk.get("")
        elif cols > rcols:  # a column was added: my rows without it vs their full rows
            (extra,) = cols - rcols
            mine, theirs = ident["sketch"].get(extra), rsk.get("")
        elif cols < rcols:  # a column was dropped: my full rows vs their rows without it
            (gone,) = rcols - cols
            mine, theirs = ident["sketch"].get(""), rsk.get(gone)
        else:  # one column renamed/replaced: compare the rows over the shared columns is not possible here
            continue
        if mine is None or theirs is None:
            continue
        f = _shared_fraction(mine, theirs)
        if f >= SIMILAR_SHARED and (best is None or f > best[1]):
            best = (r["name"], f)
    return best


def _register(conn, name: str, ident: dict, *, builtin: bool, note: str) -> dict:
    conn.execute("INSERT INTO datasets (fingerprint, name, n_rows, columns, sketch, builtin, created, note) "
                 "VALUES (?,?,?,?,?,?,?,?)",
                 (ident["fingerprint"], name, ident["n_rows"], json.dumps(ident["columns"]),
                  json.dumps(ident["sketch"]), int(builtin), time.time(), note))
    # Budgets of schema 1 were keyed by the table's CSV hash: they move to this dataset, with its default δ total.
    for legacy in ident["legacy_keys"]:
        for r in conn.execute("SELECT analyst FROM budgets WHERE dataset = ?", (legacy,)).fetchall():
            if conn.execute("SELECT 1 FROM budgets WHERE analyst = ? AND dataset = ?",
                            (r["analyst"], ident["fingerprint"])).fetchone() is None:
                conn.execute("UPDATE budgets SET dataset = ? WHERE analyst = ? AND dataset = ?",
                             (ident["fingerprint"], r["analyst"], legacy))
                conn.execute("UPDATE events SET dataset = ? WHERE analyst = ? AND dataset = ?",
                             (ident["fingerprint"], r["analyst"], legacy))
    conn.execute("UPDATE budgets SET delta_total_atto = ? WHERE dataset = ? AND delta_total_atto IS NULL",
                 (_default_delta_atto(ident["n_rows"]), ident["fingerprint"]))
    return {"name": name, "fingerprint": ident["fingerprint"], "n_rows": ident["n_rows"], "builtin": builtin,
            "columns": ident["columns"], "default_delta_total": default_delta_total(ident["n_rows"])}


def register_builtin(name: str, identity: dict, *, path=None) -> dict:
    """Register data that the app itself generates (no admin token: its content is fixed by code). Idempotent."""
    name, ident = _check_name(name), _check_identity(identity)
    with _immediate(path) as conn:
        row = conn.execute("SELECT name, builtin FROM datasets WHERE fingerprint = ?",
                           (ident["fingerprint"],)).fetchone()
        if row is not None:
            return dataset_row(conn, ident["fingerprint"])
        if conn.execute("SELECT 1 FROM datasets WHERE name = ?", (name,)).fetchone() is not None:
            raise DPError(f"a different dataset is already registered as {name!r}")
        return _register(conn, name, ident, builtin=True, note="built-in synthetic data")


def register_dataset(name: str, identity: dict, *, token, allow_similar: bool = False, path=None) -> dict:
    """Admin action: register an uploaded table under ``name`` so that budgets can be kept on it.

    Refused when the same content is registered already, when the name is taken, and — unless ``allow_similar``
    — when the table nearly equals a registered one (a column added or dropped, a few rows changed): such data
    would otherwise get a fresh budget on almost the same people.
    """
    check_admin_token(token)
    name, ident = _check_name(name), _check_identity(identity)
    with _immediate(path) as conn:
        row = conn.execute("SELECT name FROM datasets WHERE fingerprint = ?", (ident["fingerprint"],)).fetchone()
        if row is not None:
            raise DPError(f"this data is already registered as {row['name']!r} (same rows and columns, whatever "
                          "their order or number format); its budgets are kept there")
        if conn.execute("SELECT 1 FROM datasets WHERE name = ?", (name,)).fetchone() is not None:
            raise DPError(f"the name {name!r} is taken by another registered dataset; choose another name")
        sim = _similar(conn, ident)
        if sim is not None and not allow_similar:
            raise DPError(f"this data nearly equals the registered dataset {sim[0]!r} ({sim[1]:.0%} of sampled rows "
                          "shared; columns equal up to one): registering it would give the same people a fresh "
                          "budget. Query that dataset instead, or confirm that it is different data "
                          "(--allow-similar, or the confirmation box on the page)")
        note = "registered by admin" + (f"; admin confirmed it differs from {sim[0]!r}" if sim else "")
        return _register(conn, name, ident, builtin=False, note=note)


def dataset_row(conn, fingerprint: str) -> dict | None:
    row = conn.execute("SELECT * FROM datasets WHERE fingerprint = ?", (fingerprint,)).fetchone()
    if row is None:
        return None
    return {"name": row["name"], "fingerprint": row["fingerprint"], "n_rows": int(row["n_rows"]),
            "builtin": bool(row["builtin"]), "columns": json.loads(row["columns"]),
            "default_delta_total": default_delta_total(row["n_rows"])}


def dataset_info(fingerprint: str, *, path=None) -> dict | None:
    """The registered dataset with this fingerprint, or None (read-only)."""
    with _reading(path) as conn:
        if conn is None or "datasets" not in {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}:
            return None
        return dataset_row(conn, _check_dataset(fingerprint))


def _require_registered(conn, dataset: str) -> dict:
    info = dataset_row(conn, dataset)
    if info is None:
        raise DPError("this data is not a registered dataset, so it has no budget and cannot be queried; ask the "
                      "data owner (admin) to register it: `python -m dpcore budget register --data FILE --name "
                      f"NAME` with {ADMIN_ENV} set, or 'Register this upload' on the page")
    return info


# --- budgets ---------------------------------------------------------------------------------------


def _budget_row(conn, analyst, display, dataset, info, budget, delta_budget, *, create: bool):
    row = conn.execute("SELECT total_micro, spent_micro, delta_total_atto, delta_spent_atto FROM budgets "
                       "WHERE analyst = ? AND dataset = ?", (analyst, dataset)).fetchone()
    n = info["n_rows"]
    if row is None:
        if budget is None:
            raise DPError(f"analyst {display!r} has no budget on this dataset yet; set its total ε the first time "
                          "(--budget 1.0 on the command line, 'Total budget' in the app)")
        total = to_micro(budget, name="budget", rounding=ROUND_FLOOR)
        dtotal = _delta_total_atto(delta_budget, n)
        if create:
            conn.execute("INSERT INTO budgets (analyst, dataset, display, total_micro, spent_micro, delta_total_atto,"
                         " delta_spent_atto, created) VALUES (?,?,?,?,0,?,0,?)",
                         (analyst, dataset, display, total, dtotal, time.time()))
            _event(conn, analyst, dataset, "create",
                   note=f"budget set to ε = {from_micro(total):g}, δ = {claims.delta(from_atto(dtotal), 3)} ({NEIGHBOUR})")
        return total, 0, dtotal, 0
    total, spent = int(row["total_micro"]), int(row["spent_micro"])
    dtotal = row["delta_total_atto"]
    if dtotal is None:  # a schema-1 budget: the default for its data
        dtotal = _default_delta_atto(n)
        conn.execute("UPDATE budgets SET delta_total_atto = ? WHERE analyst = ? AND dataset = ?",
                     (dtotal, analyst, dataset))
    if budget is not None and to_micro(budget, name="budget", rounding=ROUND_FLOOR) != total:
        raise DPError(f"analyst {display!r} already has a budget of ε = {from_micro(total):g} on this dataset "
                      f"(not {budget}); omit the budget or pass {from_micro(total):g} — only an admin changes it")
    if delta_budget is not None and _delta_total_atto(delta_budget, n) != int(dtotal):
        raise DPError(f"analyst {display!r} already has a δ budget of {from_atto(dtotal):.3g} on this dataset; "
                      "omit the δ total — only an admin changes it")
    return total, spent, int(dtotal), int(row["delta_spent_atto"])


def _delta_total_atto(delta_budget, n: int) -> int:
    """A budget's δ total: the default 1/(10·n) when None; never above 1/n."""
    if delta_budget is None:
        return _default_delta_atto(n)
    a = to_atto(delta_budget, name="δ total", rounding=ROUND_FLOOR)
    if a * n > ATTO:
        raise DPError(f"δ total {delta_budget} is above 1/n = {1 / n:.3g} for this dataset of {n:,} rows: such a "
                      f"δ allows releasing a whole record; use at most {claims.down(1 / n)} (default "
                      f"{claims.delta(default_delta_total(n), 3)})")
    return a


def spend(analyst: str, dataset: str, query: str, charge, compute, *, budget=None, delta=0.0, delta_budget=None,
          description: str | None = None, path=None) -> dict:
    """Check the budget (ε and δ), draw the answer with ``compute()`` and record both — atomically.

    ``charge`` is what the answer costs: a :class:`dpcore.noise.charge.Charge` (its neighbour relation must be
    add/remove one record, else refused before anything is touched), or a bare ε with ``delta`` beside it (an
    add/remove charge).
    ``dataset`` is a registered dataset's fingerprint. ``query`` is the canonical query text (without ε).
    ``compute`` is called at most once, inside the transaction, and only when the budget allows; it must return a
    JSON-able answer. ``budget`` (ε) and ``delta_budget`` (δ, default 1/(10·n)) set the totals the first time
    (analyst, dataset) is seen; later they must match or be None.

    Returns a dict: ``answer``, ``reused`` (an identical question answered before: nothing spent),
    ``epsilon_spent`` / ``delta_spent_now`` (charged now), ``epsilon_charged``, ``spent``, ``total``,
    ``remaining``, ``delta_spent``, ``delta_total``, ``delta_remaining``, ``event_id``, ``dataset_name``.
    Raises :class:`BudgetExceededError` (nothing spent, ``compute`` not called) when ε or δ would not fit.
    """
    if isinstance(charge, Charge):
        if delta not in (0, 0.0, None) and delta != charge.delta:
            raise DPError("pass δ inside the Charge, not beside it")
        epsilon, delta = charge.epsilon, charge.delta
        require_ledger_relation(charge)
    else:
        epsilon = charge
    analyst, display = _check_analyst(analyst)
    dataset = _check_dataset(dataset)
    if not isinstance(query, str) or not query:
        raise DPError("query is empty")
    eps_micro = to_micro(epsilon)
    d_atto = to_atto(delta)
    if budget is not None:
        to_micro(budget, name="budget", rounding=ROUND_FLOOR)
    refused = None
    with _immediate(path) as conn:
        info = _require_registered(conn, dataset)
        n = info["n_rows"]
        if d_atto * n >= ATTO:
            raise DPError(f"δ = {claims.delta(delta, 6)} is not below 1/n = {1 / n:.3g} for this dataset of {n:,} rows: one query "
                          f"could then release a whole record; use δ ≤ {claims.down(max_query_delta(n))} (or Laplace, δ = 0)")
        total, spent, dtotal, dspent = _budget_row(conn, analyst, display, dataset, info, budget, delta_budget,
                                                   create=True)
        prior = conn.execute(
            "SELECT id, answer, cost_micro, delta_atto FROM events WHERE kind = 'spend' AND analyst = ? AND "
            "dataset = ? AND query = ? AND eps_micro = ? ORDER BY id LIMIT 1",
            (analyst, dataset, query, eps_micro)).fetchone()
        if prior is not None:
            answer = json.loads(prior["answer"])
            eid = _event(conn, analyst, dataset, "reuse", query=query, description=description, eps_micro=eps_micro,
                         delta_atto=d_atto, note=f"same question as event {prior['id']}: stored answer returned, free")
            result = _result(answer, True, 0, 0, int(prior["cost_micro"]), spent, total, dspent, dtotal, eid)
        elif spent + eps_micro > total or (d_atto > 0 and dspent + d_atto > dtotal):
            # Record the refusal and commit it; raise after the transaction. No noise is drawn.
            _event(conn, analyst, dataset, "refused", query=query, description=description, eps_micro=eps_micro,
                   delta_atto=d_atto, note="budget would be exceeded; no noise drawn")
            refused = BudgetExceededError(_refusal(display, eps_micro, d_atto, total, spent, dtotal, dspent))
        else:
            answer = compute()
            json.dumps(answer)  # must be storable; fails before anything is committed
            eid = _event(conn, analyst, dataset, "spend", query=query, description=description,
                         eps_micro=eps_micro, delta_atto=d_atto, cost_micro=eps_micro, answer=answer)
            conn.execute("UPDATE budgets SET spent_micro = spent_micro + ?, delta_spent_atto = delta_spent_atto + ? "
                         "WHERE analyst = ? AND dataset = ?", (eps_micro, d_atto, analyst, dataset))
            result = _result(answer, False, eps_micro, d_atto, eps_micro, spent + eps_micro, total, dspent + d_atto,
                             dtotal, eid)
    if refused is not None:
        raise refused
    result["dataset_name"] = info["name"]
    return result


def _refusal(display, eps_micro, d_atto, total, spent, dtotal, dspent) -> str:
    if spent + eps_micro > total:
        left = from_micro(max(total - spent, 0))
        what = (f"only ε = {left:g} of {from_micro(total):g} is left" if left > 0 else
                f"the whole budget of ε = {from_micro(total):g} is spent")
        step = f"ask with ε ≤ {left:g}, repeat" if left > 0 else "repeat"
        return (f"budget exceeded: this query costs ε = {from_micro(eps_micro):g} but {what} for analyst "
                f"{display!r} on this dataset; nothing was spent — {step} an earlier question (free) or ask an "
                "admin to reset the budget")
    left = from_atto(max(dtotal - dspent, 0))
    what = (f"only δ = {claims.down(left)} of {claims.delta(from_atto(dtotal), 3)} is left" if left > 0 else
            f"the whole δ budget of {claims.delta(from_atto(dtotal), 3)} is spent")
    return (f"budget exceeded: this query needs δ = {claims.delta(from_atto(d_atto), 3)} but {what} for analyst {display!r} on "
            f"this dataset; nothing was spent — ask with a smaller δ, use Laplace noise (δ = 0), or ask an admin")


def _result(answer, reused, now_micro, now_atto, charged_micro, spent, total, dspent, dtotal, eid) -> dict:
    return {"answer": answer, "reused": reused, "epsilon_spent": from_micro(now_micro),
            "delta_spent_now": from_atto(now_atto), "epsilon_charged": from_micro(charged_micro),
            "spent": from_micro(spent), "total": from_micro(total), "remaining": from_micro(max(total - spent, 0)),
            "delta_spent": from_atto(dspent), "delta_total": from_atto(dtotal),
            "delta_remaining": from_atto(max(dtotal - dspent, 0)), "event_id": eid, "neighbour": NEIGHBOUR}


def reset(analyst: str, dataset: str, *, admin: str, token=None, reason: str = "", total=None, delta_total=None,
          confirm: bool = False, path=None) -> dict:
    """Admin action (needs the admin token): set spent ε and δ back to 0, optionally with new totals. Recorded in
    the history; nothing deleted. Stored answers stay stored (and free to repeat): they were released already."""
    check_admin_token(token)
    if not confirm:
        raise DPError("a budget reset must be confirmed (tick the confirmation, or pass --confirm)")
    analyst, display = _check_analyst(analyst)
    dataset = _check_dataset(dataset)
    admin = admin.strip() if isinstance(admin, str) and admin.strip() else None
    if admin is None:
        raise DPError("a budget reset needs the admin's name, for the record")
    with _immediate(path) as conn:
        info = _require_registered(conn, dataset)
        row = conn.execute("SELECT * FROM budgets WHERE analyst = ? AND dataset = ?", (analyst, dataset)).fetchone()
        if row is None:
            raise DPError(f"analyst {display!r} has no budget on this dataset; nothing to reset")
        old_total, old_spent = int(row["total_micro"]), int(row["spent_micro"])
        old_dtotal = row["delta_total_atto"]
        old_dtotal = _default_delta_atto(info["n_rows"]) if old_dtotal is None else int(old_dtotal)
        new_total = old_total if total is None else to_micro(total, name="new budget", rounding=ROUND_FLOOR)
        new_dtotal = old_dtotal if delta_total is None else _delta_total_atto(delta_total, info["n_rows"])
        conn.execute("UPDATE budgets SET spent_micro = 0, total_micro = ?, delta_spent_atto = 0, delta_total_atto = ?"
                     " WHERE analyst = ? AND dataset = ?", (new_total, new_dtotal, analyst, dataset))
        note = (f"reset by admin {admin!r}: spent ε = {from_micro(old_spent):g} of {from_micro(old_total):g} "
                f"-> 0 of {from_micro(new_total):g}, δ total {from_atto(new_dtotal):.3g}"
                + (f"; reason: {reason.strip()}" if reason and reason.strip() else ""))
        eid = _event(conn, analyst, dataset, "reset", cost_micro=-old_spent, note=note)
    return {"analyst": display, "total": from_micro(new_total), "spent": 0.0, "remaining": from_micro(new_total),
            "delta_total": from_atto(new_dtotal), "previous_spent": from_micro(old_spent), "event_id": eid,
            "note": note}


def _same_analyst(raw: str, key: str) -> bool:
    try:
        return canonical_analyst(raw) == key
    except DPError:
        return False


def _history(conn, analyst, dataset, *, raw_names: bool = False) -> list[dict]:
    if raw_names:  # schema 1 (read-only): names were stored as typed; match them canonically
        rows = [r for r in conn.execute("SELECT * FROM events WHERE dataset = ? ORDER BY id", (dataset,)).fetchall()
                if _same_analyst(r["analyst"], analyst)]
    else:
        rows = conn.execute("SELECT * FROM events WHERE analyst = ? AND dataset = ? ORDER BY id",
                            (analyst, dataset)).fetchall()
    has_atto = "delta_atto" in rows[0].keys() if rows else True
    out = []
    for r in rows:
        d = from_atto(r["delta_atto"]) if has_atto else r["delta"]
        out.append({"id": r["id"], "time": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r["ts"])) + " UTC",
                    "ts": r["ts"], "kind": r["kind"], "query": r["description"] or r["query"],
                    "canonical": r["query"], "epsilon": from_micro(r["eps_micro"]), "delta": d,
                    "cost": from_micro(r["cost_micro"]),
                    "answer": None if r["answer"] is None else json.loads(r["answer"]),
                    "note": r["note"]})
    return out


def history(analyst: str, dataset: str, *, path=None) -> list[dict]:
    """Every event of (analyst, dataset), oldest first (read-only)."""
    analyst, _ = _check_analyst(analyst)
    dataset = _check_dataset(dataset)
    with _reading(path) as conn:
        if conn is None or not _has_tables(conn):
            return []
        return _history(conn, analyst, dataset, raw_names="delta_total_atto" not in _columns(conn, "budgets"))


def _has_tables(conn) -> bool:
    return {"budgets", "events"} <= {r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}


def status(analyst: str, dataset: str, *, path=None, with_history: bool = True) -> dict:
    """Total, spent, remaining (ε and δ) and, by default, the history. ``exists`` is False for a new pair.
    Opens the ledger read-only: works on a read-only home and never writes."""
    analyst, display = _check_analyst(analyst)
    dataset = _check_dataset(dataset)
    out = {"analyst": display, "dataset": dataset, "exists": False, "registered": False, "dataset_name": None,
           "neighbour": NEIGHBOUR, "total": None, "spent": 0.0, "remaining": None, "delta_total": None,
           "delta_spent": 0.0, "delta_remaining": None, "default_delta_total": None}
    with _reading(path) as conn:
        if conn is None or not _has_tables(conn):
            if with_history:
                out["history"] = []
            return out
        cols = _columns(conn, "budgets")
        schema2 = "delta_total_atto" in cols
        info = dataset_row(conn, dataset) if "datasets" in {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()} else None
        if info is not None:
            out.update(registered=True, dataset_name=info["name"], default_delta_total=info["default_delta_total"])
        if schema2:
            row = conn.execute("SELECT * FROM budgets WHERE analyst = ? AND dataset = ?",
                               (analyst, dataset)).fetchone()
        else:
            rows = [r for r in conn.execute("SELECT * FROM budgets WHERE dataset = ?", (dataset,)).fetchall()
                    if _same_analyst(r["analyst"], analyst)]
            row = None if not rows else {"total_micro": min(r["total_micro"] for r in rows),
                                         "spent_micro": sum(r["spent_micro"] for r in rows)}
        hist = _history(conn, analyst, dataset, raw_names=not schema2)
    last_reset = max([i for i, e in enumerate(hist) if e["kind"] == "reset"], default=-1)
    since = [e for e in hist[last_reset + 1:] if e["kind"] == "spend"]
    if row is not None:
        total, spent = int(row["total_micro"]), int(row["spent_micro"])
        if schema2:
            dspent = int(row["delta_spent_atto"])
            dtotal = row["delta_total_atto"]
            if dtotal is None and info is not None:
                dtotal = _default_delta_atto(info["n_rows"])
        else:  # schema 1, read-only: δ spent from the events, no δ total yet
            dspent, dtotal = sum(to_atto(repr(float(e["delta"]))) for e in since), None
        out.update(exists=True, analyst=(row["display"] if schema2 and row["display"] else display),
                   total=from_micro(total), spent=from_micro(spent), remaining=from_micro(max(total - spent, 0)),
                   delta_spent=from_atto(dspent), delta_total=from_atto(dtotal),
                   delta_remaining=None if dtotal is None else from_atto(max(int(dtotal) - dspent, 0)))
    if with_history:
        out["history"] = hist
    return out


def budgets(*, path=None) -> list[dict]:
    """Every analyst's budget on a dataset that has ε spent, newest first: {analyst (as entered), dataset (key),
    dataset_name, n_rows (None when unregistered), spent}. Read-only (the report's picker lists them)."""
    with _reading(path) as conn:
        if conn is None or not _has_tables(conn) or "display" not in _columns(conn, "budgets"):
            return []
        names = {r["fingerprint"]: r for r in conn.execute("SELECT fingerprint, name, n_rows FROM datasets")}
        rows = conn.execute("SELECT analyst, display, dataset, spent_micro FROM budgets WHERE spent_micro > 0 "
                            "ORDER BY created DESC").fetchall()
    return [{"analyst": r["display"] or r["analyst"], "dataset": r["dataset"],
             "dataset_name": names[r["dataset"]]["name"] if r["dataset"] in names else None,
             "n_rows": int(names[r["dataset"]]["n_rows"]) if r["dataset"] in names else None,
             "spent": from_micro(r["spent_micro"])} for r in rows]


def spends_since_reset(analyst: str, dataset: str, *, path=None) -> list[dict]:
    """The spend events that count against the current budget (for composition accounting)."""
    events = history(analyst, dataset, path=path)
    last_reset = max([i for i, e in enumerate(events) if e["kind"] == "reset"], default=-1)
    return [e for e in events[last_reset + 1:] if e["kind"] == "spend"]
