"""Job targets: the registered names a job row stores, and the one place they are turned into functions.

A job names its function by a registered name (``"train"``, ``"sweep.point"``, ``"ray"``, ``"demo.echo"``),
never by where the function lives, so a module can move without breaking queued or finished rows.
:func:`resolve` imports the function when a worker runs the job (nothing is imported at registration).

A target may say how often a job of it is **run again** when its worker dies or goes silent while it runs
(:func:`retries`; ``register(..., retries=1)``): a sweep point is run once more before its sweep counts it failed.
Only work that releases nothing until it ends may be retried: a job's results become visible only with its
``done`` (see :mod:`dpcore.jobs.runner`), so a run that was given up left nothing behind.

A target may also have a **sharing rule** (:func:`share_when`, :func:`shared`): a predicate on a job's
parameters that says the job is a shared demo (everyone may read it; see :mod:`dpcore.jobs.owners`). The store
asks it when a job is submitted. Like targets, a rule is named by path and imported only when asked.

Rows written before the names existed, or before a module moved, hold a ``"dpcore.module:function"`` path.
:data:`MOVED` maps each such old path to its name — the only place old paths are translated. Any other
``"dpcore.module:function"`` path inside dpcore still runs as it is (tests and notebooks use that).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable

from ..errors import DPError, JobError

_PATH_RE = re.compile(r"^dpcore(\.[A-Za-z_][A-Za-z0-9_]*)+:[A-Za-z_][A-Za-z0-9_]*$")
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")

_TARGETS: dict[str, str] = {}  # registered name -> "dpcore.module:function" (where it lives now)
_BY_PATH: dict[str, str] = {}  # "dpcore.module:function" -> registered name
_SHARED: dict[str, str] = {}  # registered name -> "dpcore.module:predicate" (its sharing rule)
_RETRIES: dict[str, int] = {}  # registered name -> runs again after a dead or silent worker (default 0)
_GROUPS: dict[str, str | None] = {}  # group kind -> "dpcore.module:function" told when one of its members ends


def register(name: str, path: str, *, retries: int = 0) -> str:
    """Name a job function: ``register("train", "dpcore.training.job:run_job")``; returns the name.

    ``retries``: how many more times a job of it runs when its worker dies or goes silent (0: it fails).
    Nothing is imported here (the worker imports the function when it runs a job). Registering the
    same pair twice is harmless; a name or function registered twice differently is a JobError.
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise JobError(f"job target name must be lower-case words joined by dots (e.g. 'sweep.point'), got {name!r}")
    if not isinstance(path, str) or not _PATH_RE.match(path):
        raise JobError(f"job target must look like 'dpcore.module:function' (inside dpcore), got {path!r}")
    if _TARGETS.get(name, path) != path or _BY_PATH.get(path, name) != name:
        raise JobError(f"job target {name!r} or {path!r} is already registered differently")
    _TARGETS[name] = path
    _BY_PATH[path] = name
    if retries:
        _RETRIES[name] = int(retries)
    return name


def register_group(name: str, on_member_end: str | None = None) -> str:
    """Name a kind of **group**: a row of the store that no worker runs, whose jobs (its members, ``parent`` = its
    id) do the work — a sweep and its points. ``on_member_end`` names ``fn(end)`` (a
    :class:`dpcore.jobs.hooks.JobEnd` whose ``parent`` is the group), called after each member's end is committed,
    so the group's own row can follow its members."""
    if not isinstance(name, str) or not _NAME_RE.match(name) or name in _TARGETS:
        raise JobError(f"a group kind must be a new lower-case name, got {name!r}")
    if on_member_end is not None and not _PATH_RE.match(on_member_end):
        raise JobError(f"a group's hook must look like 'dpcore.module:function' (inside dpcore), got {on_member_end!r}")
    _GROUPS[name] = on_member_end
    return name


def is_group(target: str | None) -> bool:
    """Whether ``target`` is a kind of group (:func:`register_group`), not something a worker runs."""
    return target in _GROUPS


def groups() -> tuple[str, ...]:
    return tuple(_GROUPS)


def member_hook(kind: str | None) -> str | None:
    """The path told when a member of a group of ``kind`` ends (None: no hook)."""
    return _GROUPS.get(kind) if kind else None


def retries(target: str, params: dict | None = None) -> int:
    """How many more runs a job of ``target`` gets after its worker died or went silent. A Ray dispatch job
    (:data:`RAY`) follows the unit it dispatches."""
    name = target_name(target)
    if name == RAY and isinstance(params, dict) and isinstance(params.get("target"), str):
        try:
            name = target_name(params["target"])
        except JobError:
            return 0
    return _RETRIES.get(name, 0)


TRAIN = register("train", "dpcore.training.job:run_job")
#: The job group every training run is filed under (the training page's run list, the Home report's picker, the CLI).
TRAIN_GROUP = "train"
SWEEP_POINT = register("sweep.point", "dpcore.sweep.point:run_point", retries=1)  # a lost point runs once more
RAY = register("ray", "dpcore.jobs.executors:ray_job")
SYNTH_STUDY = register("synth.study", "dpcore.synth.study:run_job")
SYNTH_GROUP = "synth"  # the group of DP synthetic-data studies (the re-identification page, its CLI, the report)
SYNTH_RELEASE = register("synth.release", "dpcore.synth.job:run_release")
SYNTH_RELEASE_GROUP = "synth-release"  # one synthetic release of an upload (the re-identification page)
#: A privacy–utility sweep: a group whose members are its points; its row follows them (dpcore.sweep.runs).
SWEEP = register_group("sweep", "dpcore.sweep.runs:member_ended")
DEMOS = ("sleep", "fail", "ignore_cancel", "echo", "not_a_dict")  # for tests and benchmarks
for _fn in DEMOS:
    register(f"demo.{_fn}", f"dpcore.jobs.demo_jobs:{_fn}")
