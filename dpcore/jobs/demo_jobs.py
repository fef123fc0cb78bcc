"""Tiny job functions for tests and demos of the background job machinery (no maths, no torch).

Each is ``fn(params, ctx) -> dict`` like a real job target (see :mod:`dpcore.jobs.runner`), registered as
``demo.<name>`` in :mod:`dpcore.jobs.registry`.
"""

from __future__ import annotations

import os
import time

from ..errors import DPError


def sleep(params: dict, ctx) -> dict:
    """``steps`` steps of ``seconds`` each, reporting progress; stops early when cancelled.

    Saves ``model.bin`` (the step count as bytes) so tests can check result files.
    """
    steps = int(params.get("steps", 10))
    seconds = float(params.get("seconds", 0.02))
    per_epoch = max(1, int(params.get("steps_per_epoch", steps)))
    total_epochs = -(-steps // per_epoch)
    for step in range(1, steps + 1):
        if ctx.cancelled():
            return {"steps": step - 1, "stopped": "cancelled"}
        time.sleep(seconds)
        ctx.progress(step=step, total_steps=steps, loss=1.0 / step)
        if step % per_epoch == 0 or step == steps:
            epoch = -(-step // per_epoch)
            ctx.progress(
                epoch=epoch, total_epochs=total_epochs, loss=1.0 / step, accuracy=1.0 - 0.5 / epoch, epsilon=0.1 * epoch
            )
    ctx.save_bytes("model.bin", str(steps).encode())
    return {"steps": steps, "pid": os.getpid(), "value": float(params.get("value", 1.0))}


def again(params: dict, ctx) -> dict:
    """:func:`sleep`, registered as ``demo.again`` with one retry (a lost worker's job runs once more)."""
    return sleep(params, ctx)


def fail(params: dict, ctx) -> dict:
    """Fail after one progress update: a DPError (``kind='dp'``) or a RuntimeError with two lines."""
    ctx.progress(step=1, total_steps=2)
    if params.get("kind", "dp") == "dp":
        raise DPError(params.get("message", "epsilon must be > 0; try 0.1-10"))
    raise RuntimeError(params.get("message", "boom\nsecond line only in the log"))


def ignore_cancel(params: dict, ctx) -> dict:
    """Sleeps ``seconds`` without ever looking at ctx.cancelled() (tests the hard cancel)."""
    ctx.progress(step=0)
    time.sleep(float(params.get("seconds", 30)))
    return {"slept": True}


def echo(params: dict, ctx) -> dict:
    """Return the params and the worker's pid after ``seconds`` (tests: who ran which job)."""
    if params.get("log"):  # one line per run, appended atomically (O_APPEND): tests count claims
        fd = os.open(params["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{ctx.job_id} {os.getpid()}\n".encode())
        finally:
            os.close(fd)
    time.sleep(float(params.get("seconds", 0.0)))
    return {"params": params, "pid": os.getpid()}


def not_a_dict(params: dict, ctx):
    return [1, 2, 3]
