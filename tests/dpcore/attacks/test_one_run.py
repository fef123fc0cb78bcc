"""The one-run audit (Steinke, Nasr & Jagielski 2023): a known answer, coverage and power, the δ term, and the
vectorised p-value against the paper's loop."""

import math

import numpy as np
import pytest

from dpcore.attacks import one_run


def test_one_run_known_answer_pure_dp():
    """All r guesses right: the bound is the ε with P[Bin(r, q(ε)) = r] = q^r = 0.05, q = 1/(1+e^−ε)."""
    m = 100
    scores = np.r_[np.ones(50), np.zeros(50)]
    inc = np.r_[np.ones(50), np.zeros(50)]
    res = one_run.one_run_lower_bound(scores, inc, k_pos=10, k_neg=10)
    q = 0.05 ** (1 / 20)
    assert res["lower_bound"] == pytest.approx(math.log(q / (1 - q)), rel=1e-6)
    assert (res["guesses"], res["correct"], res["n_canaries"]) == (20, 20, m)


def test_one_run_coverage_and_power():
    rng = np.random.default_rng(21)
    eps, reps, m = 1.0, 300, 200
    inc = rng.random((reps, m)) < 0.5
    scores = rng.laplace(0.0, 1.0, (reps, m)) + eps * inc  # each canary's inclusion is ε-DP
    over = sum(one_run.one_run_lower_bound(scores[i], inc[i])["lower_bound"] > eps for i in range(reps))
    assert over <= 24
    strong = rng.random(1000) < 0.5
    res = one_run.one_run_lower_bound(rng.laplace(0.0, 1.0, 1000) + 8.0 * strong, strong, delta=1e-5)
    assert 1.0 < res["lower_bound"] <= 8.0 and res["candidates"] == len(one_run.ONE_RUN_FRACTIONS)


def test_one_run_delta_term_only_lowers_the_bound():
    rng = np.random.default_rng(22)
    inc = rng.random(400) < 0.5
    s = rng.laplace(0.0, 1.0, 400) + 4.0 * inc
    a = one_run.one_run_lower_bound(s, inc, k_pos=40, k_neg=40)
    b = one_run.one_run_lower_bound(s, inc, k_pos=40, k_neg=40, delta=1e-4)
    assert 0 < b["lower_bound"] < a["lower_bound"]


def test_one_run_pvalue_vectorised_equals_the_loop():
    """The δ term of the one-run p-value, computed for every (r, v) at once, equals the paper's per-element loop."""
    from scipy import stats

    m, delta = 300, 1e-3
    r = np.array([12, 30, 60, 120, 180, 300, 7])
    v = np.array([12, 29, 59, 103, 139, 207, 0])
    for eps in (0.0, 0.7, 2.5):
        q = 1 / (1 + np.exp(-eps))
        ref = []
        for ri, vi in zip(r, v):
            i = np.arange(1, vi + 1)
            window = stats.binom.cdf(vi - 1, ri, q) - stats.binom.cdf(vi - i - 1, ri, q)
            extra = float(np.max(window / i)) if vi > 0 else 0.0
            ref.append(min(stats.binom.sf(vi - 1, ri, q) + extra * delta * 2 * m, 1.0))
        assert np.allclose(one_run._one_run_pvalue(m, r, v, eps, delta), ref, rtol=1e-12, atol=0)
