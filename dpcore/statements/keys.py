"""The home's statement-signing key pair (Ed25519): the private key stays in the home, the public key is published.

The private key is :data:`PRIVATE_KEY_FILE` in ``$DP_EXPLORER_HOME`` (PKCS#8 PEM, created 0600 on first use from the
OS CSPRNG by ``cryptography``; written whole to a temporary file and linked into place, so two processes never see
half a key and the first one wins). A key file that others can read, or that is not an Ed25519 private key, is
refused: anyone who can read it can sign.

The public key is published wherever a statement can be checked: inside every statement (with its fingerprint),
on Home, at the HTTP API's ``GET /public-key`` and by ``python -m dpcore admin public-key``. Its **fingerprint** is
the SHA-256 of its 32 raw bytes, in hex (:func:`fingerprint`): the short text a data owner publishes so that anyone
can tell the key inside a statement is theirs.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from dpcore import storage
from dpcore.errors import DPError

ALGORITHM = "Ed25519"
#: The file in the home that holds the private key (PEM, 0600).
PRIVATE_KEY_FILE = "statement-signing-ed25519.pem"
#: The most a public-key file given with ``--public-key`` may hold (a PEM public key is 113 bytes).
PUBLIC_KEY_MAX_BYTES = 10_000
FINGERPRINT_NOTE = "SHA-256 of the key's 32 raw bytes, hex"


def private_key_path() -> Path:
    return storage.configured() / PRIVATE_KEY_FILE


STORE = "the statement-signing key"


def private_key(*, create: bool = True) -> Ed25519PrivateKey | None:
    """The home's private signing key; made on first use when ``create``; None when it does not exist and
    ``create`` is false (verifying never makes a key, nor the home)."""
    path = private_key_path()
    if create and not path.exists():
        pem = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        storage.create_secret(path, pem, store=STORE)
    raw = storage.read_secret(
        path,
        store=STORE,
        renew="make a new key pair (then publish the new public key: statements signed before verify only with "
        "the old one)",
    )
    if raw is None:
        return None
    try:
        key = serialization.load_pem_private_key(raw, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        key = None
    if not isinstance(key, Ed25519PrivateKey):
        raise storage.StorageError(
            f"{STORE} {path} is damaged (not an Ed25519 private key in PEM); move it aside "
            "(a new key pair is made on the next signature; publish its public key)"
        )
    return key


def raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def fingerprint(key: Ed25519PublicKey) -> str:
    """The key's published name: SHA-256 of its 32 raw bytes, 64 hex digits."""
    return hashlib.sha256(raw_public(key)).hexdigest()


def public_pem(key: Ed25519PublicKey) -> str:
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")


def load_public(raw: bytes | str, name: str = "the public key") -> Ed25519PublicKey:
    """An Ed25519 public key from PEM text (as published), or a DPError that says what it should be."""
    data = raw.encode("ascii", "replace") if isinstance(raw, str) else bytes(raw)
    if len(data) > PUBLIC_KEY_MAX_BYTES:
        raise DPError(f"{name} is larger than a public key can be ({PUBLIC_KEY_MAX_BYTES:,} bytes)")
    try:
        key = serialization.load_pem_public_key(data.strip() + b"\n")
    except (ValueError, TypeError, UnsupportedAlgorithm):
        key = None
    if not isinstance(key, Ed25519PublicKey):
        raise DPError(
            f"{name} is not an Ed25519 public key in PEM (-----BEGIN PUBLIC KEY-----, as `python -m dpcore admin "
            "public-key` or the API's /public-key give it)"
        )
    return key


def home_public() -> Ed25519PublicKey:
    """This home's public key (the key pair made on first use): what statements from this server are checked
    against."""
    key = private_key(create=True)
    assert key is not None  # create=True makes one or raises
    return key.public_key()


def published(*, create: bool = True) -> dict[str, str] | None:
    """What the data owner publishes: the algorithm, the public key (PEM) and its fingerprint; None when the home
    has no key and ``create`` is false."""
    key = private_key(create=create)
    if key is None:
        return None
    pub = key.public_key()
    return {
        "algorithm": ALGORITHM,
        "public_key": public_pem(pub),
        "fingerprint": fingerprint(pub),
        "fingerprint_of": FINGERPRINT_NOTE,
    }
