"""Running sweeps and their records: start (one background job per point, through an executor), state,
cancel, list, load, save; and the two blocking runners (inline in this process, parallel on workers).

A sweep's record (config, job ids, and once finished the points) lives in
``$DP_EXPLORER_HOME/sweeps/<id>.json``, written atomically, so a finished sweep can be reopened and compared
after the job store is gone.
"""

from __future__ import annotations

import json
import re
import secrets
import time

from .. import storage
from ..errors import DPError
from ..jobs.registry import SWEEP_POINT
from ..serialize import dumps
from ..training.config import REPRODUCIBLE_LABEL, dataset_name, model_name
from .config import SweepConfig
from .point import run_point

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def _assemble(cfg: SweepConfig, points: list[dict]) -> dict:
    full = [p for p in points if p.get("train_fraction", 1.0) >= 1.0]
    control = sorted((p for p in points if p.get("train_fraction", 1.0) < 1.0),
                     key=lambda p: (p["train_fraction"], p["epsilon"] is not None, p["epsilon"] or 0, p["seed"]))
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


def run_sweep_inline(cfg: SweepConfig | dict | None = None, progress=None, *, store: bool = True,
                     name: str = "") -> dict:
    """Run every point one after another in this process (CLI, tests). Returns {id, config, baseline, points};
    with ``store`` the finished sweep is recorded so the page can reopen it."""
    cfg = _config(cfg)
    params = cfg.point_params()
    points = []
    for i, p in enumerate(params):
        if progress is not None:
            progress(i, len(params), p["train"]["epsilon"], p["seed"])
        points.append(run_point(p))
    result = _assemble(cfg, points)
    if store:
        sweep_id = _new_id()
        save({"id": sweep_id, "name": name or _default_name(cfg) + " (inline)", "created": time.time(),
                "status": "done", "config": cfg.to_dict(), "jobs": [], "result": result, "failed": [],
                "finished": time.time(), "executor": {"name": "inline"}, **_noise_record(cfg)})
        result = {"id": sweep_id, "executor": {"name": "inline"}, **result}
    return result


def _new_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def _default_name(cfg: SweepConfig) -> str:
    data = cfg.upload_name or dataset_name(cfg.dataset)  # never an upload's server path
    name = f"{data}, {model_name(cfg.model)}, {len(cfg.epsilons)} ε × {cfg.seeds} seed(s)"
    return name + (f" [{REPRODUCIBLE_LABEL}]" if cfg.reproducible_noise else "")


def _noise_record(cfg: SweepConfig) -> dict:
    return {"reproducible_noise": bool(cfg.reproducible_noise),
            **({"release_label": REPRODUCIBLE_LABEL} if cfg.reproducible_noise else {})}


def _config(cfg) -> SweepConfig:
    if cfg is None:
        return SweepConfig().validate()
    if isinstance(cfg, dict):
        return SweepConfig.from_dict(cfg)
    return cfg.validate()


def sweeps_dir():
    return storage.subdir("sweeps")


def _path(sweep_id: str):
    if not isinstance(sweep_id, str) or not _ID_RE.match(sweep_id):
        raise DPError(f"not a sweep id: {sweep_id!r}")
    return sweeps_dir() / f"{sweep_id}.json"


def save(record: dict) -> None:
    """Write a sweep record (atomically) where :func:`load` finds it."""
    storage.atomic_write_bytes(_path(record["id"]), dumps(record, indent=1).encode())


def load(sweep_id: str) -> dict:
    path = _path(sweep_id)
    if not path.exists():
        raise DPError(f"no stored sweep {sweep_id!r}; pick one from the list of stored sweeps")
    return json.loads(path.read_text())


def list_sweeps(refresh: bool = True) -> list[dict]:
    """Stored sweeps, newest first: {id, name, created, status, config}. With ``refresh``, sweeps still
    marked running are looked up in the job store first (and recorded as finished if they are)."""
    if refresh:
        for p in sweeps_dir().glob("*.json"):
            try:
                if json.loads(p.read_text()).get("status") == "running":
                    state(p.stem)
            except (OSError, ValueError):
                continue
    out = []
    for p in sweeps_dir().glob("*.json"):
        try:
            r = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        out.append({k: r.get(k) for k in ("id", "name", "created", "status", "config", "reproducible_noise")})
    return sorted(out, key=lambda r: r.get("created") or 0, reverse=True)


