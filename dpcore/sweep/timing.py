"""How long training takes on this server, measured from the job store: what the privacy–utility page and Home say
before a sweep or a DP run starts, instead of a guess (:mod:`dpcore.synth.timing` does the same for studies).

* A sweep (``"demo"``: the default demo; ``"upload"``: a sweep of an uploaded CSV): the median time from Start to
  done of the newest finished sweeps the visitor can read (their own and the shared demos).
* A DP training run (``"training"``; the training page queues its non-private twin beside it): the median time
  from Start to done of the visitor's newest finished DP runs.

Before any has finished here, the figures measured on a 2-core machine (:data:`MEASURED`), said so. Light imports:
Home calls it.
"""

from __future__ import annotations

import statistics

from ..jobs import store
from ..jobs.owners import Caller
from ..jobs.registry import SWEEP, TRAIN_GROUP

#: How many of the newest finished sweeps (or runs) the estimate reads.
READ = 20
#: Seconds from Start to done measured on a 2-core machine, and what they were for: the default demo sweep 32 s of
#: wall time (28 s of job time); a sweep of a 500-row CSV with the table defaults 5.4 s; a DP run with its twin
#: 9.5 s of wall time (5 s of job time).
MEASURED: dict[str, tuple[float, str]] = {"demo": (30.0, ""), "upload": (5.0, " for 500 rows"), "training": (10.0, "")}


def _kind(job) -> str | None:
    """Which estimate a finished job's time belongs to (None: none of them)."""
    params = job.get("params") or {}
    if job.get("target") == SWEEP:
        if (params.get("executor") or {}).get("name") == "inline":
            return None  # run in one process (CLI, tests): recorded at its end, no time of its own
        if params.get("demo"):
            return "demo"
        dataset = str((params.get("config") or {}).get("dataset") or "")
        return "upload" if dataset.startswith(("upload:", "csv:")) else None
    private = params.get("epsilon") is not None or params.get("noise_multiplier") is not None
    return "training" if job.get("group") == TRAIN_GROUP and private else None


def measured(kind: str, *, caller: Caller, limit: int = READ) -> tuple[float, int] | None:
    """(median seconds from Start to done, how many measured) over the newest finished ``kind`` the caller can
    read; None before any has finished here."""
    if kind == "training":
        jobs = store.list_jobs(caller=caller, group=TRAIN_GROUP, limit=limit)
    else:
        jobs = store.list_jobs(caller=caller, target=SWEEP, limit=limit, shared=True)
    times = [
        float(j["ended"]) - float(j["created"])
        for j in jobs
        if j["status"] == "done" and j.get("ended") and j.get("created") and _kind(j) == kind
    ]
    times = [t for t in times if t > 0]
    return (statistics.median(times), len(times)) if times else None


def _seconds(s: float) -> str:
    return f"{max(1, round(s))} s" if s < 90 else f"{s / 60:.0f} min"


def words(kind: str, *, caller: Caller) -> str:
    """How long ``kind`` takes, in a few words: "on this server: about 32 s, the median of the last 3", or before
    any here "measured on a 2-core machine: about 30 s"."""
    got = measured(kind, caller=caller)
    if got is None:
        seconds, what = MEASURED[kind]
        return f"measured on a 2-core machine: about {_seconds(seconds)}{what}"
    seconds, n = got
    how = "measured once" if n == 1 else f"the median of the last {n}"
    return f"on this server: about {_seconds(seconds)}, {how}"
