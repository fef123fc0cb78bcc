"""The job store: one SQLite database under ``$DP_EXPLORER_HOME`` that every job's state lives in.

A caller submits a job and reads it back::

    job_id = store.submit(registry.TRAIN, {"dataset": "digits", ...}, owner=owner, group="train", key=click)
    workers.ensure_workers()        # cheap and idempotent (dpcore.jobs.workers)
    store.get(job_id, caller=caller).status   # a JobStatus: queued / running / done / failed / cancelled

:func:`submit` stores the target's registered name (:mod:`dpcore.jobs.registry`), so rows outlive module
moves. :func:`get` and :func:`list_jobs` return frozen :class:`~dpcore.jobs.records.JobRecord` objects;
``list_jobs(caller=..., work=True)`` is everything a caller started, of every kind (one row per sweep).

**Groups.** A sweep is a group of jobs in this one table (:mod:`dpcore.jobs.groups`): a row of its own (target
``"sweep"``, never run by a worker: its name, owner, settings and, once finished, its assembled result) and one
job per point whose ``parent`` is the sweep's id. The same functions read, cancel, rename and delete a job and a
group — a group's cancel and delete reach its members — with the same ownership check; the group's row follows
its members through :mod:`dpcore.jobs.hooks` (its kind's code, :mod:`dpcore.sweep.runs`, assembles the result).

Ownership (:mod:`dpcore.jobs.owners`): every job has an owner; :func:`get`, :func:`list_jobs`, :func:`wait`,
:func:`result_path`, :func:`cancel`, :func:`rename` and :func:`delete` take the :class:`~dpcore.jobs.owners.Caller`
and refuse (:class:`~dpcore.jobs.owners.NotYours`) someone else's job unless the caller is an admin — or the job
is a shared demo (its target's sharing rule, :func:`dpcore.jobs.registry.shared`, decided here at submit time):
everyone may read it, from the moment it is queued; only its owner or an admin may cancel, rename or delete it.
While a shared job is queued or running, submitting an identical one queues nothing
(:class:`~dpcore.jobs.owners.SharedRunning`, checked in the same transaction as the insert, so a stampede of
clicks makes one run).
A visitor's share is bounded at submit (:class:`~dpcore.jobs.owners.QueueFull`), and a click's idempotency key is
remembered: the same key again queues nothing (:class:`~dpcore.jobs.owners.AlreadySubmitted`). Names are made
distinct per owner ("… (2)"). Workers take queued jobs fairly across owners (:func:`dpcore.jobs.runner.claim`).

Liveness (:mod:`dpcore.jobs.liveness`): a running job whose worker's process is gone, or whose lease lapsed, is
given up by whoever looks next — :func:`get`, :func:`list_jobs`, ``ensure_workers``, or another worker.

A little over 500 lines, one idea: the jobs table and who may do what with a row of it — a group's row included.
Ownership, sharing, the stampede guard and a group's reach over its members are checked inside the transactions
that read and write the rows, so they stay together here.
Queued jobs stay queued across restarts; finished jobs and their files are changed only by :func:`rename` and
:func:`delete`.

Cancel: :func:`cancel` cancels a queued job at once, and flags a running one; the runner
(:mod:`dpcore.jobs.runner`) sees the flag within one heartbeat.

Every write is one ``BEGIN IMMEDIATE`` transaction (:func:`dpcore.jobs.db.transaction`). A storage fault
(full disk, read-only, corrupted file) is a :class:`dpcore.storage.StorageError`. A deletion moves the job's
files aside before its rows go, in the same transaction, so nothing is ever half-deleted.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
import time
from pathlib import Path

from .. import limits, storage
from ..errors import JobError
from .db import connection, jobs_dir, reader, transaction
from .hooks import JobEnd, announce
from .owners import CLI_OWNER, AlreadySubmitted, Caller, QueueFull, SharedRunning, check_owner, limited, not_yours
from .records import JobRecord, JobStatus
from .registry import groups, is_group, resolve, target_name
from .registry import shared as shared_rule

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_:.-]{0,127}$")


def check_id(job_id: str) -> str:
    """A job's (or a group's) id as given, or the JobError that says where the ids are."""
    if not isinstance(job_id, str) or not ID_RE.match(job_id):
        raise JobError(f"unknown job id {job_id!r}; see `python -m dpcore jobs list` for the ids")
    return job_id


def new_id() -> str:
    """A fresh job id (UTC time and 32 random bits): also a group's, so a sweep's id is a job id."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(4)


