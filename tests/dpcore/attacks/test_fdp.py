"""The one-run f-DP audit (Mahloujifar, Melis & Chaudhuri 2024): known answers (the exact binomial at ε = 0, the
greedy recursion against an independent convex program), coverage over simulated audits of mechanisms of known μ
and ε, power, and the stored-audit paths."""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import minimize
from scipy.special import ndtr, ndtri

from dpcore.attacks import fdp, one_run
from dpcore.errors import DPError


def exceed_limit(n: int, level: float = 0.05) -> int:
    """The most exceedances a true 95% bound allows in n audits: the one-sided 99% upper limit of Binomial(n, 5%)."""
    return int(stats.binom.ppf(0.99, n, level))


def pvalue(m, g, c, family="epsilon", param=0.0, delta=0.0):
    """The smallest level at which c of g right guesses reject the curve (the recursion's p-value), by bisection."""
    lo, hi = 1e-15, 1.0
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        if fdp.rejects(family, np.array([[param]]), m, [g], [c], mid, delta)[0, 0]:
            hi = mid
        else:
            lo = mid
    return hi


def test_all_correct_at_epsilon_zero_is_the_exact_binomial():
    """Known answer: at ε = 0 the output says nothing about the coins, so g guesses are all right with probability
    exactly 2^−g; the recursion's p-value is that number."""
    for m, g in ((100, 20), (50, 10), (1000, 14)):
        assert pvalue(m, g, g) == pytest.approx(0.5**g, rel=1e-6)


@pytest.mark.parametrize("m,g,c", [(100, 20, 15), (1000, 200, 120), (1000, 100, 70), (50, 50, 35)])
def test_pvalue_at_epsilon_zero_never_below_the_exact_tail(m, g, c):
    """At ε = 0 the number right is exactly Binomial(g, 1/2): a valid test's p-value is never below that tail, and
    the f-DP bound is close to it (within 15%)."""
    exact = stats.binom.sf(c - 1, g, 0.5)
    p = pvalue(m, g, c)
    assert exact <= p <= 1.15 * exact


def _least_mass_convex(mu, m, g, c, tau):
    """The least probability mass a μ-GDP mechanism needs to make ≥ c of g guesses right with probability τ, by a
    general-purpose solver on the convex program of the module docstring (f̄⁻¹ is convex)."""
    levels = np.arange(g + 1)

    def inv(y):
        return ndtr(ndtri(np.clip(y, 1e-300, 1.0)) - mu)

    cons = [{"type": "ineq", "fun": lambda p: p[c:].sum() - tau}]
    for i in range(1, c + 1):
        cons.append(
            {
                "type": "ineq",
                "fun": lambda p, i=i: (
                    ((g - levels[i - 1 :]) * p[i - 1 :]).sum() / m - inv((levels[i:] * p[i:]).sum() / m)
                ),
            }
        )
    res = minimize(
        lambda p: p.sum(),
        np.full(g + 1, 1.0 / (g + 1)),
        constraints=cons,
        bounds=[(0.0, 1.0)] * (g + 1),
        method="SLSQP",
        options={"maxiter": 500, "ftol": 1e-13},
    )
    assert res.success
    return float(res.fun)


def _least_mass_greedy(mu, m, g, c, tau):
    """The recursion's answer, read back from where it flips: the least mass is (r₀ + h₀)·m/g, and the recursion
    rejects exactly when that exceeds 1 — found here by scaling m, which leaves the mass per unit unchanged."""
    r, h = tau * c / m, tau * (g - c) / m
    for i in range(c - 1, -1, -1):
        new_h = max(h, float(ndtr(ndtri(min(r, 1.0)) - mu)))
        r, h = r + i / (g - i) * (new_h - h), new_h
    return (r + h) * m / g


