"""Where long work runs: local worker processes (the embedded default) or a Ray cluster.

Every unit of long work — a sweep point's training and attacks, a LiRA shadow model, an audit — is a job
in the SQLite store of :mod:`dpcore.jobs.store`, and only this machine (the app's) ever writes that store.
An :class:`Executor` decides how a unit is queued there:

``LocalExecutor`` ("local")
    the job runs in one of this machine's worker processes (``python -m dpcore.jobs``), as always.
``RayExecutor`` ("ray")
    the job is a small *dispatch* job: a local worker claims it, connects to the Ray cluster
    (``DP_EXPLORER_RAY_ADDRESS`` or ``--ray-address``), submits the unit as a Ray task with its resource
    request (``num_cpus``; ``num_gpus=1`` when the training config asks for ``device="cuda"``), relays the
    task's progress into the store, turns a cancel into ``ray.cancel(..., force=True)`` (children too),
    and stores the result the task returns. A unit may fan its own work out as nested Ray tasks
    (``ctx.map_tasks``: a sweep point's LiRA shadows, one CPU each); a cancel stops them with it. The
    task's inputs travel through Ray's object store; the dpcore package is shipped to the cluster with the
    connection (``runtime_env.py_modules``), so cluster nodes need only our pinned requirements. A worker
    or node lost mid-task is retried by Ray (``max_retries``, default 2, ``DP_EXPLORER_RAY_MAX_RETRIES``);
    once retries are spent the unit ends ``failed`` with the reason — never a silently missing point.

Ray is optional (``requirements-ray.txt``): nothing here imports it until a Ray job runs, and choosing
Ray without it installed is one :class:`DPError` saying how to install it.

Noise: a Ray task runs the same job function with the same params as a local worker, so DP noise is drawn
the same way (secure, never stored) and reproducible-noise runs give the same numbers on both.

A little over 400 lines, one idea: where a job runs. The Ray half (the remote context, the progress board, the
dispatch job) is most of it and exists only to make a Ray task look like a local worker to the store.

Device selection (:func:`resolve_device`): ``auto`` is CUDA when torch sees a GPU, else CPU; ``cuda``
without a GPU is a DPError; ``cpu`` is always CPU.
"""

from __future__ import annotations

import os
import re
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import Cancelled, DPError
from ..storage.jsonio import jsonable
from . import registry, store, workers

EXECUTORS = ("local", "ray")
DEVICES = ("auto", "cpu", "cuda")
RAY_ADDRESS_ENV = "DP_EXPLORER_RAY_ADDRESS"
RAY_INSTALL = "pip install -r requirements-ray.txt"
_ADDRESS_RE = re.compile(r"^(auto|(ray://)?[A-Za-z0-9._-]+:[0-9]{1,5})$")
_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # dpcore/ itself: the whole package goes to the cluster


def _env_int(name: str, default: int, lo: int, hi: int) -> int:
    try:
        return max(lo, min(hi, int(os.environ.get(name, default))))
    except ValueError:
        return default


# --------------------------------------------------------------------------------------------- device


def cuda_available() -> bool:
    try:
        # lazy: torch takes ~2 s to import
        import torch
    except ImportError:  # pragma: no cover - torch is a runtime requirement
        return False
    return bool(torch.cuda.is_available())


def check_device(device: str) -> str:
    """Validate a device name (auto / cpu / cuda) without looking for hardware."""
    if device not in DEVICES:
        raise DPError(f"unknown device {device!r}; use auto (GPU when present), cpu or cuda")
    return device


def resolve_device(device: str = "auto") -> str:
    """The torch device a run uses: 'cuda' or 'cpu'. ``cuda`` on a machine without one is a DPError."""
    check_device(device)
    if device == "cpu":
        return "cpu"
    if cuda_available():
        return "cuda"
    if device == "cuda":
        raise DPError(
            "device cuda was asked for but this machine has no CUDA GPU (torch sees none); "
            "use --device auto or cpu, or run on a Ray cluster with GPUs (--executor ray)"
        )
    return "cpu"


# --------------------------------------------------------------------------------------------- choosing


def ray_address(explicit: str | None = None) -> str | None:
    """The configured Ray address (argument, else ``DP_EXPLORER_RAY_ADDRESS``), or None."""
    addr = (explicit or os.environ.get(RAY_ADDRESS_ENV) or "").strip()
    if not addr:
        return None
    if not _ADDRESS_RE.match(addr):
        raise DPError(
            f"Ray address must look like HOST:PORT (e.g. 10.0.0.5:6379), ray://HOST:PORT or auto; got {addr!r}"
        )
    return addr


