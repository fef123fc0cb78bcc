"""`python -m dpcore jobs list | show ID | cancel ID | workers` — the background job store, as JSON."""

from __future__ import annotations

from .. import limits
from ..cli import int_arg
from ..jobs import records, store, workers


def register(sub) -> None:
    p = sub.add_parser("jobs", help="list, show or cancel background jobs")
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    actions.required = True

    ls = actions.add_parser("list", help="newest jobs first")
    ls.add_argument("--group", default=None, help="only jobs of this group (e.g. a sweep id)")
    ls.add_argument("--limit", type=int_arg(1, limits.JOBS_LIST_MAX), default=50,
                    help=f"at most this many jobs, 1 to {limits.JOBS_LIST_MAX:,} (default 50)")
    ls.set_defaults(func=run_list)

    show = actions.add_parser("show", help="one job: status, progress, history, result")
    show.add_argument("id", help="job id (see `jobs list`)")
    show.add_argument("--no-history", action="store_true", help="leave out the progress history")
    show.set_defaults(func=run_show)

    cancel = actions.add_parser("cancel", help="cancel a queued or running job")
    cancel.add_argument("id", help="job id (see `jobs list`)")
    cancel.set_defaults(func=run_cancel)

    wk = actions.add_parser("workers", help="list live workers; --start N starts workers, --stop stops them")
    wk.add_argument("--start", type=int_arg(0, limits.WORKERS_MAX), default=None, metavar="N",
                    help=f"make sure N workers are running, 0 to {limits.WORKERS_MAX}")
    wk.add_argument("--stop", action="store_true", help="ask all workers to exit after their current job")
    wk.set_defaults(func=run_workers)


def _brief(job: records.JobRecord) -> dict:
    keys = ("id", "status", "target", "group", "label", "created", "started", "ended", "error", "progress")
    full = job.to_dict()
    return {k: full[k] for k in keys}


def run_list(args) -> dict:
    items = store.list_jobs(group=args.group, limit=args.limit)
    return {"count": len(items), "jobs": [_brief(j) for j in items]}


def run_show(args) -> dict:
    return store.get(args.id, history=not args.no_history).to_dict()


def run_cancel(args) -> dict:
    job = store.cancel(args.id)
    return {"id": job.id, "status": str(job.status), "cancel_requested": job.cancel_requested}


def run_workers(args) -> dict:
    out: dict = {}
    if args.stop:
        out["asked_to_stop"] = workers.shutdown_workers()
    if args.start is not None:
        out["started"] = workers.ensure_workers(args.start)
    out["workers"] = workers.list_workers()
    return out
