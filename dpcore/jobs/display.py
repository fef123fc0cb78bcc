"""What a page needs to draw a job, without Streamlit: status text, progress fraction, history series."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ..errors import DPError
from . import store
from .owners import Caller
from .records import FINISHED, JobStatus


def _record(job: Mapping[str, Any] | str, caller: Caller | None) -> Mapping[str, Any]:
    """``job`` itself, or the job of that id read for ``caller``."""
    if not isinstance(job, str):
        return job
    if caller is None:
        raise DPError("a job read by its id needs the caller it is read for")
    return store.get(job, caller=caller)


def view(job: Mapping[str, Any] | str, *, caller: Caller | None = None) -> dict[str, Any]:
    """Everything a page needs to draw a job, without Streamlit: status text, progress fraction, history.
    ``job`` is a record, or a job id read for ``caller`` (someone else's job is NotYours).

    Returns ``{"job": <get() record>, "finished": bool, "fraction": 0..1 or None, "text": str,
    "elapsed": seconds, "series": {field: [(x, value), ...]}}`` where ``series`` holds history values
    of ``loss``, ``accuracy``, ``epsilon`` (and any other numeric field) against ``epoch`` when the job
    reported epochs, else against ``step``.
    """
    job = _record(job, caller)
    p = job.get("progress") or {}
    fraction = None
    for done_key, total_key in (("step", "total_steps"), ("epoch", "total_epochs"), ("epoch", "epochs")):
        done, total = p.get(done_key), p.get(total_key)
        if isinstance(done, (int, float)) and isinstance(total, (int, float)) and total > 0:
            fraction = max(0.0, min(1.0, done / total))
            break
    if job["status"] == JobStatus.DONE:
        fraction = 1.0
    parts = [str(job["status"])]
    if isinstance(p.get("epoch"), (int, float)):
        total_epochs = p.get("total_epochs", p.get("epochs"))
        parts.append(f"epoch {p['epoch']:.3g}" + (f"/{total_epochs}" if total_epochs is not None else ""))
    if "step" in p:
        parts.append(f"step {p['step']}" + (f"/{p['total_steps']}" if "total_steps" in p else ""))
    if job["status"] in (JobStatus.FAILED, JobStatus.CANCELLED) and job.get("error"):
        parts.append(job["error"])
    start = job.get("started") or job.get("created")
    end = job.get("ended") or time.time()
    history = job.get("history") or []
    x_key = "epoch" if any("epoch" in h for h in history) else "step"
    series: dict[str, list] = {}
    for h in history:
        if x_key not in h:
            continue
        for k, v in h.items():
            if k in (x_key, "t", "step", "epoch", "total_steps", "total_epochs", "epochs") or isinstance(v, bool):
                continue
            if isinstance(v, (int, float)):
                series.setdefault(k, []).append((h[x_key], v))
    return {
        "job": job,
        "finished": job["status"] in FINISHED,
        "fraction": fraction,
        "text": " · ".join(str(x) for x in parts),
        "elapsed": max(0.0, end - start) if start else 0.0,
        "x": x_key,
        "series": series,
    }


def ran_at(job: Mapping[str, Any], which: str | None = None) -> str:
    """When a job ran, as pages and reports label a shared one: its end (else its start, else when it was
    queued), or the time ``which`` names (``"created"``, ``"started"``, ``"ended"``), in UTC to the minute."""
    when = job.get(which) if which else (job.get("ended") or job.get("started") or job.get("created"))
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(when)) if when else "—"


def history_frame(job: Mapping[str, Any] | str, *, caller: Caller | None = None) -> Any:
    """The job's progress history as a pandas DataFrame (one row per ctx.progress call, column ``t``)."""
    # lazy: pandas takes ~0.5 s to import
    import pandas as pd

    return pd.DataFrame(_record(job, caller).get("history") or [])
