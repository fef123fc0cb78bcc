"""Composition maths against known values."""

import math

import numpy as np
import pytest

from dpcore.errors import DPError
from dpcore.noise import composition as C
from dpcore.noise.charge import gaussian_rho, pure_rho


def test_basic_sums_epsilon_and_delta():
    assert C.basic([0.1] * 10) == (pytest.approx(1.0), 0.0)
    assert C.basic([0.5, 0.25], [1e-6, 1e-6]) == (0.75, pytest.approx(2e-6))
    assert C.basic([0.5, 0.25], 1e-6)[1] == pytest.approx(2e-6)  # one δ for all


def test_advanced_known_values():
    # k = 100 queries of ε = 0.1, δ′ = 1e-5: sqrt(2·100·ln 1e5)·0.1 + 100·0.1·(e^0.1 − 1)
    eps, delta = C.advanced_homogeneous(0.1, 100, 1e-5)
    assert eps == pytest.approx(5.850235093, rel=1e-9)
    assert delta == 1e-5
    # Dwork & Roth's rule of thumb: ε₀ = ε / (2 sqrt(2k ln(1/δ′))) gives total ε ≈ ε/2 + the e^ε term
    k, dp, target = 10_000, 1e-6, 1.0
    e0 = target / (2 * math.sqrt(2 * k * math.log(1 / dp)))
    assert C.advanced_homogeneous(e0, k, dp)[0] == pytest.approx(0.5 + k * e0 * math.expm1(e0), rel=1e-12)
    # the heterogeneous form equals the homogeneous one for equal ε, and adds the δs
    assert C.advanced([0.1] * 100, 1e-5, [1e-7] * 100) == (pytest.approx(eps), pytest.approx(1e-5 + 1e-5))


def test_advanced_beats_basic_only_for_many_small_queries():
    assert C.advanced_homogeneous(0.01, 10_000, 1e-6)[0] < C.basic([0.01] * 10_000)[0]  # 6.3 vs 100
    assert C.advanced_homogeneous(1.0, 1, 1e-6)[0] > 1.0


def test_zcdp_known_values():
    assert gaussian_rho(1.0, 1.0) == 0.5
    assert gaussian_rho(2.0, 4.0) == 2.0
    assert pure_rho(0.2) == pytest.approx(0.02)
    # ρ + 2 sqrt(ρ ln(1/δ)) at ρ = 0.5, δ = 1e-5
    assert C.zcdp_epsilon(0.5, 1e-5) == pytest.approx(0.5 + 2 * math.sqrt(0.5 * math.log(1e5)))
    assert C.zcdp_epsilon(0.5, 1e-5) == pytest.approx(5.298525912, rel=1e-9)
    assert C.zcdp_epsilon(0.0, 1e-5) == 0.0


def test_rdp_matches_opacus_conversion():
    # Known answers from opacus 1.6 accountants.analysis.rdp.get_privacy_spent(orders, rdp=orders*ρ, delta=1e-5)
    # (hard-coded so this test does not import torch).
    orders = np.array([1.5, 2, 4, 8, 16, 32, 64])
    assert C.rdp_epsilon(0.5, 1e-5, orders) == (pytest.approx(5.087861628831665, rel=1e-12), 4.0)
    assert C.rdp_epsilon(0.01, 1e-5, orders) == (pytest.approx(0.5478380617554359, rel=1e-12), 32.0)
    assert C.rdp_epsilon(3.0, 1e-5, orders) == (pytest.approx(15.087861628831664, rel=1e-12), 4.0)
    # the improved conversion is never worse than the closed form
    for rho in (0.001, 0.05, 0.5, 5):
        assert C.rdp_epsilon(rho, 1e-6)[0] <= C.zcdp_epsilon(rho, 1e-6) + 1e-9


def test_zcdp_beats_basic_for_many_gaussian_queries():
    # 100 Gaussian queries with σ = 10 (Δ = 1): ρ = 100 / 200 = 0.5 in total
    rho = 100 * gaussian_rho(10.0)
    assert C.zcdp_epsilon(rho, 1e-5) == pytest.approx(5.2985, abs=1e-4)


def test_curves_shapes_and_order():
    c = C.curves(0.1, 50, 1e-5)
    assert list(c["k"]) == list(range(1, 51))
    assert c["basic"][-1] == pytest.approx(5.0)
    assert np.all(np.diff(c["advanced"]) > 0) and np.all(np.diff(c["zcdp"]) > 0)
    assert np.all(c["rdp"] <= c["zcdp"] + 1e-9)
    g = C.curves(0.5, 10, 1e-6, delta=1e-6, rho=0.01)
    assert g["basic_delta"][-1] == pytest.approx(1e-5) and g["advanced_delta"][-1] == pytest.approx(1.1e-5)
    assert g["zcdp"][0] == pytest.approx(C.zcdp_epsilon(0.01, 1e-6))


def test_ledger_costs():
    entries = [{"epsilon": 0.1, "delta": 0.0, "rho": None}] * 3 + [{"epsilon": 0.5, "delta": 1e-6, "rho": 0.02}]
    rows = {r["rule"]: r for r in C.ledger_costs(entries, 1e-6)}
    assert rows["basic"]["epsilon"] == pytest.approx(0.8) and rows["basic"]["delta"] == pytest.approx(1e-6)
    assert rows["advanced"]["delta"] == pytest.approx(2e-6)
    assert rows["zCDP"]["epsilon"] == pytest.approx(C.zcdp_epsilon(3 * 0.005 + 0.02, 1e-6))
    assert C.ledger_costs([], 1e-6)[0]["epsilon"] == 0.0
    with pytest.raises(DPError, match="zCDP cost"):
        C.ledger_costs([{"epsilon": 0.5, "delta": 1e-6}], 1e-6)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: C.basic([0.1, 0]), "epsilon must be > 0"),
        (lambda: C.basic([0.1, -1]), "epsilon must be > 0"),
        (lambda: C.basic([0.1, 0.2], [1e-6] * 3), "one δ per query"),
        (lambda: C.advanced([0.1], 0), "δ′"),
        (lambda: C.advanced([0.1], 1.5), "δ′"),
        (lambda: C.advanced_homogeneous(0.1, 0, 1e-5), "k"),
        (lambda: C.zcdp_epsilon(-1, 1e-5), "ρ must be"),
        (lambda: C.zcdp_epsilon(0.5, 0), "delta must be in"),
        (lambda: C.rdp_epsilon(0.5, 1e-5, [0.5, 2]), "orders"),
        (lambda: gaussian_rho(0), "σ must be"),
        (lambda: C.curves(0.1, 10**6, 1e-5), "at most"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(DPError, match=match):
        call()


@pytest.mark.parametrize("rho", [1e-4, 0.1, 10.0, 1e3, 1e5])
def test_rdp_order_grid_is_fine_near_one(rho):
    """The grid used to start at α = 1.1: for a large total ρ the best order is closer to 1 and the bound
    was loose. Compare with a continuous minimisation over α."""
    import math

    from scipy.optimize import minimize_scalar

    delta = 1e-5

    def f(log_am1):
        a = 1 + math.exp(log_am1)
        return a * rho + math.log((a - 1) / a) - (math.log(delta) + math.log(a)) / (a - 1)

    best = minimize_scalar(f, bounds=(math.log(1e-5), math.log(1e6)), method="bounded", options={"xatol": 1e-10})
    eps, _ = C.rdp_epsilon(rho, delta)
    assert eps >= best.fun - 1e-9
    assert eps <= best.fun * (1 + 2e-3) + 1e-6
