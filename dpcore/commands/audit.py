"""`python -m dpcore audit --scores FILE.csv [--delta D] [--confidence 0.95] [--split-seed K] [--one-run]`

FILE has a column ``member`` (1 = in the training data, 0 = not) and a column ``score`` (higher means "more
likely a member", e.g. from your own attack on your own model). Prints JSON with the empirical-ε lower
bound at the stated confidence and the counts it rests on (:func:`dpcore.attacks.audit.audit_scores`: threshold and
direction chosen on a random half of the rows, bound computed on the other half). With ``--one-run`` the
rows are canaries that were each included with probability 1/2 and the one-run audit of Steinke, Nasr &
Jagielski (2023) is used instead.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..attacks import audit, one_run
from ..cli import seed_arg
from ..data import datasets
from ..errors import DPError


def register(sub) -> None:
    p = sub.add_parser("audit", help="empirical ε lower bound from membership scores (member, score CSV)")
    p.add_argument("--scores", required=True, metavar="FILE.csv",
                   help="CSV with columns member (1/0) and score (higher = more likely a member)")
    p.add_argument("--delta", type=float, default=1e-5, help="δ of the claim being audited (default 1e-5)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of the bound (default 0.95)")
    p.add_argument("--split-seed", type=seed_arg, default=0,
                   help="seed of the random half/half split (choose vs bound); any value keeps the confidence")
    p.add_argument("--one-run", action="store_true",
                   help="rows are canaries included with probability 1/2: one-run audit (Steinke et al. 2023)")
    p.set_defaults(func=run)


def read_scores(source) -> tuple[np.ndarray, np.ndarray]:
    """(member flags, scores) from a CSV with columns member and score; DPError with what to fix."""
    df = datasets.read_csv(source)
    cols = {str(c).strip().lower(): c for c in df.columns}
    missing = [c for c in ("member", "score") if c not in cols]
    if missing:
        raise DPError(f"the scores CSV needs columns member (1/0) and score; missing {', '.join(missing)}")
    member = pd.to_numeric(df[cols["member"]], errors="coerce").to_numpy(dtype=float)
    score = pd.to_numeric(df[cols["score"]], errors="coerce").to_numpy(dtype=float)
    if not np.isin(member, (0.0, 1.0)).all():
        raise DPError("column member must be 1 (in the training data) or 0 (not) on every row")
    if not np.isfinite(score).all():
        raise DPError("column score must be a finite number on every row (no blanks, text or infinity)")
    return member.astype(bool), score


def run(args) -> dict:
    member, score = read_scores(args.scores)
    if args.one_run:
        out = one_run.one_run_lower_bound(score, member, delta=args.delta, confidence=args.confidence)
        out["method"] = "one-run audit (Steinke, Nasr & Jagielski 2023), Bonferroni over the guess counts tried"
    else:
        out = audit.audit_scores({"scores": (score[member], score[~member])}, args.delta, args.confidence,
                                 split_seed=args.split_seed)
        out.pop("attack", None)
    out["rows"] = int(member.size)
    out["neighbour_relation"] = "add/remove one person"
    return out
