"""The job machinery's timing knobs, read from the environment at call time (tests shorten them).

``DP_EXPLORER_JOBS_HEARTBEAT`` (s between heartbeats, default 1), ``..._LEASE`` (default 300 s: a running job
whose worker gave no sign of life for this long is given up — see :mod:`dpcore.jobs.liveness`), ``..._POLL``,
``..._IDLE_EXIT``, ``..._CANCEL_GRACE``, ``..._STARTUP_GRACE``, ``..._FINISH_RETRY`` (how long a worker keeps
trying to record a job's end while the store cannot be written). A value that is not a positive finite number is
ignored (the default is used). ``DP_EXPLORER_JOBS_DEAD_AFTER`` (a few seconds of silence meant death) is no longer
read: silence is judged by the lease, death by the worker's process.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

#: The lease's default. A worker on this machine that dies is seen at once (its process is gone), so the lease only
#: decides about a worker that is alive but silent — suspended, swapped out, starved — or on another machine. Under
#: load a normal training run went 36.6 s without a heartbeat and a paused laptop stays silent for as long as it is
#: paused: five minutes is eight times the worst gap seen on a busy 2-core machine, and still short enough that a
#: lost remote worker's job is given up within a coffee break.
LEASE_DEFAULT = 300.0


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        return default
    return value if math.isfinite(value) and value > 0 else default


@dataclass(frozen=True)
class Settings:
    """Timing knobs, read from the environment at call time (tests shorten them)."""

    heartbeat: float = 1.0  # seconds between heartbeats
    lease: float = LEASE_DEFAULT  # a running job's claim lasts this long after each heartbeat
    poll: float = 0.5  # idle worker: seconds between looks for queued jobs
    idle_exit: float = 600.0  # idle worker exits after this many seconds without a job
    cancel_grace: float = 10.0  # a job ignoring cancel this long gets its worker process ended
    startup_grace: float = 30.0  # a just-started worker counts as alive this long before its first beat
    finish_retry: float = 600.0  # a worker keeps trying to record a job's end this long (a full disk frees up)


def under_pytest() -> bool:
    return "PYTEST_CURRENT_TEST" in os.environ


def settings() -> Settings:
    hb = _env_float("DP_EXPLORER_JOBS_HEARTBEAT", 1.0)
    return Settings(
        heartbeat=hb,
        lease=max(_env_float("DP_EXPLORER_JOBS_LEASE", LEASE_DEFAULT), 3.0 * hb),  # never under three beats
        poll=_env_float("DP_EXPLORER_JOBS_POLL", min(0.5, hb)),
        # under pytest, workers that nobody asked to linger go away quickly
        idle_exit=_env_float("DP_EXPLORER_JOBS_IDLE_EXIT", 20.0 if under_pytest() else 600.0),
        cancel_grace=_env_float("DP_EXPLORER_JOBS_CANCEL_GRACE", 10.0),
        startup_grace=_env_float("DP_EXPLORER_JOBS_STARTUP_GRACE", 30.0),
        finish_retry=_env_float("DP_EXPLORER_JOBS_FINISH_RETRY", 600.0),
    )
