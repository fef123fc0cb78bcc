"""`python -m dpcore data medical --n N --seed K --out FILE.csv`"""

from __future__ import annotations

from pathlib import Path

from .. import datasets
from ..errors import DPError


def register(sub) -> None:
    p = sub.add_parser("data", help="generate the synthetic medical dataset as CSV")
    p.add_argument("kind", choices=["medical"], help="which dataset")
    p.add_argument("--n", type=int, default=10_000, help="number of rows (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", required=True, help="output CSV path")
    p.set_defaults(func=run)


def run(args) -> dict:
    df = datasets.medical(args.n, args.seed)
    out = Path(args.out)
    if out.is_dir():
        raise DPError(f"--out must be a file path, got a folder: {out}")
    try:
        df.to_csv(out, index=False)
    except OSError as exc:
        raise DPError(f"could not write {out}: {exc.strerror}") from None
    return {"kind": args.kind, "rows": len(df), "seed": args.seed, "columns": list(df.columns), "out": str(out)}
