"""A caller's own work of every kind, newest first: training runs, privacy–utility sweeps, synthetic-data studies and
synthetic releases ("My work").

One function, :func:`list_work`, for the page that lists it and for anything else that needs "what have I
started": it asks each kind's own store with the caller's owner (never as an admin, so an admin's list is theirs
too, not everyone's) and returns :class:`WorkItem` records. Sweep points are not listed: they belong to their
sweep.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..sweep import runs as sweep_runs
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


def list_work(caller: Caller, *, limit: int = 50) -> list[WorkItem]:
    """The caller's own runs, sweeps, studies and releases, newest first, at most ``limit`` of each kind.

    Only what the caller's owner started: shared demos and, for an admin, other people's work are not "mine"."""
    own = Caller(caller.owner)
    items: list[WorkItem] = []
    for kind, group in _GROUPS.items():
        for job in store.list_jobs(caller=own, group=group, limit=limit):  # the owner's only: not an admin
            name = job.get("label") or job["id"]
            items.append(WorkItem(kind, job["id"], name, str(job["status"]), float(job.get("created") or 0)))
    sweeps = [s for s in sweep_runs.list_sweeps(caller=own) if s.get("mine")][:limit]
    for s in sweeps:
        items.append(WorkItem("sweep", s["id"], s.get("name") or s["id"], str(s.get("status")), s.get("created") or 0))
    return sorted(items, key=lambda w: w.created, reverse=True)
