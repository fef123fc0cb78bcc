"""Signed statements (dpcore.statements.signing, keys, legacy): an Ed25519 key pair whose private half stays in the
home (0600), signatures anyone can check with the public half, edits named, old HMAC statements still verified
where their secret is."""

import base64
import json
import os
import stat

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dpcore import storage
from dpcore.errors import DPError
from dpcore.statements import canonical, keys, legacy, signing

ST = {
    "kind": "ledger",
    "subject": {"analyst": "ann", "dataset": "k"},
    "accountant": {"epsilon": 0.9, "delta": 1e-7},
    "queries": [{"epsilon": 0.5, "delta": 0.0}, {"epsilon": 0.4, "delta": 1e-7}],
    "summary": "ε = 0.9",
}


def test_key_pair_is_made_once_in_the_home_readable_by_its_owner_only(dp_home):
    assert keys.private_key(create=False) is None and not dp_home.exists()  # asking never makes a home
    key = keys.private_key()
    path = keys.private_key_path()
    assert path.parent == dp_home and path.name == keys.PRIVATE_KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and b"PRIVATE KEY" in path.read_bytes()
    again = keys.private_key(create=False)
    assert keys.fingerprint(again.public_key()) == keys.fingerprint(key.public_key())  # the same key every time
    assert [p.name for p in dp_home.iterdir() if p.name.startswith(".secret.")] == []  # no temporary file left
    pub = keys.published()
    assert pub["algorithm"] == "Ed25519" and pub["public_key"].startswith("-----BEGIN PUBLIC KEY-----")
    assert pub["fingerprint"] == keys.fingerprint(keys.load_public(pub["public_key"])) and len(pub["fingerprint"]) == 64


def test_a_key_others_can_read_or_a_damaged_key_is_refused(dp_home):
    keys.private_key()
    path = keys.private_key_path()
    os.chmod(path, 0o644)
    with pytest.raises(storage.StorageError, match="can be read by others .*chmod 600"):
        keys.private_key()
    os.chmod(path, 0o600)
    path.write_text("not a key")
    with pytest.raises(storage.StorageError, match="damaged"):
        keys.private_key()


def test_signature_is_ed25519_over_canonical_json_that_anyone_can_check_with_the_public_key(dp_home):
    st = signing.sign(ST)
    sig = st["signature"]
    pub = keys.load_public(sig["public_key"])
    assert sig["scheme"] == "Ed25519" and sig["key_fingerprint"] == keys.fingerprint(pub)
    body = json.dumps(ST, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert sig["body"] == __import__("hashlib").sha256(body).hexdigest()[:32]
    signed = {k: v for k, v in sig.items() if k != "signature"}
    message = signing.CONTEXT + json.dumps(signed, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    pub.verify(base64.b64decode(sig["signature"]), message)  # by hand, with cryptography only: no exception
    assert signing.check(json.loads(json.dumps(st))).valid  # survives a round trip through its JSON file
    assert "private" not in json.dumps(sig).lower()  # the block holds the public key only


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda s: s["accountant"].update(epsilon=0.01), "accountant.epsilon was changed"),
        (lambda s: s["queries"].pop(0), "queries[1] was removed"),
        (lambda s: s.pop("summary"), "summary was removed"),
        (lambda s: s.update(extra=1), "extra was added"),
        (lambda s: s["subject"].update(analyst="bob"), "subject.analyst was changed"),
    ],
)
def test_an_edit_is_named(dp_home, edit, named):
    st = signing.sign(ST)
    edit(st)
    assert any(named in p for p in signing.check(st).problems), signing.check(st).problems


