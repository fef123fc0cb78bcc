"""`python -m dpcore report --out FILE.html [--sweep ID] [--job ID ...] [--ledger ANALYST DATASET ...] [--epsilon E]`:
a self-contained HTML report, with a privacy statement for the sweep, each training run and each query history."""

from __future__ import annotations


from .. import limits, report
from ..cli import int_arg, seed_arg
from ..errors import DPError
from ..storage import check_user_path, write_user_file


def register(sub) -> None:
    p = sub.add_parser("report", help="write a self-contained HTML report (opens offline)")
    p.add_argument("--out", required=True, help="output .html path")
    p.add_argument("--epsilon", type=float, default=1.0, help="the ε the report explains (default 1)")
    p.add_argument("--sweep", default=None, help="include a stored privacy–utility sweep by id")
    p.add_argument("--job", action="append", default=[], metavar="ID",
                   help="add the privacy statement of a finished training run (repeatable)")
    p.add_argument("--ledger", action="append", nargs=2, default=[], metavar=("ANALYST", "DATASET"),
                   help="add the privacy statement of an analyst's query history on a dataset key (repeatable)")
    p.add_argument("--n", type=int_arg(limits.REID_MIN_ROWS, limits.REID_MAX_ROWS), default=10_000,
                   help=f"rows of synthetic medical data, {limits.REID_MIN_ROWS:,} to {limits.REID_MAX_ROWS:,} "
                        "(default 10000)")
    p.add_argument("--seed", type=seed_arg, default=0, help=f"data seed, 0 to {limits.SEED_MAX} (default 0)")
    p.set_defaults(func=run)


def run(args) -> dict:
    if args.sweep is not None and not args.sweep.strip():
        raise DPError("--sweep needs a sweep id (see `python -m dpcore jobs list --group ...`); "
                      "leave out --sweep for a report without one")
    check_user_path(args.out)  # before the work: empty, a folder, a missing folder, a device
    from ..jobs.owners import CLI

    html = report.build(args.epsilon, sweep_id=args.sweep, n=args.n, seed=args.seed, job_ids=args.job,
                        ledgers=[tuple(x) for x in args.ledger], caller=CLI)
    write_user_file(args.out, html.encode())
    return {"out": args.out, "bytes": len(html.encode()), "epsilon": args.epsilon, "sweep": args.sweep,
            "jobs": args.job, "ledgers": len(args.ledger)}
