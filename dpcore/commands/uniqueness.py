"""`python -m dpcore uniqueness --data FILE.csv --qi COL1,COL2,... [--sensitive COL]`"""

from __future__ import annotations

from ..attacks import uniqueness
from ..data import datasets


def register(sub) -> None:
    p = sub.add_parser("uniqueness", help="uniqueness, k-anonymity, l-diversity and re-identification risk")
    p.add_argument("--data", required=True, help="the table as CSV")
    p.add_argument(
        "--qi",
        required=True,
        metavar="COL1,COL2,...",
        help="quasi-identifier columns, comma-separated, in the order the attacker learns them",
    )
    p.add_argument("--sensitive", default=None, help="sensitive column for l-diversity (optional)")
    p.set_defaults(func=run)


def run(args) -> dict:
    df = datasets.read_csv(args.data)
    report = uniqueness.uniqueness(df, args.qi, args.sensitive)
    out = report.to_dict()
    out["incremental"] = uniqueness.incremental(df, args.qi, args.sensitive).to_dict("records")
    return out
