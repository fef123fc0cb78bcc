"""A visitor's owner key (dpcore.jobs.owners.visitor_owner): unguessable tokens, and a one-way hash of the token is
what the job store holds — never the token the browser's cookie carries."""

import pytest

from dpcore.errors import JobError
from dpcore.jobs import owners, store
from dpcore.jobs.owners import Caller


def test_tokens_are_random_and_shaped_for_a_cookie():
    tokens = {owners.new_visitor_token() for _ in range(200)}
    assert len(tokens) == 200  # 256 random bits each: never twice
    assert all(owners.is_visitor_token(t) and len(t) == 43 for t in tokens)
    for bad in (None, "", "a" * 42, "a" * 44, "a" * 42 + "=", "a" * 42 + ";", "a" * 42 + " ", 42):
        assert not owners.is_visitor_token(bad)
        if isinstance(bad, str):
            with pytest.raises(JobError):
                owners.visitor_owner(bad)


def test_the_owner_is_a_hash_of_the_token_not_the_token():
    token = owners.new_visitor_token()
    owner = owners.visitor_owner(token)
    assert owner == owners.visitor_owner(token)  # the same browser, every reload
    assert owner.startswith("visitor:") and len(owner) == len("visitor:") + 32
    assert token not in owner and token[:16] not in owner
    assert owners.check_owner(owner) == owner
    assert owners.visitor_owner(owners.new_visitor_token()) != owner  # another browser, another owner


def test_the_job_store_holds_the_hash_only(dp_home):
    token = owners.new_visitor_token()
    owner = owners.visitor_owner(token)
    jid = store.submit("demo.echo", {"x": 1}, owner=owner, group="train", label="run")
    assert store.get(jid, caller=Caller(owner))["owner"] == owner
    with pytest.raises(owners.NotYours):
        store.get(jid, caller=Caller(owners.visitor_owner(owners.new_visitor_token())))
    stored = b"".join(p.read_bytes() for p in dp_home.rglob("*") if p.is_file())
    assert token.encode() not in stored and owner.encode() in stored
