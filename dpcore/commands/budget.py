"""Privacy budgets of the query console.

`python -m dpcore budget status --data FILE.csv --analyst NAME` (remaining ε and δ, history; read-only),
`python -m dpcore budget register --data FILE.csv --name NAME [--allow-similar]` (admin: give the data a budget),
`python -m dpcore budget reset --data FILE.csv --analyst NAME --admin WHO --confirm [--total B] [--delta-total D]
[--reason TEXT]` (admin). Admin actions need the server's token: $DP_EXPLORER_ADMIN_TOKEN, or --admin-token.
"""

from __future__ import annotations

import os

from ..data import datasets
from ..queries import fingerprint, ledger
from ..errors import DPError


def register(sub) -> None:
    p = sub.add_parser("budget", help="privacy budgets: status, or admin register / reset")
    p.add_argument("action", choices=["status", "register", "reset"],
                   help="status: remaining ε and δ and history; register: admin, give a dataset budgets; "
                        "reset: admin, give an analyst their budget back (or change its totals)")
    p.add_argument("--data", required=True, help="CSV file (the budget belongs to its content)")
    p.add_argument("--analyst", help="analyst name (status, reset)")
    p.add_argument("--name", help="register: the dataset's name")
    p.add_argument("--allow-similar", action="store_true",
                   help="register: confirm that data nearly equal to a registered dataset is different data")
    p.add_argument("--admin-token", default=None,
                   help=f"admin token (default: ${ledger.ADMIN_ENV}); register and reset need it")
    p.add_argument("--admin", help="reset: who resets (recorded)")
    p.add_argument("--confirm", action="store_true", help="reset: confirm the reset")
    p.add_argument("--total", type=float, default=None, help="reset: new total ε (default: keep the total)")
    p.add_argument("--delta-total", type=float, default=None, help="reset: new total δ (at most 1/n)")
    p.add_argument("--reason", default="", help="reset: why (recorded)")
    p.set_defaults(func=run)


def run(args) -> dict:
    if args.action != "register" and not (args.analyst or "").strip():
        raise DPError(f"budget {args.action} needs --analyst NAME")
    token = args.admin_token if args.admin_token is not None else os.environ.get(ledger.ADMIN_ENV, "")
    if args.action in ("register", "reset"):
        ledger.check_admin_token(token)  # before reading the data: refused without the token
    df = datasets.read_csv(args.data)
    if args.action == "register":
        return ledger.register_dataset(args.name, fingerprint.dataset_identity(df), token=token,
                                       allow_similar=args.allow_similar)
    key = fingerprint.dataset_key(df)
    if args.action == "reset":
        return ledger.reset(args.analyst, key, admin=args.admin, token=token, reason=args.reason, total=args.total,
                            delta_total=args.delta_total, confirm=args.confirm)
    out = ledger.status(args.analyst, key)
    for e in out["history"]:
        e.pop("canonical", None)
        if isinstance(e["answer"], dict):  # keep what was released, not internals
            a = e["answer"]
            e["answer"] = {k: a[k] for k in ("answer", "interval", "labels") if k in a}
    return out
