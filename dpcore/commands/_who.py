"""Who runs a command: identities from the environment only (never an argument, which `ps` would show).

The admin token comes from ``$DP_EXPLORER_ADMIN_TOKEN`` and is checked against the hash the data owner stored
(``admin init``); an analyst's key from ``$DP_EXPLORER_ANALYST_KEY`` with ``--analyst NAME``. Without either the
caller is a visitor (the built-in synthetic data only).

Jobs and sweeps (``jobs``, ``export``, ``statement``, ``report``): the command line is the owner ``cli`` and
reads its own (and the shared demos); ``--admin`` (:func:`add_admin_flag`, :func:`job_caller`) acts on everyone's,
after the one admin check — the same as the pages' admin unlock.
"""

from __future__ import annotations

import os

from ..budgets import identities
from ..errors import DPError
from ..jobs import owners


def admin():
    """The admin identity, or a DPError (no token, a wrong one, or no ``admin init`` yet)."""
    return identities.check_admin_token(os.environ.get(identities.ADMIN_ENV, ""))


def analyst(name: str):
    key = os.environ.get(identities.ANALYST_KEY_ENV, "")
    if not key.strip():
        raise DPError(
            f"--analyst needs the analyst's key in the environment variable {identities.ANALYST_KEY_ENV} "
            "(never on the command line, where other users could see it)"
        )
    return identities.sign_in(name, key)


def asker(name: str | None):
    """Who asks a question: the signed-in analyst (``--analyst`` and the key), else a visitor."""
    if name is not None and not name.strip():
        raise DPError("--analyst is empty; give your analyst name, or leave it out to ask as a visitor")
    return analyst(name) if name is not None else identities.VISITOR


def reader(name: str | None):
    """Who reads a history or a statement: the admin when the token is set (any analyst's, with ``--analyst``),
    else the signed-in analyst, else a visitor."""
    if os.environ.get(identities.ADMIN_ENV, "").strip():
        return admin()
    return asker(name)


def add_admin_flag(p, what: str = "everyone's jobs") -> None:
    """The ``--admin`` option of a command that reads or changes jobs or sweeps."""
    p.add_argument(
        "--admin",
        action="store_true",
        help=f"act as an admin on {what} (needs the admin token in ${identities.ADMIN_ENV})",
    )


def job_caller(args) -> owners.Caller:
    """The CLI owner, an admin after the admin check when ``--admin`` is given."""
    if not getattr(args, "admin", False):
        return owners.CLI
    admin()  # the one admin check: $DP_EXPLORER_ADMIN_TOKEN against the hash `admin init` stored
    return owners.Caller(owners.CLI_OWNER, admin=True)