del _fn
#: demo.sleep that runs once more when its worker is lost (tests of the retry, like a sweep point's)
DEMO_RETRIED = register("demo.again", "dpcore.jobs.demo_jobs:again", retries=1)


def share_when(name: str, path: str) -> None:
    """Give the registered target ``name`` a sharing rule: ``path`` names ``predicate(params) -> bool``; a job of
    that target whose parameters meet it is a shared demo (readable by everyone, changed only by its owner or an
    admin; one at a time while queued or running)."""
    if name not in _TARGETS:
        raise JobError(f"job target {name!r} is not registered")
    if not isinstance(path, str) or not _PATH_RE.match(path):
        raise JobError(f"a sharing rule must look like 'dpcore.module:function' (inside dpcore), got {path!r}")
    _SHARED[name] = path


def shared(target: str, params: dict) -> bool:
    """Whether a job of ``target`` with ``params`` is a shared demo (its target's sharing rule says so; a target
    without one: never). A rule that cannot judge the parameters (a DPError) says no."""
    path = _SHARED.get(target_name(target))
    if path is None:
        return False
    fn = import_path(path, target)
    try:
        return bool(fn(params))
    except DPError:
        return False


#: The default synthetic-data study of the re-identification page (its default settings, the story's patients):
#: one finished run is everyone's to read (the page shows it at once), and only one runs at a time.
share_when(SYNTH_STUDY, "dpcore.synth.study:is_default")

# Old "dpcore.module:function" paths that stored rows may hold -> the registered name that runs them now.
MOVED: dict[str, str] = {
    "dpcore.executors:ray_job": RAY,  # dpcore/executors.py moved into dpcore/jobs/
    "dpcore.training:run_job": TRAIN,  # dpcore/training.py became the dpcore/training/ package
    "dpcore.sweep:run_point": SWEEP_POINT,  # dpcore/sweep.py became the dpcore/sweep/ package
    **{f"dpcore.demo_jobs:{fn}": f"demo.{fn}" for fn in DEMOS},  # dpcore/demo_jobs.py moved into dpcore/jobs/
}


#: What a job of each target is, in the words a message uses ("job X is a training run, not …").
KINDS: dict[str, str] = {
    TRAIN: "a training run",
    SWEEP_POINT: "one model of a privacy–utility sweep",
    RAY: "a job run on Ray",
    SYNTH_STUDY: "a DP synthetic-data study",
    SYNTH_RELEASE: "a DP synthetic release of an upload",
}


def check_kind(job, *targets: str) -> None:
    """A JobError unless ``job`` (a store record) is of one of ``targets``: an id of another kind (a training run's
    given as a study's) fails here, before the slow work it was given for, never as a KeyError after it."""
    try:
        name = target_name(job["target"])
        params = job.get("params") if isinstance(job.get("params"), dict) else {}
        if name == RAY and "target" in params:  # a unit run on Ray is of the kind it runs
            name = target_name(params["target"])
    except JobError:
        name = str(job["target"])
    names = [target_name(t) for t in targets]
    if name not in names:
        wanted = " or ".join(KINDS.get(t, t) for t in names)
        raise JobError(f"job {job['id']} is {KINDS.get(name, f'a {name} job')}, not {wanted}; check the id")


def targets() -> dict[str, str]:
    """Registered job targets: name -> ``"dpcore.module:function"``."""
    return dict(_TARGETS)


def target_name(target: str) -> str:
    """The registered name for ``target``: a name, the ``"dpcore.module:function"`` path of a registered
    function, or an old path listed in :data:`MOVED`. An unregistered path inside dpcore is returned
    unchanged; anything else is a JobError."""
    if isinstance(target, str):
        if target in _TARGETS or target in _GROUPS:
            return target
        if target in _BY_PATH:
            return _BY_PATH[target]
        if target in MOVED:
            return MOVED[target]
        if _PATH_RE.match(target):
            return target
    raise JobError(
        f"unknown job target {target!r}; registered: {', '.join(sorted(_TARGETS))} "
        "(or 'dpcore.module:function' inside dpcore)"
    )


def resolve(target: str) -> Callable[[dict, object], dict]:
    """The job function ``fn(params, ctx) -> dict`` for ``target`` (see :func:`target_name`), imported here."""
    name = target_name(target)
    if name in _GROUPS:
        raise JobError(f"{name!r} is a group of jobs (its members do the work), not something a worker runs")
    return import_path(_TARGETS.get(name, name), target)


def import_path(path: str, target: str):
    """The function a ``"dpcore.module:function"`` path names, imported now (a JobError that names ``target``)."""
    module_name, func_name = path.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise JobError(f"job target {target!r}: cannot import {module_name} ({exc})") from None
    fn = getattr(module, func_name, None)
    if not callable(fn):
        raise JobError(f"job target {target!r}: {module_name} has no function {func_name!r}")
    return fn
