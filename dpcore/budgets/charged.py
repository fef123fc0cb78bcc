"""Jobs whose release was charged by the gate (:mod:`dpcore.budgets.gate`): queue them with their charge.

The ledger holds a ticket per part of a charged release; :func:`submit` ties each ticket to the job that does the
part, so that the job's end settles it (:func:`dpcore.jobs.registry.ended` calls the gate's end hook: kept when the
job is done, refunded when it failed or was cancelled). A submission that fails refunds the whole charge (nothing
was queued); a job that ended before its ticket was tied to it (a fast worker) is settled here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..jobs import store
from ..jobs.owners import SYSTEM
from ..jobs.records import JobStatus
from . import gate


def tie(admission: gate.Admission, job_ids: Sequence[str]) -> list[str]:
    """Tie ``admission``'s tickets to ``job_ids`` (one per ticket, in order) and settle any job already ended.
    Returns the job ids."""
    if not admission.tickets:
        return list(job_ids)
    admission.tie(job_ids)
    for job_id in job_ids:
        job = store.get(job_id, caller=SYSTEM, history=False)
        if JobStatus(job.status).finished:
            gate.job_ended(job_id, str(job.status), job.error, path=admission.path)
    return list(job_ids)


def submit(
    admission: gate.Admission, queue: Callable[[], list[str]], *, parts: Callable[[list[str]], list[str]] | None = None
) -> list[str]:
    """Run ``queue()`` (which submits the jobs and returns their ids) and tie the charge to them (``parts`` picks,
    from those ids, the jobs that do the charged parts, in order; default: all). If queueing fails, nothing runs:
    the charge is refunded and the error raised again."""
    try:
        ids = list(queue())
    except BaseException as exc:
        admission.refund(f"the release was not queued ({type(exc).__name__}): nothing ran")
        raise
    tie(admission, parts(ids) if parts is not None else ids)
    return ids
