"""Identities are checked, never typed: the admin token against the stored hash, analysts' keys, OpenID Connect."""

import sqlite3

import pytest

from dpcore.budgets import identities, quotas, registry, spend
from dpcore.errors import DPError

from ...budgets_helpers import TOKEN, admin, analyst, dataset

DS = "d" * 64


def test_before_admin_init_every_admin_check_is_refused_and_says_what_to_run(monkeypatch):
    monkeypatch.setenv(identities.ADMIN_ENV, "anything-the-caller-likes")
    assert not identities.admin_initialised()
    with pytest.raises(DPError, match=r"disabled until the data owner .*python -m dpcore admin init"):
        identities.check_admin_token("anything-the-caller-likes")


@pytest.mark.real_hash_cost
def test_admin_init_stores_only_a_salted_slow_hash(dp_home):
    r = identities.init_admin(TOKEN)
    assert r["admin"] == "initialised" and identities.admin_initialised()
    conn = sqlite3.connect(dp_home / "ledger.sqlite")
    stored = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    conn.close()
    assert TOKEN not in (dp_home / "ledger.sqlite").read_bytes().decode("latin-1")  # never the token itself
    algo, n, r_, p, salt, digest = stored["admin_token_hash"].split("$")
    assert algo == "scrypt" and int(n) >= 2**14 and len(bytes.fromhex(salt)) == 16 and len(digest) == 64
    assert identities.check_admin_token(TOKEN).is_admin
    # the same token hashed twice differs (salted)
    assert identities.hash_secret(TOKEN) != identities.hash_secret(TOKEN)


def test_a_made_up_token_in_the_callers_environment_is_just_a_wrong_token(monkeypatch):
    identities.init_admin(TOKEN)
    monkeypatch.setenv(identities.ADMIN_ENV, "made-up-by-the-caller-123")
    with pytest.raises(DPError, match="admin token is missing or wrong"):
        identities.check_admin_token("made-up-by-the-caller-123")
    for bad in ("", None, "  ", TOKEN + "x", TOKEN[:-1], 12345):
        with pytest.raises(DPError, match="missing or wrong"):
            identities.check_admin_token(bad)


def test_admin_init_refuses_short_tokens_and_a_second_init_without_the_current_one():
    with pytest.raises(DPError, match="at least 16 characters"):
        identities.init_admin("short")
    identities.init_admin(TOKEN)
    with pytest.raises(DPError, match="set already.*--replace"):
        identities.init_admin("another-token-0123456789")
    with pytest.raises(DPError, match="current admin token is wrong"):
        identities.init_admin("another-token-0123456789", current="not-it-0123456789")
    assert identities.init_admin("another-token-0123456789", current=TOKEN)["admin"] == "replaced"
    with pytest.raises(DPError, match="wrong"):
        identities.check_admin_token(TOKEN)
    assert identities.check_admin_token("another-token-0123456789").is_admin


def test_admin_actions_need_an_admin_identity():
    dataset(DS, cap=1.0)
    for who in (identities.VISITOR, identities.Identity("analyst", "ann", "ann", "key")):
        with pytest.raises(DPError, match="this is an admin action"):
            quotas.grant(who, "ann", DS, epsilon=1.0)
        with pytest.raises(DPError, match="this is an admin action"):
            registry.set_cap(who, DS, epsilon=5, reason="more")
        with pytest.raises(DPError, match="this is an admin action"):
            quotas.reset(who, "ann", DS, reason="x", confirm=True)


def test_analyst_keys_are_shown_once_and_stored_as_hashes(dp_home):
    dataset(DS, cap=1.0)
    r = quotas.grant(admin(), "Ann Lee", DS, epsilon=0.5)
    key = r["key"]
    assert key.startswith("dpx_") and len(key) >= 30 and "shown once" in r["key_note"]
    assert key not in (dp_home / "ledger.sqlite").read_bytes().decode("latin-1")
    who = identities.sign_in("  ann   LEE ", key)  # the name is canonical; the key is exact
    assert who.kind == "analyst" and who.name == "ann lee" and who.display == "Ann Lee" and who.via == "key"
    # another dataset for the same analyst: no new key (the old one stays valid)
    dataset("e" * 64, cap=1.0)
    again = quotas.grant(admin(), "ann lee", "e" * 64, epsilon=0.5)
    assert "key" not in again and "unchanged" in again["key_note"]
    assert identities.sign_in("Ann Lee", key).name == "ann lee"


@pytest.mark.parametrize(
    "name, key", [("ann", "dpx_wrong"), ("ann", ""), ("", "KEY"), ("mallory", "KEY"), ("ann", None), (None, "KEY")]
)
def test_a_wrong_name_or_key_signs_nobody_in_with_one_message(name, key):
    dataset(DS, cap=1.0)
    real = quotas.grant(admin(), "ann", DS, epsilon=0.5)["key"]
    with pytest.raises(DPError, match="the analyst name or key is wrong"):
        identities.sign_in(name, real if key == "KEY" and name not in ("ann",) else key)


