"""`python -m dpcore statement --job ID | --sweep ID | --ledger --dataset NAME [--analyst NAME] [--n N]`
`python -m dpcore statement --verify FILE.json`

Prints a privacy statement as JSON (:mod:`dpcore.statement`): unit of privacy, neighbour relation, sampling,
accountant with ε at δ = 1e-5, 1e-6 and 1/n, μ where it applies, the worst-case trade-off curve, the audit,
and whether any noise was reproducible. ``--ledger`` states what the dataset as a whole released (every answer by
anyone), with the caller's quota's share: an analyst signs in with --analyst and $DP_EXPLORER_ANALYST_KEY, the
admin ($DP_EXPLORER_ADMIN_TOKEN) may name any analyst. ``--verify`` recomputes a saved statement's numbers from its own
inputs and exits 2 naming the first mismatch.
"""

from __future__ import annotations

import json

from .. import statement, storage
from ..limits import STATEMENT_MAX_BYTES
from ..errors import DPError
from . import _who


def register(sub) -> None:
    p = sub.add_parser("statement", help="an auditable privacy statement for a training run, sweep or ledger")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--job", help="id of a finished training run (python -m dpcore jobs list)")
    g.add_argument("--sweep", help="id of a stored sweep")
    g.add_argument("--ledger", action="store_true",
                   help="a dataset's query history: what it released as a whole, and your quota's share (--dataset)")
    g.add_argument("--verify", metavar="FILE.json", help="recompute a saved statement's numbers")
    p.add_argument("--analyst", help="with --ledger: your analyst name ($DP_EXPLORER_ANALYST_KEY); an admin: anyone's")
    p.add_argument("--dataset", help="with --ledger: a registered dataset's name (`python -m dpcore budget list`)")
    p.add_argument("--n", type=int, default=None, help="rows of the dataset, for ε at δ = 1/n (with --ledger)")
    p.set_defaults(func=run)


def run(args) -> dict:
    if args.verify:
        raw = storage.read_user_file(args.verify, max_bytes=STATEMENT_MAX_BYTES, what="statement file",
                                     option="--verify")  # never hangs on a pipe
        if len(raw) > STATEMENT_MAX_BYTES:
            raise DPError(f"{args.verify} is larger than a statement can be ({STATEMENT_MAX_BYTES:,} bytes)")
        try:
            st = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise DPError(f"could not read a statement from {args.verify}: {str(exc)[:200]}") from None
        if not isinstance(st, dict):
            raise DPError(f"{args.verify} holds JSON but not a statement (a JSON object is expected, got "
                          f"{type(st).__name__})")
        bad = statement.verify(st)
        if bad:
            raise DPError(f"the statement does not check out: {bad[0]}")
        return {"verified": True, "kind": st.get("kind"), "subject": st.get("subject")}
    from ..jobs.owners import CLI

    if args.job:
        return statement.for_job(args.job, caller=CLI)
    if args.sweep:
        return statement.for_sweep(args.sweep, caller=CLI)
    if not args.dataset:
        raise DPError("--ledger needs --dataset NAME (and --analyst NAME with your key, or the admin token)")
    if args.n is not None and args.n < 1:
        raise DPError(f"--n must be a whole number >= 1, got {args.n}")
    return statement.for_ledger(args.dataset, viewer=_who.reader(args.analyst), analyst=args.analyst, n_rows=args.n)
