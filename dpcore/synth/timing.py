"""How long a synthetic-data study takes on this server, measured from the studies it has run — what the
re-identification page says before a study starts and while one runs, instead of a guess.

* Before a study: the median time per release (its attacks and measurements included) of the newest finished
  studies the visitor can read — their own and the shared default study — from the job store's start and end times.
* While one runs: its own time so far per release done, and what that makes of the releases left.
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import DPError
from ..jobs import store
from ..jobs.registry import SYNTH_GROUP as GROUP
from .study import StudyConfig

#: How many of the newest finished studies the estimate reads.
STUDIES_READ = 20


def per_release(*, caller, limit: int = STUDIES_READ) -> tuple[float, int] | None:
    """(median seconds per release, releases measured) over the newest finished studies ``caller`` can read; None
    before any has finished here."""
    times, releases = [], 0
    for j in store.list_jobs(caller=caller, group=GROUP, limit=limit, shared=True):
        if j["status"] != "done" or not j.get("started") or not j.get("ended"):
            continue
        try:
            n = StudyConfig.from_dict(j.get("params") or {}).releases
        except (DPError, TypeError):
            continue
        times.append((float(j["ended"]) - float(j["started"])) / n)
        releases += n
    if not times:
        return None
    return float(np.median(times)), releases


def _seconds(s: float) -> str:
    if s < 10:
        return f"{s:.1f} s"
    if s < 90:
        return f"{s:.0f} s"
    return f"{s / 60:.0f} min"


def before(releases: int, *, caller) -> str:
    """The caption beside Start: how many releases, and how long they take here (measured), or that the first
    study measures it."""
    head = f"{releases} synthetic releases in a background worker"
    got = per_release(caller=caller)
    if got is None:
        return f"{head}; the time they take is measured from the first study on this server. Leaving the page loses nothing."
    each, n = got
    return (
        f"{head}: about {_seconds(each)} each on this server (measured over its last {n:,} releases), "
        f"about {_seconds(each * releases)} in all. Leaving the page loses nothing."
    )


def during(job: dict, now: float | None = None) -> str | None:
    """A running study's own pace: seconds per release so far and the time left; None before its first release."""
    p = job.get("progress") or {}
    step, total, started = p.get("step"), p.get("total_steps"), job.get("started")
    if job.get("status") != "running" or not started or not isinstance(step, int) or not isinstance(total, int):
        return None
    if step < 1 or total < step:
        return None
    each = max(0.0, ((now or time.time()) - float(started)) / step)
    return f"{_seconds(each)} per release so far, about {_seconds(each * (total - step))} left"
