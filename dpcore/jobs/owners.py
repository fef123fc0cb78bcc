"""Who may see and change a job or a sweep: its owner, admins, and everyone for the shared demo.

Every job and every sweep has an **owner**, a short string:

* ``visitor:<32 hex>`` — a visitor's browser: the first 128 bits of a SHA-256 of the random visitor token the
  browser keeps in an HttpOnly cookie (:func:`visitor_owner`; ``docs/identity.md``). A reload, a second tab and a
  restarted browser are the same visitor; another browser (another cookie jar) is another. The store holds only
  the hash, never the token, so a copy of the database lets nobody act as the visitor.
* ``session:<32 hex>`` — one browser session of the app when the browser keeps no cookie: 128 random bits from
  :mod:`secrets`, held only in that session's server-side state (never in a link, never sent to another
  visitor). A reload or a second tab is then a new session and a new owner (the pages say so).
* ``user:<identity>`` — a signed-in user (an analyst's name checked with their key, the identity provider's
  e-mail or subject); pages get it from one helper (``pages.ui.common.job_owner``).
* ``cli`` — the command line: the person who runs the server and holds ``$DP_EXPLORER_HOME`` anyway. Rows
  written before owners existed belong to it.

A :class:`Caller` is who asks (an owner, and whether an admin check passed). The job store and the sweep records
take the caller and refuse with :class:`NotYours` what it may not read or change: a run's or sweep's weights,
metrics, parameters, statement, Cancel, rename and delete are its owner's and the admins' only. Two demos are
*shared*: everyone may read them, only their owner or an admin may change them —

* finished sweeps of the default demo (public digits data, the privacy–utility page's default settings:
  :func:`dpcore.sweep.runs.is_demo`);
* jobs whose registered target has a sharing rule that their parameters meet (:func:`dpcore.jobs.registry.shared`):
  today the re-identification page's default synthetic-data study on the default patients
  (:func:`dpcore.synth.study.is_default`). The store decides it when the job is submitted, never the caller. A
  shared job is readable from the moment it is queued, so a run in progress is shown to everyone, and while one
  is queued or running an identical submission queues nothing (:class:`SharedRunning`, whose ``ref`` is the job
  already running): twenty visitors pressing the same button at once make one run.

:data:`SYSTEM` is the job machinery itself (workers, clean-up of uploads, a sweep reading its own points); no
page or command acts as it.

Shares of the queue (:func:`limited`): a visitor (a browser, a session or a signed-in user) may hold at most
``limits.JOBS_QUEUED_PER_OWNER`` queued jobs and start at most ``limits.SWEEP_MAX_TRAININGS`` model trainings
with one sweep click. The CLI owner is the server's operator and is not limited; its jobs still wait their
fair turn (workers take owners in turn: see :func:`dpcore.jobs.runner.claim`).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

from ..errors import JobError

CLI_OWNER = "cli"
_OWNER_RE = re.compile(r"^(cli|system|(session|visitor):[0-9a-f]{32}|user:[^\x00-\x1f\x7f]{1,200})$")
#: A visitor token as the browser keeps it: 32 random bytes from :mod:`secrets`, URL-safe base64 (43 characters).
VISITOR_TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")
_VISITOR_HASH_CONTEXT = b"dp-explorer visitor owner v1\x00"  # domain separation: this hash is for owner keys only


class NotYours(JobError):
    """A job or sweep that belongs to someone else (not shown, not changed)."""


class AlreadySubmitted(JobError):
    """This click was submitted before (an idempotency key seen again): nothing new was queued.

    ``ref`` is what the first submission created (a job id or a sweep id)."""

    def __init__(self, message: str, ref: str) -> None:
        super().__init__(message)
        self.ref = ref


class SharedRunning(JobError):
    """An identical shared job (the default demo) is already queued or running: nothing new was queued.

    ``ref`` is that job's id: everyone may read it (:func:`dpcore.jobs.registry.shared`)."""

    def __init__(self, message: str, ref: str) -> None:
        super().__init__(message)
        self.ref = ref


class QueueFull(JobError):
    """The owner's share of the queue (or of one sweep click) would be exceeded: nothing was queued."""


def check_owner(owner) -> str:
    """An owner string (see the module docstring) or a JobError."""
    if not isinstance(owner, str) or not _OWNER_RE.match(owner):
        raise JobError(
            f"a job's owner must be 'cli', 'visitor:<32 hex>', 'session:<32 hex>' or 'user:<identity>', got {owner!r}"
        )
    return owner


def session_owner() -> str:
    """A new browser session's owner (a browser that keeps no cookie): 128 random bits, never derived from anything
    a visitor sends."""
    return f"session:{secrets.token_hex(16)}"


def new_visitor_token() -> str:
    """A new visitor token for the browser's cookie: 256 random bits from :mod:`secrets` (never derived from
    anything the visitor sends)."""
    return secrets.token_urlsafe(32)


def is_visitor_token(token) -> bool:
    """Whether ``token`` has the shape :func:`new_visitor_token` gives (anything else is ignored, never owned)."""
    return isinstance(token, str) and bool(VISITOR_TOKEN_RE.match(token))


def visitor_owner(token: str) -> str:
    """The owner of the visitor whose browser keeps ``token``: a one-way hash of it, so the job store and the sweep
    records never hold the token itself (what a copy of them shows cannot be replayed as a cookie)."""
    if not is_visitor_token(token):
        raise JobError("a visitor token is 43 URL-safe characters (dpcore.jobs.owners.new_visitor_token)")
    digest = hashlib.sha256(_VISITOR_HASH_CONTEXT + token.encode("ascii")).hexdigest()
    return f"visitor:{digest[:32]}"


def user_owner(identity: str) -> str:
    """The owner for a signed-in user's identity (the provider's subject or e-mail)."""
    return check_owner(f"user:{str(identity).strip()}")


def limited(owner: str) -> bool:
    """Whether the owner's share of the queue is bounded (visitors are; the CLI operator and SYSTEM are not)."""
    return owner not in (CLI_OWNER, "system")


@dataclass(frozen=True)
class Caller:
    """Who asks: an owner and whether an admin check passed (pages and the CLI check it, then build this)."""

    owner: str
    admin: bool = False

    def __post_init__(self) -> None:
        check_owner(self.owner)

    def may_read(self, owner: str | None, *, shared: bool = False) -> bool:
        return self.admin or shared or (owner or CLI_OWNER) == self.owner

    def may_change(self, owner: str | None) -> bool:
        return self.admin or (owner or CLI_OWNER) == self.owner


#: The job machinery itself: workers, clean-up, a sweep reading its own points. Never a page or a command.
SYSTEM = Caller("system", admin=True)
#: The command line without an admin check: its own jobs and sweeps (and the shared demo ones).
CLI = Caller(CLI_OWNER)


def not_yours(what: str, ident: str, *, shared: bool = False) -> NotYours:
    """The one refusal for someone else's job or sweep (it names nothing of it but the id asked for); ``shared``:
    a shared demo, which the caller may read but not change."""
    if shared:
        return NotYours(
            f"{what} {ident} is shared: everyone may see it, but only the browser or user that started "
            f"it (or an admin) can cancel, rename or delete it; start your own, or ask an admin"
        )
    return NotYours(
        f"{what} {ident} is not yours: only the browser or user that started it (or an admin) can "
        f"see or change it; start your own, or ask an admin"
    )
