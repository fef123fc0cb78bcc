"""Membership-inference metrics against hand-computed values, and the attacks on toy models."""

import numpy as np
import pytest

from dpcore.attacks import mia
from dpcore.errors import DPError


def test_roc_hand_computed_with_a_tie():
    # members 3, 2, 1; non-members 0.5, 2, -1. Thresholds 3, 2 (tie), 1, 0.5, -1.
    r = mia.roc([3, 2, 1], [0.5, 2, -1])
    np.testing.assert_allclose(r.tpr, [0, 1 / 3, 2 / 3, 1, 1, 1])
    np.testing.assert_allclose(r.fpr, [0, 0, 1 / 3, 1 / 3, 2 / 3, 1])
    # Mann–Whitney: 3 + 2.5 + 2 = 7.5 of 9 pairs (tie counts 1/2).
    assert r.auc == pytest.approx(7.5 / 9)
    assert r.advantage == pytest.approx(2 / 3)
    assert r.tpr_at_fpr(0.0) == pytest.approx(1 / 3)
    assert r.tpr_at_fpr(0.34) == pytest.approx(1.0)


def test_tpr_at_low_fpr_needs_zero_false_positives_with_few_rows():
    r = mia.roc(np.arange(10) + 0.5, np.arange(10))
    m = mia.attack_metrics(r)
    assert m["tpr_at_1pct_fpr"] == pytest.approx(0.1)  # only the top member beats every non-member
    assert m["tpr_at_0.1pct_fpr"] == pytest.approx(0.1)
    assert m["auc"] == pytest.approx(55 / 100)


def test_perfectly_separable_attack():
    r = mia.roc([5, 6, 7, 8], [1, 2, 3])
    assert r.auc == 1.0 and r.advantage == 1.0
    assert r.tpr_at_fpr(0.001) == 1.0


def test_random_guess_is_near_half():
    rng = np.random.default_rng(0)
    r = mia.roc(rng.normal(size=4000), rng.normal(size=4000))
    assert abs(r.auc - 0.5) < 0.03  # sd of AUC here ~0.0065
    assert r.advantage < 0.06
    assert r.tpr_at_fpr(0.01) < 0.04


def test_single_point_roc_auc_formula():
    r = mia.single_point_roc([True, True, True, False], [True, False, False, False])
    assert r.auc == pytest.approx((1 + 0.75 - 0.25) / 2)
    assert r.advantage == pytest.approx(0.5)


def test_threshold_attack_uses_the_median():
    members = np.array([[0.1, 0.9], [0.05, 0.95], [0.2, 0.8]])
    non = np.array([[0.4, 0.6], [0.5, 0.5], [0.15, 0.85]])
    r, op = mia.threshold_attack(
        mia.true_class_confidence(members, [1, 1, 1]), mia.true_class_confidence(non, [1, 1, 1])
    )
    assert op["threshold"] == pytest.approx(0.825)
    assert op["tpr"] == pytest.approx(2 / 3) and op["fpr"] == pytest.approx(1 / 3)


def test_loss_attack_separable_toy_and_yeom_point():
    pm = np.array([[0.01, 0.99], [0.98, 0.02]])
    pn = np.array([[0.6, 0.4], [0.3, 0.7]])
    r, op = mia.loss_attack(pm, [1, 0], pn, [1, 0])
    assert r.auc == 1.0
    # mean member loss is (0.010 + 0.020)/2: one member lies below it, no non-member
    assert op["tpr"] == 0.5 and op["fpr"] == 0.0


def test_run_attacks_on_a_memorising_and_a_constant_model():
    rng = np.random.default_rng(1)
    Xtr, Xte = rng.normal(size=(50, 3)), rng.normal(size=(50, 3))
    ytr, yte = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
    train_rows = {tuple(x) for x in Xtr}

    def memoriser(X):  # confident and right on training rows, unsure elsewhere
        out = np.full((len(X), 2), 0.5)
        for i, x in enumerate(X):
            if tuple(x) in train_rows:
                j = int(np.nonzero((Xtr == x).all(1))[0][0])
                out[i] = [0.01, 0.99] if ytr[j] == 1 else [0.99, 0.01]
        return out

    res = mia.run_attacks(memoriser, Xtr, ytr, Xte, yte, attacks=("threshold", "loss"), seed=0)
    assert res["loss"]["auc"] == 1.0 and res["loss"]["advantage"] == 1.0
    res = mia.run_attacks(lambda X: np.full((len(X), 2), 0.5), Xtr, ytr, Xte, yte, seed=0)
    assert res["loss"]["auc"] == 0.5 and res["loss"]["advantage"] == 0.0


