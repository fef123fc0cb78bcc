"""A job's typed record: :class:`JobStatus` and the frozen :class:`JobRecord` the store returns."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any


class JobStatus(StrEnum):
    """A job's state. String-valued: stored rows, JSON and ``status == "done"`` read the same as before."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in FINISHED


STATUSES = tuple(JobStatus)
FINISHED = frozenset({JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED})


@dataclass(frozen=True, eq=True)
class JobRecord(Mapping):
    """One job as the store holds it. Frozen; read attributes (``rec.status``). It is also a read-only
    mapping with the old dict keys (``rec["status"]``, ``rec.get("progress")``, ``dict(rec)``), so callers
    written against the dict records keep working; :meth:`to_dict` gives plain JSON-ready data."""

    id: str
    target: str
    params: dict
    group: str | None
    label: str
    status: JobStatus
    progress: dict
    created: float
    started: float | None
    ended: float | None
    error: str | None
    result: dict | None
    result_dir: str
    worker: str | None
    cancel_requested: bool
    owner: str = "cli"  # who may see and change it (dpcore.jobs.owners)
    shared: bool = False  # a shared demo: everyone may read it, only its owner or an admin change it
    history: list[dict] | None = None  # None: read without history (then "history" is not a key)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def _keys(self) -> tuple[str, ...]:
        names = tuple(f.name for f in fields(self))
        return names if self.history is not None else names[:-1]

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in self._keys()}
        out["status"] = str(self.status)
        return out