def _row_to_job(row: sqlite3.Row, history: list[dict] | None) -> JobRecord:
    return JobRecord(
        id=row["id"],
        target=row["target"],
        params=json.loads(row["params"]),
        group=row["grp"],
        label=row["label"],
        status=JobStatus(row["status"]),
        progress=json.loads(row["progress"] or "{}"),
        created=row["created"],
        started=row["started"],
        ended=row["ended"],
        error=row["error"],
        result=json.loads(row["result"]) if row["result"] else None,
        result_dir=str(storage.home() / "jobs" / row["id"]),  # not created here: reads work read-only
        worker=row["worker"],
        cancel_requested=bool(row["cancel_requested"]),
        owner=row["owner"] if "owner" in row.keys() else CLI_OWNER,  # a read-only store of an older version
        shared=bool(row["shared"]) if "shared" in row.keys() else False,
        history=history,
    )


def _history(conn: sqlite3.Connection, job_id: str) -> list[dict]:
    out = []
    for h in conn.execute("SELECT t, fields FROM history WHERE job_id = ? ORDER BY seq", (job_id,)):
        entry = json.loads(h["fields"])
        entry["t"] = h["t"]
        out.append(entry)
    return out


# --------------------------------------------------------------------------------------------- public API


def _check_key(key) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str) or not _KEY_RE.match(key):
        raise JobError(f"a submission key must be 1–128 letters, digits or _:.- (one per click), got {key!r}")
    return key


def check_label(label) -> str:
    """A run's or sweep's name as typed: one line of 1 to ``limits.JOB_NAME_MAX_CHARS`` characters (shown
    everywhere as text, never as markup)."""
    text = " ".join(str(label if label is not None else "").split())
    if not text or any(not ch.isprintable() for ch in text):
        raise JobError("a name must be some visible text on one line, e.g. 'logreg, ε = 1, first try'")
    if len(text) > limits.JOB_NAME_MAX_CHARS:
        raise JobError(f"a name is at most {limits.JOB_NAME_MAX_CHARS} characters, got {len(text):,}; shorten it")
    return text


def distinct_name(name: str, taken) -> str:
    """``name``, or ``name (2)``, ``name (3)``, ... — the first not in ``taken`` (one owner's names)."""
    taken = set(taken)
    if not name or name not in taken:
        return name
    n = 2
    while f"{name} ({n})" in taken:
        n += 1
    return f"{name} ({n})"


def owner_labels(conn: sqlite3.Connection, owner: str, prefix: str) -> set[str]:
    """The owner's names that start with ``prefix`` (to make a new one distinct), inside the caller's transaction."""
    return {
        r[0]
        for r in conn.execute(
            "SELECT label FROM jobs WHERE owner = ? AND substr(label, 1, ?) = ?", (owner, len(prefix), prefix)
        )
    }


def _queued(conn: sqlite3.Connection, owner: str) -> int:
    return conn.execute("SELECT COUNT(*) FROM jobs WHERE owner = ? AND status = 'queued'", (owner,)).fetchone()[0]


def remember_click(conn: sqlite3.Connection, owner: str, key: str | None, ref: str) -> None:
    """Record one click's key (inside the caller's transaction); the same key again is AlreadySubmitted."""
    if key is None:
        return
    seen = conn.execute("SELECT ref FROM clicks WHERE owner = ? AND key = ?", (owner, key)).fetchone()
    if seen is not None:
        raise AlreadySubmitted(
            f"this click was already submitted ({seen['ref']}); nothing new was queued — press again to queue another",
            ref=seen["ref"],
        )
    conn.execute("INSERT INTO clicks (owner, key, ref, created) VALUES (?, ?, ?, ?)", (owner, key, ref, time.time()))


