"""`python -m dpcore budget status --data FILE.csv --analyst NAME` (history and remaining ε) and
`python -m dpcore budget reset --data FILE.csv --analyst NAME --admin WHO --confirm [--total B] [--reason TEXT]`."""

from __future__ import annotations

from .. import datasets, ledger, queries


def register(sub) -> None:
    p = sub.add_parser("budget", help="privacy budget of an analyst on a dataset: status or admin reset")
    p.add_argument("action", choices=["status", "reset"], help="status: history and remaining; reset: admin action")
    p.add_argument("--data", required=True, help="CSV file (the budget belongs to its content)")
    p.add_argument("--analyst", required=True, help="analyst name")
    p.add_argument("--admin", help="reset: who resets (recorded)")
    p.add_argument("--confirm", action="store_true", help="reset: confirm the reset")
    p.add_argument("--total", type=float, default=None, help="reset: new total ε (default: keep the total)")
    p.add_argument("--reason", default="", help="reset: why (recorded)")
    p.set_defaults(func=run)


def run(args) -> dict:
    key = queries.dataset_key(datasets.read_csv(args.data))
    if args.action == "reset":
        return ledger.reset(args.analyst, key, admin=args.admin, reason=args.reason, total=args.total,
                            confirm=args.confirm)
    out = ledger.status(args.analyst, key)
    for e in out["history"]:
        e.pop("canonical", None)
        if isinstance(e["answer"], dict):  # keep what was released, not internals
            a = e["answer"]
            e["answer"] = {k: a[k] for k in ("answer", "interval", "labels") if k in a}
    return out
