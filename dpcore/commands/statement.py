"""`python -m dpcore statement --job ID | --sweep ID | --ledger --dataset NAME [--analyst NAME] [--n N] [--admin]`
`python -m dpcore statement --verify FILE.json [--key KEYFILE]`

Prints a signed privacy statement as JSON (:mod:`dpcore.statements.build`, :mod:`dpcore.statements.signing`): dataset and unit of
privacy, neighbour relation with n public, sampling, the run's settings, accountant with ε at δ = 1e-5, 1e-6 (and
the run's own δ), μ where it applies, the worst-case trade-off curve, the privacy-loss tail, the audit, and every
leak. ``--ledger`` states what the dataset as a whole released (every answer by anyone), with the caller's quota's
share: an analyst signs in with --analyst and $DP_EXPLORER_ANALYST_KEY, the admin ($DP_EXPLORER_ADMIN_TOKEN) may
name any analyst. ``--admin`` states anyone's run or sweep (the command line's own otherwise, and the shared demos)
and, with ``--ledger``, reads as the admin — after the admin check. ``--verify`` checks the signature with this home's key (or ``--key``, another home's key file)
and recomputes every figure from the recorded settings (:mod:`dpcore.statements.verify`); any edit exits 2 naming the
field.
"""

from __future__ import annotations

from dpcore import storage
from dpcore.statements import build as statement
from dpcore.statements import verify as verification

from ..errors import DPError
from ..limits import STATEMENT_MAX_BYTES
from . import _who


def register(sub) -> None:
    p = sub.add_parser("statement", help="a signed, auditable privacy statement for a training run, sweep or ledger")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--job", help="id of a finished training run (python -m dpcore jobs list)")
    g.add_argument("--sweep", help="id of a stored sweep")
    g.add_argument(
        "--ledger",
        action="store_true",
        help="a dataset's query history: what it released as a whole, and your quota's share (--dataset)",
    )
    g.add_argument(
        "--verify", metavar="FILE.json", help="check a saved statement's signature and recompute its figures"
    )
    p.add_argument("--analyst", help="with --ledger: your analyst name ($DP_EXPLORER_ANALYST_KEY); an admin: anyone's")
    p.add_argument("--dataset", help="with --ledger: a registered dataset's name (`python -m dpcore budget list`)")
    p.add_argument("--n", type=int, default=None, help="rows of the dataset (with --ledger)")
    p.add_argument(
        "--key",
        metavar="KEYFILE",
        help="with --verify: the signing key of the home that made the "
        "statement (its statement-signing.key), when it is not this one",
    )
    _who.add_admin_flag(p, "everyone's runs, sweeps and ledgers")
    p.set_defaults(func=run)


def verify_file(path_text: str, key_file: str | None = None) -> dict:
    from dpcore.statements import signing

    raw = storage.read_user_file(
        path_text, max_bytes=STATEMENT_MAX_BYTES, what="statement file", option="--verify"
    )  # a regular file only: a pipe or a device never hangs it
    if len(raw) > STATEMENT_MAX_BYTES:
        raise DPError(f"{path_text} is larger than a statement can be ({STATEMENT_MAX_BYTES:,} bytes)")
    st = verification.parse(raw, path_text)
    key = None
    if key_file:
        key = signing.read_key_file(
            storage.read_user_file(key_file, max_bytes=1000, what="key file", option="--key"), key_file
        )
    out = verification.verify(st, key=key)
    if not out["verified"]:
        bad = out["problems"]
        more = (
            f" (and {len(bad) - 1} more: {'; '.join(bad[1:3])}{' …' if len(bad) > 3 else ''})" if len(bad) > 1 else ""
        )
        raise DPError(f"the statement does not check out: {bad[0]}{more}")
    return {k: out[k] for k in ("verified", "kind", "subject", "checked", "signature")}


def run(args) -> dict:
    if args.verify:
        if args.admin:
            raise DPError("--verify needs no --admin: anyone may check a statement")
        return verify_file(args.verify, args.key)
    if args.key:
        raise DPError("--key goes with --verify (the key of the home that signed the statement)")
    caller = _who.job_caller(args)
    if args.job:
        return statement.issue(statement.for_job(args.job, caller=caller))
    if args.sweep:
        return statement.issue(statement.for_sweep(args.sweep, caller=caller))
    if not args.dataset:
        raise DPError("--ledger needs --dataset NAME (and --analyst NAME with your key, or the admin token)")
    if args.n is not None and args.n < 1:
        raise DPError(f"--n must be a whole number >= 1, got {args.n}")
    return statement.issue(
        statement.for_ledger(
            args.dataset,
            viewer=_who.admin() if args.admin else _who.reader(args.analyst),
            analyst=args.analyst,
            n_rows=args.n,
        )
    )