def encode_params(params) -> str:
    """A job's params as stored: plain JSON (no NaN), or the JobError that says what is wrong."""
    if not isinstance(params, dict):
        raise JobError(f"job params must be a dict, got {type(params).__name__}")
    try:
        return json.dumps(params, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise JobError(f"job params must be JSON-serialisable (plain numbers, strings, lists, dicts): {exc}") from None


def clean_label(label) -> str:
    """A submitted name on one line, cut to ``limits.JOB_NAME_MAX_CHARS`` (empty: no name)."""
    return " ".join(str(label or "").split())[: limits.JOB_NAME_MAX_CHARS]


def submit_many(
    units,
    *,
    owner: str,
    group: str | None = None,
    key: str | None = None,
    ref: str | None = None,
    ids: list[str] | None = None,
) -> list[str]:
    """Queue several jobs at once, all or none: ``units`` is ``[(target, params, label), ...]``. Returns their
    ids (``ids``: given in advance, from :func:`new_id`). One transaction checks the click ``key`` (the same key
    again: :class:`AlreadySubmitted`, nothing queued; ``ref`` is what the click made, default the first job id),
    that no identical shared demo is already queued or running (:class:`SharedRunning`, whose ``ref`` is that job),
    and the owner's share of the queue (:class:`QueueFull`), then inserts every job with a name distinct among the
    owner's. Whether a job is a shared demo is its target's sharing rule's answer
    (:func:`dpcore.jobs.registry.shared`), not the caller's."""
    return submit_batch(units, owner=owner, group=group, key=key, ref=ref, ids=ids, head=None)


def submit_batch(units, *, owner, group, key, ref, ids, head) -> list[str]:
    """The one submitting transaction (:func:`submit_many`; with ``head``, a group's own row first:
    :func:`dpcore.jobs.groups.submit_group`)."""
    owner = check_owner(owner)
    key = _check_key(key)
    if group is not None and not isinstance(group, str):
        raise JobError(f"job group must be a string or None, got {type(group).__name__}")
    rows = []
    for target, params, label in units:
        resolve(target)
        name = target_name(target)
        rows.append((name, encode_params(params), clean_label(label), shared_rule(name, params)))
    if not rows:
        raise JobError("nothing to submit")
    jobs_dir()  # results go there: a file in its place (or no space for a folder) is refused before anything queues
    ids = [check_id(i) for i in ids] if ids is not None else [new_id() for _ in rows]
    if len(ids) != len(rows):
        raise JobError(f"{len(ids)} job ids for {len(rows)} jobs")
    now = time.time()
    with connection() as conn, transaction(conn):
        remember_click(conn, owner, key, ref or ids[0])
        for name, params_json, _, shared in rows:
            running = (
                conn.execute(
                    "SELECT id FROM jobs WHERE shared = 1 AND target = ? AND params = ? AND status IN "
                    "('queued', 'running') ORDER BY created LIMIT 1",
                    (name, params_json),
                ).fetchone()
                if shared
                else None
            )
            if running is not None:
                raise SharedRunning(
                    f"the same shared run is already {_status(conn, running['id'])} (job "
                    f"{running['id']}): nothing new was queued; everyone sees its progress and its "
                    "results when it ends",
                    ref=running["id"],
                )
        if limited(owner):
            queued, cap = _queued(conn, owner), limits.JOBS_QUEUED_PER_OWNER
            if len(rows) > cap:
                raise QueueFull(
                    f"this needs {len(rows):,} jobs, but one visitor may have at most {cap:,} waiting; "
                    "use fewer ε values, seeds or size fractions"
                )
            if queued + len(rows) > cap:
                raise QueueFull(
                    f"you already have {queued:,} jobs waiting and may have at most {cap:,}; wait for "
                    "some to start, or cancel some, then try again"
                )
        parent = None
        if head is not None:
            parent, kind, params_json, label = head
            label = distinct_name(label, owner_labels(conn, owner, label)) if label else label
            conn.execute(
                "INSERT INTO jobs (id, target, params, label, status, created, owner, shared) "
                "VALUES (?, ?, ?, ?, 'running', ?, ?, 0)",
                (parent, kind, params_json, label, now, owner),
            )
        for job_id, (name, params_json, label, shared) in zip(ids, rows):
            label = distinct_name(label, owner_labels(conn, owner, label)) if label else label
            conn.execute(
                "INSERT INTO jobs (id, target, params, grp, label, status, created, owner, shared, parent) "
                "VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?)",
                (job_id, name, params_json, group, label, now, owner, int(shared), parent),
            )
    return ids


def _status(conn: sqlite3.Connection, job_id: str) -> str:
    return conn.execute("SELECT status FROM jobs WHERE id = ?", (job_id,)).fetchone()["status"]


def submit(
    target: str, params: dict, *, owner: str, group: str | None = None, label: str = "", key: str | None = None
) -> str:
    """Queue ``fn(params, ctx)`` for a worker; return the job id (``dpcore.jobs.workers.ensure_workers`` runs it).

    ``target`` is a registered name (or a path :func:`~dpcore.jobs.registry.target_name` knows); the row holds
    the registered name. ``owner`` (:mod:`dpcore.jobs.owners`) is who may see and change it; ``key`` is the
    click's idempotency key (see :func:`submit_many`)."""
    return submit_many([(target, params, label)], owner=owner, group=group, key=key)[0]


def _row(conn: sqlite3.Connection | None, job_id: str) -> sqlite3.Row:
    row = None if conn is None else conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
    if row is None:
        raise JobError(f"unknown job id {job_id!r}; see `python -m dpcore jobs list` for the ids")
    return row


def _owner_of(row: sqlite3.Row) -> str:
    return row["owner"] if "owner" in row.keys() else CLI_OWNER


def _shared(row: sqlite3.Row) -> bool:
    return bool(row["shared"]) if "shared" in row.keys() else False


def _what(row: sqlite3.Row) -> str:
    return row["target"] if is_group(row["target"]) else "job"  # "sweep 2025…-ab12 is not yours"


def _readable(caller: Caller, row: sqlite3.Row) -> sqlite3.Row:
    """The one ownership check for reading a job or a group (a sweep): its owner, an admin, or a shared demo."""
    if not caller.may_read(_owner_of(row), shared=_shared(row)):
        raise not_yours(_what(row), row["id"])
    return row


def _changeable(caller: Caller, row: sqlite3.Row) -> sqlite3.Row:
    """The one ownership check for cancelling, renaming or deleting a job or a group: its owner or an admin."""
    if not caller.may_change(_owner_of(row)):
        raise not_yours(_what(row), row["id"], shared=_shared(row))
    return row


def _check_caller(caller) -> Caller:
    if not isinstance(caller, Caller):
        raise JobError("say who asks: caller=dpcore.jobs.owners.Caller(owner, admin=...)")
    return caller


def get(job_id: str, *, caller: Caller, history: bool = True) -> JobRecord:
    """The job's record: status, progress, history (list of progress updates), times, error, result.
    Someone else's job is :class:`~dpcore.jobs.owners.NotYours` (nothing of it is returned), unless it is a
    shared demo."""
    _check_caller(caller)
    check_id(job_id)
    with reader() as conn:
        row = _readable(caller, _row(conn, job_id))
        return _row_to_job(row, _history(conn, job_id) if history and conn is not None else None)


def get_many(job_ids, *, caller: Caller) -> dict[str, JobRecord]:
    """Several jobs at once (a sweep's points), without history: id -> record for those that exist and the caller
    may read; the others are left out."""
    _check_caller(caller)
    ids = [j for j in dict.fromkeys(job_ids) if isinstance(j, str) and ID_RE.match(j)]
    out: dict[str, JobRecord] = {}
    with reader() as conn:
        if conn is None:
            return out
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            for row in conn.execute(f"SELECT * FROM jobs WHERE id IN ({', '.join('?' * len(chunk))})", chunk):
                if caller.may_read(_owner_of(row), shared=_shared(row)):
                    out[row["id"]] = _row_to_job(row, None)
    return out


def list_jobs(
    *,
    caller: Caller,
    group: str | None = None,
    limit: int = 100,
    shared: bool = False,
    target: str | None = None,
    work: bool = False,
) -> list[JobRecord]:
    """The caller's newest jobs first (an admin's: everyone's), without their history; optionally one group.
    ``shared``: with everyone's shared demos too (their records say ``shared``).

    Which rows: by default the jobs workers run (groups left out, as before groups were rows); ``target``: only
    rows of that target or group kind (``"sweep"``: the sweeps); ``work``: **everything the caller started, of
    every kind** — runs, studies, releases and sweeps, one row each (a sweep, not its points): the list a "my
    work" view shows."""
    _check_caller(caller)
    limit = max(1, min(int(limit), 10_000))
    with reader() as conn:
        if conn is None:
            return []
        cols = {r[1] for r in conn.execute("PRAGMA table_info(jobs)")}
        owner_sql = "owner" if "owner" in cols else f"'{CLI_OWNER}'"  # an older store opened read-only
        where, args = [], []
        if not caller.admin:
            where.append(f"({owner_sql} = ? OR shared = 1)" if shared and "shared" in cols else f"{owner_sql} = ?")
            args.append(caller.owner)
        if group is not None:
            where.append("grp = ?")
            args.append(group)
        if target is not None:
            where.append("target = ?")
            args.append(target_name(target))
        elif work:
            where.append("parent IS NULL" if "parent" in cols else "1")
        else:
            where.append(f"target NOT IN ({', '.join('?' * len(groups()))})")
            args.extend(groups())
        sql = "SELECT * FROM jobs" + (" WHERE " + " AND ".join(where) if where else "")
        rows = conn.execute(sql + " ORDER BY created DESC, rowid DESC LIMIT ?", (*args, limit))
        return [_row_to_job(r, None) for r in rows.fetchall()]


def cancel(job_id: str, *, caller: Caller) -> JobRecord:
    """Cancel a job: a queued one at once, a running one within a heartbeat or two. Finished: no change."""
    _check_caller(caller)
    check_id(job_id)
    now = time.time()
    ended = []
    with connection() as conn:
        with transaction(conn):
            row = _changeable(caller, _row(conn, job_id))
            for r in _members(conn, job_id) if is_group(row["target"]) else [row]:  # a group: its members
                if r["status"] == JobStatus.QUEUED:
                    conn.execute(
                        "UPDATE jobs SET status = 'cancelled', cancel_requested = 1, ended = ?, error = ? WHERE id = ?",
                        (now, NOT_STARTED, r["id"]),
                    )
                    ended.append(_cancelled_end(r))
                elif r["status"] == JobStatus.RUNNING:
                    conn.execute("UPDATE jobs SET cancel_requested = 1 WHERE id = ?", (r["id"],))
    announce(ended)
    return get(job_id, caller=caller, history=False)


NOT_STARTED = "cancelled before it started"


def _members(conn: sqlite3.Connection, group_id: str) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT *, (SELECT p.target FROM jobs p WHERE p.id = jobs.parent) AS parent_kind FROM jobs WHERE parent = ?",
        (group_id,),
    ).fetchall()


