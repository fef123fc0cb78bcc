"""The privacy-budget ledger: an embedded SQLite database that makes a budget run out for real.

One budget per (analyst, dataset content hash), stored in ``$DP_EXPLORER_HOME/ledger.sqlite`` (WAL
mode), so a new browser tab, a second process or an app restart does not refill it.

* Amounts are integers in micro-ε (1 ε = 1,000,000): no rounding drift. A query's ε is rounded *up*
  to the next micro-ε when charged, a budget total *down*, so the ledger never under-charges.
* Check-and-spend is one ``BEGIN IMMEDIATE`` transaction: the write lock is taken before the budget
  is read, so concurrent processes can never overspend.
* The noise is drawn inside that transaction and the answer is stored with the spend: a crash before
  the commit spends nothing and releases nothing; after it, asking again returns the stored answer.
* Asking exactly the same question again (same analyst, dataset, canonical query and ε) returns the
  stored answer and costs nothing — re-using a released answer is post-processing.
* A query that would exceed the budget is refused before any noise is drawn (recorded as refused).
* A reset is an explicit admin action, recorded in the history; nothing is deleted.

This module is deliberately light (stdlib only) so that many processes can use it cheaply.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation
from pathlib import Path

from .errors import BudgetExceededError, DPError

MICRO = 1_000_000
BUSY_TIMEOUT_S = 60.0
MAX_BUDGET = 1_000_000.0
FILENAME = "ledger.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS budgets (
    analyst     TEXT NOT NULL,
    dataset     TEXT NOT NULL,
    total_micro INTEGER NOT NULL CHECK (total_micro > 0),
    spent_micro INTEGER NOT NULL DEFAULT 0 CHECK (spent_micro >= 0 AND spent_micro <= total_micro),
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
    note        TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS one_answer_per_question
    ON events (analyst, dataset, query, eps_micro) WHERE kind = 'spend';
CREATE INDEX IF NOT EXISTS events_by_budget ON events (analyst, dataset, id);
"""


def default_path() -> Path:
    from . import storage

    return storage.home() / FILENAME


def content_hash(data: bytes) -> str:
    """The dataset key: SHA-256 of the content."""
    return hashlib.sha256(data).hexdigest()


def to_micro(epsilon, *, name: str = "epsilon", rounding=ROUND_CEILING) -> int:
    """ε -> integer micro-ε (rounded up by default: a charge never falls below the ε used)."""
    if isinstance(epsilon, bool):
        raise DPError(f"{name} must be a number, not {epsilon!r}")
    try:
        d = Decimal(str(epsilon).strip()) if isinstance(epsilon, str) else Decimal(repr(float(epsilon)))
    except (InvalidOperation, TypeError, ValueError):
        raise DPError(f"{name} must be a number, got {epsilon!r}") from None
    if not d.is_finite():
        raise DPError(f"{name} must be finite, got {epsilon!r}; try 0.1–10")
    if d <= 0:
        raise DPError(f"{name} must be > 0, got {epsilon}; try 0.1–10")
    if d > Decimal(repr(MAX_BUDGET)):
        raise DPError(f"{name} must be at most {MAX_BUDGET:g}, got {epsilon}")
    m = int(d.scaleb(6).to_integral_value(rounding=rounding))
    if m <= 0:
        raise DPError(f"{name} must be at least 0.000001 (one micro-ε), got {epsilon}")
    return m


def from_micro(m: int) -> float:
    return m / MICRO


def _check_analyst(analyst) -> str:
    if not isinstance(analyst, str) or not analyst.strip():
        raise DPError("analyst name is empty; enter a name (the budget belongs to the analyst and the dataset)")
    analyst = analyst.strip()
    if len(analyst) > 100:
        raise DPError("analyst name is longer than 100 characters; use a shorter name")
    return analyst


def _check_dataset(dataset) -> str:
    if not isinstance(dataset, str) or not dataset.strip():
        raise DPError("dataset key is empty")
    return dataset.strip()


