"""Empirical ε audit: Clopper–Pearson against scipy, bounds on a simulated DP mechanism, ceilings."""

import math

import numpy as np
import pytest
from scipy.stats import beta, binomtest

from dpcore import audit, mia
from dpcore.errors import DPError


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (17, 300), (150, 300)])
def test_clopper_pearson_matches_scipy(k, n):
    lo, hi = audit.clopper_pearson(k, n)
    exp_lo = 0.0 if k == 0 else beta.ppf(0.025, k, n - k + 1)
    exp_hi = 1.0 if k == n else beta.ppf(0.975, k + 1, n - k)
    assert float(lo) == pytest.approx(exp_lo, abs=1e-12)
    assert float(hi) == pytest.approx(exp_hi, abs=1e-12)
    ci = binomtest(k, n).proportion_ci(0.95, method="exact")
    assert float(lo) == pytest.approx(ci.low, abs=1e-9) and float(hi) == pytest.approx(ci.high, abs=1e-9)


def test_known_count_values():
    # 0 of n: upper limit 1 - (alpha/2)^(1/n)
    _, hi = audit.clopper_pearson(0, 100)
    assert float(hi) == pytest.approx(1 - 0.025 ** (1 / 100))


def test_max_certifiable_closed_form():
    n, delta = 500, 1e-5
    p = 1 - 0.025 ** (1 / n)
    assert audit.max_certifiable_epsilon(n, n, delta) == pytest.approx(math.log((1 - delta - p) / p))
    assert audit.max_certifiable_epsilon(5000, 5000, delta) > audit.max_certifiable_epsilon(500, 500, delta)


def test_lower_bound_both_directions():
    # An attack that flags non-members (inverted) certifies the same as the flipped one.
    a = audit.epsilon_lower_bound([900], [100], 1000, 1000, 0.0)
    b = audit.epsilon_lower_bound([100], [900], 1000, 1000, 0.0)
    assert a["lower_bound"] > 1.5
    assert b["lower_bound"] == pytest.approx(a["lower_bound"])


def test_random_guess_certifies_nothing():
    r = mia.roc(np.random.default_rng(0).normal(size=500), np.random.default_rng(1).normal(size=500))
    assert audit.audit_roc(r, 1e-5)["lower_bound"] < 0.3


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
def test_randomised_response_bound_is_below_claimed_and_not_vacuous(epsilon):
    """A member's bit is released by randomised response (ε-DP); the best attack reads the bit."""
    rng = np.random.default_rng(int(epsilon * 10))
    n = 4000
    p_keep = math.exp(epsilon) / (1 + math.exp(epsilon))
    member_out = rng.random(n) < p_keep      # output 1 with prob p for members
    non_out = rng.random(n) >= p_keep        # output 1 with prob 1-p for non-members
    r = mia.roc(member_out.astype(float), non_out.astype(float))
    lb = audit.audit_roc(r, 0.0)["lower_bound"]
    assert lb <= epsilon
    assert lb >= 0.6 * epsilon  # tight enough to be meaningful with 4000 each


def test_gaussian_mechanism_bound_below_claimed():
    # Gaussian mechanism sensitivity 1, sigma for (1, 1e-5)-DP (classic sigma = sqrt(2 ln(1.25/δ))/ε).
    eps, delta = 1.0, 1e-5
    sigma = math.sqrt(2 * math.log(1.25 / delta)) / eps
    rng = np.random.default_rng(7)
    r = mia.roc(1 + sigma * rng.normal(size=5000), sigma * rng.normal(size=5000))
    assert audit.audit_roc(r, delta)["lower_bound"] <= eps


def test_ceilings():
    fpr = np.array([0.0, 0.01, 0.1, 0.5, 1.0])
    tight = audit.dp_roc_ceiling(1.0, 1e-5, fpr)
    loose = audit.simple_roc_ceiling(1.0, 1e-5, fpr)
    assert np.all(tight <= loose + 1e-12)
    assert tight[-1] == pytest.approx(1.0)
    assert tight[0] == pytest.approx(1e-5)
    # at FPR 0.5: min(e*0.5, 1 - e^-1*0.5)
    assert tight[3] == pytest.approx(min(math.e * 0.5 + 1e-5, 1 - math.exp(-1) * (0.5 - 1e-5)))
    mu = audit.gdp_mu(1.0, 0.01, 1000)
    assert mu == pytest.approx(0.01 * math.sqrt(1000 * (math.e - 1)))
    g = audit.gdp_roc_ceiling(mu, fpr)
    assert np.all(np.diff(g) >= 0) and g[-1] == pytest.approx(1.0)


def test_audit_attacks_picks_the_best():
    good = mia.roc(np.r_[np.ones(200), np.zeros(0)], np.zeros(200))
    weak = mia.roc(np.random.default_rng(0).normal(size=200), np.random.default_rng(1).normal(size=200))
    res = audit.audit_attacks({"good": good, "weak": weak}, 1e-5)
    assert res["attack"] == "good"
    assert res["lower_bound"] == pytest.approx(res["max_certifiable"])


@pytest.mark.parametrize("call", [
    lambda: audit.clopper_pearson(5, 3),
    lambda: audit.clopper_pearson(1, 0),
    lambda: audit.clopper_pearson(1, 3, alpha=1.5),
    lambda: audit.epsilon_lower_bound([1], [1], 2, 2, delta=1.0),
    lambda: audit.dp_roc_ceiling(0.0, 1e-5, [0.1]),
    lambda: audit.gdp_mu(0.0, 0.1, 10),
    lambda: audit.audit_attacks({}, 1e-5),
])
def test_bad_inputs(call):
    with pytest.raises(DPError):
        call()