def _cancelled_end(row: sqlite3.Row) -> JobEnd:
    keys = row.keys()
    return JobEnd(
        row["id"],
        row["target"],
        _owner_of(row),
        JobStatus.CANCELLED,
        NOT_STARTED,
        json.loads(row["params"]),
        row["parent"] if "parent" in keys else None,
        row["parent_kind"] if "parent_kind" in keys else None,
    )


def cancel_group(group: str, *, caller: Caller) -> int:
    """Cancel every queued or running job of a group (e.g. a sweep) that the caller may change; return how many
    were asked."""
    _check_caller(caller)
    now = time.time()
    mine = "" if caller.admin else " AND owner = ?"
    args = () if caller.admin else (caller.owner,)
    with connection() as conn, transaction(conn):
        waiting = conn.execute(
            "SELECT *, (SELECT p.target FROM jobs p WHERE p.id = jobs.parent) AS parent_kind FROM jobs "
            "WHERE grp = ? AND status = 'queued'" + mine,
            (group, *args),
        ).fetchall()
        queued = conn.execute(
            "UPDATE jobs SET status = 'cancelled', cancel_requested = 1, ended = ?, "
            "error = ? WHERE grp = ? AND status = 'queued'" + mine,
            (now, NOT_STARTED, group, *args),
        ).rowcount
        running = conn.execute(
            "UPDATE jobs SET cancel_requested = 1 WHERE grp = ? AND status = 'running'" + mine, (group, *args)
        ).rowcount
    announce(_cancelled_end(r) for r in waiting)
    return queued + running