def connect(path=None) -> sqlite3.Connection:
    """Open the ledger (created on first use), WAL mode, autocommit (we issue BEGIN ourselves)."""
    p = Path(path) if path is not None else default_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(p), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":  # pragma: no cover - only on file systems without shared memory
        raise DPError(f"the ledger at {p} could not switch to WAL mode (got {mode}); put DP_EXPLORER_HOME on a "
                      "local disk")
    conn.execute("PRAGMA synchronous = FULL")
    conn.executescript(SCHEMA)
    return conn


_local = threading.local()


def _cached(path=None) -> sqlite3.Connection:
    """This thread's open connection to the ledger at ``path`` (opening one per call would checkpoint the
    WAL on every close, which costs an fsync)."""
    p = str(Path(path) if path is not None else default_path())
    cache = getattr(_local, "conns", None)
    if cache is None or getattr(_local, "pid", None) != os.getpid():
        cache = _local.conns = {}
        _local.pid = os.getpid()
    conn = cache.get(p)
    if conn is None or not Path(p).exists():
        conn = cache[p] = connect(p)
    return conn


def _drop(path=None) -> None:
    p = str(Path(path) if path is not None else default_path())
    conn = getattr(_local, "conns", {}).pop(p, None)
    if conn is not None:
        conn.close()


@contextmanager
def _immediate(path=None):
    """One ``BEGIN IMMEDIATE`` transaction: committed on success, rolled back on any error."""
    conn = _cached(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        _drop(path)
        raise DPError(f"the budget ledger is busy or unavailable ({exc}); nothing was spent — try again in a "
                      "moment") from None
    try:
        yield conn
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            _drop(path)
        raise
    try:
        conn.execute("COMMIT")
    except BaseException:
        _drop(path)
        raise


def _event(conn, analyst, dataset, kind, *, query=None, description=None, eps_micro=0, delta=0.0,
           cost_micro=0, answer=None, note=None) -> int:
    cur = conn.execute(
        "INSERT INTO events (analyst, dataset, ts, kind, query, description, eps_micro, delta, cost_micro, "
        "answer, note) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (analyst, dataset, time.time(), kind, query, description, eps_micro, float(delta), cost_micro,
         None if answer is None else json.dumps(answer), note))
    return cur.lastrowid


def _budget_row(conn, analyst, dataset, budget, *, create: bool):
    row = conn.execute("SELECT total_micro, spent_micro FROM budgets WHERE analyst = ? AND dataset = ?",
                       (analyst, dataset)).fetchone()
    if row is None:
        if budget is None:
            raise DPError(f"analyst {analyst!r} has no budget on this dataset yet; set its total ε the first time "
                          "(--budget 1.0 on the command line, 'Total budget' in the app)")
        total = to_micro(budget, name="budget", rounding=ROUND_FLOOR)
        if not create:
            return total, 0
        conn.execute("INSERT INTO budgets (analyst, dataset, total_micro, spent_micro, created) VALUES (?,?,?,0,?)",
                     (analyst, dataset, total, time.time()))
        _event(conn, analyst, dataset, "create", note=f"budget set to ε = {from_micro(total):g}")
        return total, 0
    total, spent = int(row["total_micro"]), int(row["spent_micro"])
    if budget is not None and to_micro(budget, name="budget", rounding=ROUND_FLOOR) != total:
        raise DPError(f"analyst {analyst!r} already has a budget of ε = {from_micro(total):g} on this dataset "
                      f"(not {budget}); omit the budget or pass {from_micro(total):g} — only an admin reset "
                      "changes it")
    return total, spent


