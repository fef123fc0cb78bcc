"""Signed statements (dpcore.statements.signing): the key in the home, HMAC-SHA256 over canonical JSON, edits named."""

import hashlib
import hmac
import json
import os
import stat

import pytest

from dpcore import storage
from dpcore.errors import DPError
from dpcore.statements import signing

ST = {
    "kind": "ledger",
    "subject": {"analyst": "ann", "dataset": "k"},
    "accountant": {"epsilon": 0.9, "delta": 1e-7},
    "queries": [{"epsilon": 0.5, "delta": 0.0}, {"epsilon": 0.4, "delta": 1e-7}],
    "summary": "ε = 0.9",
}


def test_key_is_made_once_in_the_home_readable_by_its_owner_only(dp_home):
    assert storage.signing_key(create=False) is None and not storage.signing_key_path().exists()
    key = storage.signing_key()
    path = storage.signing_key_path()
    assert path.parent == dp_home and path.name == storage.SIGNING_KEY_FILE
    assert len(key) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert storage.signing_key() == key == storage.signing_key(create=False)  # the same key every time
    assert [p.name for p in dp_home.iterdir() if p.name.startswith(".key.")] == []  # no temporary file left


def test_a_key_others_can_read_or_a_damaged_key_is_refused(dp_home):
    storage.signing_key()
    path = storage.signing_key_path()
    os.chmod(path, 0o644)
    with pytest.raises(storage.StorageError, match="can be read by others .*chmod 600"):
        storage.signing_key()
    os.chmod(path, 0o600)
    path.write_text("not a key")
    with pytest.raises(storage.StorageError, match="damaged"):
        storage.signing_key()


def test_signature_is_an_hmac_over_canonical_json_that_anyone_with_the_key_can_recompute(dp_home):
    st = signing.sign(ST)
    key = storage.signing_key(create=False)
    sig = st["signature"]
    assert sig["scheme"] == "HMAC-SHA256" and sig["key_id"] == signing.key_id(key)
    body = json.dumps(ST, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert sig["body"] == hashlib.sha256(body).hexdigest()[:32]
    signed = {k: sig[k] for k in ("scheme", "key_id", "signed_at", "body", "fields")}
    mac = hmac.new(
        key, json.dumps(signed, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(), hashlib.sha256
    ).hexdigest()
    assert sig["mac"] == mac  # by hand, with the standard library only
    assert signing.check(json.loads(json.dumps(st))) == []  # survives a round trip through its JSON file


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
    assert any(named in p for p in signing.check(st)), signing.check(st)


def test_a_changed_signature_block_another_key_or_no_signature_fails(dp_home):
    st = signing.sign(ST)
    forged = json.loads(json.dumps(st))
    forged["accountant"]["epsilon"] = 0.01
    forged["signature"]["fields"]["accountant.epsilon"] = signing.field_digests(forged)["accountant.epsilon"]
    assert "MAC does not match" in signing.check(forged)[0]  # digests cannot be re-made without the key
    other = os.urandom(32)
    assert "not with this home's key" in signing.check(st, other)[0]
    assert signing.check(signing.sign(ST, other), other) == []
    assert "not signed" in signing.check(ST)[0]
    assert "damaged" in signing.check({**ST, "signature": {"scheme": "HMAC-SHA256"}})[0]


def test_key_file_given_with_key_must_be_a_key():
    with pytest.raises(DPError, match="not a statement-signing key"):
        signing.read_key_file(b"hello", "k.key")
    assert signing.read_key_file(b"ab" * 32 + b"\n", "k.key") == bytes.fromhex("ab" * 32)
