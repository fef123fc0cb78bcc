"""Canaries, the one home (training runs and sweep points): public inputs and labels from the seed, a secret coin per
canary per run, never a copy of a private row, and nothing the run reports depends on the coins."""

import numpy as np
import pytest

from dpcore.errors import DPError
from dpcore.training import canaries
from dpcore.training.config import TrainConfig
from dpcore.training.data import load_split


def _split(dataset, **kw):
    if dataset == "medical":
        kw.setdefault("target", "diagnosis")
    return load_split(TrainConfig(dataset=dataset, model="logreg", epsilon=None, **kw))


@pytest.mark.parametrize("dataset", ["breast_cancer", "digits", "medical"])
def test_canaries_are_public_inputs_with_a_secret_coin(dataset):
    split = _split(dataset)
    a, b = canaries.make(split, 300, 0), canaries.make(split, 300, 0)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)  # which inputs and labels: public, from the seed
    assert not np.array_equal(a.included, b.included)  # in or out: a fresh secret coin per run
    assert 0.35 < a.included.mean() < 0.65
    assert a.X.shape == (300, split.n_features) and set(np.unique(a.y)) <= set(range(split.n_classes))
    lo = 0.0 if split.image_shape is not None else -1.0
    assert a.X.min() >= lo and a.X.max() <= 1.0  # the public feature range
    # no canary is a copy of a private row (a copied row's person would be in training twice)
    for x in a.X[:50]:
        assert not (split.X_train == x).all(1).any()
    for col in split.layout:  # one category of each categorical column
        if col.get("kind") == "categories":
            assert np.all(a.X[:, col["indices"]].sum(1) == 1)
    r1 = canaries.make(split, 300, 0, reproducible=True)
    assert np.array_equal(r1.included, canaries.make(split, 300, 0, reproducible=True).included)
    grown = a.add_to(split)
    assert grown.n_train == split.n_train + a.n_included
    assert (grown.train_rows[split.n_train :] == -1).all()  # a canary has no source row


def test_auto_count_and_summary():
    assert canaries.auto_count(455) == 45 and canaries.auto_count(8000) == canaries.AUTO_MAX
    assert canaries.auto_count(50) == 0  # 5 canaries would prove nothing: no audit, said so
    split = _split("breast_cancer")
    c = canaries.make(split, 45, 1)
    s = c.summary(split.n_train)
    assert s["n"] == 45 and s["included"] == c.n_included
    assert s["share_of_training_rows"] == round(c.n_included / (split.n_train + c.n_included), 4)
    assert "public" in s["source"] and f"{c.n_included} included canaries" in s["utility_note"]
    with pytest.raises(DPError, match="at least one canary"):
        canaries.make(split, 0, 0)


def test_one_run_bound_reads_the_guesses_and_the_ceiling():
    rng = np.random.default_rng(0)
    inc = rng.random(200) < 0.5
    strong = canaries.one_run_bound(inc * 6.0 + rng.normal(0, 1, 200), inc, 1e-5)
    null = canaries.one_run_bound(rng.normal(0, 1, 200), inc, 1e-5)
    assert 1.0 < strong["lower_bound"] <= strong["max_certifiable"]
    assert null["lower_bound"] < 0.5 and null["max_certifiable"] == strong["max_certifiable"]  # counts alone
    assert strong["n_included"] == int(inc.sum()) and strong["attack"] == canaries.ATTACK


def test_a_run_plans_from_its_real_rows_whatever_its_coins():
    """q, T and the expected batch size come from the real training rows: the coins change none of them."""
    from dpcore.training.loop import train

    cfg = TrainConfig(dataset="breast_cancer", model="logreg", epsilon=2.0, epochs=1, batch_size=64, canaries=60)
    a, b = train(cfg).metrics, train(cfg).metrics
    assert a.n_train == b.n_train == 455 and a.sample_rate == b.sample_rate == 1 / 8 and a.steps == b.steps == 8
    assert a.noise_multiplier == b.noise_multiplier and a.epsilon == b.epsilon
    assert a.canaries["n"] == 60 and a.accounting_check["records"] == 455 + a.canaries["included"]