def test_lira_scores_online_and_offline_separate_in_from_out():
    rng = np.random.default_rng(2)
    k, n = 16, 200
    shadow_in = np.argsort(rng.random((k, n)), axis=0) < k // 2
    shadow_phi = np.where(shadow_in, 3.0, 0.0) + rng.normal(0, 0.5, (k, n))
    member = np.arange(n) < n // 2
    target = np.where(member, 3.0, 0.0) + rng.normal(0, 0.5, n)
    for online in (False, True):
        s = mia.lira_scores(target, shadow_phi, shadow_in, online=online)
        assert mia.roc(s[member], s[~member]).auc > 0.99


def test_lira_attack_with_a_stand_in_shadow_runs_and_no_signal_gives_half():
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(80, 2)), rng.integers(0, 2, 80)
    member = np.arange(80) < 40
    const = lambda Xq: np.full((len(Xq), 2), 0.5)  # noqa: E731
    out = mia.lira_attack(const(X), X, y, member, lambda Xs, ys, s: const, n_shadows=4, seed=0)
    assert set(out) == {"lira_offline", "lira_online"}
    assert out["lira_offline"][0].auc == pytest.approx(0.5)


def test_lira_with_sklearn_shadows_detects_a_memorising_target():
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(120, 4)), rng.integers(0, 2, 120)
    member = np.zeros(120, bool)
    member[rng.choice(120, 60, replace=False)] = True
    target = KNeighborsClassifier(1).fit(X[member], y[member])
    p = np.clip(target.predict_proba(X), 0.05, 0.95)

    def fit(Xs, ys, seed):
        m = KNeighborsClassifier(1).fit(Xs, ys)
        return lambda Xq: np.clip(m.predict_proba(Xq), 0.05, 0.95)

    out = mia.lira_attack(p, X, y, member, fit, n_shadows=8, seed=0)
    assert out["lira_online"][0].auc > 0.65


def test_lira_with_fit_many_gives_the_per_shadow_loop_s_results():
    """fit_many (how a Ray point fans shadows out as tasks) sees the same halves and seeds as the loop."""
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(60, 3)), rng.integers(0, 2, 60)
    member = np.arange(60) < 30
    p = np.clip(KNeighborsClassifier(1).fit(X[member], y[member]).predict_proba(X), 0.05, 0.95)
    seen = []

    def fit(Xs, ys, seed):
        seen.append((len(ys), seed))
        m = KNeighborsClassifier(3).fit(Xs + 1e-3 * (seed % 7), ys)  # the seed matters to the shadow
        return lambda Xq: np.clip(m.predict_proba(Xq), 0.05, 0.95)

    def fit_many(jobs, X_pool):
        assert X_pool is X or np.array_equal(X_pool, X)
        return [fit(Xs, ys, s)(X_pool) for Xs, ys, s in jobs]

    loop = mia.lira_attack(p, X, y, member, fit, n_shadows=6, seed=1)
    seeds_loop, seen[:] = list(seen), []
    many = mia.lira_attack(p, X, y, member, None, n_shadows=6, seed=1, fit_many=fit_many)
    assert seen == seeds_loop and len(seen) == 6
    for name in ("lira_offline", "lira_online"):
        for a, b in zip(loop[name][1]["_scores"], many[name][1]["_scores"]):
            np.testing.assert_array_equal(a, b)
        assert loop[name][0].auc == many[name][0].auc
    with pytest.raises(DPError, match="fit_many returned"):
        mia.lira_attack(p, X, y, member, None, n_shadows=6, seed=1, fit_many=lambda jobs, Xp: [])


@pytest.mark.parametrize("bad", [([], [1.0]), ([1.0], []), ([np.nan], [1.0])])
def test_bad_scores(bad):
    with pytest.raises(DPError):
        mia.roc(*bad)


def test_bad_inputs():
    with pytest.raises(DPError):
        mia.membership_sample(10, 0)
    with pytest.raises(DPError):
        mia.run_attacks(
            lambda X: np.full((len(X), 2), 0.5),
            np.zeros((4, 1)),
            [0, 1, 0, 1],
            np.zeros((4, 1)),
            [0, 1, 0, 1],
            attacks=("magic",),
        )
    with pytest.raises(DPError):
        mia.lira_attack(np.full((4, 2), 0.5), np.zeros((4, 1)), [0, 1, 0, 1], [1, 1, 0, 0], None, n_shadows=1)
    with pytest.raises(DPError):
        mia.true_class_confidence(np.full((2, 2), 0.5), [0, 3])


def test_a_cancel_during_shadow_training_is_a_cancel_not_a_dp_error():
    """It used to be a DPError, which the CLI turns into exit 2 (bad input)."""
    from dpcore.errors import Cancelled, DPError

    X = np.zeros((20, 2))
    y = np.arange(20) % 2
    with pytest.raises(Cancelled) as info:
        mia.lira_attack(
            np.full((20, 2), 0.5), X, y, np.arange(20) < 10, fit=None, n_shadows=4, should_stop=lambda: True
        )
    assert not isinstance(info.value, DPError)
