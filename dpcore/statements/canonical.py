"""What is signed: a statement's canonical JSON, a hash of it and a hash of each field, so that a check names what
changed ("accountant.epsilon was changed after signing"). Shared by the Ed25519 signatures
(:mod:`dpcore.statements.signing`) and the old HMAC ones (:mod:`dpcore.statements.legacy`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

#: Levels of fields that get their own hash, so that a check names what changed ("accountant.epsilon").
FIELD_DEPTH = 2

Json = dict[str, Any]


def block_edits(sig: Mapping[str, Any], allowed: frozenset[str], fixed: Mapping[str, str]) -> list[str]:
    """A signature block's own edits: a field no version writes (covered by nothing), or a fixed text (what a
    signature proves, how the JSON is written) that does not read as this version writes it."""
    added = [
        f"signature.{str(k)[:40]} was added after signing (no signature covers it)"
        for k in sorted(map(str, sig))
        if k not in allowed
    ]
    changed = [
        f"signature.{k} was changed after signing (it must read as this version writes it)"
        for k, want in fixed.items()
        if sig.get(k) != want
    ]
    return added + changed


def canonical(obj: Any) -> bytes:
    """The bytes that are signed: the same for a statement and for the statement read back from its JSON."""
    return json.dumps(_finite(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
        "utf-8"
    )


def _finite(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None  # as the statement is written (dpcore.storage.jsonio): JSON has no NaN
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):  # numpy scalars
        return _finite(obj.item())
    return obj


def digest(obj: Any) -> str:
    return hashlib.sha256(canonical(obj)).hexdigest()[:32]


def field_digests(body: Json, depth: int = FIELD_DEPTH) -> dict[str, str]:
    """A hash per field path down to ``depth`` levels: ``{"accountant": …, "accountant.epsilon": …}``."""
    out: dict[str, str] = {}

    def walk(value: Any, path: str, level: int) -> None:
        out[path] = digest(value)
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


def body_of(st: Mapping[str, Any]) -> Json:
    return {k: v for k, v in st.items() if k != "signature"}


def _parent(path: str) -> str | None:
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut] if cut > 0 else None


def changes(st: Mapping[str, Any], sig: Mapping[str, Any]) -> list[str]:
    """The fields changed, added or removed since signing, by comparing the body with the block's digests (whose
    own integrity the caller has checked): the deepest changed field is named, "accountant.epsilon"."""
    body = body_of(st)
    if digest(body) == sig["body"]:
        return []
    now, then = field_digests(body), dict(sig["fields"])
    removed = {p for p in then if p not in now}
    added = {p for p in now if p not in then}
    changed = {p for p in now if p in then and now[p] != then[p]}

    def under(p: str, q: str) -> bool:  # q lies below p
        return q != p and q.startswith(p) and q[len(p)] in ".["

    out = []
    for p in sorted(removed | added | changed):
        if p in changed and any(under(p, q) for q in changed):
            continue  # name the deepest changed field: "accountant.epsilon", not also "accountant"
        if (p in removed and _parent(p) in removed) or (p in added and _parent(p) in added):
            continue  # a removed field's own fields went with it
        what = "was removed" if p in removed else "was added" if p in added else "was changed"
        out.append(f"signature: {p[:120]} {what} after signing")
    return out or ["signature: the statement was changed after signing"]
