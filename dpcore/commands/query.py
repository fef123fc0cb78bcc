"""`python -m dpcore query --data FILE.csv --analyst NAME [--budget B] [--delta-budget D] --epsilon E
(--count COL=VALUE | --sum COL --bounds LO:HI | --mean COL --bounds LO:HI | --histogram COL) [--where COL=VALUE ...]`

One private answer, charged to the (analyst, registered dataset) budget in the ledger (ε and δ, under one
neighbour relation: add or remove one record), drawn through :mod:`dpcore.noise.release` (OpenDP's exact
whole-number noise; a SUM or MEAN states its grid and rounding in ``grid``). Bounds a release cannot represent are
refused before anything is spent. The data must be registered first (`budget register`, an admin
action). Exit code 3 when the budget would be exceeded (nothing spent, no noise drawn); 2 for bad input.
"""

from __future__ import annotations

from ..data import datasets
from ..noise import mechanisms
from ..queries import answering, fingerprint, model
from ..errors import DPError


def register(sub) -> None:
    p = sub.add_parser("query", help="ask one private question against a persistent privacy budget")
    p.add_argument("--data", required=True, help="CSV file with a header row (a registered dataset)")
    p.add_argument("--analyst", required=True, help="who asks (the budget belongs to analyst + registered dataset)")
    p.add_argument("--budget", type=float, default=None,
                   help="total ε for this analyst on this dataset; needed the first time, later must match or be "
                        "omitted")
    p.add_argument("--delta-budget", type=float, default=None,
                   help="total δ for this analyst on this dataset, set the first time (default 1/(10·n); at most 1/n)")
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
    p.add_argument("--mechanism", choices=list(mechanisms.QUERY_MECHANISMS), default="laplace",
                   help="laplace (counts: geometric) or gaussian (analytic, needs --delta)")
    p.add_argument("--delta", type=float, default=None,
                   help="δ for the Gaussian mechanism, charged to the δ budget; below 1/n, e.g. 1e-7")
    p.add_argument("--public-n", action="store_true",
                   help="MEAN with a public row count: a replace-one mechanism, refused by the ledger")
    p.add_argument("--seed", type=int, default=None,
                   help="refused: answers charged to a budget always use a secure random source")
    p.set_defaults(func=run)


def run(args) -> dict:
    if args.seed is not None:
        raise DPError("--seed cannot be used with the budget ledger: anyone with the seed could replay the noise and "
                      "recover the exact answer; drop --seed (charged answers use a secure random source); nothing "
                      "was spent")
    delta = args.delta
    if not mechanisms.mechanism_class(args.mechanism).pure and delta is None:
        raise DPError("the Gaussian mechanism needs --delta (charged to the δ budget, below 1/n), e.g. --delta 1e-7; "
                      "or use --mechanism laplace (δ = 0)")
    df = datasets.read_csv(args.data)
    if args.count is not None:
        q = model.make_query("count", epsilon=args.epsilon, condition=args.count, where=args.where,
                               mechanism=args.mechanism, delta=delta or 0.0)
    else:
        kind, column = next((k, getattr(args, k)) for k in ("sum", "mean", "histogram") if getattr(args, k) is not None)
        if not column.strip():
            raise DPError(f"--{kind} needs a column name, e.g. --{kind} age; columns: "
                          f"{', '.join(map(str, df.columns))}")
        q = model.make_query(kind, epsilon=args.epsilon, column=column, bounds=args.bounds, where=args.where,
                               mechanism=args.mechanism, delta=delta or 0.0, bins=args.bins,
                               categories=args.categories, public_n=args.public_n)
    key = fingerprint.dataset_key(df)
    r = answering.ask(df, args.analyst, q, budget=args.budget, delta_budget=args.delta_budget, dataset=key)
    a = r["answer"]
    out = {"answer": a["answer"], "interval": a["interval"], "interval_note": a["interval_note"],
           "epsilon_spent": r["epsilon_spent"], "remaining": r["remaining"], "total": r["total"],
           "spent": r["spent"], "delta_spent_now": r["delta_spent_now"], "delta_spent": r["delta_spent"],
           "delta_total": r["delta_total"], "delta_remaining": r["delta_remaining"], "reused": r["reused"],
           "epsilon_charged": r["epsilon_charged"], "query": a["query"], "epsilon": a["epsilon"],
           "delta": a["delta"], "mechanism": a["mechanism"], "neighbour": r["neighbour"],
           "cost_note": a["cost_note"], "secure": a["secure"], "analyst": " ".join(args.analyst.split()),
           "dataset": key, "dataset_name": r["dataset_name"]}
    for field in ("labels", "grid", "noise"):  # the grid and rounding of a SUM or MEAN; the noise's name
        if field in a:
            out[field] = a[field]
    return out
