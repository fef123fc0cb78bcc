"""Running sweeps and their records: start (one background job per point, through an executor), state, cancel,
list, load, save, rename, delete; and the two blocking runners (inline in this process, parallel on workers).

A sweep is a **group of jobs** in the one job store (:func:`dpcore.jobs.groups.submit_group`): a row of its own
(target ``"sweep"``: its name, owner, config, the points' job ids, where it ran and, once finished, the assembled
result) and one job per point, queued all or none in one transaction. Who may read or change a sweep, its rename,
delete and cancel are the job store's — the same check and the same code as for any job. This module turns the
row into the sweep record the pages, the report and the CLI read (the dict an earlier version kept in
``sweeps/<id>.json``: :func:`load`), and assembles a finished sweep's points (:func:`state`, and
:func:`member_ended` when a point ends, so the row follows its points without anyone looking).

**Earlier versions' sweeps.** ``$DP_EXPLORER_HOME/sweeps/<id>.json`` files are moved into the store the first
time sweeps are listed or read (:func:`migrate`; the files are kept in ``sweeps/migrated/``); where the home
cannot be written they are still read as they are.

Finished sweeps of the default demo (public digits data, the page's default settings) are *shared*: everyone may
read them; only their owner or an admin may change them. A start is idempotent per click (its key), bounded per
click (``limits.SWEEP_MAX_TRAININGS`` model trainings for a visitor) and queued all or none.

A little over 500 lines, one idea: a sweep's record — its row, its earlier versions' files, the blocking runners
and where it stands — read and written in one place; its maths lives in point.py and summary.py.
"""

from __future__ import annotations

import functools
import json
import os
import re
import time
from typing import Any

from .. import limits, storage
from ..errors import DPError, JobError
from ..jobs import display, executors, groups
from ..jobs import store as job_store
from ..jobs.owners import SYSTEM, Caller, NotYours, QueueFull, check_owner, limited
from ..jobs.records import JobRecord
from ..jobs.registry import SWEEP, SWEEP_POINT
from ..training.config import REPRODUCIBLE_LABEL, dataset_name, model_name
from .config import SweepConfig

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
FINISHED = ("done", "failed", "cancelled")
LEGACY_DIR = "sweeps"  # where earlier versions kept one JSON file per sweep
#: A sweep record's keys that are the row's own columns; every other key is kept in the row's params.
_ROW_KEYS = ("id", "name", "created", "status", "owner", "result", "failed", "finished", "shared")


def _assemble(cfg: SweepConfig, points: list[dict]) -> dict:
    full = [p for p in points if p.get("train_fraction", 1.0) >= 1.0]
    control = sorted(
        (p for p in points if p.get("train_fraction", 1.0) < 1.0),
        key=lambda p: (p["train_fraction"], p["epsilon"] is not None, p["epsilon"] or 0, p["seed"]),
    )
    base = sorted((p for p in full if p.get("epsilon") is None), key=lambda p: p["seed"])
    dp = sorted((p for p in full if p.get("epsilon") is not None), key=lambda p: (p["epsilon"], p["seed"]))
    out: dict[str, Any] = {"config": cfg.to_dict(), "baseline": base[0] if base else None, "points": dp}
    if len(base) > 1:
        out["baselines"] = base
    if control:
        out["size_control"] = control
    if cfg.reproducible_noise:
        out["reproducible_noise"] = True
        out["release_label"] = REPRODUCIBLE_LABEL
    return out