def spend(analyst: str, dataset: str, query: str, epsilon, compute, *, budget=None, delta: float = 0.0,
          description: str | None = None, path=None) -> dict:
    """Check the budget, draw the answer with ``compute()`` and record both — atomically.

    ``query`` is the canonical query text (without ε). ``compute`` is called at most once, inside the
    transaction, and only when the budget allows; it must return a JSON-able answer. ``budget`` sets the
    total the first time (analyst, dataset) is seen; later it must match or be None.

    Returns a dict: ``answer`` (what compute returned, or the stored one), ``reused`` (True when an identical
    question was answered before: nothing spent), ``epsilon_spent`` (charged now), ``epsilon_charged`` (what the
    answer cost when first drawn), ``spent``, ``total``, ``remaining``, ``event_id``.
    Raises :class:`BudgetExceededError` (nothing spent, ``compute`` not called) when the budget would be exceeded.
    """
    analyst, dataset = _check_analyst(analyst), _check_dataset(dataset)
    if not isinstance(query, str) or not query:
        raise DPError("query is empty")
    eps_micro = to_micro(epsilon)
    if budget is not None:
        to_micro(budget, name="budget", rounding=ROUND_FLOOR)
    refused = None
    with _immediate(path) as conn:
        total, spent = _budget_row(conn, analyst, dataset, budget, create=True)
        prior = conn.execute(
            "SELECT id, answer, cost_micro FROM events WHERE kind = 'spend' AND analyst = ? AND dataset = ? "
            "AND query = ? AND eps_micro = ?", (analyst, dataset, query, eps_micro)).fetchone()
        if prior is not None:
            answer = json.loads(prior["answer"])
            eid = _event(conn, analyst, dataset, "reuse", query=query, description=description, eps_micro=eps_micro,
                         delta=delta, note=f"same question as event {prior['id']}: stored answer returned, free")
            result = _result(answer, True, 0, int(prior["cost_micro"]), spent, total, eid)
        elif spent + eps_micro > total:
            # Record the refusal and commit it; raise after the transaction. No noise is drawn.
            _event(conn, analyst, dataset, "refused", query=query, description=description, eps_micro=eps_micro,
                   delta=delta, note="budget would be exceeded; no noise drawn")
            left = from_micro(total - spent)
            what = (f"only ε = {left:g} of {from_micro(total):g} is left" if left > 0 else
                    f"the whole budget of ε = {from_micro(total):g} is spent")
            step = f"ask with ε ≤ {left:g}, repeat" if left > 0 else "repeat"
            refused = BudgetExceededError(
                f"budget exceeded: this query costs ε = {from_micro(eps_micro):g} but {what} for analyst "
                f"{analyst!r} on this dataset; nothing was spent — {step} an earlier question (free) or ask an "
                "admin to reset the budget")
        else:
            answer = compute()
            json.dumps(answer)  # must be storable; fails before anything is committed
            eid = _event(conn, analyst, dataset, "spend", query=query, description=description,
                         eps_micro=eps_micro, delta=delta, cost_micro=eps_micro, answer=answer)
            conn.execute("UPDATE budgets SET spent_micro = spent_micro + ? WHERE analyst = ? AND dataset = ?",
                         (eps_micro, analyst, dataset))
            result = _result(answer, False, eps_micro, eps_micro, spent + eps_micro, total, eid)
    if refused is not None:
        raise refused
    return result


def _result(answer, reused, now_micro, charged_micro, spent, total, eid) -> dict:
    return {"answer": answer, "reused": reused, "epsilon_spent": from_micro(now_micro),
            "epsilon_charged": from_micro(charged_micro), "spent": from_micro(spent), "total": from_micro(total),
            "remaining": from_micro(total - spent), "event_id": eid}


def reset(analyst: str, dataset: str, *, admin: str, reason: str = "", total=None, confirm: bool = False,
          path=None) -> dict:
    """Admin action: set spent back to 0 (and optionally a new total). Recorded in the history; nothing deleted.

    Stored answers stay stored (and free to repeat): they were released already.
    """
    if not confirm:
        raise DPError("a budget reset must be confirmed (tick the confirmation, or pass --confirm)")
    analyst, dataset = _check_analyst(analyst), _check_dataset(dataset)
    admin = _check_analyst(admin) if admin else None
    if admin is None:
        raise DPError("a budget reset needs the admin's name, for the record")
    with _immediate(path) as conn:
        row = conn.execute("SELECT total_micro, spent_micro FROM budgets WHERE analyst = ? AND dataset = ?",
                           (analyst, dataset)).fetchone()
        if row is None:
            raise DPError(f"analyst {analyst!r} has no budget on this dataset; nothing to reset")
        old_total, old_spent = int(row["total_micro"]), int(row["spent_micro"])
        new_total = old_total if total is None else to_micro(total, name="new budget", rounding=ROUND_FLOOR)
        conn.execute("UPDATE budgets SET spent_micro = 0, total_micro = ? WHERE analyst = ? AND dataset = ?",
                     (new_total, analyst, dataset))
        note = (f"reset by admin {admin!r}: spent ε = {from_micro(old_spent):g} of {from_micro(old_total):g} "
                f"-> 0 of {from_micro(new_total):g}" + (f"; reason: {reason.strip()}" if reason and reason.strip()
                                                        else ""))
        eid = _event(conn, analyst, dataset, "reset", cost_micro=-old_spent, note=note)
    return {"analyst": analyst, "total": from_micro(new_total), "spent": 0.0, "remaining": from_micro(new_total),
            "previous_spent": from_micro(old_spent), "event_id": eid, "note": note}


