"""Groups of jobs: a row of the job store that no worker runs, whose members (``parent`` = its id) do the work.

A privacy–utility sweep is one (:data:`dpcore.jobs.registry.SWEEP`): its row holds its name, owner, settings and,
once its points have ended, the assembled result; each point is a job. Reading, cancelling, renaming and deleting a
group are the job store's own functions (:mod:`dpcore.jobs.store`: one ownership check for jobs and groups; a
group's cancel and delete reach its members). Here: queueing a group with its members (:func:`submit_group`), a
row its kind writes whole (:func:`put_group`: a sweep run in one process, one read from an earlier version's
file) and its end (:func:`end_group`), which its kind records when its last member ends
(:func:`dpcore.jobs.registry.register_group`'s hook).
"""

from __future__ import annotations

from ..errors import JobError
from ..storage.jsonio import dumps
from .db import connection, transaction
from .owners import check_owner
from .records import JobStatus
from .registry import groups, is_group
from .store import ID_RE, check_id, clean_label, distinct_name, encode_params, new_id, owner_labels, submit_batch


def submit_group(
    kind: str,
    params: dict,
    units,
    *,
    owner: str,
    label: str = "",
    key: str | None = None,
    group_id: str | None = None,
    ids: list[str] | None = None,
) -> list[str]:
    """Queue a **group** (a kind :func:`dpcore.jobs.registry.register_group` names: a sweep) and its member jobs,
    all or none, in the one transaction of :func:`dpcore.jobs.store.submit_many`: the group's own row (``params``, ``label`` made
    distinct among the owner's names, ``running`` from the start, never run by a worker) and each member with
    ``parent`` = the group's id and group ``<kind>-<id>``. The click ``key`` refers to the group. Returns the
    members' ids; the group's is ``group_id`` (default a new one, as :func:`dpcore.jobs.store.new_id`)."""
    if not is_group(kind):
        raise JobError(f"{kind!r} is not a kind of group of jobs")
    group_id = check_id(group_id or new_id())
    head = (group_id, kind, encode_params(params), clean_label(label))
    return submit_batch(units, owner=owner, group=f"{kind}-{group_id}", key=key, ref=group_id, ids=ids, head=head)


def put_group(
    group_id: str,
    kind: str,
    *,
    owner: str,
    label: str,
    params: dict,
    status: str,
    created: float,
    ended: float | None = None,
    result: dict | None = None,
    shared: bool = False,
    members=(),
    replace: bool = True,
    distinct: bool = False,
) -> str:
    """Write a group's own row as its kind keeps it (a sweep run in one process, a sweep finished, one read from an
    older version's file): inserted, or updated in place (``replace``; else an existing row is left alone). The
    jobs named in ``members`` become its members. ``distinct``: a new row's label is made distinct among the
    owner's names. No ownership check: this is the job machinery's own bookkeeping. Returns the label it has."""
    if not is_group(kind):
        raise JobError(f"{kind!r} is not a kind of group of jobs")
    group_id, owner = check_id(group_id), check_owner(owner)
    status = JobStatus(status)
    params_json = encode_params(params)
    label = clean_label(label)
    result_json = dumps(result, indent=None) if result is not None else None
    with connection() as conn, transaction(conn):
        seen = conn.execute("SELECT label, target FROM jobs WHERE id = ?", (group_id,)).fetchone()
        if seen is not None and seen["target"] != kind:
            raise JobError(f"{group_id} is a {seen['target']} job, not a {kind}")
        if seen is None:
            if distinct and label:
                label = distinct_name(label, owner_labels(conn, owner, label))
            conn.execute(
                "INSERT INTO jobs (id, target, params, label, status, created, ended, result, owner, shared) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (group_id, kind, params_json, label, status, created, ended, result_json, owner, int(shared)),
            )
        elif replace:
            conn.execute(
                "UPDATE jobs SET params = ?, label = ?, status = ?, created = ?, ended = ?, result = ?, owner = ?, "
                "shared = ? WHERE id = ?",
                (params_json, label, status, created, ended, result_json, owner, int(shared), group_id),
            )
        else:
            return seen["label"]
        ids = [m for m in members if isinstance(m, str) and ID_RE.match(m)]
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            conn.execute(
                f"UPDATE jobs SET parent = ? WHERE id IN ({', '.join('?' * len(chunk))}) AND id != ?",
                (group_id, *chunk, group_id),
            )
    return label


def end_group(group_id: str, *, status: str, result: dict | None, ended: float, shared: bool = False) -> None:
    """Record a group's end as its kind assembled it (a sweep's points, done): status, result, when, and whether
    everyone may now read it. Only a group still running changes (two processes that both see the last point end
    record the same end once); its name and settings are left as they are."""
    group_id = check_id(group_id)
    with connection() as conn, transaction(conn):
        conn.execute(
            f"UPDATE jobs SET status = ?, result = ?, ended = ?, shared = ? WHERE id = ? AND status = 'running' "
            f"AND target IN ({', '.join('?' * len(groups()))})",
            (
                JobStatus(status),
                dumps(result, indent=None) if result is not None else None,
                ended,
                int(shared),
                group_id,
                *groups(),
            ),
        )
