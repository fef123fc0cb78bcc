"""`python -m dpcore data medical --n N --seed K --out FILE.csv`"""

from __future__ import annotations

from .. import limits, textsafe
from ..data import datasets
from ..storage import check_user_path, write_user_file
from ._args import int_arg, seed_arg


def register(sub) -> None:
    p = sub.add_parser("data", help="generate the synthetic medical dataset as CSV")
    p.add_argument("kind", choices=["medical"], help="which dataset")
    p.add_argument(
        "--n",
        type=int_arg(1, limits.MEDICAL_MAX_ROWS),
        default=10_000,
        help=f"number of rows, 1 to {limits.MEDICAL_MAX_ROWS:,} (default 10000)",
    )
    p.add_argument("--seed", type=seed_arg, default=0, help=f"random seed, 0 to {limits.SEED_MAX} (default 0)")
    p.add_argument("--out", required=True, help="output CSV path")
    p.set_defaults(func=run)


def run(args) -> dict:
    check_user_path(args.out)  # before the work: empty, a folder, a missing folder, a device
    df = datasets.medical(args.n, args.seed)
    write_user_file(args.out, textsafe.csv_bytes(df))  # whole file or nothing; formula cells neutralised
    return {"kind": args.kind, "rows": len(df), "seed": args.seed, "columns": list(df.columns), "out": args.out}
