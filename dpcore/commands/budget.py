"""Datasets' caps and quotas.

`python -m dpcore budget register --data FILE --name NAME --epsilon E [--delta D] [--max-query-epsilon Q]
[--allow-similar] [--public-n]` (admin: copy the data into the home and set its cap; ``--public-n``: the owner
declares the number of rows public), `budget cap --dataset NAME [--epsilon E] [--delta D] [--max-query-epsilon Q]
[--public-n] --reason TEXT` (admin: change the cap, recorded), `budget reset --dataset NAME --analyst NAME --confirm
--reason TEXT [--total E] [--delta-total D]` (admin: give a quota back; the dataset's released total stays),
`budget status --dataset NAME [--analyst NAME]` (the cap, what everyone together spent on every kind of release —
answers, training runs, sweeps, synthetic tables — and what is left, and your quota and history; read-only) and
`budget list` (the datasets you may query). Only the admin reads a dataset's exact number of rows, unless its owner
declared it public.
Admin actions need $DP_EXPLORER_ADMIN_TOKEN (checked against the hash stored by `admin init`); an analyst reads
their own quota with --analyst NAME and $DP_EXPLORER_ANALYST_KEY.
"""

from __future__ import annotations

from ..budgets import quotas, registry
from ..data import datasets
from ..errors import DPError
from ..queries import fingerprint, views
from . import _who


def register(sub) -> None:
    p = sub.add_parser("budget", help="datasets' caps and quotas: status, list, or admin register / cap / reset")
    p.add_argument(
        "action",
        choices=["status", "list", "register", "cap", "reset"],
        help="status: a dataset's cap, what is left and your quota and history; list: the datasets you "
        "may query; register (admin): copy data into the home with a cap; cap (admin): change a "
        "cap, with a reason; reset (admin): give an analyst their quota back",
    )
    p.add_argument("--dataset", help="a registered dataset's name (status, cap, reset)")
    p.add_argument("--data", help="register: the CSV file; status: a CSV that resolves to a registered dataset")
    p.add_argument("--name", help="register: the dataset's name")
    p.add_argument("--epsilon", type=float, default=None, help="register: the dataset's ε cap; cap: a new ε cap")
    p.add_argument(
        "--delta", type=float, default=None, help="register, cap: the dataset's δ cap (default 1/(10·n); below 1/n)"
    )
    p.add_argument(
        "--max-query-epsilon",
        type=float,
        default=None,
        help="register, cap: the most ε one answer may spend on this dataset",
    )
    p.add_argument(
        "--allow-similar",
        action="store_true",
        help="register: confirm that data holding the same people as a registered dataset is different",
    )
    p.add_argument(
        "--analyst",
        help="status: whose quota (yours, with $DP_EXPLORER_ANALYST_KEY; an admin: anyone's); reset: whose quota",
    )
    p.add_argument(
        "--public-n",
        action="store_true",
        help="register, cap: the owner declares the number of rows public (analysts read it; DP training may run "
        "on the data); otherwise only the admin sees it",
    )
    p.add_argument("--confirm", action="store_true", help="reset: confirm the reset")
    p.add_argument("--total", type=float, default=None, help="reset: a new quota ε (default: keep it)")
    p.add_argument("--delta-total", type=float, default=None, help="reset: a new quota δ (below 1/n)")
    p.add_argument("--reason", default="", help="cap, reset: why (recorded in the history)")
    p.set_defaults(func=run)


def _dataset(args) -> str:
    if args.dataset and args.data:
        raise DPError("give --dataset NAME or --data FILE, not both")
    if args.dataset:
        return args.dataset
    if args.data:  # the owner's own file: only as a way to name the registered dataset it is
        return fingerprint.dataset_key(datasets.read_csv(args.data))
    raise DPError(f"budget {args.action} needs --dataset NAME (`python -m dpcore budget list` shows them)")


def run(args) -> dict | list:
    if args.action == "register":
        who = _who.admin()  # before reading the data: refused without the admin token
        if not args.data or not args.name or args.epsilon is None:
            raise DPError("budget register needs --data FILE, --name NAME and --epsilon E (the dataset's cap)")
        return registry.register(
            who,
            args.name,
            datasets.read_csv(args.data),
            epsilon=args.epsilon,
            delta=args.delta,
            max_query_epsilon=args.max_query_epsilon,
            allow_similar=args.allow_similar,
            public_n=args.public_n,
        )
    if args.action == "cap":
        return registry.set_cap(
            _who.admin(),
            _dataset(args),
            epsilon=args.epsilon,
            delta=args.delta,
            max_query_epsilon=args.max_query_epsilon,
            public_n=True if args.public_n else None,
            reason=args.reason,
        )
    if args.action == "reset":
        who = _who.admin()
        if not (args.analyst or "").strip():
            raise DPError("budget reset needs --analyst NAME (whose quota)")
        return quotas.reset(
            who,
            args.analyst,
            _dataset(args),
            reason=args.reason,
            total=args.total,
            delta_total=args.delta_total,
            confirm=args.confirm,
        )
    if args.action == "list":
        return registry.listing(_who.reader(args.analyst))  # n_rows: the admin's, or public
    out = quotas.status(_who.reader(args.analyst), _dataset(args), analyst=args.analyst)
    out["history"] = [views.history_entry(e) for e in out["history"]]
    return out