def test_a_new_key_replaces_the_old_and_a_revoked_analyst_cannot_sign_in():
    dataset(DS, cap=1.0)
    old = quotas.grant(admin(), "ann", DS, epsilon=0.5)["key"]
    new = identities.issue_key(admin(), "ann")["key"]
    with pytest.raises(DPError, match="wrong"):
        identities.sign_in("ann", old)
    assert identities.sign_in("ann", new).name == "ann"
    identities.revoke(admin(), "ann")
    with pytest.raises(DPError, match="revoked"):
        identities.sign_in("ann", new)
    listed = {a["analyst"]: a for a in identities.analysts(admin())}
    assert listed["ann"]["revoked"] and listed["ann"]["quotas"][0]["epsilon_total"] == 0.5


def test_reserved_names_are_not_analysts():
    dataset(DS, cap=1.0)
    for name in ("visitors", " Visitors ", "admin"):
        with pytest.raises(DPError, match="reserved"):
            quotas.grant(admin(), name, DS, epsilon=0.5)


def test_look_alike_names_are_one_analyst():
    dataset(DS, cap=5.0)
    who = analyst("Alice Smith", DS, 1.0)
    for name in ("alice smith", "  ALICE   SMITH ", "Ａｌｉｃｅ Ｓｍｉｔｈ", "Alice\u200b Smith", "Alice\tSmith"):
        assert identities.canonical_analyst(name) == who.name
    with pytest.raises(DPError, match="already has a quota"):
        quotas.grant(admin(), "ＡＬＩＣＥ smith", DS, epsilon=3.0)


def test_oidc_claims_give_the_verified_email_or_the_subject_and_admins_come_from_the_configuration():
    ann = identities.from_oidc({"sub": "123", "email": "Ann@Example.org", "email_verified": True})
    assert ann.kind == "analyst" and ann.name == "ann@example.org" and ann.via == "oidc"
    unverified = identities.from_oidc(
        {"sub": "123", "email": "boss@example.org", "email_verified": False}, admins=["boss@example.org"]
    )
    assert unverified.name == "sub:123" and not unverified.is_admin  # an unverified e-mail is nobody's
    boss = identities.from_oidc(
        {"sub": "9", "email": "boss@example.org", "email_verified": "true"}, admins=["BOSS@example.org"]
    )
    assert boss.is_admin and boss.display == "boss@example.org"
    with pytest.raises(DPError, match="neither a verified e-mail nor a subject"):
        identities.from_oidc({"email": "x@example.org"})


def test_an_oidc_analyst_spends_their_own_quota_and_a_key_cannot_stand_in():
    dataset(DS, cap=1.0)
    r = quotas.grant(admin(), "ann@example.org", DS, epsilon=0.5, oidc=True)
    assert "key" not in r and r["signs_in"] == "through the identity provider"
    who = identities.from_oidc({"sub": "1", "email": "ann@example.org", "email_verified": True})
    assert spend.spend(who, DS, "q", 0.2, lambda: {"answer": 1})["remaining"] == pytest.approx(0.3)
    pretender = identities.Identity("analyst", "ann@example.org", "ann@example.org", "key")
    with pytest.raises(DPError, match="no quota"):
        spend.spend(pretender, DS, "q2", 0.1, lambda: {"answer": 2})
    with pytest.raises(DPError, match="identity provider"):
        identities.issue_key(admin(), "ann@example.org")


def test_an_admin_through_the_provider_asks_from_their_own_quota_and_the_token_admin_from_none():
    dataset(DS, cap=1.0)
    boss = identities.from_oidc(
        {"sub": "9", "email": "boss@example.org", "email_verified": True}, admins=["boss@example.org"]
    )
    with pytest.raises(DPError, match="as the admin you have no quota"):
        spend.spend(boss, DS, "q", 0.1, lambda: {"answer": 1})
    quotas.grant(admin(), "boss@example.org", DS, epsilon=0.5, oidc=True)
    assert spend.spend(boss, DS, "q", 0.1, lambda: {"answer": 1})["remaining"] == pytest.approx(0.4)
    with pytest.raises(DPError, match="as the admin you have no quota"):
        spend.spend(admin(), DS, "q2", 0.1, lambda: {"answer": 2})


@pytest.mark.parametrize(
    "email",
    ["ＡＤＭＩＮ@corp.org", "ad\u200bmin@corp.org", "admin\u00ad@corp.org", "ﬁnance@corp.org", "straße@corp.org"],
)
def test_a_verified_email_that_normalises_to_another_mailbox_is_not_that_mailbox(email):
    """Audit: names are canonicalised by NFKC, casefold and the removal of invisible characters, which is right
    for a typed name but merges distinct verified mailboxes: a provider that verifies 'ＡＤＭＩＮ@corp.org'
    (full-width letters) signed its owner in as admin@corp.org, listed admin; 'ﬁnance@' as finance@, 'straße@' as
    strasse@. Such an e-mail now counts as the subject alone."""
    target = identities.canonical_analyst(email)
    who = identities.from_oidc({"sub": "u-77", "email": email, "email_verified": True}, admins=[target])
    assert who.name == "sub:u-77" and not who.is_admin
    assert identities.from_oidc(
        {"sub": "u-1", "email": "Admin@Corp.org", "email_verified": True}, admins=["admin@corp.org"]
    ).is_admin  # letter case alone still matches
    assert (
        identities.from_oidc({"sub": "u-2", "email": "émile@corp.org", "email_verified": True}).name == "émile@corp.org"
    )