def rename(job_id: str, name: str, *, caller: Caller) -> JobRecord:
    """Give a job or a group (a sweep) a new name (owner or admin), distinct among its owner's names."""
    _check_caller(caller)
    check_id(job_id)
    name = check_label(name)
    with connection() as conn:
        with transaction(conn):
            row = _changeable(caller, _row(conn, job_id))
            clash = conn.execute(
                "SELECT 1 FROM jobs WHERE owner = ? AND label = ? AND id != ?", (_owner_of(row), name, job_id)
            ).fetchone()
            if clash is not None:
                raise JobError(f"another of your runs or sweeps is already called {name!r}; choose another name")
            conn.execute("UPDATE jobs SET label = ? WHERE id = ?", (name, job_id))
    return get(job_id, caller=caller, history=False)


def delete_many(job_ids, *, caller: Caller, missing_ok: bool = False) -> int:
    """Delete finished jobs and their files (owner or admin), all or none: their folders are moved aside and
    their rows deleted in one transaction (the folders come back if it cannot commit), then the folders go.
    A queued or running job is refused: cancel it first. A group (a sweep) goes with its members, once none of
    them is queued or running. ``missing_ok``: ids no longer in the store are skipped. Returns how many rows
    were deleted."""
    _check_caller(caller)
    ids = list(dict.fromkeys(check_id(j) for j in job_ids))
    moved: list[tuple[Path | None, Path]] = []
    try:
        with connection() as conn, transaction(conn):
            if missing_ok:
                ids = [j for j in ids if conn.execute("SELECT 1 FROM jobs WHERE id = ?", (j,)).fetchone()]
            for job_id in list(ids):
                row = _changeable(caller, _row(conn, job_id))
                if is_group(row["target"]):
                    busy = [m["id"] for m in _members(conn, job_id) if not JobStatus(m["status"]).finished]
                    if busy:
                        raise JobError(
                            f"{row['target']} {job_id} is still running ({len(busy)} of its jobs queued or running); "
                            "cancel it first, then delete it"
                        )
                    ids.extend(m["id"] for m in _members(conn, job_id) if m["id"] not in ids)
                elif not JobStatus(row["status"]).finished:
                    raise JobError(f"job {job_id} is still {row['status']}; cancel it first, then delete it")
            folder = storage.home() / "jobs"
            for job_id in ids:
                moved.append((storage.move_to_trash(folder / job_id), folder / job_id))
            for job_id in ids:
                conn.execute("DELETE FROM history WHERE job_id = ?", (job_id,))
                conn.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
    except BaseException:
        for where, path in reversed(moved):
            try:
                storage.restore(where, path)
            except OSError:  # pragma: no cover - the rename that just worked failing back
                pass
        raise
    storage.empty_trash()
    return len(ids)