def run_sweep_inline(
    cfg: SweepConfig | dict | None = None, progress=None, *, owner: str, store: bool = True, name: str = ""
) -> dict:
    """Run every point one after another in this process (CLI, tests). Returns {id, config, baseline, points};
    with ``store`` the finished sweep is recorded (for ``owner``) so the page can reopen it."""
    from .point import run_point  # lazy: training loads pandas (~0.5 s) and torch; Home imports this module

    cfg = _config(cfg)
    owner = check_owner(owner)
    params = cfg.point_params()
    points = []
    for i, p in enumerate(params):
        if progress is not None:
            progress(i, len(params), p["train"]["epsilon"], p["seed"])
        points.append(run_point(p))
    result = _assemble(cfg, points)
    if store:
        sweep_id = job_store.new_id()
        save(
            {
                "id": sweep_id,
                "name": name or _default_name(cfg) + " (inline)",
                "created": time.time(),
                "status": "done",
                "config": cfg.to_dict(),
                "jobs": [],
                "result": result,
                "failed": [],
                "finished": time.time(),
                "executor": {"name": "inline"},
                "owner": owner,
                "shared": is_demo(cfg),
                **_noise_record(cfg),
            },
            distinct=True,
        )
        result = {"id": sweep_id, "executor": {"name": "inline"}, **result}
    return result


def _default_name(cfg: SweepConfig) -> str:
    data = cfg.upload_name or dataset_name(cfg.dataset)  # an upload by its owner's file name, never a server path
    name = f"{data} · {model_name(cfg.model)} · {len(cfg.epsilons)} ε × {cfg.seeds} seed{'s' if cfg.seeds != 1 else ''}"
    return name + (f" [{REPRODUCIBLE_LABEL}]" if cfg.reproducible_noise else "")


def _noise_record(cfg: SweepConfig) -> dict:
    return {
        "reproducible_noise": bool(cfg.reproducible_noise),
        **({"release_label": REPRODUCIBLE_LABEL} if cfg.reproducible_noise else {}),
    }


def _config(cfg) -> SweepConfig:
    if cfg is None:
        return SweepConfig().validate()
    if isinstance(cfg, dict):
        return SweepConfig.from_dict(cfg)
    return cfg.validate()


def _comparable(d: dict) -> str:
    d = {k: v for k, v in d.items() if k != "device"}  # where it trains changes nothing of what it shows
    return json.dumps(d, sort_keys=True, default=list)


@functools.lru_cache(maxsize=1)
def _demo() -> str:
    return _comparable(SweepConfig().validate().to_dict())


def is_demo(cfg: SweepConfig | dict) -> bool:
    """Whether a sweep runs the default demo (public digits data, the page's default settings, real noise):
    once finished, such a sweep is shared with every visitor. A stored record's config (already validated when
    the sweep started) is compared as it is."""
    if isinstance(cfg, dict):
        return _comparable(cfg) == _demo()
    try:
        return _comparable(_config(cfg).to_dict()) == _demo()
    except DPError:
        return False


def model_trainings(cfg: SweepConfig | dict) -> int:
    """Models a sweep trains: one per point, plus each point's LiRA shadow models."""
    cfg = _config(cfg)
    per_point = 1 + (cfg.shadows if "lira" in cfg.attacks else 0)
    return len(cfg.point_params()) * per_point


# --------------------------------------------------------------------------------------------- records


def _check_id(sweep_id) -> str:
    if not isinstance(sweep_id, str) or not _ID_RE.match(sweep_id):
        raise DPError(f"not a sweep id: {sweep_id!r}")
    return sweep_id


def _missing(sweep_id: str) -> DPError:
    return DPError(f"no stored sweep {sweep_id!r}; pick one from the list of stored sweeps")


def _record(job: JobRecord) -> dict:
    """The sweep record (the dict earlier versions stored as a file) of a sweep's row."""
    params = dict(job.params)
    demo = bool(params.pop("demo", False))
    rec = {"id": job.id, "name": job.label, "created": job.created, "status": str(job.status), **params}
    rec.update(owner=job.owner, shared=demo)
    if job.result is not None:
        rec["result"] = job.result.get("result")
        rec["failed"] = job.result.get("failed") or []
    if job.ended is not None:
        rec["finished"] = job.ended
    rec.setdefault("jobs", [])
    return rec


