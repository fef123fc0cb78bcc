"""`python -m dpcore statement --job ID | --sweep ID | --ledger --analyst NAME --dataset KEY [--n N]`
`python -m dpcore statement --verify FILE.json`

Prints a privacy statement as JSON (:mod:`dpcore.statement`): unit of privacy, neighbour relation, sampling,
accountant with ε at δ = 1e-5, 1e-6 and 1/n, μ where it applies, the worst-case trade-off curve, the audit,
and whether any noise was reproducible. ``--verify`` recomputes a saved statement's numbers from its own
inputs and exits 2 naming the first mismatch.
"""

from __future__ import annotations

import json

from .. import statement, storage
from ..limits import STATEMENT_MAX_BYTES
from ..errors import DPError


def register(sub) -> None:
    p = sub.add_parser("statement", help="an auditable privacy statement for a training run, sweep or ledger")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--job", help="id of a finished training run (python -m dpcore jobs list)")
    g.add_argument("--sweep", help="id of a stored sweep")
    g.add_argument("--ledger", action="store_true", help="an analyst's query history (with --analyst, --dataset)")
    g.add_argument("--verify", metavar="FILE.json", help="recompute a saved statement's numbers")
    p.add_argument("--analyst", help="analyst name (with --ledger)")
    p.add_argument("--dataset", help="dataset key (with --ledger; python -m dpcore budget shows it)")
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
    if not args.analyst or not args.dataset:
        raise DPError("--ledger needs --analyst NAME and --dataset KEY")
    if args.n is not None and args.n < 1:
        raise DPError(f"--n must be a whole number >= 1, got {args.n}")
    return statement.for_ledger(args.analyst, args.dataset, n_rows=args.n)
