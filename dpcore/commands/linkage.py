"""`python -m dpcore linkage --data FILE.csv --known COL=VALUE ... --range COL=LO:HI ...`"""

from __future__ import annotations

from .. import limits
from ..attacks import linkage
from ..data import datasets
from ._args import int_arg


def register(sub) -> None:
    p = sub.add_parser("linkage", help="find-your-neighbour: filter a release with known facts about one person")
    p.add_argument("--data", required=True, help="the released table as CSV")
    p.add_argument(
        "--known",
        action="append",
        default=[],
        metavar="COL=VALUE",
        help="a fact, e.g. --known age=34 --known zip_code=10001; also !=, <, <=, >, >= "
        "(--known 'age>=30'); text ignores case (repeatable)",
    )
    p.add_argument(
        "--range",
        action="append",
        default=[],
        metavar="COL=LO:HI",
        dest="ranges",
        help="a numeric range, inclusive, e.g. --range salary=50000:60000 (repeatable)",
    )
    p.add_argument(
        "--sensitive",
        action="append",
        default=None,
        metavar="COL",
        help="sensitive column(s) to report (default: has_rare_disease and diagnosis if present)",
    )
    p.add_argument(
        "--max-records",
        type=int_arg(0, limits.LINKAGE_MAX_RECORDS),
        default=1000,
        help=f"most matching rows to print, 0 to {limits.LINKAGE_MAX_RECORDS:,} (default 1000)",
    )
    p.set_defaults(func=run)


def run(args) -> dict:
    df = datasets.read_csv(args.data)
    conditions = [linkage.parse_known(k) for k in args.known] + [linkage.parse_range(r) for r in args.ranges]
    res = linkage.find_matches(df, conditions, sensitive=args.sensitive, max_records=args.max_records)
    out = res.to_dict()
    out["records_shown"] = len(res.records)
    out["n"] = len(df)
    return out