def require_ray():
    """Import Ray or raise the one message that says how to install it."""
    # Ray 2.60 clusters require a token by default, and a client sends its token (RAY_AUTH_TOKEN or
    # ~/.ray/auth_token) only in token mode, read when ray is imported; RAY_AUTH_MODE=disabled opts out.
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    try:
        # lazy: Ray is optional (requirements-ray.txt)
        import ray
    except ImportError:
        raise DPError(f"the Ray executor needs Ray, which is not installed here: {RAY_INSTALL}") from None
    return ray


def available_executors() -> tuple[str, ...]:
    """What a page offers: Ray only when an address is configured."""
    try:
        return EXECUTORS if ray_address() else ("local",)
    except DPError:
        return ("local",)


class Executor:
    """How units of long work are queued. Results, progress and cancel always go through dpcore.jobs.store."""

    name = "base"

    def unit(self, target: str, params: dict, *, device: str = "cpu") -> tuple[str, dict]:
        """The (target, params) the store holds for one unit of work (checked here, before anything is queued)."""
        raise NotImplementedError

    def submit(
        self, target: str, params: dict, *, owner: str, group: str | None = None, label: str = "", device: str = "cpu"
    ) -> str:
        """Queue one unit for ``owner``; return its job id. A batch that must queue all or none (a sweep) goes
        through :func:`dpcore.jobs.store.submit_many` with :meth:`unit`."""
        target, params = self.unit(target, params, device=device)
        return store.submit(target, params, owner=owner, group=group, label=label)

    def start(self, n_units: int) -> int:
        """Make sure enough local worker processes run for ``n_units`` queued units; return how many started."""
        raise NotImplementedError

    def describe(self) -> dict:
        """What the sweep record stores about where it ran."""
        return {"name": self.name}


class LocalExecutor(Executor):
    """The embedded default: local worker processes pull jobs from the store (see dpcore.jobs.workers)."""

    name = "local"

    def __init__(self, workers: int = 2) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise DPError(f"workers must be a positive number of processes, got {workers!r}")
        self.workers = workers

    def unit(self, target, params, *, device="cpu"):
        if device == "cuda" and not cuda_available():
            resolve_device("cuda")  # the clear error, before anything is queued
        return target, params

    def start(self, n_units):
        return workers.ensure_workers(self.workers)

    def describe(self):
        return {"name": self.name, "workers": self.workers}