@pytest.mark.parametrize(
    "mu,m,g,c,tau",
    [(0.5, 10, 6, 5, 0.1), (0.3, 10, 6, 6, 0.1), (0.2, 8, 8, 6, 0.1), (0.1, 10, 6, 5, 0.1), (0.4, 16, 8, 7, 0.1)],
)
def test_greedy_recursion_is_the_least_mass(mu, m, g, c, tau):
    """Known answer from first principles: the paper's greedy recursion finds the least mass consistent with the
    f-DP inequalities — the same as a convex solver's optimum; and the module's vectorised recursion rejects exactly
    when that mass exceeds 1."""
    greedy = _least_mass_greedy(mu, m, g, c, tau)
    assert greedy == pytest.approx(_least_mass_convex(mu, m, g, c, tau), rel=1e-5, abs=1e-8)
    assert greedy > 1.4 * tau  # a case where the recursion does real work
    assert bool(fdp.rejects("gdp", np.array([[mu]]), m, [g], [c], tau)[0, 0]) == (greedy > 1)


def test_bounds_grow_with_evidence_and_stay_below_what_is_provable():
    m = 1000
    weak = fdp.mu_lower_bound(m, 200, 130, 0.05)
    strong = fdp.mu_lower_bound(m, 200, 190, 0.05)
    best, best_eps = fdp.max_provable(m, delta=1e-5)
    assert 0 < weak < strong < best
    assert fdp.mu_lower_bound(m, 200, 100, 0.05) == 0.0  # half right: nothing proved
    assert fdp.epsilon_lower_bound(m, 200, 190, 0.05, 1e-5) < best_eps


def test_epsilon_curve_bound_is_close_to_steinke():
    """On the (ε, δ) curve the f-DP test and Steinke, Nasr & Jagielski's binomial test read the same guesses; their
    bounds agree to within 3% here (Steinke's is exact for pure DP, the recursion a relaxation of it)."""
    for m, g, c in ((1000, 200, 150), (1000, 200, 190), (10000, 2000, 1500)):
        f = fdp.epsilon_lower_bound(m, g, c, 0.05, 1e-5)
        s = float(one_run._one_run_eps(m, g, c, 0.05, 1e-5))
        assert f == pytest.approx(s, rel=0.03)


def _gaussian_canaries(rng, mu, m):
    inc = rng.random(m) < 0.5
    return rng.normal(0.0, 1.0, m) + mu * inc, inc


def test_one_count_coverage_quick():
    """Coverage of one fixed count (the test itself): canaries scored by a μ = 1 Gaussian mechanism, 400 audits of
    200 canaries; μ̂ exceeds the true μ in at most 5% of them (binomial slack: 99% upper limit)."""
    rng = np.random.default_rng(37)
    mu, m, k, n = 1.0, 200, 20, 400
    over = 0
    for _ in range(n):
        s, inc = _gaussian_canaries(rng, mu, m)
        order = np.argsort(-s)
        correct = int(inc[order[:k]].sum() + (~inc[order[-k:]]).sum())
        over += fdp.mu_lower_bound(m, 2 * k, correct, 0.05) > mu
    assert over <= exceed_limit(n)


@pytest.mark.slow
def test_coverage_of_the_audit_gaussian_and_laplace():
    """The whole audit (every count tried, Bonferroni), 200 simulated runs of 1,000 canaries each: μ above the true
    μ (Gaussian canaries), ε above the true ε (Laplace canaries, exactly ε-DP) and the Gaussian-curve ε above the
    Gaussian mechanism's exact ε at δ each happen in at most 5% of runs (with binomial slack)."""
    rng = np.random.default_rng(38)
    n, m, delta = 200, 1000, 1e-5
    over_mu = over_eg = over_eps = 0
    mu = 2.0
    true_eps_g = fdp.epsilon_from_mu(mu, delta)
    for _ in range(n):
        s, inc = _gaussian_canaries(rng, mu, m)
        a = fdp.one_run_fdp_audit(s, inc, delta=delta)
        over_mu += a.mu > mu
        over_eg += a.epsilon_gaussian > true_eps_g
    eps = 2.0
    for _ in range(n):
        inc = rng.random(m) < 0.5
        a = fdp.one_run_fdp_audit(rng.laplace(0.0, 1.0 / eps, m) + inc, inc, delta=delta)
        over_eps += a.epsilon > eps
    limit = exceed_limit(n)
    assert (over_mu, over_eg, over_eps) <= (limit, limit, limit), (over_mu, over_eg, over_eps, limit)


