"""`python -m dpcore statement --job ID | --sweep ID | --ledger --analyst NAME --dataset KEY`
`python -m dpcore statement --verify FILE.json [--key KEYFILE]`

Prints a signed privacy statement as JSON (:mod:`dpcore.statement`, :mod:`dpcore.signing`): dataset and unit of
privacy, neighbour relation with n public, sampling, the run's settings, accountant with ε at δ = 1e-5, 1e-6 (and
the run's own δ), μ where it applies, the worst-case trade-off curve, the privacy-loss tail, the audit, and every
leak. ``--verify`` checks the signature with this home's key (or ``--key``, another home's key file) and
recomputes every figure from the recorded settings (:mod:`dpcore.verification`); any edit exits 2 naming the
field.
"""

from __future__ import annotations

import os
import stat

from .. import statement, verification
from ..errors import DPError

#: A statement file is at most this large (a sweep of 66 points is ~1 MB).
MAX_BYTES = 20_000_000


def register(sub) -> None:
    p = sub.add_parser("statement", help="a signed, auditable privacy statement for a training run, sweep or ledger")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--job", help="id of a finished training run (python -m dpcore jobs list)")
    g.add_argument("--sweep", help="id of a stored sweep")
    g.add_argument("--ledger", action="store_true", help="an analyst's query history (with --analyst, --dataset)")
    g.add_argument("--verify", metavar="FILE.json", help="check a saved statement's signature and recompute its figures")
    p.add_argument("--analyst", help="analyst name (with --ledger)")
    p.add_argument("--dataset", help="dataset key (with --ledger; python -m dpcore budget shows it)")
    p.add_argument("--n", type=int, default=None, help="rows of the dataset (with --ledger)")
    p.add_argument("--key", metavar="KEYFILE", help="with --verify: the signing key of the home that made the "
                                                    "statement (its statement-signing.key), when it is not this one")
    p.set_defaults(func=run)


def read_file(path_text: str, what: str, max_bytes: int = MAX_BYTES) -> bytes:
    """A regular file's bytes, never hanging: opened non-blocking, and a named pipe, a device or a folder is
    refused with a message (a FIFO given to --verify waited forever for a writer)."""
    try:
        fd = os.open(path_text, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise DPError(f"{what} not found: {path_text}") from None
    except OSError as exc:
        raise DPError(f"could not read {what} {path_text}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a folder" if stat.S_ISDIR(mode) else "a named pipe (FIFO)" if stat.S_ISFIFO(mode)
                    else "a device or a socket")
            raise DPError(f"{path_text} is {kind}, not a file; give the path of a saved {what}")
        os.set_blocking(fd, True)
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise DPError(f"could not read {what} {path_text}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise DPError(f"{path_text} is larger than a {what} can be ({max_bytes:,} bytes)")
    return data


def verify_file(path_text: str, key_file: str | None = None) -> dict:
    from .. import signing

    st = verification.parse(read_file(path_text, "statement"), path_text)
    key = signing.read_key_file(read_file(key_file, "key file", 1000), key_file) if key_file else None
    out = verification.verify(st, key=key)
    if not out["verified"]:
        bad = out["problems"]
        more = f" (and {len(bad) - 1} more: {'; '.join(bad[1:3])}{' …' if len(bad) > 3 else ''})" if len(bad) > 1 else ""
        raise DPError(f"the statement does not check out: {bad[0]}{more}")
    return {k: out[k] for k in ("verified", "kind", "subject", "checked", "signature")}


def run(args) -> dict:
    if args.verify:
        return verify_file(args.verify, args.key)
    if args.key:
        raise DPError("--key goes with --verify (the key of the home that signed the statement)")
    if args.job:
        return statement.issue(statement.for_job(args.job))
    if args.sweep:
        return statement.issue(statement.for_sweep(args.sweep))
    if not args.analyst or not args.dataset:
        raise DPError("--ledger needs --analyst NAME and --dataset KEY")
    if args.n is not None and args.n < 1:
        raise DPError(f"--n must be a whole number >= 1, got {args.n}")
    return statement.issue(statement.for_ledger(args.analyst, args.dataset, n_rows=args.n))
