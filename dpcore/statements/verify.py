"""Checking a privacy statement: its signature, the files it covers, then every figure recomputed from its settings.

:func:`parse` reads a statement file's bytes (a JSON object, at most :data:`MAX_DEPTH` levels deep — an array, a
number or deeply nested JSON is a clear error, never a traceback; a key twice in one object, NaN, Infinity or a
number too large for a float are refused: readers differ on them, and the signature covers only what Python's json
keeps). :func:`verify` checks one statement and returns every check it made, passed or failed, each naming its
field (``accountant.epsilon is 0.01, recomputed 0.99``):

* the signature (:func:`dpcore.statements.signing.check`): Ed25519 with the public key given, or the one inside
  the statement (then the result says so, by fingerprint); an old HMAC signature where its home's secret is;
* the files it covers by SHA-256, when given the zip or folder it shipped in (:mod:`dpcore.statements.files`);
* what the statement must say for its kind and every figure, recomputed, by the check beside each kind's builder:
  :func:`dpcore.statements.training.check`, :func:`dpcore.statements.sweep.check`,
  :func:`dpcore.statements.ledger.check`, an advice's :func:`dpcore.advisor.decision.recompute` and a synthetic
  release's :func:`dpcore.synth.statement.recompute`.

A statement passes only when all of these hold. Nothing here reads or makes a home: a statement verifies on any
machine with only the statement (and the owner's public key).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from dpcore import limits, nist, storage
from dpcore.advisor import decision
from dpcore.errors import DPError
from dpcore.statements import files, keys, ledger, legacy, signing, sweep, training
from dpcore.statements import plan as plan_statement
from dpcore.statements.checks import Checker
from dpcore.synth import statement as synth_statement

Json = dict[str, Any]

#: Nesting a statement may have (a real one is 4 levels deep); deeper is refused before any recursion.
MAX_DEPTH = 32


def parse(raw: bytes, name: str = "the file") -> Json:
    """A statement from a file's bytes, or a DPError that says what is wrong with it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DPError(
            f"could not read a statement from {name}: it is not UTF-8 text (a statement is a JSON file "
            "as `statement --job/--sweep` writes it)"
        ) from None
    depth = _depth(text)
    if depth > MAX_DEPTH:
        raise DPError(
            f"could not read a statement from {name}: it is nested {depth} levels deep, and a statement "
            f"is at most {MAX_DEPTH}"
        )
    try:
        st = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_float=_finite_float)
    except _Ambiguous as exc:
        raise DPError(
            f"could not read a statement from {name}: {exc}; a statement as DP Explorer writes it has "
            "neither, so this file was edited"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise DPError(
            f"could not read a statement from {name}: it is not valid JSON ({str(exc)[:120]}); a "
            "statement is a JSON object"
        ) from None
    if not isinstance(st, dict):
        raise DPError(
            f"{name} holds a JSON {type(st).__name__.replace('dict', 'object')}, not a statement (a "
            "JSON object with a kind, a subject and a signature)"
        )
    return st


class _Ambiguous(ValueError):
    """JSON that readers read differently: a key twice in one object, or a number JSON does not allow."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> Json:
    """One object, each key once. With a key twice, Python's json keeps the last value and other readers (or a
    person reading the file) the first: the signature covers only what Python kept, so such a file could show one
    figure and verify another."""
    out: Json = {}
    for k, v in pairs:
        if k in out:
            raise _Ambiguous(f"the field {k[:60]!r} appears twice in one object")
        out[k] = v
    return out


def _no_constant(word: str) -> Any:
    """NaN, Infinity and -Infinity are not JSON; written where the signed statement has null they signed the same
    (the canonical form writes a non-finite number as null)."""
    raise _Ambiguous(f"{word} is not a number JSON allows")


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):  # 1e999 reads as infinity, which the canonical form writes as null
        raise _Ambiguous(f"{text[:40]} is not a finite number")
    return x


def _depth(text: str) -> int:
    """Deepest nesting of [ and { outside strings, without recursion."""
    depth = best = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            best = max(best, depth)
        elif ch in "]}":
            depth -= 1
    return best


# --- the checks of each kind --------------------------------------------------------------------------------


def _advice(c: Checker, st: Mapping[str, Any]) -> None:
    c.extend("advice", decision.recompute(dict(st)), "the advice, solved again from its inputs")


def _synthetic(c: Checker, st: Mapping[str, Any]) -> None:
    c.extend(
        "synthetic_release",
        synth_statement.recompute(dict(st)),
        "ε, δ and ρ from OpenDP's privacy map of the measurement rebuilt from its declarations",
    )


KINDS: dict[str, Callable[[Checker, Mapping[str, Any]], None]] = {
    training.KIND: training.check,
    sweep.KIND: sweep.check,
    ledger.KIND: ledger.check,
    "advice": _advice,
    "synthetic_release": _synthetic,
    plan_statement.KIND: plan_statement.check,
}


def _nist(c: Checker, st: Mapping[str, Any]) -> None:
    """NIST SP 800-226's checks, recomputed from the statement's own fields (statements signed before them have
    none: nothing to compare)."""
    if "nist" not in st:
        return
    again = nist.for_statement({k: v for k, v in st.items() if k not in ("nist", "signature")})
    if st["nist"] == again:
        c.passed("nist", f"nist: {len(again['flags'])} NIST SP 800-226 checks, as recomputed from the statement")
    else:
        c.fail(
            "nist", "nist: the NIST SP 800-226 checks are not those its fields give (a flag added, removed or edited)"
        )


def verify(
    st: Mapping[str, Any],
    *,
    public_key: Ed25519PublicKey | None = None,
    legacy_key: bytes | None = None,
    bundle: files.Bundle | None = None,
    home: bool = True,
) -> Json:
    """The signature, the covered files (with ``bundle``) and every figure of ``st``: ``{"verified", "problems",
    "kind", "subject", "checked", "checks" (each {check, ok, detail}: the figures, the files, then the signature), "signature" (valid,
    scheme, key_fingerprint, key_source, note, signed_at)}``. ``public_key``: the key it must be signed with (else
    the one inside it); ``legacy_key``: an old HMAC statement's secret (else this home's, when ``home``)."""
    c = Checker()
    kind = st.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        c.fail(
            "kind",
            "kind is missing: not a DP Explorer statement (training_run, sweep, ledger, advice, synthetic_release or plan)"
            if kind is None
            else f"kind {str(kind)[:40]!r} is not a statement kind ({', '.join(KINDS)})",
        )
    else:
        try:
            KINDS[kind](c, st)
            _nist(c, st)
        except (AttributeError, KeyError, TypeError, IndexError, ValueError) as exc:  # a damaged structure
            c.fail(
                "structure",
                f"the statement's structure is damaged ({type(exc).__name__}: {str(exc)[:80]}); it cannot be "
                "recomputed",
            )
    files.check(c, st, bundle)
    sig = signing.check(st, public_key=public_key, legacy_key=legacy_key, home=home)
    if sig.valid:
        c.passed("signature", f"{sig.scheme} signature valid: {sig.note}")
    for p in sig.problems:
        c.fail("signature", p)
    block = st.get("signature") if isinstance(st.get("signature"), dict) else {}
    return {
        "verified": not c.problems,
        "problems": c.problems,
        "kind": kind,
        "subject": st.get("subject"),
        "checked": c.checked,
        "checks": [f.as_dict() for f in c.findings],
        "signature": {**sig.as_dict(), "signed_at": (block or {}).get("signed_at")},
    }


def verify_bytes(
    raw: bytes,
    name: str = "the file",
    *,
    public_key: Ed25519PublicKey | None = None,
    home: bool = True,
) -> Json:
    """:func:`verify` of a statement file's bytes (an upload): bounded, parsed strictly, never a traceback."""
    if len(raw) > limits.STATEMENT_MAX_BYTES:
        raise DPError(f"{name} is larger than a statement can be ({limits.STATEMENT_MAX_BYTES:,} bytes)")
    return verify(parse(raw, name), public_key=public_key, home=home)


def verify_path(text: str, *, public_key_file: str | None = None, key_file: str | None = None) -> Json:
    """``statement --verify TEXT [--public-key PEM] [--key FILE]``: a statement file, a release zip or a folder,
    checked with the public key in ``public_key_file`` (else the one inside the statement) and, for an old HMAC
    statement, the secret in ``key_file`` (else this home's)."""
    bundle = files.read_bundle(text)
    if len(bundle.statement) > limits.STATEMENT_MAX_BYTES:
        raise DPError(f"{bundle.name} is larger than a statement can be ({limits.STATEMENT_MAX_BYTES:,} bytes)")
    st = parse(bundle.statement, bundle.name)
    pub = None
    if public_key_file is not None:
        raw = storage.read_user_file(
            public_key_file, max_bytes=keys.PUBLIC_KEY_MAX_BYTES, what="public key file", option="--public-key"
        )
        pub = keys.load_public(raw, public_key_file)
    secret = None
    if key_file is not None:
        secret = legacy.read_key_file(
            storage.read_user_file(key_file, max_bytes=1000, what="key file", option="--key"), key_file
        )
    files.siblings(bundle, st)
    out = verify(st, public_key=pub, legacy_key=secret, bundle=bundle)
    out["files"] = {
        "given": "the whole release (a zip or a folder)" if bundle.complete else "a statement file",
        "checked": sorted(bundle.files),
    }
    return out