class RayExecutor(Executor):
    """Units run as Ray tasks; local worker processes only dispatch them and write the store."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: float = 1.0,
        max_retries: int | None = None,
        dispatchers: int | None = None,
    ) -> None:
        require_ray()
        self.address = ray_address(address)
        if self.address is None:
            raise DPError(
                f"the Ray executor needs a cluster address: --ray-address HOST:PORT or "
                f"{RAY_ADDRESS_ENV}=HOST:PORT (start one with `ray start --head`)"
            )
        if not (isinstance(num_cpus, (int, float)) and 0 < num_cpus <= 256):
            raise DPError(f"num_cpus per task must be in (0, 256], got {num_cpus!r}")
        self.num_cpus = float(num_cpus)
        self.max_retries = (
            _env_int("DP_EXPLORER_RAY_MAX_RETRIES", 2, 0, 20) if max_retries is None else int(max_retries)
        )
        # each running Ray unit holds one light local dispatcher process (no torch imported there)
        self.dispatchers = dispatchers or _env_int("DP_EXPLORER_RAY_DISPATCHERS", 16, 1, 256)

    def spec(self, device: str = "cpu") -> dict:
        return {
            "address": self.address,
            "num_cpus": self.num_cpus,
            "num_gpus": 1 if device == "cuda" else 0,
            "max_retries": self.max_retries,
        }

    def unit(self, target, params, *, device="cpu"):
        registry.resolve(target)  # a typo fails here, not on the cluster
        return registry.RAY, {
            "target": registry.target_name(target),
            "params": params,
            "ray": self.spec(check_device(device)),
        }

    def start(self, n_units):
        return workers.ensure_workers(max(1, min(int(n_units), self.dispatchers)))

    def describe(self):
        return {
            "name": self.name,
            "address": self.address,
            "num_cpus_per_task": self.num_cpus,
            "max_retries": self.max_retries,
        }


def make_executor(name: str | None = "local", *, address: str | None = None, workers: int = 2) -> Executor:
    """The executor a CLI flag or page choice names ('local' or 'ray')."""
    name = (name or "local").strip().lower()
    if name not in EXECUTORS:
        raise DPError(f"unknown executor {name!r}; use local (worker processes here) or ray (a Ray cluster)")
    if name == "ray":
        return RayExecutor(address)
    return LocalExecutor(workers)


# --------------------------------------------------------------------------------------------- Ray side

_conn_lock = threading.Lock()
_connected: str | None = None


def connect(address: str):
    """Connect this process to the Ray cluster once (shipping the dpcore package); return the ray module."""
    global _connected, _remote_fn, _board
    ray = require_ray()
    with _conn_lock:
        if _connected == address and ray.is_initialized():
            return ray
        if ray.is_initialized():
            ray.shutdown()
        try:
            ray.init(
                address=address,
                runtime_env={"py_modules": [str(_PACKAGE_DIR)]},
                logging_level="WARNING",
                log_to_driver=False,
                configure_logging=False,
                namespace="dp-explorer",
            )
        except Exception as exc:
            raise DPError(
                f"cannot reach the Ray cluster at {address}: {_first_line(exc)}; check `ray status` "
                f"there, the address ({RAY_ADDRESS_ENV}) and the token (RAY_AUTH_TOKEN)"
            ) from None
        _connected, _remote_fn, _board = address, None, None  # made again for this cluster
    return ray


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)[:300]


class _RemoteContext:
    """What a job function gets on a Ray worker: progress goes to the dispatcher's board, files come back
    with the result (the app's machine writes them), cancel arrives as a forced task kill."""

    def __init__(self, job_id: str, board) -> None:
        self.job_id = job_id
        self.result_dir = Path(tempfile.mkdtemp(prefix="dpx-ray-"))
        self._board = board
        self._pending: dict = {}
        self._last = 0.0
        self.files: dict[str, bytes] = {}

    def progress(self, **fields: Any) -> None:
        self._pending.update(jsonable(fields))
        now = time.monotonic()
        if now - self._last >= 0.25:
            self.flush()

    def flush(self, wait: bool = False) -> None:
        """Send what is pending to the board: fire and forget, or with ``wait`` until the board holds it (the
        unit's last flush: the dispatcher reads the board once more after the task returns, and a put still on its
        way then was lost, with it the LiRA shadows' task names on a busy machine)."""
        if self._pending and self._board is not None:
            ref = self._board.put.remote(self.job_id, self._pending)
            self._pending = {}
            if wait:
                # lazy: Ray is optional (requirements-ray.txt); only a Ray worker gets here
                import ray

                ray.get(ref, timeout=30)
        self._last = time.monotonic()

    executor = "ray"  # job functions may fan their own work out as nested tasks (:meth:`map_tasks`)

    def map_tasks(self, fn, items, *, shared=(), name: str = "unit", num_cpus: float = 1.0, on_done=None) -> list:
        """``[fn(*shared, *item) for item in items]``, each call a nested Ray task (``num_cpus`` each) named
        ``dpcore:<name>:<job id>:<i>``; ``shared`` goes to the object store once. Results in order. A cancel
        of this unit stops them too (``ray.cancel(..., recursive=True)``); a lost worker is retried by Ray."""
        # lazy: Ray is optional (requirements-ray.txt)
        import ray

        remote = ray.remote(fn)
        shared_refs = [ray.put(v) for v in shared]
        refs = [
            remote.options(num_cpus=num_cpus, name=f"dpcore:{name}:{self.job_id}:{i}").remote(*shared_refs, *item)
            for i, item in enumerate(items)
        ]
        pending, done = list(refs), 0
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=0.5)
            done += len(ready)
            if ready and on_done is not None:
                on_done(done, len(refs))
            self.flush()
        return ray.get(refs)

    def cancelled(self) -> bool:
        return False

    def check_cancelled(self) -> None:
        return None

    def save_bytes(self, name: str, data: bytes) -> Path:
        self.files[store.check_name(name)] = bytes(data)
        path = self.result_dir / name
        path.write_bytes(data)
        return path