def test_a_statement_signed_by_another_key_fails_against_the_owners_key(dp_home):
    owner = keys.private_key().public_key()
    forger = Ed25519PrivateKey.generate()
    forged = signing.sign({**ST, "accountant": {"epsilon": 0.01, "delta": 1e-7}}, forger)
    res = signing.check(forged, public_key=owner)
    assert not res.valid and f"not by the key given ({keys.fingerprint(owner)})" in res.problems[0]
    alone = signing.check(forged, home=False)  # valid by its own key, and the note says whose key that is
    assert alone.valid and alone.source == "embedded"
    assert keys.fingerprint(forger.public_key()) in alone.note and "published" in alone.note
    mine = signing.check(forged)  # on the owner's home: said to be another key
    assert mine.valid and f"not this home's key ({keys.fingerprint(owner)})" in mine.note


def test_the_owners_fingerprint_beside_a_forgers_key_is_refused(dp_home):
    owner = keys.private_key().public_key()
    forger = Ed25519PrivateKey.generate()
    st = signing.sign(ST, forger)
    block = st["signature"]
    block["key_fingerprint"] = keys.fingerprint(owner)
    block["signature"] = base64.b64encode(
        forger.sign(signing.CONTEXT + canonical.canonical({k: v for k, v in block.items() if k != "signature"}))
    ).decode()
    res = signing.check(st)
    assert not res.valid and "is not the fingerprint of the key beside it" in res.problems[0]


def test_a_changed_signature_block_or_no_signature_fails(dp_home):
    st = signing.sign(ST)
    forged = json.loads(json.dumps(st))
    forged["accountant"]["epsilon"] = 0.01
    forged["signature"]["fields"]["accountant.epsilon"] = canonical.field_digests(forged)["accountant.epsilon"]
    assert "Ed25519 signature does not match" in signing.check(forged).problems[0]  # digests need the key
    assert "not signed" in signing.check(ST).problems[0]
    assert "damaged" in signing.check({**ST, "signature": {"scheme": "Ed25519"}}).problems[0]
    assert "unknown scheme" in signing.check({**ST, "signature": {"scheme": "RSA"}}).problems[0]


def test_old_hmac_statements_verify_where_their_secret_is_labelled(dp_home, tmp_path, monkeypatch):
    """Statements from before Ed25519 still check out on the home that made them (or with --key), said to be an
    HMAC that proves less; elsewhere they are refused with what to do."""
    from dpcore.statements import verify as verification

    secret = storage.signing_key()  # the old home secret (0600 in the home)
    old = legacy.mac_block(ST, secret)
    assert old["signature"]["scheme"] == "HMAC-SHA256"
    res = signing.check(old)
    assert res.valid and res.source == "legacy" and "old HMAC-SHA256 signature" in res.note
    assert "anyone who could read that home" in res.note
    edited = json.loads(json.dumps(old))
    edited["accountant"]["epsilon"] = 0.01
    assert "signature: accountant.epsilon was changed after signing" in signing.check(edited).problems
    assert not signing.check(old, home=False).valid  # no secret at hand: cannot be checked
    monkeypatch.setenv("DP_EXPLORER_HOME", str(tmp_path / "elsewhere"))
    res = signing.check(old)
    assert not res.valid and "only the home that made it can check" in res.problems[0]
    assert signing.check(old, legacy_key=secret).valid  # --key FILE with that home's secret
    assert "not with this home's key" in signing.check(old, legacy_key=os.urandom(32)).problems[0]
    out = verification.verify(legacy.mac_block({**ST, "kind": "ledger", "queries": []}, secret), legacy_key=secret)
    assert out["verified"] and out["signature"]["key_source"] == "legacy"


def test_key_files_given_on_the_command_line_must_be_keys():
    with pytest.raises(DPError, match="not a statement-signing key"):
        legacy.read_key_file(b"hello", "k.key")
    assert legacy.read_key_file(b"ab" * 32 + b"\n", "k.key") == bytes.fromhex("ab" * 32)
    with pytest.raises(DPError, match="not an Ed25519 public key in PEM"):
        keys.load_public(b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "owner.pem")
    with pytest.raises(DPError, match="larger than a public key"):
        keys.load_public(b"x" * 20_000, "owner.pem")