def save(record: dict, *, replace: bool = True, distinct: bool = False) -> None:
    """Store a sweep record (as :func:`load` gives it) as the sweep's row: the run of one process, a finished
    sweep, or one read from an earlier version's file. ``replace=False`` leaves a row already there alone;
    ``distinct`` makes a new sweep's name distinct among its owner's."""
    sweep_id = _check_id(record.get("id"))
    status = record.get("status") or "running"
    demo = bool(record["shared"] if "shared" in record else is_demo(record.get("config") or {}))
    groups.put_group(
        sweep_id,
        SWEEP,
        owner=owner_of(record),
        label=str(record.get("name") or ""),
        params={**{k: v for k, v in record.items() if k not in _ROW_KEYS}, "demo": demo},
        status=status,
        created=float(record.get("created") or time.time()),
        ended=record.get("finished"),
        result={"result": record["result"], "failed": record.get("failed") or []} if "result" in record else None,
        shared=demo and status == "done",
        members=[e.get("job_id") for e in record.get("jobs") or [] if isinstance(e, dict)],
        replace=replace,
        distinct=distinct,
    )


def migrate() -> dict[str, dict]:
    """Move the sweeps earlier versions stored as ``sweeps/<id>.json`` into the job store (each once: a sweep
    already there keeps its row; the file goes to ``sweeps/migrated/``). Returns the records that could not be
    moved (the home cannot be written), read as they are. Cheap when there is nothing to move."""
    try:
        folder = storage.home() / LEGACY_DIR
        files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    except (storage.StorageError, OSError):
        return {}
    left = {}
    for path in files:
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # not a sweep record: left where it is
        if not isinstance(rec, dict) or not isinstance(rec.get("id"), str) or not _ID_RE.match(rec["id"]):
            continue
        try:
            save(rec, replace=False)
        except (DPError, ValueError):  # storage faults are DPErrors: the home cannot take it now
            left[rec["id"]] = rec
            continue
        try:
            (folder / "migrated").mkdir(exist_ok=True)
            os.replace(path, folder / "migrated" / path.name)
        except OSError:
            pass  # in the store now; the file is moved on a later look
    return left


def _read(sweep_id: str, caller: Caller) -> dict:
    """The record of a sweep the caller may read (the job store's ownership check), or an earlier version's not
    yet moved into the store."""
    _check_id(sweep_id)
    left = migrate()
    try:
        job = job_store.get(sweep_id, caller=caller, history=False)
    except NotYours:
        raise
    except JobError:
        job = None
    if job is not None and job.target == SWEEP:
        return _record(job)
    if job is None and sweep_id in left:
        rec = left[sweep_id]
        if not caller.may_read(owner_of(rec), shared=shared(rec)):
            raise NotYours(
                f"sweep {sweep_id} is not yours: only the session or user that started it (or an admin) "
                "can see or change it; start your own, or ask an admin"
            )
        return rec
    raise _missing(sweep_id)


def _in_store(sweep_id: str, caller: Caller) -> dict:
    """For a change: the record, refused while it is only an earlier version's file the home cannot take."""
    rec = _read(sweep_id, caller)
    if sweep_id in migrate():
        raise storage.StorageError(
            f"sweep {sweep_id} is still an earlier version's file that could not be moved into the job store: "
            f"make ${storage.ENV_VAR} writable and try again"
        )
    return rec


def owner_of(rec: dict) -> str:
    """A sweep's owner (records written before owners existed belong to the CLI owner)."""
    return rec.get("owner") or "cli"


def shared(rec: dict) -> bool:
    """Whether every visitor may read this sweep: a finished run of the default demo."""
    demo = rec["shared"] if "shared" in rec else is_demo(rec.get("config") or {})
    return bool(demo) and rec.get("status") == "done"


def load(sweep_id: str, *, caller: Caller) -> dict:
    """A stored sweep's record, for a caller who may read it (its owner, an admin; anyone for a shared demo)."""
    return _read(sweep_id, caller)


