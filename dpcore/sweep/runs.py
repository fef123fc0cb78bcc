"""Running sweeps and their records: start (one background job per point, through an executor), state,
cancel, list, load, save, rename, delete; and the two blocking runners (inline in this process, parallel on
workers).

A sweep's record (config, job ids, owner, and once finished the points) lives in
``$DP_EXPLORER_HOME/sweeps/<id>.json``, written atomically, so a finished sweep can be reopened and compared
after the job store is gone.

Ownership (:mod:`dpcore.jobs.owners`): a sweep belongs to whoever started it; :func:`load`, :func:`state`,
:func:`list_sweeps`, :func:`cancel`, :func:`rename` and :func:`delete` take the caller and refuse someone else's
sweep. Finished sweeps of the default demo (public digits data, the page's default settings) are *shared*:
everyone may read them; only their owner or an admin may change them. A start is idempotent per click (its
key), bounded per click (``limits.SWEEP_MAX_TRAININGS`` model trainings for a visitor) and queued all or none.

A little over 400 lines: a sweep's record and the checks on who may read or change it are one idea here (every
function reads the record, then checks); its maths lives in point.py and summary.py.
"""

from __future__ import annotations

import functools
import json
import re
import secrets
import time

from .. import limits, storage
from ..errors import DPError
from ..jobs.owners import SYSTEM, Caller, QueueFull, check_owner, limited, not_yours
from ..jobs.registry import SWEEP_POINT
from ..storage.jsonio import dumps
from ..training.config import REPRODUCIBLE_LABEL, dataset_name, model_name
from .config import SweepConfig
from .point import run_point

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
FINISHED = ("done", "failed", "cancelled")


def _assemble(cfg: SweepConfig, points: list[dict]) -> dict:
    full = [p for p in points if p.get("train_fraction", 1.0) >= 1.0]
    control = sorted(
        (p for p in points if p.get("train_fraction", 1.0) < 1.0),
        key=lambda p: (p["train_fraction"], p["epsilon"] is not None, p["epsilon"] or 0, p["seed"]),
    )
    base = sorted((p for p in full if p.get("epsilon") is None), key=lambda p: p["seed"])
    dp = sorted((p for p in full if p.get("epsilon") is not None), key=lambda p: (p["epsilon"], p["seed"]))
    out = {"config": cfg.to_dict(), "baseline": base[0] if base else None, "points": dp}
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
        sweep_id = _new_id()
        save(
            {
                "id": sweep_id,
                "name": _distinct(owner, name or _default_name(cfg) + " (inline)"),
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
            }
        )
        result = {"id": sweep_id, "executor": {"name": "inline"}, **result}
    return result


def _new_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


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


def sweeps_dir():
    return storage.subdir("sweeps")


def _path(sweep_id: str):
    if not isinstance(sweep_id, str) or not _ID_RE.match(sweep_id):
        raise DPError(f"not a sweep id: {sweep_id!r}")
    return sweeps_dir() / f"{sweep_id}.json"


def save(record: dict) -> None:
    """Write a sweep record (atomically) where :func:`load` finds it."""
    storage.atomic_write_bytes(_path(record["id"]), dumps(record, indent=1).encode())


def _read(sweep_id: str) -> dict:
    path = _path(sweep_id)
    if not path.exists():
        raise DPError(f"no stored sweep {sweep_id!r}; pick one from the list of stored sweeps")
    return json.loads(path.read_text())


def owner_of(rec: dict) -> str:
    """A sweep's owner (records written before owners existed belong to the CLI owner)."""
    return rec.get("owner") or "cli"


def shared(rec: dict) -> bool:
    """Whether every visitor may read this sweep: a finished run of the default demo."""
    demo = rec["shared"] if "shared" in rec else is_demo(rec.get("config") or {})
    return bool(demo) and rec.get("status") == "done"


def _readable(rec: dict, caller: Caller) -> dict:
    if not caller.may_read(owner_of(rec), shared=shared(rec)):
        raise not_yours("sweep", rec.get("id"))
    return rec


def _changeable(rec: dict, caller: Caller) -> dict:
    if not caller.may_change(owner_of(rec)):
        raise not_yours("sweep", rec.get("id"), shared=shared(rec))
    return rec


def load(sweep_id: str, *, caller: Caller) -> dict:
    """A stored sweep's record, for a caller who may read it (its owner, an admin; anyone for a shared demo)."""
    return _readable(_read(sweep_id), caller)


def _records():
    for p in sweeps_dir().glob("*.json"):
        try:
            yield p, json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            continue


def list_sweeps(*, caller: Caller, refresh: bool = True) -> list[dict]:
    """Stored sweeps the caller may read, newest first: {id, name, created, status, config, owner, mine, shared,
    reproducible_noise}. With ``refresh``, sweeps still marked running are looked up in the job store
    first (and recorded as finished if they are: a finished demo becomes shared though its owner has left)."""
    out = []
    for _p, r in _records():
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