def test_audit_power_and_fields():
    rng = np.random.default_rng(3)
    s, inc = _gaussian_canaries(rng, 4.0, 1000)
    a = fdp.one_run_fdp_audit(s, inc, delta=1e-5)
    assert 1.0 < a.mu <= 4.0 + 0.5
    assert a.candidates == len(fdp.counts(1000)) == len(a.tried)
    assert (a.mu_guesses, a.mu_correct) in a.tried
    assert a.epsilon_gaussian == pytest.approx(fdp.epsilon_from_mu(a.mu, 1e-5))
    assert fdp.FdpAudit.from_dict(a.to_dict()) == a
    assert fdp.rebound(a, 0.95) == a
    assert fdp.rebound(a, 0.99).mu <= a.mu


def test_ties_never_follow_the_rows_order():
    """Guesses depend on the scores alone: tied canaries are ordered by a public permutation, so listing the
    included canaries first (the answer in the file's layout) changes nothing."""
    rng = np.random.default_rng(9)
    inc = rng.random(600) < 0.5
    keep = rng.random(600) < math.exp(1.0) / (1 + math.exp(1.0))  # randomised response: two scores, ties
    score = np.where(keep, inc, ~inc).astype(float)
    shuffled = fdp.one_run_fdp_audit(score, inc)
    first = np.argsort(~inc, kind="stable")
    # the same audit on rows re-listed: guesses may differ (another permutation meets other rows), but the bound
    # stays a 95% bound; here both are far below what row order would give (every tie broken right)
    listed = fdp.one_run_fdp_audit(score[first], inc[first])
    assert max(shuffled.epsilon, listed.epsilon) < 1.5


def test_from_one_run_matches_the_direct_audit_without_ties():
    rng = np.random.default_rng(4)
    s, inc = _gaussian_canaries(rng, 2.0, 500)
    stored = one_run.one_run_lower_bound(s, inc, delta=1e-5)
    via = fdp.from_one_run(stored)
    direct = fdp.one_run_fdp_audit(s, inc, delta=1e-5)
    assert via is not None and via.mu == direct.mu and via.tried == direct.tried
    tied = one_run.one_run_lower_bound(np.round(s), inc, delta=1e-5)  # ties move the counts: no f-DP reading
    assert fdp.from_one_run(tied) is None
    assert fdp.from_one_run({"lower_bound": 1.0}) is None


def test_combine_corrects_for_seeds():
    rng = np.random.default_rng(5)
    audits = [fdp.one_run_fdp_audit(*_gaussian_canaries(rng, 2.0, 400)) for _ in range(3)]
    c = fdp.combine(audits)
    assert c["k"] == 3 and c["per_audit_confidence"] == pytest.approx(1 - 0.05 / 3)
    assert c["mu"] <= max(a.mu for a in audits)
    assert fdp.combine([audits[0]])["mu"] == audits[0].mu
    with pytest.raises(DPError, match="no f-DP audits"):
        fdp.combine([])


def test_bad_input_says_what_to_fix():
    with pytest.raises(DPError, match="one of each per canary"):
        fdp.one_run_fdp_audit([1.0, 2.0], [1])
    with pytest.raises(DPError, match="NaN"):
        fdp.one_run_fdp_audit([1.0, np.nan], [1, 0])
    with pytest.raises(DPError, match="1 .canary in training. or 0"):
        fdp.one_run_fdp_audit([1.0, 2.0], [2, 0])
    with pytest.raises(DPError, match="correct <= guesses"):
        fdp.mu_lower_bound(100, 10, 11, 0.05)
