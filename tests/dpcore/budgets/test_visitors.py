"""The stakeholder demo: the built-in synthetic data, registered with its documented cap, and the visitors' shared
quota inside it — no sign-in, and never more than the cap."""

import pytest

from dpcore import limits
from dpcore.budgets import identities, quotas, registry, spend, visitors
from dpcore.data import datasets
from dpcore.errors import BudgetExceededError, DPError
from dpcore.queries import answering, fingerprint, model

from ...budgets_helpers import admin, analyst


def test_builtin_data_ships_registered_with_the_documented_cap_and_the_visitors_quota():
    info = visitors.open_builtin(1000, 0)
    assert info["builtin"] and info["name"] == "synthetic medical (n=1,000, seed=0)"
    assert info["cap"] == limits.BUILTIN_EPSILON_CAP == 20.0
    assert info["max_query_epsilon"] == limits.BUILTIN_MAX_QUERY_EPSILON == 5.0
    assert info["delta_cap"] == pytest.approx(1e-4)
    st = quotas.status(identities.VISITOR, info["fingerprint"])
    assert st["quota"]["visitors"] and st["quota"]["total"] == limits.VISITORS_EPSILON_QUOTA == 10.0
    assert st["quota"]["delta_total"] == pytest.approx(1e-4)
    assert visitors.open_builtin(1000, 0)["fingerprint"] == info["fingerprint"]  # idempotent


def test_visitors_ask_without_signing_in_and_stay_inside_the_quota_and_the_cap():
    info = visitors.open_builtin(1000, 0)
    df = datasets.medical(1000, 0)
    answers = 0
    for i in range(40):
        try:
            r = answering.ask(df, identities.VISITOR, model.make_query("count", epsilon=1.5, condition=f"age>{i}"))
            answers += 1
            assert r["visitors"] and r["epsilon_spent"] == 1.5
        except BudgetExceededError as err:
            assert "the visitors' shared quota" in str(err) and err.exit_code == 3
            break
    assert answers == 6  # 6 × 1.5 = 9 of 10: the seventh does not fit
    d = registry.info(info["fingerprint"])
    assert d["spent"] == pytest.approx(9.0) and d["spent"] <= d["cap"]
    # signed-in analysts with quotas of their own on the same data: together, never past the cap
    ann = analyst("ann", info["fingerprint"], 15.0)
    for i in range(5):
        try:
            spend.spend(ann, info["fingerprint"], f"a{i}", 5.0, lambda: {"answer": 0})
        except BudgetExceededError as err:
            assert "the dataset's cap" in str(err)
            break
    d = registry.info(info["fingerprint"])
    assert d["spent"] == pytest.approx(19.0) and d["remaining"] == pytest.approx(1.0)


def test_another_size_or_seed_is_another_population_with_its_own_cap():
    a, b, c = visitors.open_builtin(1000, 0), visitors.open_builtin(1000, 1), visitors.open_builtin(1200, 0)
    assert len({a["fingerprint"], b["fingerprint"], c["fingerprint"]}) == 3
    spend.spend(identities.VISITOR, a["fingerprint"], "q", 5.0, lambda: {"answer": 0})
    assert registry.info(b["fingerprint"])["spent"] == 0.0


def test_visitors_see_nothing_of_registered_data():
    df = datasets.medical(500, seed=4)
    registry.register(admin(), "clinic", df, epsilon=1.0)
    with pytest.raises(DPError, match="'clinic' is not a dataset you may use"):
        quotas.status(identities.VISITOR, "clinic")
    with pytest.raises(DPError, match="not a dataset you may use"):
        answering.ask(df, identities.VISITOR, model.make_query("count", epsilon=0.1), dataset="clinic")
    assert registry.info("clinic")["spent"] == 0.0
    assert [d["name"] for d in registry.visible(identities.VISITOR)] == []
    assert quotas.ledgers(identities.VISITOR) == []


def test_a_builtin_name_resolves_and_registers_that_population():
    info = visitors.resolve("synthetic medical (n=1500, seed=3)")
    assert info["n_rows"] == 1500 and info["fingerprint"] == fingerprint.dataset_key(datasets.medical(1500, 3))
    with pytest.raises(DPError, match="not a dataset you may use"):
        visitors.resolve("synthetic medical (n=99, seed=3)x")
    with pytest.raises(DPError, match="rows must be from 100"):
        visitors.resolve("synthetic medical (n=99, seed=3)")