def _distinct(owner: str, name: str) -> str:
    from ..jobs.store import distinct_name

    return distinct_name(name, (r.get("name") for _, r in _records() if owner_of(r) == owner))


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
    """Submit one background job per point for ``owner``, all or none, record the sweep, start workers. Returns
    the sweep id.

    ``key``: the click's idempotency key — the same key again raises
    :class:`~dpcore.jobs.owners.AlreadySubmitted` whose ``ref`` is the first click's sweep. A visitor's click may
    start at most ``limits.SWEEP_MAX_TRAININGS`` model trainings and hold at most
    ``limits.JOBS_QUEUED_PER_OWNER`` queued jobs (:class:`~dpcore.jobs.owners.QueueFull`).
    ``executor`` (dpcore.jobs.executors): where the points run; default local worker processes."""
    from ..jobs import executors
    from ..jobs import store as job_store

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
    # --- engineer H (issue 17): points go through an Executor (local processes or Ray tasks) ---
    ex = executor or executors.LocalExecutor(max(1, int(workers or 1)))
    device = cfg.device
    sweep_id = _new_id()
    group = f"sweep-{sweep_id}"
    units, entries = [], []
    for p in cfg.point_params():
        eps = p["train"]["epsilon"]
        label = f"sweep {sweep_id}: " + ("baseline" if eps is None else f"ε={eps:g}") + f" seed {p['seed']}"
        units.append((*ex.unit(SWEEP_POINT, p, device=device), label))
        entries.append({"epsilon": eps, "seed": p["seed"]})
    ids = job_store.submit_many(units, owner=owner, group=group, key=key, ref=sweep_id)
    entries = [{"job_id": jid, **e} for jid, e in zip(ids, entries)]
    try:
        save(
            {
                "id": sweep_id,
                "name": _distinct(owner, name or _default_name(cfg)),
                "created": time.time(),
                "status": "running",
                "group": group,
                "config": cfg.to_dict(),
                "jobs": entries,
                "executor": ex.describe(),
                "owner": owner,
                "shared": is_demo(cfg),
                **_noise_record(cfg),
            }
        )
    except BaseException:
        job_store.cancel_group(group, caller=SYSTEM)  # no record, no jobs: nothing runs for a sweep nobody sees
        raise
    if workers:
        ex.start(len(entries))
    return sweep_id


def _state(rec: dict) -> dict:
    """Where a sweep stands (see :func:`state`), with no ownership check: the record was checked by the caller."""
    from ..jobs import display
    from ..jobs import store as job_store

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
    for e in rec["jobs"]:
        try:
            job = job_store.get(e["job_id"], caller=SYSTEM, history=False)
        except DPError:
            failed.append({**e, "error": "job record missing"})
            fraction += 1
            continue
        st = job["status"]
        if st == "done" and job["result"]:
            points.append(job["result"])
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
        save(rec)
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
    from ..jobs import store as job_store

    rec = _changeable(_read(sweep_id), caller)
    for e in rec["jobs"]:
        try:
            job_store.cancel(e["job_id"], caller=SYSTEM)
        except DPError:
            pass


def rename(sweep_id: str, name: str, *, caller: Caller) -> dict:
    """Give a sweep a new name (owner or admin), distinct among its owner's sweeps."""
    from ..jobs.store import check_label

    name = check_label(name)
    rec = _changeable(_read(sweep_id), caller)
    if any(r.get("name") == name and r.get("id") != sweep_id and owner_of(r) == owner_of(rec) for _, r in _records()):
        raise DPError(f"another sweep is already called {name!r}; choose another name")
    rec["name"] = name
    save(rec)
    return _summary(rec)


def delete(sweep_id: str, *, caller: Caller) -> None:
    """Delete a finished or cancelled sweep with its points' jobs and files (owner or admin), all or none: the
    record is moved aside first (the sweep disappears at once), then its jobs go in one transaction; if they
    cannot, the record comes back. A sweep still running is refused: cancel it first."""
    from ..jobs import store as job_store

    rec = _changeable(_read(sweep_id), caller)
    if _state(rec)["status"] == "running":
        raise DPError(f"sweep {sweep_id} is still running; cancel it first, then delete it")
    path = _path(sweep_id)
    moved = storage.move_to_trash(path)
    try:
        job_store.delete_many([e["job_id"] for e in rec.get("jobs") or []], caller=SYSTEM, missing_ok=True)
    except BaseException:
        storage.restore(moved, path)
        raise
    storage.empty_trash()


def run_sweep_parallel(
    cfg: SweepConfig | dict | None = None,
    *,
    owner: str,
    workers: int = 2,
    timeout: float = 3600,
    progress=None,
    executor=None,
) -> dict:
    """Start the sweep as background jobs on ``workers`` processes (or ``executor``) and wait for it."""
    caller = Caller(check_owner(owner))
    sweep_id = start_sweep(cfg, owner=owner, workers=workers, executor=executor)
    deadline = time.monotonic() + timeout
    while True:
        s = state(sweep_id, caller=caller)
        if progress is not None:
            progress(s)
        if s["done"] + len(s["failed"]) >= s["total"]:
            break
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