def delete(job_id: str, *, caller: Caller) -> int:
    """Delete one finished job and its files (owner or admin); see :func:`delete_many`."""
    return delete_many([job_id], caller=caller)


def wait(job_id: str, *, caller: Caller, timeout: float = 60.0, poll: float = 0.05) -> JobRecord:
    """Block until the job finishes (done / failed / cancelled) and return it; JobError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        job = get(job_id, caller=caller, history=False)
        if job.finished:
            return get(job_id, caller=caller)
        if time.monotonic() >= deadline:
            raise JobError(f"job {job_id} is still {job['status']} after {timeout:g} s")
        time.sleep(poll)


def result_path(job_id: str, name: str = "result.json", *, caller: Caller) -> Path:
    """Path of a file in the job's result folder (``result.json``, or a file saved with ctx.save_bytes), for a
    caller who may read the job."""
    get(job_id, caller=caller, history=False)
    return jobs_dir() / job_id / check_name(name)


def folder_path(job_id: str) -> Path:
    """Where the job machinery keeps a job's files (for the runner: no ownership check, nothing created)."""
    return storage.home() / "jobs" / check_id(job_id)


def check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name) or ".." in name:
        raise JobError(f"file name must be a plain name like 'model.pt' (letters, digits, . _ -), got {name!r}")
    return name