def list_sweeps(*, caller: Caller, refresh: bool = True) -> list[dict]:
    """Stored sweeps the caller may read, newest first: {id, name, created, status, config, owner, mine, shared,
    reproducible_noise}. With ``refresh``, sweeps still marked running are looked up in the job store
    first (and recorded as finished if they are: a finished demo becomes shared though its owner has left)."""
    left = migrate()
    records = [_record(j) for j in job_store.list_jobs(caller=SYSTEM, target=SWEEP, limit=10_000)]
    out = []
    for r in records + [r for r in left.values() if r["id"] not in {x["id"] for x in records}]:
        if refresh and r.get("status") == "running":  # whoever looks records a sweep that has finished
            try:
                r = {**r, **_state(r)}
            except (OSError, ValueError):
                pass
        if not caller.may_read(owner_of(r), shared=shared(r)):
            continue
        out.append(
            {
                **{k: r.get(k) for k in ("id", "name", "created", "status", "config", "reproducible_noise")},
                "owner": owner_of(r),
                "mine": owner_of(r) == caller.owner,
                "shared": shared(r),
            }
        )
    return sorted(out, key=lambda r: r.get("created") or 0, reverse=True)


def default_view(sweeps: list[dict], caller: Caller, current: str | None = None) -> str | None:
    """Which sweep a page opens on (``sweeps`` as :func:`list_sweeps` gives them, newest first): the one this
    caller just started, else the caller's newest that was not cancelled, else the newest finished shared demo.
    A cancelled sweep is never anyone's default; None: nothing to show yet."""
    if current is not None and any(s["id"] == current for s in sweeps):
        return current
    own = [s for s in sweeps if s["owner"] == caller.owner and s.get("status") != "cancelled"]
    if own:
        return own[0]["id"]
    demo = [s for s in sweeps if s.get("shared") and s.get("status") == "done"]
    return demo[0]["id"] if demo else None


def start_sweep(
    cfg: SweepConfig | dict | None = None,
    *,
    owner: str,
    key: str | None = None,
    name: str = "",
    workers: int = 2,
    executor=None,
) -> str:
    """Submit the sweep and one background job per point for ``owner``, all or none, start workers. Returns the
    sweep id.

    ``key``: the click's idempotency key — the same key again raises
    :class:`~dpcore.jobs.owners.AlreadySubmitted` whose ``ref`` is the first click's sweep. A visitor's click may
    start at most ``limits.SWEEP_MAX_TRAININGS`` model trainings and hold at most
    ``limits.JOBS_QUEUED_PER_OWNER`` queued jobs (:class:`~dpcore.jobs.owners.QueueFull`).
    ``executor`` (dpcore.jobs.executors): where the points run; default local worker processes."""
    cfg = _config(cfg)
    owner = check_owner(owner)
    if limited(owner):
        n = model_trainings(cfg)
        if n > limits.SWEEP_MAX_TRAININGS:
            raise QueueFull(
                f"this sweep would train {n:,} models ({len(cfg.point_params()):,} points, each with "
                f"its LiRA shadow models); one click may start at most {limits.SWEEP_MAX_TRAININGS:,}: "
                "use fewer ε values, seeds or shadow models"
            )
    ex = executor or executors.LocalExecutor(max(1, int(workers or 1)))  # points: local processes or Ray tasks
    sweep_id = job_store.new_id()
    units, entries = [], []
    for p in cfg.point_params():
        eps = p["train"]["epsilon"]
        label = f"sweep {sweep_id}: " + ("baseline" if eps is None else f"ε={eps:g}") + f" seed {p['seed']}"
        units.append((*ex.unit(SWEEP_POINT, p, device=cfg.device), label))
        entries.append({"job_id": job_store.new_id(), "epsilon": eps, "seed": p["seed"]})
    params = {
        "group": f"{SWEEP}-{sweep_id}",
        "config": cfg.to_dict(),
        "jobs": entries,
        "executor": ex.describe(),
        "demo": is_demo(cfg),
        **_noise_record(cfg),
    }
    groups.submit_group(
        SWEEP,
        params,
        units,
        owner=owner,
        label=name or _default_name(cfg),
        key=key,
        group_id=sweep_id,
        ids=[e["job_id"] for e in entries],
    )
    if workers:
        ex.start(len(entries))
    return sweep_id


