"""Statements signed before Ed25519: an HMAC-SHA256 with a secret kept in the home (``statement-signing.key``).

They still verify where that secret is (the home that made them, or ``--key FILE`` with a copy of it), labelled:
a valid HMAC proves only that a holder of that secret made the statement, and anyone who could read the home could
have. Nothing is signed this way any more (:func:`dpcore.statements.signing.sign` uses Ed25519); issue an old
statement again for a signature anyone can check.

The block: ``scheme``, ``canonical`` and ``proves`` (fixed texts, compared), ``key_id`` (a hash of the secret),
``signed_at``, ``body`` (a hash of the canonical body), ``fields`` (a hash per field) and ``mac`` — an HMAC-SHA256
over scheme, key_id, signed_at, body and fields. :func:`mac_block` makes one (for tests of old statements).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dpcore import storage
from dpcore.errors import DPError
from dpcore.statements.canonical import block_edits, body_of, canonical, changes, digest, field_digests

SCHEME = "HMAC-SHA256"
CANONICAL = "JSON with sorted keys, no spaces, UTF-8, floats as Python's json writes them"
PROVES = (
    "written by a holder of this DP Explorer home's key and unchanged since; anyone who can read that key can "
    "sign, and the numbers are checked by recomputing them (python -m dpcore statement --verify FILE)"
)
BLOCK_FIELDS = frozenset({"scheme", "canonical", "key_id", "signed_at", "body", "fields", "proves", "mac"})
LABEL = (
    "an old HMAC-SHA256 signature, checked with the home's secret key: it proves only that a holder of that "
    "secret made the statement (anyone who could read that home could have), and no one without the secret can "
    "check it; issue the statement again for an Ed25519 signature anyone can check"
)


@dataclass
class LegacyCheck:
    problems: list[str] = field(default_factory=list)
    key_id: str | None = None
    note: str = LABEL


def key_id(key: bytes) -> str:
    """A short public name for a secret (a hash of it): which key signed, without revealing it."""
    return hashlib.sha256(b"dp-explorer statement key id\0" + key).hexdigest()[:16]


def _mac(key: bytes, block: Mapping[str, Any]) -> str:
    signed = {k: block[k] for k in ("scheme", "key_id", "signed_at", "body", "fields")}
    return hmac.new(key, canonical(signed), hashlib.sha256).hexdigest()


def mac_block(st: Mapping[str, Any], key: bytes, signed_at: str = "2025-01-01T00:00:00Z") -> dict[str, Any]:
    """``st`` signed as statements were before Ed25519 (what old files hold)."""
    body: dict[str, Any] = json.loads(canonical(body_of(st)))
    block: dict[str, Any] = {
        "scheme": SCHEME,
        "canonical": CANONICAL,
        "key_id": key_id(key),
        "signed_at": signed_at,
        "body": digest(body),
        "fields": field_digests(body),
        "proves": PROVES,
    }
    block["mac"] = _mac(key, block)
    return {**body, "signature": block}


def check(st: Mapping[str, Any], key: bytes | None = None, *, home: bool = True) -> LegacyCheck:
    """What is wrong with an old statement's HMAC; ``key``: the secret (default: this home's, never created)."""
    sig = st["signature"]
    out = LegacyCheck(key_id=str(sig.get("key_id"))[:16] if isinstance(sig.get("key_id"), str) else None)
    if not all(isinstance(sig.get(k), str) for k in ("key_id", "signed_at", "body", "mac")) or not isinstance(
        sig.get("fields"), dict
    ):
        out.problems.append(
            "signature: the signature block is damaged (scheme, key_id, signed_at, body, fields and mac are needed)"
        )
        return out
    edits = block_edits(sig, BLOCK_FIELDS, {"canonical": CANONICAL, "proves": PROVES})
    if edits:
        out.problems += edits
        return out
    if key is None and home:
        key = storage.signing_key(create=False)
    if key is None:
        out.problems.append(
            f"signature: this statement carries an old {SCHEME} signature (key {sig['key_id'][:16]}), which only "
            "the home that made it can check: verify it there, or give that home's secret with --key FILE (its "
            f"{storage.SIGNING_KEY_FILE}); a statement issued now carries an Ed25519 signature anyone can check"
        )
        return out
    if key_id(key) != sig["key_id"]:
        out.problems.append(
            f"signature: signed with the old key {sig['key_id'][:16]}, not with this home's key {key_id(key)}; verify "
            "where the statement was made, or give that key with --key FILE"
        )
        return out
    if not hmac.compare_digest(_mac(key, sig), sig["mac"]):
        out.problems.append(
            "signature: the signature block was changed (its MAC does not match), so no field of this "
            "statement can be trusted"
        )
        return out
    out.problems += changes(st, sig)
    return out


def read_key_file(raw: bytes, name: str) -> bytes:
    """A secret given with --key FILE (the contents of another home's statement-signing.key)."""
    text = raw.decode("ascii", "replace").strip()
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise DPError(f"{name} is not a statement-signing key (64 hex digits, as in a home's statement-signing.key)")
    return bytes.fromhex(text)
