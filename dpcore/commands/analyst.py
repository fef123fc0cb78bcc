"""Analysts and their quotas (admin; the admin token in $DP_EXPLORER_ADMIN_TOKEN).

`python -m dpcore analyst add NAME --dataset DATASET --epsilon E [--delta D] [--oidc]` grants NAME a quota inside
the dataset's cap and, for a new analyst, prints a key once (JSON field ``key``; only its salted hash is kept).
With ``--oidc`` NAME is the identity provider's verified e-mail (or ``sub:SUBJECT``) and there is no key.
`analyst key NAME` issues a new key (the old one stops working); `analyst list [--dataset D]`;
`analyst revoke NAME [--dataset D]` (no more sign-in, or no more answers on D; history kept).
"""

from __future__ import annotations

from ..budgets import identities, quotas, registry
from ..errors import DPError
from . import _who


def register(sub) -> None:
    p = sub.add_parser("analyst", help="admin: analysts, their keys and quotas (add, key, list, revoke)")
    p.add_argument(
        "action",
        choices=["add", "key", "list", "revoke"],
        help="add: a quota on a dataset (and a key, printed once, for a new analyst); key: a new key; "
        "list: analysts and quotas; revoke: no more sign-in (or, with --dataset, no more answers "
        "there)",
    )
    p.add_argument("name", nargs="?", help="the analyst's name (add, key, revoke)")
    p.add_argument("--dataset", help="a registered dataset's name (add: required; list, revoke: optional)")
    p.add_argument("--epsilon", type=float, default=None, help="add: the quota's ε (inside the dataset's cap)")
    p.add_argument("--delta", type=float, default=None, help="add: the quota's δ (default 1/(10·n), below 1/n)")
    p.add_argument(
        "--oidc",
        action="store_true",
        help="add: NAME signs in through the identity provider (verified e-mail or sub:SUBJECT), no key",
    )
    p.set_defaults(func=run)


def run(args) -> dict | list:
    if args.action != "list" and not (args.name or "").strip():
        raise DPError(f"analyst {args.action} needs the analyst's NAME, e.g. analyst {args.action} ann")
    who = _who.admin()
    if args.action == "add":
        if not args.dataset or args.epsilon is None:
            raise DPError("analyst add needs --dataset NAME and --epsilon E (the quota inside the dataset's cap)")
        return quotas.grant(who, args.name, args.dataset, epsilon=args.epsilon, delta=args.delta, oidc=args.oidc)
    if args.action == "key":
        return identities.issue_key(who, args.name)
    if args.action == "revoke":
        if args.dataset:
            return quotas.close(who, args.name, args.dataset)
        return identities.revoke(who, args.name)
    fp = None
    if args.dataset:
        d = registry.info(args.dataset)
        if d is None:
            raise registry.not_registered(args.dataset)
        fp = d["fingerprint"]
    return identities.analysts(who, dataset=fp)
