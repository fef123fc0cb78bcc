"""Who asks: identities, the admin token and analysts' keys.

* An :class:`Identity` is made only by checking something: :func:`check_admin_token` (the admin token against the
  hash the data owner stored with ``python -m dpcore admin init``), :func:`sign_in` (an analyst's name and key
  against the key's stored hash), :func:`from_oidc` (the claims of a provider's ID token, which Streamlit has
  verified) — or it is :data:`VISITOR`, who has not signed in. A typed name alone is never an identity.
* Secrets are stored as salted scrypt hashes (``hashlib.scrypt``, n = 2¹⁴, r = 8): the admin token in the
  ledger's ``meta`` table, each analyst's key in ``analysts``. Nothing compares with the caller's own
  environment: a made-up ``DP_EXPLORER_ADMIN_TOKEN`` is just a wrong token.
* Analyst names are canonicalised (NFKC, casefold, trimmed, inner spaces collapsed): look-alike names are one
  analyst. ``visitors`` is reserved for the shared quota of people who have not signed in.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
import time
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import limits
from ..errors import DPError
from . import store

ADMIN_ENV = "DP_EXPLORER_ADMIN_TOKEN"
ANALYST_KEY_ENV = "DP_EXPLORER_ANALYST_KEY"
VISITORS = "visitors"
ADMIN_NAME = "admin"
_HASH_KEY = "admin_token_hash"
_SCRYPT = {"n": 2**14, "r": 8, "p": 1}


@dataclass(frozen=True)
class Identity:
    """A checked identity. ``kind``: "visitor", "analyst" or "admin"; ``name``: the canonical key its quotas and
    history are kept under; ``display``: as shown; ``via``: how it was checked ("none", "key", "oidc", "token")."""

    kind: str
    name: str
    display: str
    via: str = "none"

    @property
    def is_admin(self) -> bool:
        return self.kind == "admin"

    @property
    def is_visitor(self) -> bool:
        return self.kind == "visitor"

    def describe(self) -> str:
        if self.is_visitor:
            return "a visitor (not signed in)"
        how = {"key": "with a key", "oidc": "through the identity provider", "token": "with the admin token"}
        return f"{'admin' if self.is_admin else 'analyst'} {self.display!r} (signed in {how.get(self.via, '')})"


VISITOR = Identity("visitor", VISITORS, "visitor", "none")


# --- names --------------------------------------------------------------------------------------------------


def canonical_analyst(name: object) -> str:
    """The key of an analyst name: NFKC, casefold, trimmed, inner whitespace collapsed, invisible characters gone."""
    if not isinstance(name, str):
        raise DPError("analyst name is empty; enter the name the data owner registered you under")
    key = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", name).casefold()).strip()
    key = "".join(ch for ch in key if unicodedata.category(ch) not in ("Cf", "Cc", "Cs"))  # zero-width, controls
    key = unicodedata.normalize("NFKC", key).strip()
    if not key:
        raise DPError("analyst name is empty; enter the name the data owner registered you under")
    if len(key) > 100:
        raise DPError("analyst name is longer than 100 characters; use a shorter name")
    return key


def display_name(name: str) -> str:
    return "".join(ch for ch in re.sub(r"\s+", " ", name).strip() if unicodedata.category(ch) not in ("Cc", "Cs"))[:100]


# --- secrets ------------------------------------------------------------------------------------------------


def hash_secret(secret: str) -> str:
    """A salted scrypt hash, ``scrypt$n$r$p$salt$hash`` (hex)."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(secret.encode("utf-8", "surrogatepass"), salt=salt, dklen=32, **_SCRYPT)
    return f"scrypt${_SCRYPT['n']}${_SCRYPT['r']}${_SCRYPT['p']}${salt.hex()}${digest.hex()}"


def _verify(secret: str, stored: str | None) -> bool:
    """Constant-time check of ``secret`` against a stored hash (a dummy hash is computed when there is none, so a
    wrong name costs as long as a wrong key)."""
    try:
        _, n, r, p, salt, digest = (stored or "").split("$")
        params = {"n": int(n), "r": int(r), "p": int(p)}
        salt_b, want = bytes.fromhex(salt), bytes.fromhex(digest)
    except ValueError:
        params, salt_b, want = _SCRYPT, b"\0" * 16, None
    got = hashlib.scrypt(secret.encode("utf-8", "surrogatepass"), salt=salt_b, dklen=32, maxmem=2**26, **params)
    return want is not None and hmac.compare_digest(got, want)