def member_ended(end) -> None:
    """A point ended (:mod:`dpcore.jobs.hooks`): once none is left to run, the sweep's row records its end and its
    assembled result — without anyone having to look."""
    try:
        job = job_store.get(end.parent, caller=SYSTEM, history=False)
    except JobError:
        return
    if job.target == SWEEP and job.status == "running":
        _state(_record(job))


#: Results of finished sweep points, by (home, job id), kept by the process that polls them (the CLI's wait loop, a
#: page's fragment): a poll read and parsed every finished point's ~40 KB result again, 0.3 s per poll with 33 points
#: on a busy machine, every 0.3 s, on the cores the workers need.
_DONE: dict[tuple[str, str], dict] = {}
_DONE_MAX = 4096


def _state(rec: dict) -> dict:
    """Where a sweep stands (see :func:`state`), with no ownership check: the record was checked by the caller."""
    cfg = SweepConfig.from_stored(rec["config"])  # no data read: an upload is gone once its jobs are done
    if rec.get("status") in FINISHED and "result" in rec:
        n = len(rec["jobs"]) or (
            len(rec["result"]["points"]) + len(rec["result"].get("baselines") or [rec["result"]["baseline"]])
        )
        return {
            **_summary(rec),
            "fraction": 1.0,
            "done": n - len(rec.get("failed", [])),
            "total": n,
            "failed": rec.get("failed", []),
            "result": rec["result"],
            "running": [],
        }
    points, failed, running = [], [], []
    fraction = 0.0
    home = str(storage.home())
    cached = {e["job_id"]: _DONE.get((home, e["job_id"])) for e in rec["jobs"]}
    unread = [job_id for job_id, done in cached.items() if done is None]
    members = job_store.get_many(unread, caller=SYSTEM) if unread else {}  # one read for the points not yet done
    for e in rec["jobs"]:
        done = cached.get(e["job_id"])
        if done is not None:  # a finished point's result never changes: not read and parsed again each poll
            points.append(done)
            fraction += 1
            continue
        job = members.get(e["job_id"])
        if job is None:
            failed.append({**e, "error": "job record missing"})
            fraction += 1
            continue
        st = job["status"]
        if st == "done" and job["result"]:
            points.append(job["result"])
            _DONE[(home, e["job_id"])] = job["result"]
            while len(_DONE) > _DONE_MAX:
                _DONE.pop(next(iter(_DONE)))
            fraction += 1
        elif st in ("failed", "cancelled"):
            failed.append({**e, "error": job.get("error") or st, "status": st})
            fraction += 1
        else:
            v = display.view(job)
            f = v["fraction"] or 0.0
            if (job.get("progress") or {}).get("phase") == "attack":
                f = 1.0
            fraction += 0.9 * f
            if st == "running":
                running.append({**e, "text": v["text"]})
    total = len(rec["jobs"])
    result = _assemble(cfg, points)
    finished = len(points) + len(failed) == total
    status = rec.get("status", "running")
    if finished and status == "running":
        status = "done" if points else "failed"
        if failed and all(f.get("status") == "cancelled" for f in failed) and len(points) < total:
            status = "cancelled"
        rec.update(status=status, result=result, failed=failed, finished=time.time())
        groups.end_group(
            rec["id"],
            status=status,
            result={"result": result, "failed": failed},
            ended=rec["finished"],
            shared=shared(rec),
        )
    return {
        **_summary(rec),
        "status": status,
        "fraction": fraction / max(total, 1),
        "done": len(points),
        "total": total,
        "failed": failed,
        "running": running,
        "result": result,
    }


def state(sweep_id: str, *, caller: Caller) -> dict:
    """Where a sweep stands: fraction done, finished points so far, failures. Stores it once finished.

    Returns {id, name, status, fraction, done, total, failed: [..], result: {config, baseline, points}, owner,
    shared}. Someone else's sweep (not a shared demo) is NotYours."""
    return _state(load(sweep_id, caller=caller))


