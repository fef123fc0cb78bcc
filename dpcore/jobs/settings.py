"""The job machinery's timing knobs, read from the environment at call time (tests shorten them).

``DP_EXPLORER_JOBS_HEARTBEAT`` (s between heartbeats, default 1), ``..._DEAD_AFTER`` (a running job without a
heartbeat this long is "worker died"), ``..._POLL``, ``..._IDLE_EXIT``, ``..._CANCEL_GRACE``, ``..._STARTUP_GRACE``,
``..._FINISH_RETRY`` (how long a worker keeps trying to record a job's end while the store cannot be written).
A value that is not a positive finite number is ignored (the default is used).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass


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
    dead_after: float = 6.0  # a running job without heartbeat for this long is "worker died"
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
        dead_after=_env_float("DP_EXPLORER_JOBS_DEAD_AFTER", max(6.0 * hb, 2.0 * hb + 1.0)),
        poll=_env_float("DP_EXPLORER_JOBS_POLL", min(0.5, hb)),
        # under pytest, workers that nobody asked to linger go away quickly
        idle_exit=_env_float("DP_EXPLORER_JOBS_IDLE_EXIT", 20.0 if under_pytest() else 600.0),
        cancel_grace=_env_float("DP_EXPLORER_JOBS_CANCEL_GRACE", 10.0),
        startup_grace=_env_float("DP_EXPLORER_JOBS_STARTUP_GRACE", 30.0),
        finish_retry=_env_float("DP_EXPLORER_JOBS_FINISH_RETRY", 600.0),
    )
