"""A caller's own work of every kind, newest first: training runs, privacy–utility sweeps, synthetic-data studies and
synthetic releases ("My work").

One function, :func:`list_work`, for the page that lists it and for anything else that needs "what have I
started": one read of the job store, where every kind lives — a sweep is a group row there, its points its members
(``store.list_jobs(work=True)``) — with the caller's owner (never as an admin, so an admin's list is theirs too,
not everyone's), returned as :class:`WorkItem` records. Sweep points are not listed: they belong to their sweep.
A sweep an earlier version stored as a file is listed once a sweep listing has moved it into the store
(:func:`dpcore.sweep.runs.migrate`; Home and the privacy–utility page list sweeps on every visit).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import registry, store
from .owners import Caller

#: The kinds of work, in the order a list shows them, with the words a page uses for one of each.
KINDS: dict[str, str] = {
    "run": "training run",
    "sweep": "privacy–utility sweep",
    "study": "synthetic-data study",
    "release": "synthetic release",
}
#: Headings for a list of each kind.
PLURALS: dict[str, str] = {
    "run": "Training runs",
    "sweep": "Privacy–utility sweeps",
    "study": "Synthetic-data studies",
    "release": "Synthetic releases",
}
#: The job group each job-backed kind is filed under.
_GROUPS = {"run": registry.TRAIN_GROUP, "study": registry.SYNTH_GROUP, "release": registry.SYNTH_RELEASE_GROUP}


@dataclass(frozen=True)
class WorkItem:
    """One piece of the caller's work: ``kind`` (a key of :data:`KINDS`), its ``id`` (a job id, or a sweep id for
    a sweep), its name, status (``queued``, ``running``, ``done``, ``failed``, ``cancelled``) and creation time
    (seconds since the epoch)."""

    kind: str
    id: str
    name: str
    status: str
    created: float

    @property
    def what(self) -> str:
        return KINDS[self.kind]

    @property
    def active(self) -> bool:
        return self.status in ("queued", "running")


def _kind(job) -> str | None:
    if job.target == registry.SWEEP:
        return "sweep"
    return next((kind for kind, group in _GROUPS.items() if job.group == group), None)


def list_work(caller: Caller, *, limit: int = 50) -> list[WorkItem]:
    """The caller's own runs, sweeps, studies and releases, newest first, at most ``limit`` of each kind.

    Only what the caller's owner started: shared demos and, for an admin, other people's work are not "mine"."""
    own = Caller(caller.owner)
    items: list[WorkItem] = []
    count: dict[str, int] = {}
    for job in store.list_jobs(caller=own, work=True, limit=10_000):  # the owner's only: not an admin
        kind = _kind(job)
        if kind is None or count.get(kind, 0) >= limit:
            continue
        count[kind] = count.get(kind, 0) + 1
        name = job.get("label") or job["id"]
        items.append(WorkItem(kind, job["id"], name, str(job["status"]), float(job.get("created") or 0)))
    return sorted(items, key=lambda w: w.created, reverse=True)
