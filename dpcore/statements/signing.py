"""Signed privacy statements: HMAC-SHA256 over canonical JSON, with the key kept in the home.

A statement is signed by :func:`sign`: its body (every field but ``signature``) is written as canonical JSON
(keys sorted, no spaces, UTF-8, floats as Python writes them) and hashed; the ``signature`` block holds that
hash, a hash of every field one and two levels down (``accountant``, ``accountant.epsilon``, ``points[3]``), the
key's id and the time, and an HMAC-SHA256 over all of them with the home's key
(:func:`dpcore.storage.signing_key`, 32 random bytes, 0600). :func:`check` recomputes the MAC with the key (the
signature block itself is unchanged; its fixed texts ``canonical`` and ``proves`` must read as this version writes them
and no other field may be added to it), then the hashes: a changed, added or removed field is named.

What a valid signature proves: the statement was written by someone holding this home's key and has not been
changed since. What it does not prove: who that was (anyone who can read the key can sign), or that the numbers
are right — :mod:`dpcore.statements.verify` recomputes those from the recorded settings.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import math

from dpcore.errors import DPError

SCHEME = "HMAC-SHA256"
CANONICAL = "JSON with sorted keys, no spaces, UTF-8, floats as Python's json writes them"
#: What a signature proves, as the block says it. The MAC covers scheme, key_id, signed_at, body and fields;
#: these words and ``canonical`` are fixed texts that :func:`check` compares, so they cannot be changed either.
PROVES = (
    "written by a holder of this DP Explorer home's key and unchanged since; anyone who can read that key can "
    "sign, and the numbers are checked by recomputing them (python -m dpcore statement --verify FILE)"
)
#: Every field of a signature block: any other is refused (a field added to the block is covered by nothing).
BLOCK_FIELDS = frozenset({"scheme", "canonical", "key_id", "signed_at", "body", "fields", "proves", "mac"})
#: Levels of fields that get their own hash, so that a check names what changed ("accountant.epsilon").
FIELD_DEPTH = 2


def canonical(obj) -> bytes:
    """The bytes that are signed: the same for a statement and for the statement read back from its JSON."""
    return json.dumps(_finite(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
        "utf-8"
    )


def _finite(obj):
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None  # as the statement is written (dpcore.storage.jsonio): JSON has no NaN
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):  # numpy scalars
        return _finite(obj.item())
    return obj


def _digest(obj) -> str:
    return hashlib.sha256(canonical(obj)).hexdigest()[:32]


def field_digests(body: dict, depth: int = FIELD_DEPTH) -> dict[str, str]:
    """A hash per field path down to ``depth`` levels: ``{"accountant": …, "accountant.epsilon": …}``."""
    out: dict[str, str] = {}

    def walk(value, path: str, level: int) -> None:
        out[path] = _digest(value)
        if level >= depth:
            return
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{path}.{k}", level + 1)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]", level + 1)

    for k, v in body.items():
        walk(v, str(k), 1)
    return out


def key_id(key: bytes) -> str:
    """A short public name for a key (a hash of it): which key signed, without revealing it."""
    return hashlib.sha256(b"dp-explorer statement key id\0" + key).hexdigest()[:16]


def _mac(key: bytes, block: dict) -> str:
    signed = {k: block[k] for k in ("scheme", "key_id", "signed_at", "body", "fields")}
    return hmac.new(key, canonical(signed), hashlib.sha256).hexdigest()


def body_of(st: dict) -> dict:
    return {k: v for k, v in st.items() if k != "signature"}


def sign(st: dict, key: bytes | None = None) -> dict:
    """``st`` with a ``signature`` block (any earlier one replaced). ``key``: the home's key by default (made on
    first use)."""
    if key is None:
        from dpcore.storage import signing_key

        key = signing_key(create=True)
    body = json.loads(canonical(body_of(st)))  # as it reads back from its JSON (tuples → lists, NaN → null)
    block = {
        "scheme": SCHEME,
        "canonical": CANONICAL,
        "key_id": key_id(key),
        "signed_at": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "body": _digest(body),
        "fields": field_digests(body),
        "proves": PROVES,
    }
    block["mac"] = _mac(key, block)
    return {**body, "signature": block}


def _parent(path: str) -> str | None:
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut] if cut > 0 else None


def check(st: dict, key: bytes | None = None) -> list[str]:
    """What is wrong with ``st``'s signature, as sentences that name fields; [] when it is valid.

    ``key``: the home's key by default (never created here: a home without one cannot check a signature)."""
    sig = st.get("signature")
    if sig is None:
        return [
            "signature: the statement is not signed (statements from this version carry a signature block; "
            "sign it again where it was made)"
        ]
    if (
        not isinstance(sig, dict)
        or not all(isinstance(sig.get(k), str) for k in ("scheme", "key_id", "signed_at", "body", "mac"))
        or not isinstance(sig.get("fields"), dict)
    ):
        return [
            "signature: the signature block is damaged (scheme, key_id, signed_at, body, fields and mac are needed)"
        ]
    if sig["scheme"] != SCHEME:
        return [f"signature: unknown scheme {sig['scheme']!r}; this version checks {SCHEME}"]
    extra = sorted(str(k) for k in sig if k not in BLOCK_FIELDS)
    fixed = [
        f"signature.{k} was changed after signing (it must read as this version writes it)"
        for k, want in (("canonical", CANONICAL), ("proves", PROVES))
        if sig.get(k) != want
    ]
    if extra or fixed:
        return [f"signature.{k[:40]} was added after signing (no signature covers it)" for k in extra] + fixed
    if key is None:
        from dpcore.storage import signing_key, signing_key_path

        key = signing_key(create=False)
        if key is None:
            return [
                f"signature: this home has no signing key ({signing_key_path()}), so the signature of key "
                f"{sig['key_id']} cannot be checked here; verify where the statement was made, or give that "
                "home's key with --key FILE"
            ]
    if key_id(key) != sig["key_id"]:
        return [
            f"signature: signed with key {sig['key_id']}, not with this home's key {key_id(key)}; verify "
            "where the statement was made, or give that key with --key FILE"
        ]
    if not hmac.compare_digest(_mac(key, sig), sig["mac"]):
        return [
            "signature: the signature block was changed (its MAC does not match), so no field of this "
            "statement can be trusted"
        ]
    body = body_of(st)
    if _digest(body) == sig["body"]:
        return []
    now, then = field_digests(body), sig["fields"]
    removed = {p for p in then if p not in now}
    added = {p for p in now if p not in then}
    changed = {p for p in now if p in then and now[p] != then[p]}

    def under(p: str, q: str) -> bool:  # q lies below p
        return q != p and q.startswith(p) and q[len(p)] in ".["

    out = []
    for p in sorted(removed | added | changed):
        if p in changed and any(under(p, q) for q in changed):
            continue  # name the deepest changed field: "accountant.epsilon", not also "accountant"
        if p in removed and _parent(p) in removed or p in added and _parent(p) in added:
            continue  # a removed field's own fields went with it
        what = "was removed" if p in removed else "was added" if p in added else "was changed"
        out.append(f"signature: {p} {what} after signing")
    return out or ["signature: the statement was changed after signing"]


def read_key_file(raw: bytes, name: str) -> bytes:
    """A key given with --key FILE (the contents of another home's key file)."""
    text = raw.decode("ascii", "replace").strip()
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise DPError(f"{name} is not a statement-signing key (64 hex digits, as in a home's statement-signing.key)")
    return bytes.fromhex(text)