def _run_unit(target: str, params: dict, job_id: str, board) -> dict:
    """Body of a Ray task: run the job function there; return its result, saved files and where it ran."""
    fn = registry.resolve(target)
    ctx = _RemoteContext(job_id, board)
    ctx.progress(executor="ray", ray_node=socket.gethostname(), ray_pid=os.getpid(), phase="started on ray")
    ctx.flush()
    out = fn(params, ctx)
    ctx.flush(wait=True)  # on the board before the task returns: the dispatcher's last read sees it
    return {"result": out, "files": ctx.files, "node": socket.gethostname(), "pid": os.getpid()}


_remote_fn = None
_board = None


class _Board:
    """Latest progress of the units a dispatcher relays, per job id (merged; taken by the dispatcher).
    One per dispatcher process, reused for every unit: an actor is a Ray worker process of its own, and one
    per unit would cost a process start (and could take an idle worker that already imported torch)."""

    def __init__(self):
        self.fields: dict = {}

    def put(self, job_id, fields):
        self.fields.setdefault(job_id, {}).update(fields)

    def take(self, job_id):
        return self.fields.pop(job_id, {})

    def drop(self, job_id):
        self.fields.pop(job_id, None)


def _ray_objects(ray, fresh_board: bool = False):
    """The remote task function and this dispatcher's progress board (created once; again if it was lost)."""
    global _remote_fn, _board
    if _remote_fn is None:
        _remote_fn = ray.remote(_run_unit)
    if _board is None or fresh_board:
        _board = ray.remote(num_cpus=0)(_Board).remote()
    return _remote_fn, _board


def _take_progress(ray, board, job_id: str) -> dict:
    try:
        return ray.get(board.take.remote(job_id), timeout=5)
    except ray.exceptions.RayActorError:  # the board's process was lost: a new one for the next units
        _ray_objects(ray, fresh_board=True)
        return {}
    except Exception:
        return {}


def ray_job(params: dict, ctx) -> dict:
    """Dispatch job (runs in a local worker): one unit as a Ray task, relayed into the job store."""
    spec = params["ray"]
    ray = connect(spec["address"])
    remote_fn, board = _ray_objects(ray)
    try:
        args_ref = ray.put(params["params"])  # inputs through the object store
        ref = remote_fn.options(
            num_cpus=spec.get("num_cpus", 1),
            num_gpus=spec.get("num_gpus", 0),
            max_retries=int(spec.get("max_retries", 2)),
            retry_exceptions=False,
            name=f"dpcore:{registry.target_name(params['target'])}:{ctx.job_id}",
        ).remote(params["target"], args_ref, ctx.job_id, board)
        ctx.progress(executor="ray", phase="queued on ray")
        while True:
            ready, _ = ray.wait([ref], timeout=0.25)
            fields = _take_progress(ray, board, ctx.job_id)
            if fields:
                ctx.progress(**fields)
            if ready:
                break
            if ctx.cancelled():
                ray.cancel(ref, force=True, recursive=True)
                raise Cancelled(f"job {ctx.job_id} was cancelled (its Ray task was stopped)")
        try:
            out = ray.get(ref, timeout=60)
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, Cancelled):
                raise Cancelled(str(cause)) from None
            if isinstance(cause, DPError):
                raise DPError(str(cause)) from None
            raise DPError(f"the unit failed on Ray: {_first_line(cause or exc)}") from None
        except (
            ray.exceptions.WorkerCrashedError,
            ray.exceptions.NodeDiedError,
            ray.exceptions.ObjectLostError,
            ray.exceptions.OutOfMemoryError,
        ) as exc:
            raise DPError(
                f"the Ray worker running this unit was lost after {spec.get('max_retries', 2)} "
                f"retries ({type(exc).__name__}); submit it again"
            ) from None
        except ray.exceptions.TaskCancelledError:
            raise Cancelled(f"job {ctx.job_id}: its Ray task was cancelled") from None
        except ray.exceptions.RayError as exc:
            raise DPError(f"the unit failed on Ray ({type(exc).__name__}): {_first_line(exc)}") from None
        for name, data in (out.get("files") or {}).items():
            ctx.save_bytes(name, data)
        result = out["result"]
        if isinstance(result, dict):
            result = {**result, "ran_on": {"executor": "ray", "node": out.get("node")}}
        return result
    finally:
        try:
            board.drop.remote(ctx.job_id)
        except Exception:
            pass
