"""Signed privacy statements: Ed25519 over canonical JSON. Anyone can check a signature; only the home can make one.

A statement is signed by :func:`sign` with the home's private key (:mod:`dpcore.statements.keys`). Its body (every
field but ``signature``) is written as canonical JSON (keys sorted, no spaces, UTF-8, floats as Python writes them)
and hashed; the ``signature`` block holds that hash, a hash of every field one and two levels down
(``accountant``, ``accountant.epsilon``, ``points[3]``) so that a check names what changed, the public key (PEM)
with its fingerprint, the time, and an Ed25519 signature over all of them (every other field of the block, as
canonical JSON, after :data:`CONTEXT`). :func:`issue` adds the SHA-256 of each file the statement ships with
(:mod:`dpcore.statements.files`) before signing.

:func:`check` verifies the signature with the public key it is given — or, when none is given, with the key inside
the statement, and then says so: a valid signature by the embedded key proves that the statement is unchanged since
its key's holder signed it, and proves *who* signed only when that key's fingerprint is the data owner's published
one. A fingerprint that does not match its key is refused (a forger would name the owner's fingerprint beside their
own key).

Statements signed before Ed25519 carry an HMAC-SHA256 block made with a secret in the home
(:mod:`dpcore.statements.legacy`): they still verify where that secret exists, labelled as such.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from dpcore.errors import DPError
from dpcore.statements import files as shipped
from dpcore.statements import keys, legacy
from dpcore.statements.canonical import Json, block_edits, body_of, canonical, changes, digest, field_digests

SCHEME = keys.ALGORITHM
CANONICAL = "JSON with sorted keys, no spaces, UTF-8, floats as Python's json writes them"
#: Signed before the block's canonical JSON, so that a signature over anything else never passes for one here.
CONTEXT = b"DP Explorer privacy statement, Ed25519 signature v2\x00"
#: What a signature proves, as the block says it (signed with the rest of the block).
PROVES = (
    "unchanged since the holder of this block's key signed it; it proves who signed only when the key's "
    "fingerprint is the data owner's published one (their Home page, the API's GET /public-key, python -m dpcore "
    "admin public-key); the numbers are checked by recomputing them (python -m dpcore statement --verify FILE)"
)
#: Every field of a signature block: any other is refused by name.
BLOCK_FIELDS = frozenset(
    {"scheme", "canonical", "public_key", "key_fingerprint", "signed_at", "body", "fields", "proves", "signature"}
)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _message(block: Mapping[str, Any]) -> bytes:
    return CONTEXT + canonical({k: v for k, v in block.items() if k != "signature"})


def sign(st: Mapping[str, Any], key: Ed25519PrivateKey | None = None) -> Json:
    """``st`` with a ``signature`` block (any earlier one replaced). ``key``: the home's private key by default
    (made on first use)."""
    if key is None:
        key = keys.private_key(create=True)
        assert key is not None  # create=True makes one or raises
    body: Json = json.loads(canonical(body_of(st)))  # as it reads back from its JSON (tuples → lists, NaN → null)
    pub = key.public_key()
    block: Json = {
        "scheme": SCHEME,
        "canonical": CANONICAL,
        "public_key": keys.public_pem(pub),
        "key_fingerprint": keys.fingerprint(pub),
        "signed_at": _now(),
        "body": digest(body),
        "fields": field_digests(body),
        "proves": PROVES,
    }
    block["signature"] = base64.b64encode(key.sign(_message(block))).decode("ascii")
    return {**body, "signature": block}


def issue(st: Mapping[str, Any], files: Mapping[str, bytes] | None = None) -> Json:
    """A statement as it leaves the server: with the SHA-256 of each file it ships with (``files``: name → bytes,
    e.g. the weights, the synthetic CSV) and signed with the home's key."""
    body = dict(st)
    if files:
        body[shipped.FIELD] = shipped.cover(files)
    return sign(body)


# --- checking ---------------------------------------------------------------------------------------------------


@dataclass
class SignatureCheck:
    """What :func:`check` found: ``problems`` (sentences naming fields; none when valid), the scheme, the key's
    fingerprint (or a legacy key's id), ``source`` ("given", "embedded", "home" or "legacy") and ``note``: which key
    was checked and what a valid signature by it proves."""

    problems: list[str] = field(default_factory=list)
    scheme: str | None = None
    fingerprint: str | None = None
    source: str | None = None
    note: str = ""

    @property
    def valid(self) -> bool:
        return not self.problems

    def as_dict(self) -> Json:
        return {
            "valid": self.valid,
            "scheme": self.scheme,
            "key_fingerprint": self.fingerprint,
            "key_source": self.source,
            "note": self.note,
        }


