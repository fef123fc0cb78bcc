"""`python -m dpcore admin init [--replace]` and `python -m dpcore admin status`.

The data owner, once: stores a salted scrypt hash of the admin token in the ledger. The token is read from
$DP_EXPLORER_ADMIN_TOKEN, or typed at a prompt (twice) when that is unset; ``--replace`` needs the current token
in $DP_EXPLORER_ADMIN_TOKEN and takes the new one at the prompt (or from $DP_EXPLORER_NEW_ADMIN_TOKEN). Every later
admin check, page and CLI, compares with that hash.
"""

from __future__ import annotations

import getpass
import os
import sys

from ..budgets import identities, store
from ..errors import DPError

NEW_ENV = "DP_EXPLORER_NEW_ADMIN_TOKEN"


def register(sub) -> None:
    p = sub.add_parser("admin", help="the data owner's admin token: init (once), status")
    p.add_argument(
        "action",
        choices=["init", "status"],
        help=f"init: store the hash of the admin token (from ${identities.ADMIN_ENV} or a prompt); "
        "status: whether it is set",
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
    if args.action == "status":
        return {"initialised": identities.admin_initialised(), "ledger": str(store.resolve())}
    env = os.environ.get(identities.ADMIN_ENV, "")
    if args.replace:
        if not env.strip():
            raise DPError(f"--replace needs the current admin token in {identities.ADMIN_ENV}")
        new = os.environ.get(NEW_ENV) or _prompt("new admin token")
        return identities.init_admin(new, current=env)
    return identities.init_admin(env if env.strip() else _prompt("admin token"))
