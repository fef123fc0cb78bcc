"""`python -m dpcore query --data FILE.csv --analyst NAME [--budget B] --epsilon E (--count COL=VALUE | --sum COL
--bounds LO:HI | --mean COL --bounds LO:HI | --histogram COL) [--where COL=VALUE ...]`

One private answer, charged to the (analyst, dataset) budget in the ledger. Exit code 3 when the budget
would be exceeded (nothing spent, no noise drawn).
"""

from __future__ import annotations

from .. import datasets, queries


def register(sub) -> None:
    p = sub.add_parser("query", help="ask one private question against a persistent privacy budget")
    p.add_argument("--data", required=True, help="CSV file with a header row")
    p.add_argument("--analyst", required=True, help="who asks (the budget belongs to analyst + dataset content)")
    p.add_argument("--budget", type=float, default=None,
                   help="total ε for this analyst on this dataset; needed the first time, later must match or be "
                        "omitted")
    p.add_argument("--epsilon", required=True, type=float, help="ε this query spends, e.g. 0.1")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--count", metavar="COL=VALUE", help="count rows where COL=VALUE ('*' for all rows; "
                                                           "also !=, <, <=, >, >=)")
    what.add_argument("--sum", metavar="COL", help="sum of COL clamped to --bounds")
    what.add_argument("--mean", metavar="COL", help="mean of COL clamped to --bounds")
    what.add_argument("--histogram", metavar="COL", help="noisy count per category (or per bin with --bounds)")
    p.add_argument("--bounds", metavar="LO:HI", help="public bounds (SUM, MEAN; numeric HISTOGRAM); write "
                   "--bounds=-10:10 when LO is negative")
    p.add_argument("--bins", type=int, default=10, help="bins of a numeric histogram (default 10)")
    p.add_argument("--categories", metavar="A,B,...", help="public categories of a histogram column")
    p.add_argument("--where", action="append", default=[], metavar="COL=VALUE",
                   help="filter rows first (repeatable, all must hold; also !=, <, <=, >, >=)")
    p.add_argument("--mechanism", choices=list(queries.MECHANISMS), default="laplace",
                   help="laplace (counts: geometric) or gaussian (analytic, needs --delta)")
    p.add_argument("--delta", type=float, default=1e-6, help="δ for the Gaussian mechanism (default 1e-6)")
    p.add_argument("--public-n", action="store_true",
                   help="MEAN only: treat the number of rows as public (all ε on the mean; no --where)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed the noise (reproducible demos only: a seeded answer is not a secure release)")
    p.set_defaults(func=run)


def run(args) -> dict:
    df = datasets.read_csv(args.data)
    if args.count is not None:
        q = queries.make_query("count", epsilon=args.epsilon, condition=args.count, where=args.where,
                               mechanism=args.mechanism, delta=args.delta)
    else:
        kind, column = next((k, getattr(args, k)) for k in ("sum", "mean", "histogram") if getattr(args, k))
        q = queries.make_query(kind, epsilon=args.epsilon, column=column, bounds=args.bounds, where=args.where,
                               mechanism=args.mechanism, delta=args.delta, bins=args.bins,
                               categories=args.categories, public_n=args.public_n)
    key = queries.dataset_key(df)
    r = queries.ask(df, args.analyst, q, budget=args.budget, random_state=args.seed, dataset=key)
    a = r["answer"]
    out = {"answer": a["answer"], "interval": a["interval"], "interval_note": a["interval_note"],
           "epsilon_spent": r["epsilon_spent"], "remaining": r["remaining"], "total": r["total"],
           "spent": r["spent"], "reused": r["reused"], "epsilon_charged": r["epsilon_charged"],
           "query": a["query"], "epsilon": a["epsilon"], "delta": a["delta"], "mechanism": a["mechanism"],
           "cost_note": a["cost_note"], "secure": a["secure"], "analyst": args.analyst.strip(), "dataset": key}
    if "labels" in a:
        out["labels"] = a["labels"]
    return out
