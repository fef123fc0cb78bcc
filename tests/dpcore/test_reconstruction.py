"""Reconstruction risk from the trade-off curve (Hayes, Mahloujifar & Balle 2023; Kaissis et al. 2023): known answers
for Gaussian and Laplace noise, DP-SGD's PLD bound under the (ε, δ) one, and the advice's membership limit read at
the same point."""

import math

import pytest
from scipy.special import ndtr, ndtri

from dpcore.advisor import decision, reconstruction, targets
from dpcore.errors import DPError
from dpcore.training import accounting


def test_gaussian_known_answers():
    """γ(κ) = Φ(Φ⁻¹(κ) + μ): μ = 1 at κ = ½ is Φ(1) = 0.8413; and at every κ."""
    r = reconstruction.gaussian(1.0, kappas=[0.5, 1e-3])
    assert r.bounds[0] == pytest.approx(0.8413447460685429, rel=1e-12)
    assert r.bounds[1] == pytest.approx(float(ndtr(ndtri(1e-3) + 1.0)), rel=1e-12)


def test_laplace_known_answer():
    """The ε-DP Laplace curve: e^ε·κ for κ < e^−ε/2 — the (ε, 0) bound is tight there."""
    r = reconstruction.laplace(1.0, kappas=[1e-3, 0.01])
    assert r.bounds == pytest.approx((math.e * 1e-3, math.e * 0.01))
    assert r.bounds == pytest.approx(r.from_epsilon)


def test_dpsgd_bound_is_under_the_epsilon_delta_bound():
    """Hayes et al.'s point: DP-SGD's curve bounds reconstruction below e^ε·κ + δ, far below at larger ε."""
    s, q, t, d = 0.7, 0.02, 2000, 1e-5
    eps = accounting.pld_epsilon(s, q, t, d)
    r = reconstruction.dpsgd(s, q, t, delta=d, epsilon=eps)
    for b, naive, k in zip(r.bounds, r.from_epsilon, r.kappas):
        assert k < b <= naive
    assert eps > 5 and r.bounds[1] < 0.2 * r.from_epsilon[1]


@pytest.mark.parametrize("mechanism,kw", [("gaussian", {}), ("dpsgd", {"sample_rate": 0.01, "steps": 1000})])
def test_advice_membership_limit_is_the_reconstruction_bound_at_its_fpr(mechanism, kw):
    """Reconstruction at baseline κ and membership TPR at FPR κ are the same point of the same curve: an advice meeting
    "TPR ≤ 5% at FPR 1%" bounds reconstruction from a 1% baseline by 5% too."""
    inp = decision.inputs(mechanism, targets.RiskLimit("tpr", 0.05, 0.01), None, delta=1e-5, **kw)
    res = decision.solve_inputs(inp)
    r = reconstruction.for_advice(res, kappas=[0.01])
    assert r.bounds[0] <= 0.05 + 1e-9
    assert r.bounds[0] == pytest.approx(0.05, rel=0.02)
    assert r.rows()[0]["times_baseline"] == pytest.approx(r.bounds[0] / 0.01)


def test_bad_baseline():
    with pytest.raises(DPError, match="probability in"):
        reconstruction.gaussian(1.0, kappas=[0.0])
    with pytest.raises(DPError, match="no reconstruction bound"):
        reconstruction.for_advice({"mechanism": "exponential"})
