"""The one place a job's end is announced: hooks that run after a job's end state is committed.

Every way a job ends goes through :func:`announce` once its end is in the store — a worker recording done, failed
or cancelled (:mod:`dpcore.jobs.runner`), a job given up because its worker died or went silent
(:mod:`dpcore.jobs.liveness`), a queued job cancelled before it started (:mod:`dpcore.jobs.store`). A job that is
put back in the queue to run again has not ended and is not announced.

**What was released.** A job's results — its ``result``, ``result.json`` and every file it saved — become visible
in the same transaction that records ``done``: until then they sit in the attempt's own folder, and a job that
ends failed or cancelled (or whose worker lost it) leaves nothing visible. So :attr:`JobEnd.released` is true
exactly for ``done``, and a job that ended any other way released nothing — whatever it spent before it stopped
(noise drawn, a model trained) never left the server. A budget charged at submission may be given back for such
a job; one charged for a ``done`` job may not.

A hook is named by path like a job target and registered at the bottom of this module
(``on_end("dpcore.budgets.gate:on_job_end")``, as targets are in :mod:`dpcore.jobs.registry`), so that every
process that ends jobs — a worker, a page that notices a dead worker, the CLI — knows it; the function is imported
when the first job ends in that process (nothing above the job layer is imported before). It gets one :class:`JobEnd` and must be quick and idempotent: it runs after the commit, at most once per
end in the process that committed it, and never again if that process dies right after (a hook that gives budget
back therefore errs on the side of keeping it spent). A hook's exception is logged and never undoes the end.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import JobError
from .records import JobStatus
from .registry import import_path, member_hook

_PATH_RE = re.compile(r"^dpcore(\.[A-Za-z_][A-Za-z0-9_]*)+:[A-Za-z_][A-Za-z0-9_]*$")
_HOOKS: list[str] = []


@dataclass(frozen=True)
class JobEnd:
    """One job's end, as a hook sees it (the row is already committed)."""

    job_id: str
    target: str  # its registered name (a Ray dispatch job: "ray"; the unit is params["target"])
    owner: str
    status: JobStatus  # done, failed or cancelled
    error: str | None
    params: dict
    parent: str | None = None  # the group it belongs to (a sweep's id), if any
    parent_kind: str | None = None  # that group's kind ("sweep"): its own hook is told too

    @property
    def released(self) -> bool:
        """Whether anything of the job became visible: only a ``done`` job publishes its results."""
        return self.status is JobStatus.DONE


def on_end(path: str) -> None:
    """Call ``path`` (``"dpcore.module:function"``, taking one :class:`JobEnd`) after every job's end."""
    if not isinstance(path, str) or not _PATH_RE.match(path):
        raise JobError(f"a job-end hook must look like 'dpcore.module:function' (inside dpcore), got {path!r}")
    if path not in _HOOKS:
        _HOOKS.append(path)


def announce(ends: Iterable[JobEnd]) -> None:
    """Run every hook for each end (after its commit), then the hook of the group each member belongs to
    (:func:`dpcore.jobs.registry.register_group`: a sweep's row follows its points). Never raises."""
    ends = list(ends)
    for path in list(_HOOKS) + sorted({h for e in ends if (h := member_hook(e.parent_kind))}):
        try:
            fn = import_path(path, "job-end hook")
        except JobError as exc:
            _log(f"[jobs] job-end hook {path}: {exc}")
            continue
        members_only = path not in _HOOKS
        for end in ends:
            if members_only and member_hook(end.parent_kind) != path:
                continue
            try:
                fn(end)
            except Exception as exc:  # a hook's fault never undoes or blocks a job's end
                _log(f"[jobs] job-end hook {path} failed for job {end.job_id}: {type(exc).__name__}: {exc}")


def _log(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # a full disk under the log: the line is lost, the hook is not
        pass


# Hooks every process runs when a job ends (see the module docstring):
#: The budget ledger settles a charged job's ticket: kept when it is done, refunded when it released nothing.
on_end("dpcore.budgets.gate:on_job_end")
