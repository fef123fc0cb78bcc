"""`python -m dpcore remote ACTION --url URL [--analyst NAME] ...`: the analyst's commands, through the HTTP API.

ACTION is ``datasets``, ``status``, ``query``, ``history``, ``statement``, ``public-key`` or ``me`` — what the API
offers (:mod:`dpcore.api.app`). The key comes from $DP_EXPLORER_ANALYST_KEY (never an argument); the URL from
``--url`` or $DP_EXPLORER_API_URL. This command never reads the home: it runs on the analyst's own machine, with
no data and no keys of the server's. ``query`` takes the options of the local ``query`` command (``--count`` /
``--sum`` / ``--mean`` / ``--histogram``, ``--bounds``, ``--where``, ``--mechanism``, ``--delta`` …); its exit code
is 3 when the dataset's cap or the quota would be exceeded (nothing spent), 2 for any other refusal.
"""

from __future__ import annotations

import os

from ..api.client import KEY_ENV, URL_ENV, Client
from ..errors import DPError

ACTIONS = ("datasets", "status", "query", "history", "statement", "public-key", "me")


def register(sub) -> None:
    p = sub.add_parser("remote", help="an analyst's commands through the HTTP API (never reads the server's files)")
    p.add_argument("action", choices=ACTIONS, help="what to do, as the API offers it")
    p.add_argument("--url", default=None, help=f"the API's address, e.g. http://127.0.0.1:8502 (or ${URL_ENV})")
    p.add_argument("--analyst", default=None, help=f"your analyst name (the key is read from ${KEY_ENV})")
    p.add_argument("--dataset", help="a dataset's name (status, query, history, statement)")
    p.add_argument("--latest", type=int, default=None, help="history: only the latest N events")
    p.add_argument("--insecure", action="store_true", help="send the key over plain http to another machine")
    p.add_argument("--epsilon", type=float, default=None, help="query: ε this answer spends, e.g. 0.1")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--count", metavar="COL=VALUE", help="query: count rows where COL=VALUE ('*' for all rows)")
    what.add_argument("--sum", metavar="COL", help="query: sum of COL clamped to --bounds")
    what.add_argument("--mean", metavar="COL", help="query: mean of COL clamped to --bounds")
    what.add_argument("--histogram", metavar="COL", help="query: noisy count per category (or bin with --bounds)")
    p.add_argument("--bounds", metavar="LO:HI", help="query: public bounds (write --bounds=-10:10 when LO < 0)")
    p.add_argument("--bins", type=int, default=10, help="query: bins of a numeric histogram (default 10)")
    p.add_argument("--categories", metavar="A,B,...", help="query: public categories of a histogram column")
    p.add_argument("--where", action="append", default=[], metavar="COL=VALUE", help="query: filter rows first")
    p.add_argument("--mechanism", choices=["laplace", "gaussian"], default="laplace", help="query: the noise")
    p.add_argument("--delta", type=float, default=None, help="query: δ of the Gaussian mechanism (below 1/n)")
    p.set_defaults(func=run)


def _dataset(args) -> str:
    if not (args.dataset or "").strip():
        raise DPError(f"remote {args.action} needs --dataset NAME (`remote datasets` lists those you may query)")
    return args.dataset


def run(args):
    client = Client(
        args.url if args.url is not None else os.environ.get(URL_ENV, ""), args.analyst, insecure=args.insecure
    )
    if args.action == "public-key":
        return client.public_key()
    if args.action == "me":
        return client.me()
    if args.action == "datasets":
        return client.datasets()
    if args.action == "status":
        return client.status(_dataset(args))
    if args.action == "history":
        return client.history(_dataset(args), args.latest)
    if args.action == "statement":
        return client.statement(_dataset(args))
    if args.epsilon is None:
        raise DPError("remote query needs --epsilon E (the ε this answer spends, e.g. 0.1)")
    if args.count is not None:
        kind, extra = "count", {"condition": args.count}
    else:
        found = [(k, getattr(args, k)) for k in ("sum", "mean", "histogram") if getattr(args, k) is not None]
        if not found:
            raise DPError("remote query needs what to ask: --count COL=VALUE, --sum COL, --mean COL or --histogram COL")
        kind, column = found[0]
        extra = {"column": column}
    return client.query(
        _dataset(args),
        kind,
        args.epsilon,
        bounds=args.bounds,
        where=args.where,
        mechanism=args.mechanism,
        delta=args.delta,
        bins=args.bins,
        categories=args.categories,
        **extra,
    )
