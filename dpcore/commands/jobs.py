"""`python -m dpcore jobs list | show ID | cancel ID | rename ID NAME | delete ID | workers` — the background job
store, as JSON.

The command line acts as the CLI owner (:mod:`dpcore.jobs.owners`): it sees and changes its own jobs (``train
--background``, ``sweep``) and sweeps. ``--admin`` acts on everyone's, after the admin check (the token in
``$DP_EXPLORER_ADMIN_TOKEN``). ``rename`` and ``delete`` take ``--sweep`` to act on a sweep instead of a job.
"""

from __future__ import annotations

from .. import limits
from ..jobs import owners, records, store, workers
from ..sweep import runs as sweep_runs
from . import _who
from ._args import int_arg


def _admin_flag(p) -> None:
    _who.add_admin_flag(p)


def _one_job(actions, name: str, what: str, func, *, sweep: bool = False):
    """An action on one job (or with ``--sweep``, one sweep) by id."""
    p = actions.add_parser(name, help=what)
    p.add_argument("id", help="job id (see `jobs list`)" + (", or a sweep id with --sweep" if sweep else ""))
    if sweep:
        p.add_argument("--sweep", action="store_true", help="ID is a sweep's")
    _admin_flag(p)
    p.set_defaults(func=func)
    return p


def register(sub) -> None:
    p = sub.add_parser("jobs", help="list, show, cancel, rename or delete background jobs")
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    actions.required = True

    ls = actions.add_parser("list", help="newest jobs first (yours, or everyone's with --admin)")
    ls.add_argument("--group", default=None, help="only jobs of this group (e.g. a sweep id)")
    ls.add_argument(
        "--limit",
        type=int_arg(1, limits.JOBS_LIST_MAX),
        default=50,
        help=f"at most this many jobs, 1 to {limits.JOBS_LIST_MAX:,} (default 50)",
    )
    _admin_flag(ls)
    ls.set_defaults(func=run_list)

    show = _one_job(actions, "show", "one job: status, progress, history, result", run_show)
    show.add_argument("--no-history", action="store_true", help="leave out the progress history")
    _one_job(actions, "cancel", "cancel a queued or running job", run_cancel)
    rename = _one_job(actions, "rename", "give a job (or with --sweep, a sweep) a new name", run_rename, sweep=True)
    rename.add_argument("name", help=f"the new name, at most {limits.JOB_NAME_MAX_CHARS} characters")
    _one_job(
        actions,
        "delete",
        "delete a finished job (or with --sweep, a sweep and its points) and its files",
        run_delete,
        sweep=True,
    )

    wk = actions.add_parser("workers", help="list live workers; --start N starts workers, --stop stops them")
    wk.add_argument(
        "--start",
        type=int_arg(0, limits.WORKERS_MAX),
        default=None,
        metavar="N",
        help=f"make sure N workers are running, 0 to {limits.WORKERS_MAX}",
    )
    wk.add_argument("--stop", action="store_true", help="ask all workers to exit after their current job")
    wk.set_defaults(func=run_workers)


def caller(args) -> owners.Caller:
    """The CLI owner, an admin after the admin check when ``--admin`` is given."""
    return _who.job_caller(args)


def _brief(job: records.JobRecord) -> dict:
    keys = ("id", "status", "target", "group", "label", "owner", "created", "started", "ended", "error", "progress")
    full = job.to_dict()
    return {k: full[k] for k in keys}


def run_list(args) -> dict:
    items = store.list_jobs(caller=caller(args), group=args.group, limit=args.limit)
    return {"count": len(items), "jobs": [_brief(j) for j in items]}


def run_show(args) -> dict:
    return store.get(args.id, caller=caller(args), history=not args.no_history).to_dict()


def run_cancel(args) -> dict:
    job = store.cancel(args.id, caller=caller(args))
    return {"id": job.id, "status": str(job.status), "cancel_requested": job.cancel_requested}


def run_rename(args) -> dict:
    if args.sweep:
        rec = sweep_runs.rename(args.id, args.name, caller=caller(args))
        return {"sweep": rec["id"], "name": rec["name"]}
    job = store.rename(args.id, args.name, caller=caller(args))
    return {"id": job.id, "name": job.label}


def run_delete(args) -> dict:
    if args.sweep:
        sweep_runs.delete(args.id, caller=caller(args))
        return {"sweep": args.id, "deleted": True}
    store.delete(args.id, caller=caller(args))
    return {"id": args.id, "deleted": True}


def run_workers(args) -> dict:
    out: dict = {}
    if args.stop:
        out["asked_to_stop"] = workers.shutdown_workers()
    if args.start is not None:
        out["started"] = workers.ensure_workers(args.start)
    out["workers"] = workers.list_workers()
    return out
