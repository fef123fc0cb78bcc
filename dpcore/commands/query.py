"""`python -m dpcore query --dataset NAME [--analyst NAME] --epsilon E (--count COL=VALUE | --sum COL --bounds LO:HI |
--mean COL --bounds LO:HI | --histogram COL) [--where COL=VALUE ...]`

One private answer on a registered dataset (kept on the server: analysts never need the file), charged to the
dataset's cap and the asker's quota (ε and δ, under one neighbour relation: add or remove one record), drawn
through :mod:`dpcore.noise.release` (OpenDP's exact whole-number noise; a SUM or MEAN states its grid and rounding
in ``grid``). Bounds a release cannot represent are refused before anything is spent. The analyst's key comes from
$DP_EXPLORER_ANALYST_KEY (never an argument); without --analyst you ask as a visitor, from the visitors' shared
quota of the built-in synthetic data. ``--data FILE`` names a registered dataset by its content (the owner's own
file). Exit code 3 when the per-query cap, the dataset's cap or the quota would be exceeded (nothing spent, no
noise drawn); 2 for bad input.

This command reads the home (the registered data is in it): it is the operator's. An analyst asks from their own
machine through the HTTP API, ``python -m dpcore remote query ... --url URL`` (:mod:`dpcore.api`).
"""

from __future__ import annotations

from ..budgets import quotas, registry, visitors
from ..data import datasets
from ..errors import DPError
from ..noise import mechanisms
from ..queries import answering, fingerprint, model, views
from . import _who


def register(sub) -> None:
    p = sub.add_parser("query", help="ask one private question against a persistent privacy budget")
    p.add_argument("--dataset", help="a registered dataset's name (`python -m dpcore budget list`)")
    p.add_argument("--data", help="a CSV file that is a registered dataset (the data owner's own copy)")
    p.add_argument(
        "--analyst",
        default=None,
        help="who asks (with $DP_EXPLORER_ANALYST_KEY); leave out to ask as a visitor (built-in data)",
    )
    p.add_argument("--epsilon", required=True, type=float, help="ε this query spends, e.g. 0.1")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--count", metavar="COL=VALUE", help="count rows where COL=VALUE ('*' for all rows; also !=, <, <=, >, >=)"
    )
    what.add_argument("--sum", metavar="COL", help="sum of COL clamped to --bounds")
    what.add_argument("--mean", metavar="COL", help="mean of COL clamped to --bounds")
    what.add_argument("--histogram", metavar="COL", help="noisy count per category (or per bin with --bounds)")
    p.add_argument(
        "--bounds",
        metavar="LO:HI",
        help="public bounds (SUM, MEAN; numeric HISTOGRAM); write --bounds=-10:10 when LO is negative",
    )
    p.add_argument("--bins", type=int, default=10, help="bins of a numeric histogram (default 10)")
    p.add_argument("--categories", metavar="A,B,...", help="public categories of a histogram column")
    p.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="COL=VALUE",
        help="filter rows first (repeatable, all must hold; also !=, <, <=, >, >=)",
    )
    p.add_argument(
        "--mechanism",
        choices=list(mechanisms.QUERY_MECHANISMS),
        default="laplace",
        help="laplace (counts: geometric) or gaussian (analytic, needs --delta)",
    )
    p.add_argument(
        "--delta",
        type=float,
        default=None,
        help="δ for the Gaussian mechanism, charged to the δ budget; below 1/n, e.g. 1e-7",
    )
    p.add_argument(
        "--public-n",
        action="store_true",
        help="MEAN with a public row count: a replace-one mechanism, refused by the ledger",
    )
    p.add_argument(
        "--seed", type=int, default=None, help="refused: answers charged to a budget always use a secure random source"
    )
    p.set_defaults(func=run)


def run(args) -> dict:
    if args.seed is not None:
        raise DPError(
            "--seed cannot be used with the budget ledger: anyone with the seed could replay the noise and "
            "recover the exact answer; drop --seed (charged answers use a secure random source); nothing "
            "was spent"
        )
    delta = args.delta
    if not mechanisms.mechanism_class(args.mechanism).pure and delta is None:
        raise DPError(
            "the Gaussian mechanism needs --delta (charged to the δ budget, below 1/n), e.g. --delta 1e-7; "
            "or use --mechanism laplace (δ = 0)"
        )
    if bool(args.dataset) == bool(args.data):
        raise DPError(
            "name the data with --dataset NAME (`python -m dpcore budget list` shows the datasets you may "
            "query), or --data FILE for a registered file of your own — one of them"
        )
    who = _who.asker(args.analyst)
    if args.data:
        df = datasets.read_csv(args.data)
        key = fingerprint.dataset_key(df)
        try:  # refused as the file was named: the one message for "no such dataset" and "not yours"
            quotas.status(who, key, with_history=False)
        except registry.Unavailable:
            raise registry.unavailable(args.data) from None
    else:
        info = visitors.resolve(args.dataset)
        key = info["fingerprint"]
        quotas.status(who, args.dataset, with_history=False)  # no quota here: refused (as named) before any read
        df = registry.load(info)
    if args.count is not None:
        q = model.make_query(
            "count",
            epsilon=args.epsilon,
            condition=args.count,
            where=args.where,
            mechanism=args.mechanism,
            delta=delta or 0.0,
        )
    else:
        kind, column = next((k, getattr(args, k)) for k in ("sum", "mean", "histogram") if getattr(args, k) is not None)
        if not column.strip():
            raise DPError(
                f"--{kind} needs a column name, e.g. --{kind} age; columns: {', '.join(map(str, df.columns))}"
            )
        q = model.make_query(
            kind,
            epsilon=args.epsilon,
            column=column,
            bounds=args.bounds,
            where=args.where,
            mechanism=args.mechanism,
            delta=delta or 0.0,
            bins=args.bins,
            categories=args.categories,
            public_n=args.public_n,
        )
    return views.answer(answering.ask(df, who, q, dataset=key), who, key)