def _home_fingerprint() -> str | None:
    try:
        key = keys.private_key(create=False)
    except DPError:
        return None  # a damaged or exposed key on this machine says nothing about the statement's
    return None if key is None else keys.fingerprint(key.public_key())


def embedded_note(fp: str) -> str:
    return (
        f"checked with the public key inside the statement (fingerprint {fp}): this proves the statement is "
        "unchanged since that key's holder signed it, and proves who signed only when this fingerprint is the data "
        "owner's published one (their Home page, the API's GET /public-key, python -m dpcore admin public-key); "
        "give their key with --public-key FILE.pem to check against it"
    )


def check(
    st: Mapping[str, Any],
    *,
    public_key: Ed25519PublicKey | None = None,
    legacy_key: bytes | None = None,
    home: bool = True,
) -> SignatureCheck:
    """The signature of ``st``. ``public_key``: the key it must be signed with (the owner's published one); without
    it, the key inside the statement, and the note says so. ``legacy_key``: the secret an old HMAC statement was
    signed with (default: this home's, where it exists). ``home``: whether to look at this machine's home at all
    (never created)."""
    sig = st.get("signature")
    if sig is None:
        return SignatureCheck(
            [
                "signature: the statement is not signed (statements carry a signature block; issue it again where it "
                "was made)"
            ]
        )
    if not isinstance(sig, dict) or not isinstance(sig.get("scheme"), str):
        return SignatureCheck(["signature: the signature block is damaged (it has no scheme)"])
    if sig["scheme"] != SCHEME:
        if sig["scheme"] == legacy.SCHEME:
            res = legacy.check(st, legacy_key, home=home)
            return SignatureCheck(res.problems, legacy.SCHEME, res.key_id, "legacy", res.note)
        return SignatureCheck(
            [
                f"signature: unknown scheme {str(sig['scheme'])[:40]!r}; this version checks {SCHEME} (and old "
                f"{legacy.SCHEME} statements where their home's secret is)"
            ],
            str(sig["scheme"])[:40],
        )
    out = SignatureCheck(scheme=SCHEME)
    need: dict[str, Callable[[Any], bool]] = {
        k: (lambda v: isinstance(v, str))
        for k in ("canonical", "public_key", "key_fingerprint", "signed_at", "body", "proves", "signature")
    }
    need["fields"] = lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values())
    missing = [k for k, ok in need.items() if not ok(sig.get(k))]
    if missing:
        out.problems.append(f"signature: the signature block is damaged ({', '.join(missing)} missing or not text)")
        return out
    edits = block_edits(sig, BLOCK_FIELDS, {"canonical": CANONICAL, "proves": PROVES})
    if edits:
        out.problems += edits
        return out
    try:
        embedded = keys.load_public(sig["public_key"], "signature.public_key")
    except DPError as err:
        out.problems.append(f"signature: {err}")
        return out
    fp = keys.fingerprint(embedded)
    out.fingerprint = fp
    if sig["key_fingerprint"] != fp:
        out.problems.append(
            f"signature.key_fingerprint {sig['key_fingerprint'][:64]!r} is not the fingerprint of the key beside it "
            f"({fp}): the block names someone else's key"
        )
        return out
    if public_key is not None:
        want = keys.fingerprint(public_key)
        out.source = "given"
        out.note = f"checked with the public key given (fingerprint {want})"
        if want != fp:
            out.problems.append(
                f"signature: signed by the key with fingerprint {fp}, not by the key given ({want}): this "
                "statement was not signed by that key's holder"
            )
            return out
    else:
        mine = _home_fingerprint() if home else None
        out.source = "home" if mine == fp else "embedded"
        out.note = embedded_note(fp) + (
            "; it is this home's own key" if mine == fp else f"; it is not this home's key ({mine})" if mine else ""
        )
    try:
        raw = base64.b64decode(sig["signature"], validate=True)
        embedded.verify(raw, _message(sig))
    except (binascii.Error, ValueError, InvalidSignature):
        out.problems.append(
            "signature: the Ed25519 signature does not match the signature block (the block was changed or the "
            "signature forged), so no field of this statement can be trusted"
        )
        return out
    out.problems += changes(st, sig)
    return out
