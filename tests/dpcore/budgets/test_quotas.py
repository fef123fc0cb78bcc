"""Quotas inside a cap: granted, reset (never the dataset's released total), closed; and who may read what."""

import pytest

from dpcore.budgets import identities, quotas, registry, spend, visitors
from dpcore.errors import DPError

from ...budgets_helpers import admin, analyst, dataset

DS = "d" * 64


def test_grant_says_when_quotas_add_up_to_more_than_the_cap():
    dataset(DS, cap=1.0)
    assert "note" not in quotas.grant(admin(), "ann", DS, epsilon=0.6)
    r = quotas.grant(admin(), "bob", DS, epsilon=0.6)
    assert "add up to ε = 1.2, more than its cap of ε = 1" in r["note"]


def test_a_reset_gives_the_quota_back_but_never_the_dataset_its_cap():
    dataset(DS, cap=1.5)
    ann = analyst("ann", DS, 1.0)
    spend.spend(ann, DS, "q", 1.0, lambda: {"answer": 1})
    with pytest.raises(DPError, match="confirmed"):
        quotas.reset(admin(), "ann", DS, reason="new quarter")
    with pytest.raises(DPError, match="needs a reason"):
        quotas.reset(admin(), "ann", DS, confirm=True)
    r = quotas.reset(admin(), "ann", DS, reason="new quarter", total=1.0, confirm=True)
    assert r["remaining"] == 1.0 and r["previous_spent"] == 1.0
    assert "the dataset's released total is unchanged" in r["note"] and "reason: new quarter" in r["note"]
    d = registry.info(DS)
    assert d["spent"] == 1.0 and d["remaining"] == 0.5  # the patients' guarantee is not given back
    with pytest.raises(Exception, match="the dataset's cap"):
        spend.spend(ann, DS, "q2", 0.6, lambda: {"answer": 2})
    st = quotas.status(ann, DS)
    assert [e["kind"] for e in st["history"]] == ["grant", "spend", "reset", "refused"]
    assert st["history"][2]["actor"] == "admin"
    assert st["spends"] == [] and st["events"] == 4
    assert [e["kind"] for e in quotas.status(ann, DS, latest=2)["history"]] == ["reset", "refused"]


def test_an_analyst_reads_only_their_own_quota_and_history():
    dataset(DS, cap=5.0)
    ann, bob = analyst("ann", DS, 1.0), analyst("bob", DS, 1.0)
    spend.spend(ann, DS, "ann's question", 0.3, lambda: {"answer": 1})
    st = quotas.status(bob, DS)
    assert st["quota"]["analyst"] == "bob" and [e["kind"] for e in st["history"]] == ["grant"]
    assert st["cap"]["spent"] == pytest.approx(0.3)  # the dataset's total is everyone's: shown to all who may ask
    with pytest.raises(DPError, match="only an admin reads another analyst's quota"):
        quotas.status(bob, DS, analyst="ann")
    every = quotas.status(admin(), DS)
    assert every["quota"] is None and "ann's question" in [e["query"] for e in every["history"]]
    # what a statement composes: every answer's ε and δ; query texts and askers for an admin only
    seen_by_bob = quotas.released(bob, DS)
    assert len(seen_by_bob) == 1 and seen_by_bob[0]["query"] is None and seen_by_bob[0]["analyst"] is None
    assert quotas.released(admin(), DS)[0]["analyst"] == "ann"


def test_report_ledgers_list_only_what_each_identity_may_see():
    dataset(DS, cap=5.0, name="clinic")
    ann, bob = analyst("ann", DS, 1.0), analyst("bob", DS, 1.0)
    spend.spend(ann, DS, "q", 0.3, lambda: {"answer": 1})
    demo = visitors.open_builtin(1000, 0)
    spend.spend(identities.VISITOR, demo["fingerprint"], "v", 0.5, lambda: {"answer": 2})
    shown = lambda who: sorted((x["dataset_name"], x["shown"] or "") for x in quotas.ledgers(who))  # noqa: E731
    assert shown(ann) == [("clinic", "ann"), (demo["name"], "visitors")]
    assert shown(bob) == [(demo["name"], "visitors")]  # bob has spent nothing on the clinic
    assert shown(identities.VISITOR) == [(demo["name"], "visitors")]
    assert shown(admin()) == sorted([("clinic", ""), ("clinic", "ann"), (demo["name"], ""), (demo["name"], "visitors")])


def test_closing_a_quota_keeps_its_history():
    dataset(DS, cap=5.0)
    ann = analyst("ann", DS, 1.0)
    spend.spend(ann, DS, "q", 0.3, lambda: {"answer": 1})
    quotas.close(admin(), "ann", DS)
    with pytest.raises(DPError, match="no open quota"):
        quotas.close(admin(), "ann", DS)
    hist = quotas.status(admin(), DS, analyst="ann")["history"]
    assert [e["kind"] for e in hist] == ["grant", "spend", "close"]