def _summary(rec: dict) -> dict:
    return {
        **{
            k: rec.get(k)
            for k in ("id", "name", "created", "status", "config", "executor", "reproducible_noise", "release_label")
        },
        "owner": owner_of(rec),
        "shared": shared(rec),
    }


def problems(s: dict) -> list[str]:
    """At most two sentences on what did not finish in a sweep's state (not one line per model): how many
    models were cancelled, and how many failed with the first reason."""
    failed = s.get("failed") or []
    cancelled = [f for f in failed if f.get("status") == "cancelled"]
    other = [f for f in failed if f.get("status") != "cancelled"]
    out = []
    if cancelled:
        out.append(
            f"{len(cancelled)} of {s.get('total') or len(failed)} models were cancelled before they "
            "finished; the charts show the ones that did."
        )
    if other:

        def which(f):
            return ("baseline" if f.get("epsilon") is None else f"ε = {f['epsilon']:g}") + f" seed {f.get('seed')}"

        first = other[0]
        more = f" and {len(other) - 1} more" if len(other) > 1 else ""
        out.append(
            f"{len(other)} model{'s' if len(other) > 1 else ''} failed ({which(first)}{more}): {first.get('error')}"
        )
    return out


def cancel(sweep_id: str, *, caller: Caller) -> None:
    """Cancel a sweep's queued and running points (its owner or an admin)."""
    _in_store(sweep_id, caller)
    job_store.cancel(sweep_id, caller=caller)


def rename(sweep_id: str, name: str, *, caller: Caller) -> dict:
    """Give a sweep a new name (owner or admin), distinct among its owner's names."""
    _in_store(sweep_id, caller)
    job_store.rename(sweep_id, name, caller=caller)
    return _summary(_read(sweep_id, caller))


def delete(sweep_id: str, *, caller: Caller) -> None:
    """Delete a finished or cancelled sweep with its points' jobs and files (owner or admin), all or none, in one
    transaction of the job store. A sweep still running is refused: cancel it first."""
    rec = _in_store(sweep_id, caller)
    if rec.get("status") == "running":
        _state(rec)  # points that all ended: the sweep is recorded finished first
    job_store.delete(sweep_id, caller=caller)


def run_sweep_parallel(
    cfg: SweepConfig | dict | None = None,
    *,
    owner: str,
    workers: int = 2,
    timeout: float = 3600,
    progress=None,
    executor=None,
    queued=None,
) -> dict:
    """Start the sweep as background jobs on ``workers`` processes (or ``executor``) and wait for it.
    ``queued(sweep_id)`` is called once its points are queued (the ledger ties their charges to them)."""
    caller = Caller(check_owner(owner))
    ex = executor or executors.LocalExecutor(max(1, int(workers or 1)))
    sweep_id = start_sweep(cfg, owner=owner, workers=workers, executor=ex)
    if queued is not None:
        try:
            queued(sweep_id)
        except BaseException:
            cancel(sweep_id, caller=caller)  # its queued points end cancelled: their end hooks settle them
            raise
    deadline = time.monotonic() + timeout
    started = time.monotonic()
    while True:
        s = state(sweep_id, caller=caller)
        if progress is not None:
            progress(s)
        if s["done"] + len(s["failed"]) >= s["total"]:
            break
        if workers and time.monotonic() - started > 5:  # a point queued again after its worker died needs one
            ex.start(s["total"] - s["done"] - len(s["failed"]))
            started = time.monotonic()
        if time.monotonic() > deadline:
            cancel(sweep_id, caller=caller)
            raise DPError(f"sweep {sweep_id} did not finish in {timeout:g} s; it was cancelled")
        time.sleep(0.3)
    if s["failed"]:
        first = s["failed"][0]
        raise DPError(
            f"{len(s['failed'])} sweep point(s) failed, e.g. ε={first['epsilon']} seed "
            f"{first['seed']}: {first['error']}"
        )
    return {"id": sweep_id, "executor": s.get("executor"), **s["result"]}
