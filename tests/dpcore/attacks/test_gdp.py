"""Gaussian-DP and f-DP audits from scores (Nasr et al. 2023 with Clopper–Pearson): known answers, the proved
curve, coverage over simulated audits of mechanisms of known μ and ε, and stored audits re-bounded."""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import ndtr, ndtri

from dpcore.attacks import audit, gdp
from dpcore.errors import DPError
from dpcore.noise.calibration import gaussian_epsilon


def exceed_limit(n: int, level: float = 0.05) -> int:
    return int(stats.binom.ppf(0.99, n, level))


def test_mu_from_rates_known_answers():
    """μ̂ = Φ⁻¹(1 − α) − Φ⁻¹(β): a μ-GDP test at FPR α has FNR Φ(Φ⁻¹(1 − α) − μ) exactly, and gives μ back."""
    for mu in (0.3, 1.0, 2.5):
        for a in (1e-3, 0.05, 0.3):
            b = float(ndtr(ndtri(1 - a) - mu))
            assert float(gdp.mu_from_rates(a, b)) == pytest.approx(mu, rel=1e-9)
    assert float(gdp.mu_from_rates(0.5, 0.5)) == 0.0  # a coin flip proves nothing
    assert float(gdp.mu_from_rates(0.7, 0.7)) == 0.0  # worse than a coin: floored at 0
    assert float(gdp.mu_from_rates(0.05, 1.0)) == 0.0


def test_hull_is_concave_through_the_corners():
    corners = [(0.01, 0.2), (0.1, 0.5), (0.05, 0.25)]  # the last lies under the chord of the other two
    xs = np.array([0.0, 0.01, 0.05, 0.1, 1.0])
    ys = gdp.hull_tpr(corners, xs)
    assert ys[0] == 0.0 and ys[-1] == 1.0
    assert ys[1] == pytest.approx(0.2) and ys[3] == pytest.approx(0.5)
    assert ys[2] == pytest.approx(0.2 + (0.5 - 0.2) * (0.04 / 0.09))  # on the chord, above the inner corner


def _gauss(rng, mu, n):
    return rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)


def test_audit_proves_points_under_the_true_curve():
    """On a μ = 1.5 Gaussian mechanism with many rows, every proved corner lies under the true ROC ceiling, the
    Gaussian curve of μ̂ passes through the best corner, and μ̂ is close to (and below) the truth."""
    rng = np.random.default_rng(1)
    mu = 1.5
    g = gdp.gdp_audit({"s": _gauss(rng, mu, 20_000)}, delta=1e-5)
    for p in g.points:
        assert p.tpr_lo <= float(ndtr(ndtri(p.fpr_hi) + mu)) + 1e-12
    best = g.points[g.best]
    assert float(g.gaussian_tpr([best.fpr_hi])[0]) == pytest.approx(best.tpr_lo, rel=1e-9)
    assert 1.3 < g.mu <= mu
    assert g.mu <= g.mu_estimate + 1e-9
    assert g.epsilon > 0 and g.direction == "higher" and len(g.points) <= gdp.TESTS
    # the proved curve is under the true one everywhere
    grid = np.geomspace(1e-4, 1, 50)
    assert np.all(g.proven_tpr(grid) <= ndtr(ndtri(grid) + mu) + 1e-9)


def test_direction_and_attack_are_chosen_on_the_selection_half():
    rng = np.random.default_rng(2)
    pos, neg = _gauss(rng, 2.0, 2000)
    g = gdp.gdp_audit({"noise": (rng.normal(size=2000), rng.normal(size=2000)), "flipped": (-pos, -neg)})
    assert g.attack == "flipped" and g.direction == "lower" and g.mu > 1.0


def test_quick_coverage_gaussian():
    """200 audits of a μ = 1 Gaussian mechanism (300 members, 300 non-members each): μ̂ above μ, and the ε bound
    above the mechanism's exact ε at δ, each in at most 5% of audits (binomial slack)."""
    rng = np.random.default_rng(11)
    mu, n, delta = 1.0, 200, 1e-3
    true_eps = gaussian_epsilon(1.0 / mu, delta)
    over_mu = over_eps = 0
    for _ in range(n):
        g = gdp.gdp_audit({"s": _gauss(rng, mu, 300)}, delta=delta, split_seed=int(rng.integers(1 << 30)))
        over_mu += g.mu > mu
        over_eps += g.epsilon > true_eps
    assert over_mu <= exceed_limit(n) and over_eps <= exceed_limit(n), (over_mu, over_eps)


@pytest.mark.slow
def test_coverage_laplace_and_strong_gaussian():
    """300 audits each: an exactly ε = 2 Laplace mechanism (ε bound above 2) and a μ = 3 Gaussian one (μ̂ above 3),
    1,000 rows a side; each exceeds the truth in at most 5% of audits (binomial slack)."""
    rng = np.random.default_rng(12)
    n = 300
    over_eps = over_mu = 0
    for _ in range(n):
        pos, neg = rng.laplace(1.0, 0.5, 1000), rng.laplace(0.0, 0.5, 1000)  # shift 1, scale 1/ε
        over_eps += gdp.gdp_audit({"s": (pos, neg)}, delta=0.0, split_seed=int(rng.integers(1 << 30))).epsilon > 2.0
        over_mu += gdp.gdp_audit({"s": _gauss(rng, 3.0, 1000)}, split_seed=int(rng.integers(1 << 30))).mu > 3.0
    assert over_eps <= exceed_limit(n) and over_mu <= exceed_limit(n), (over_eps, over_mu)


def test_rebound_combine_and_round_trip():
    rng = np.random.default_rng(3)
    gs = [gdp.gdp_audit({"s": _gauss(rng, 2.0, 500)}, split_seed=i) for i in range(3)]
    assert gdp.GdpAudit.from_dict(gs[0].to_dict()) == gs[0]
    assert gdp.rebound(gs[0], 0.95) == gs[0]
    assert gdp.rebound(gs[0], 0.99).mu < gs[0].mu
    c = gdp.combine(gs)
    assert c["k"] == 3 and c["mu"] <= max(g.mu for g in gs)
    with pytest.raises(DPError, match="no Gaussian-DP audits"):
        gdp.combine([])


def test_mu_from_a_stored_split_audit():
    rng = np.random.default_rng(4)
    pos, neg = _gauss(rng, 2.0, 1000)
    a = audit.audit_scores({"s": (pos, neg)}, 1e-5)
    mu = gdp.mu_from_split_audit(a)
    _, fpr_hi = audit.clopper_pearson(a["fp"], a["nonmembers"], 0.05)
    _, fnr_hi = audit.clopper_pearson(a["members"] - a["tp"], a["members"], 0.05)
    assert mu == pytest.approx(float(ndtri(1 - fpr_hi) - ndtri(fnr_hi)))
    assert 0 < mu < 2.0
    assert gdp.mu_from_split_audit({"lower_bound": 1.0}) is None


def test_bad_input():
    with pytest.raises(DPError, match="at least one attack"):
        gdp.gdp_audit({})
    with pytest.raises(DPError, match="at least 2 members"):
        gdp.gdp_audit({"s": ([1.0], [0.0, 1.0])})
    with pytest.raises(DPError, match="same members"):
        gdp.gdp_audit({"a": ([1.0, 2.0], [0.0, 1.0]), "b": ([1.0, 2.0, 3.0], [0.0, 1.0])})
    assert math.isfinite(gdp.gdp_audit({"s": ([1.0, 1.0], [1.0, 1.0])}).mu)
