"""`python -m dpcore statement --job ID | --sweep ID | --ledger --dataset NAME [--analyst NAME] [--admin]`
`python -m dpcore statement --verify FILE.json|RELEASE.zip|FOLDER [--public-key OWNER.pem] [--key OLDKEY]`

Prints a signed privacy statement as JSON (:mod:`dpcore.statements`): dataset and unit of privacy, neighbour
relation with n public, sampling, the run's settings, accountant with ε at δ = 1e-5, 1e-6 (and the run's own δ), μ
where it applies, the worst-case trade-off curve, the privacy-loss tail, the audit, every leak, and the SHA-256 of
each file it ships with (a run's weights). ``--ledger`` states what the dataset as a whole released (every answer by
anyone), with the caller's quota's share. ``--admin`` states anyone's run or sweep (the command line's own otherwise,
and the shared demos) and, with ``--ledger``, reads as the admin — after the admin check. This command reads the
home: it is the operator's. An analyst gets their
statement through the HTTP API (``python -m dpcore remote statement``).

``--verify`` needs no home: it checks the Ed25519 signature with ``--public-key`` (the data owner's published key)
or, without it, with the key inside the statement — and says which, by fingerprint — then the files (given the
release zip or its folder) and every figure, recomputed (:mod:`dpcore.statements.verify`); any failed check exits 2
naming the field. An old HMAC statement verifies where its home's secret is (or with ``--key`` and a copy of it),
labelled as such.
"""

from __future__ import annotations

from dpcore.statements import ledger as ledger_statement
from dpcore.statements import release, signing
from dpcore.statements import sweep as sweep_statement
from dpcore.statements import verify as verification

from ..errors import DPError
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
        "--verify",
        metavar="FILE",
        help="check a statement (a JSON file, or a release zip or folder with the files it covers): its "
        "signature, its files and every figure, recomputed",
    )
    p.add_argument("--analyst", help="with --ledger: your analyst name ($DP_EXPLORER_ANALYST_KEY); an admin: anyone's")
    p.add_argument("--dataset", help="with --ledger: a registered dataset's name (`python -m dpcore budget list`)")
    p.add_argument("--n", type=int, default=None, help="accepted for older scripts; a statement does not state n")
    p.add_argument(
        "--public-key",
        metavar="PEM",
        help="with --verify: the data owner's published public key (PEM file: `admin public-key`, the API's "
        "/public-key, Home); without it the key inside the statement is checked, and named by fingerprint",
    )
    p.add_argument(
        "--key",
        metavar="KEYFILE",
        help="with --verify: for an old HMAC-signed statement, the secret of the home that made it (its "
        "statement-signing.key), when it is not this home",
    )
    _who.add_admin_flag(p, "everyone's runs, sweeps and ledgers")
    p.set_defaults(func=run)


def verify_file(path_text: str, key_file: str | None = None, public_key_file: str | None = None) -> dict:
    """``--verify``: the result when every check passes; a DPError naming the first failed ones otherwise."""
    out = verification.verify_path(path_text, public_key_file=public_key_file, key_file=key_file)
    if not out["verified"]:
        bad = out["problems"]
        more = (
            f" (and {len(bad) - 1} more: {'; '.join(bad[1:3])}{' …' if len(bad) > 3 else ''})" if len(bad) > 1 else ""
        )
        raise DPError(f"the statement does not check out: {bad[0]}{more}")
    sig = out["signature"]
    return {
        "verified": True,
        "kind": out["kind"],
        "subject": out["subject"],
        "checked": out["checked"],
        "signature": sig,
        "key": sig["note"],
        "files": out["files"],
    }


def run(args) -> dict:
    if args.verify is not None:
        if args.admin:
            raise DPError("--verify needs no --admin: anyone may check a statement")
        return verify_file(args.verify, args.key, args.public_key)
    if args.key is not None or args.public_key is not None:
        raise DPError("--public-key and --key go with --verify (the key the statement must be signed with)")
    caller = _who.job_caller(args)
    if args.job:
        return release.signed_statement(args.job, caller=caller)
    if args.sweep:
        return sweep_statement.signed(args.sweep, caller=caller)
    if not args.dataset:
        raise DPError("--ledger needs --dataset NAME (and --analyst NAME with your key, or the admin token)")
    if args.n is not None and args.n < 1:
        raise DPError(f"--n must be a whole number >= 1, got {args.n}")
    return signing.issue(
        ledger_statement.for_ledger(
            args.dataset, viewer=_who.admin() if args.admin else _who.reader(args.analyst), analyst=args.analyst
        )
    )