def history(analyst: str, dataset: str, *, path=None) -> list[dict]:
    """Every event of (analyst, dataset), oldest first."""
    analyst, dataset = _check_analyst(analyst), _check_dataset(dataset)
    conn = _cached(path)
    rows = conn.execute("SELECT * FROM events WHERE analyst = ? AND dataset = ? ORDER BY id",
                        (analyst, dataset)).fetchall()
    out = []
    for r in rows:
        out.append({"id": r["id"], "time": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r["ts"])) + " UTC",
                    "ts": r["ts"], "kind": r["kind"], "query": r["description"] or r["query"],
                    "canonical": r["query"], "epsilon": from_micro(r["eps_micro"]), "delta": r["delta"],
                    "cost": from_micro(r["cost_micro"]),
                    "answer": None if r["answer"] is None else json.loads(r["answer"]),
                    "note": r["note"]})
    return out


def status(analyst: str, dataset: str, *, path=None, with_history: bool = True) -> dict:
    """Total, spent, remaining (ε) and, by default, the history. ``exists`` is False for a new pair."""
    analyst, dataset = _check_analyst(analyst), _check_dataset(dataset)
    conn = _cached(path)
    # one read transaction, so the budget row and the events agree
    conn.execute("BEGIN")
    try:
        row = conn.execute("SELECT total_micro, spent_micro FROM budgets WHERE analyst = ? AND dataset = ?",
                           (analyst, dataset)).fetchone()
        spent_since_reset = conn.execute(
            "SELECT COALESCE(SUM(CASE WHEN kind = 'spend' THEN eps_micro ELSE 0 END), 0) AS e, "
            "COALESCE(SUM(CASE WHEN kind = 'spend' THEN delta ELSE 0 END), 0) AS d FROM events "
            "WHERE analyst = ? AND dataset = ? AND id > COALESCE((SELECT MAX(id) FROM events WHERE kind = 'reset' "
            "AND analyst = ? AND dataset = ?), 0)", (analyst, dataset, analyst, dataset)).fetchone()
    finally:
        conn.execute("COMMIT")
    out = {"analyst": analyst, "dataset": dataset, "exists": row is not None}
    if row is None:
        out.update(total=None, spent=0.0, remaining=None, delta_spent=0.0)
    else:
        total, spent = int(row["total_micro"]), int(row["spent_micro"])
        if spent != int(spent_since_reset["e"]):  # pragma: no cover - would mean a corrupted ledger
            raise DPError(f"ledger inconsistent for {analyst!r}: budget says {spent} micro-ε spent, events say "
                          f"{spent_since_reset['e']}; do not use it and report this")
        out.update(total=from_micro(total), spent=from_micro(spent), remaining=from_micro(total - spent),
                   delta_spent=float(spent_since_reset["d"]))
    if with_history:
        out["history"] = history(analyst, dataset, path=path)
    return out


def spends_since_reset(analyst: str, dataset: str, *, path=None) -> list[dict]:
    """The spend events that count against the current budget (for composition accounting)."""
    events = history(analyst, dataset, path=path)
    last_reset = max([i for i, e in enumerate(events) if e["kind"] == "reset"], default=-1)
    return [e for e in events[last_reset + 1:] if e["kind"] == "spend"]
