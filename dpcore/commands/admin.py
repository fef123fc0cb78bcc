"""`python -m dpcore admin init [--replace]`, `python -m dpcore admin status` and `python -m dpcore admin public-key`.

The data owner, once: stores a salted scrypt hash of the admin token in the ledger. The token is read from
$DP_EXPLORER_ADMIN_TOKEN, or typed at a prompt (twice) when that is unset; ``--replace`` needs the current token
in $DP_EXPLORER_ADMIN_TOKEN and takes the new one at the prompt (or from $DP_EXPLORER_NEW_ADMIN_TOKEN). Every later
admin check, page and CLI, compares with that hash. ``public-key`` prints the home's statement-signing public key
(PEM) and its fingerprint, made on first use: publish them, so that anyone can check a statement with
``statement --verify FILE --public-key OWNER.pem`` (:mod:`dpcore.statements.keys`).
"""

from __future__ import annotations

import getpass
import os
import sys

from ..budgets import identities, store
from ..errors import DPError
from ..statements import keys

NEW_ENV = "DP_EXPLORER_NEW_ADMIN_TOKEN"


def register(sub) -> None:
    p = sub.add_parser("admin", help="the data owner's admin token: init (once), status; the public key to publish")
    p.add_argument(
        "action",
        choices=["init", "status", "public-key"],
        help=f"init: store the hash of the admin token (from ${identities.ADMIN_ENV} or a prompt); "
        "status: whether it is set; public-key: the statement-signing public key (PEM) and its fingerprint, "
        "to publish",
    )
    p.add_argument(
        "--replace",
        action="store_true",
        help=f"init: replace the token (the current one in ${identities.ADMIN_ENV}, the new one at the "
        f"prompt or in ${NEW_ENV})",
    )
    p.set_defaults(func=run)


def _prompt(what: str) -> str:
    if not sys.stdin.isatty():
        raise DPError(
            f"no {what} given: set {identities.ADMIN_ENV if what == 'admin token' else NEW_ENV} or run the "
            "command in a terminal to type it"
        )
    first = getpass.getpass(f"{what}: ")
    if getpass.getpass(f"{what} again: ") != first:
        raise DPError(f"the two {what}s differ; nothing was stored")
    return first


def run(args) -> dict:
    if args.action == "public-key":
        out = keys.published(create=True)
        assert out is not None  # create=True makes the key pair or raises
        return {
            **out,
            "note": "publish this key or its fingerprint (anyone checks a statement with python -m dpcore statement "
            "--verify FILE --public-key KEY.pem); the private key stays in the home, readable by its owner only",
        }
    if args.action == "status":
        return {"initialised": identities.admin_initialised(), "ledger": str(store.resolve())}
    env = os.environ.get(identities.ADMIN_ENV, "")
    if args.replace:
        if not env.strip():
            raise DPError(f"--replace needs the current admin token in {identities.ADMIN_ENV}")
        new = os.environ.get(NEW_ENV) or _prompt("new admin token")
        return identities.init_admin(new, current=env)
    return identities.init_admin(env if env.strip() else _prompt("admin token"))