def _text_secret(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        return ""
    value = value.strip()
    if len(value) > 1000:
        raise DPError(f"the {what} is longer than 1,000 characters; check what was pasted")
    return value


# --- the admin ----------------------------------------------------------------------------------------------


def admin_initialised(*, path: store.LedgerPath = None) -> bool:
    """True once the data owner has stored the admin token's hash (``python -m dpcore admin init``)."""
    with store.reading(path) as conn:
        return (
            conn is not None and conn.execute("SELECT 1 FROM meta WHERE key = ?", (_HASH_KEY,)).fetchone() is not None
        )


def _not_initialised() -> DPError:
    return DPError(
        "admin actions are disabled until the data owner sets the admin token: run `python -m dpcore "
        f"admin init` on the server (the token comes from {ADMIN_ENV} or a prompt; only its hash is kept)"
    )


def init_admin(token: object, *, current: object = None, path: store.LedgerPath = None) -> dict[str, Any]:
    """Store the hash of the admin token (the data owner, once). Replacing it needs the current token."""
    token = _text_secret(token, "admin token")
    if len(token) < limits.ADMIN_TOKEN_MIN_CHARS:
        raise DPError(
            f"the admin token must have at least {limits.ADMIN_TOKEN_MIN_CHARS} characters; make a long "
            "random one, e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    with store.immediate(path, unharmed="nothing was changed") as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (_HASH_KEY,)).fetchone()
        if row is not None:
            if current is None:
                raise DPError(
                    "an admin token is set already; to replace it run `python -m dpcore admin init "
                    f"--replace` with the current token in {ADMIN_ENV} and the new one at the prompt"
                )
            if not _verify(_text_secret(current, "admin token"), row["value"]):
                raise DPError("the current admin token is wrong; nothing was changed")
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (_HASH_KEY, hash_secret(token)))
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('admin_token_set', ?)", (repr(time.time()),))
    return {
        "admin": "initialised" if row is None else "replaced",
        "stored": "a salted scrypt hash of the token",
        "ledger": str(store.resolve(path)),
    }


def check_admin_token(token: object, *, path: store.LedgerPath = None) -> Identity:
    """The one check of "is this token the admin's": compared with the hash the data owner stored (never with
    anyone's environment). Returns the admin :class:`Identity`; raises DPError otherwise (also before
    ``admin init``). Pages, the CLI and the jobs code call this."""
    with store.reading(path) as conn:
        row = None if conn is None else conn.execute("SELECT value FROM meta WHERE key = ?", (_HASH_KEY,)).fetchone()
    if row is None:
        raise _not_initialised()
    given = _text_secret(token, "admin token")
    if not given or not _verify(given, row["value"]):
        raise DPError(
            f"the admin token is missing or wrong; give the token the data owner set with `admin init` "
            f"({ADMIN_ENV} on the command line, the admin box on the page)"
        )
    return Identity("admin", ADMIN_NAME, "admin", "token")


def require_admin(who: Identity) -> Identity:
    if not isinstance(who, Identity) or not who.is_admin:
        raise DPError(
            "this is an admin action: sign in as the admin (the admin token, or an identity listed as an "
            "admin in the server's configuration)"
        )
    return who


# --- analysts -----------------------------------------------------------------------------------------------


def new_key() -> str:
    return "dpx_" + secrets.token_urlsafe(limits.ANALYST_KEY_BYTES)


def ensure_analyst(conn: sqlite3.Connection, name: str, *, oidc: bool, actor: Identity) -> tuple[str, str, str | None]:
    """Inside a transaction: the analyst ``name`` (created if missing). Returns (key, display, a new key or None):
    a key is issued (shown once) when a key-holding analyst has none."""
    key, display = canonical_analyst(name), display_name(name)
    if key in (VISITORS, ADMIN_NAME):
        raise DPError(
            f"{key!r} is reserved ({'the shared quota of people who have not signed in' if key == VISITORS else 'the admin token'});"
            " choose another analyst name"
        )
    kind = "oidc" if oidc else "key"
    row = conn.execute("SELECT * FROM analysts WHERE name = ?", (key,)).fetchone()
    issued = None
    if row is None:
        issued = None if oidc else new_key()
        conn.execute(
            "INSERT INTO analysts (name, display, kind, key_hash, created) VALUES (?,?,?,?,?)",
            (key, display, kind, None if issued is None else hash_secret(issued), time.time()),
        )
    else:
        if row["kind"] in ("oidc", "key") and row["kind"] != kind:
            raise DPError(
                f"analyst {row['display']!r} signs in {'through the identity provider' if row['kind'] == 'oidc' else 'with a key'}; "
                f"{'drop' if row['kind'] == 'key' else 'add'} --oidc, or choose another name"
            )
        display = row["display"]
        if not oidc and (row["key_hash"] is None or row["revoked"] is not None):  # legacy or revoked: a new key
            issued = new_key()
            conn.execute(
                "UPDATE analysts SET kind = 'key', key_hash = ?, revoked = NULL WHERE name = ?",
                (hash_secret(issued), key),
            )
        elif oidc and row["revoked"] is not None:
            conn.execute("UPDATE analysts SET kind = 'oidc', revoked = NULL WHERE name = ?", (key,))
    if issued is not None:
        conn.execute(
            "INSERT INTO events (analyst, actor, ts, kind, note) VALUES (?,?,?,'key',?)",
            (key, actor.display, time.time(), "a new key was issued (only its hash is stored)"),
        )
    return key, display, issued


def issue_key(who: Identity, name: str, *, path: store.LedgerPath = None) -> dict[str, Any]:
    """Admin: a new key for an analyst (an earlier key stops working). The key is returned once."""
    require_admin(who)
    key = canonical_analyst(name)
    with store.immediate(path, unharmed="nothing was changed") as conn:
        row = conn.execute("SELECT * FROM analysts WHERE name = ?", (key,)).fetchone()
        if row is None:
            raise DPError(
                f"there is no analyst {display_name(name)!r}; add one with `python -m dpcore analyst add "
                "NAME --dataset D --epsilon E`"
            )
        if row["kind"] == "oidc":
            raise DPError(f"analyst {row['display']!r} signs in through the identity provider and has no key")
        secret = new_key()
        conn.execute(
            "UPDATE analysts SET kind = 'key', key_hash = ?, revoked = NULL WHERE name = ?", (hash_secret(secret), key)
        )
        conn.execute(
            "INSERT INTO events (analyst, actor, ts, kind, note) VALUES (?,?,?,'key',?)",
            (key, who.display, time.time(), "a new key was issued; the earlier key no longer works"),
        )
    return {
        "analyst": row["display"],
        "key": secret,
        "note": f"shown once: give it to the analyst (CLI: {ANALYST_KEY_ENV}); only its hash is stored",
    }


def revoke(who: Identity, name: str, *, path: store.LedgerPath = None) -> dict[str, Any]:
    """Admin: the analyst can no longer sign in (their quotas and history stay, for the record)."""
    require_admin(who)
    key = canonical_analyst(name)
    with store.immediate(path, unharmed="nothing was changed") as conn:
        row = conn.execute("SELECT * FROM analysts WHERE name = ?", (key,)).fetchone()
        if row is None or key == VISITORS:
            raise DPError(
                f"there is no analyst {display_name(name)!r} to revoke; `python -m dpcore analyst list` shows them"
            )
        conn.execute("UPDATE analysts SET key_hash = NULL, revoked = ? WHERE name = ?", (time.time(), key))
        conn.execute(
            "INSERT INTO events (analyst, actor, ts, kind, note) VALUES (?,?,?,'revoke',?)",
            (key, who.display, time.time(), "signing in revoked; quotas and history kept"),
        )
    return {"analyst": row["display"], "revoked": True}


def sign_in(name: object, key: object, *, path: store.LedgerPath = None) -> Identity:
    """An analyst's identity from their name and key (checked against the stored hash). One message for a wrong
    name, a wrong key and a revoked key."""
    given = _text_secret(key, "key")
    try:
        canon = canonical_analyst(name)
    except DPError:
        canon = None
    with store.reading(path) as conn:
        row = (
            None
            if conn is None or canon is None
            else conn.execute(
                "SELECT * FROM analysts WHERE name = ? AND kind = 'key' AND revoked IS NULL", (canon,)
            ).fetchone()
        )
    ok = _verify(given or "-", row["key_hash"] if row is not None else None)
    if not (given and ok and row is not None and canon is not None):
        raise DPError(
            "the analyst name or key is wrong (or the key was revoked); use the key the data owner gave "
            f"you (CLI: {ANALYST_KEY_ENV}), or ask them for a new one"
        )
    assert canon is not None  # a row was found under it
    return Identity("analyst", canon, row["display"], "key")


def _stable_email(email: str) -> bool:
    """Whether the canonical key of a verified e-mail is the e-mail itself up to letter case. NFKC, casefolding
    and the removal of invisible characters (:func:`canonical_analyst`, right for typed names) would give distinct
    mailboxes one key: "ＡＤＭＩＮ@corp.org" (full-width), "straße@x.de" (ß → ss) or "ad\u200bmin@corp.org" would
    sign in as admin@corp.org or strasse@x.de — their quota, their history, an admin's rights."""
    try:
        return canonical_analyst(email) == email.lower()
    except DPError:
        return False


def from_oidc(claims: Mapping[str, Any] | None, admins: Iterable[object] = ()) -> Identity:
    """The identity of a person signed in through the OpenID Connect provider: their e-mail when the provider
    says it is verified and no normalisation would merge it with another mailbox (:func:`_stable_email`; else
    the subject), otherwise ``sub:<subject>``. An admin when that identity is listed in ``admins`` (the server's
    configuration)."""
    claims = dict(claims or {})
    email = claims.get("email")
    verified = claims.get("email_verified") in (True, "true", "True", 1)
    if isinstance(email, str) and email.strip() and verified and _stable_email(email.strip()):
        ident = email.strip()
    elif isinstance(claims.get("sub"), str) and claims["sub"].strip():
        ident = "sub:" + claims["sub"].strip()
    else:
        raise DPError("the identity provider returned neither a verified e-mail nor a subject; sign in again")
    canon = canonical_analyst(ident)
    listed = set()
    for a in admins or ():
        try:
            listed.add(canonical_analyst(str(a)))
        except DPError:
            continue
    return Identity("admin" if canon in listed else "analyst", canon, display_name(ident), "oidc")


def analysts(who: Identity, *, dataset: str | None = None, path: store.LedgerPath = None) -> list[dict[str, Any]]:
    """Admin: every analyst (or those with a quota on ``dataset``, a fingerprint) with their quotas."""
    require_admin(who)
    with store.reading(path) as conn:
        if conn is None:
            return []
        names = {r["fingerprint"]: r["name"] for r in conn.execute("SELECT fingerprint, name FROM datasets")}
        out = []
        for a in conn.execute("SELECT * FROM analysts ORDER BY created").fetchall():
            qs = conn.execute("SELECT * FROM quotas WHERE analyst = ? ORDER BY created", (a["name"],)).fetchall()
            if dataset is not None and not any(q["dataset"] == dataset for q in qs):
                continue
            out.append(
                {
                    "analyst": a["display"],
                    "signs_in": {
                        "key": "with a key",
                        "oidc": "through the identity provider",
                        "visitors": "not at all (everyone who has not signed in)",
                        "legacy": "not yet: issue a key (analyst key NAME)",
                    }[a["kind"]],
                    "revoked": a["revoked"] is not None,
                    "quotas": [
                        {
                            "dataset": names.get(q["dataset"], q["dataset"]),
                            "epsilon_total": q["total_micro"] / 1e6,
                            "epsilon_spent": q["spent_micro"] / 1e6,
                            "closed": q["closed"] is not None,
                        }
                        for q in qs
                    ],
                }
            )
    return out