def start_sweep(cfg: SweepConfig | dict | None = None, *, name: str = "", workers: int = 2,
                executor=None) -> str:
    """Submit one background job per point, record the sweep, start workers. Returns the sweep id.

    ``executor`` (dpcore.jobs.executors): where the points run; default local worker processes."""
    from ..jobs import executors

    cfg = _config(cfg)
    # --- engineer H (issue 17): points go through an Executor (local processes or Ray tasks) ---
    ex = executor or executors.LocalExecutor(max(1, int(workers or 1)))
    device = cfg.device
    sweep_id = _new_id()
    group = f"sweep-{sweep_id}"
    entries = []
    for p in cfg.point_params():
        eps = p["train"]["epsilon"]
        label = f"sweep {sweep_id}: " + ("baseline" if eps is None else f"ε={eps:g}") + f" seed {p['seed']}"
        jid = ex.submit(SWEEP_POINT, p, group=group, label=label, device=device)
        entries.append({"job_id": jid, "epsilon": eps, "seed": p["seed"]})
    name = name or _default_name(cfg)
    save({"id": sweep_id, "name": name, "created": time.time(), "status": "running", "group": group,
            "config": cfg.to_dict(), "jobs": entries, "executor": ex.describe(), **_noise_record(cfg)})
    if workers:
        ex.start(len(entries))
    return sweep_id


def state(sweep_id: str) -> dict:
    """Where a sweep stands: fraction done, finished points so far, failures. Stores it once finished.

    Returns {id, name, status, fraction, done, total, failed: [..], result: {config, baseline, points}}.
    """
    from ..jobs import display, store as job_store

    rec = load(sweep_id)
    cfg = SweepConfig.from_stored(rec["config"])  # no data read: an upload is gone once its jobs are done
    if rec.get("status") in ("done", "failed", "cancelled") and "result" in rec:
        n = len(rec["jobs"]) or (len(rec["result"]["points"]) + len(rec["result"].get("baselines") or
                                                                   [rec["result"]["baseline"]]))
        return {**_summary(rec), "fraction": 1.0, "done": n - len(rec.get("failed", [])), "total": n,
                "failed": rec.get("failed", []), "result": rec["result"], "running": []}
    points, failed, running = [], [], []
    fraction = 0.0
    for e in rec["jobs"]:
        try:
            job = job_store.get(e["job_id"], history=False)
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
    return {**_summary(rec), "status": status, "fraction": fraction / max(total, 1), "done": len(points),
            "total": total, "failed": failed, "running": running, "result": result}


def _summary(rec: dict) -> dict:
    return {k: rec.get(k) for k in ("id", "name", "created", "status", "config", "executor", "reproducible_noise",
                                    "release_label")}


def cancel(sweep_id: str) -> None:
    from ..jobs import store as job_store

    rec = load(sweep_id)
    for e in rec["jobs"]:
        try:
            job_store.cancel(e["job_id"])
        except DPError:
            pass


def run_sweep_parallel(cfg: SweepConfig | dict | None = None, *, workers: int = 2, timeout: float = 3600,
                       progress=None, executor=None) -> dict:
    """Start the sweep as background jobs on ``workers`` processes (or ``executor``) and wait for it."""
    sweep_id = start_sweep(cfg, workers=workers, executor=executor)
    deadline = time.monotonic() + timeout
    while True:
        s = state(sweep_id)
        if progress is not None:
            progress(s)
        if s["done"] + len(s["failed"]) >= s["total"]:
            break
        if time.monotonic() > deadline:
            cancel(sweep_id)
            raise DPError(f"sweep {sweep_id} did not finish in {timeout:g} s; it was cancelled")
        time.sleep(0.3)
    if s["failed"]:
        first = s["failed"][0]
        raise DPError(f"{len(s['failed'])} sweep point(s) failed, e.g. ε={first['epsilon']} seed "
                      f"{first['seed']}: {first['error']}")
    return {"id": sweep_id, "executor": s.get("executor"), **s["result"]}


# --- summaries for charts, JSON and the plain-language reading ---------------------------------------------

