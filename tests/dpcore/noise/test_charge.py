"""Charge: the typed cost of a release (ε, δ, ρ, neighbour relation) — known answers for its composition."""

import dataclasses
import math

import pytest

from dpcore.errors import DPError
from dpcore.noise import composition
from dpcore.noise.calibration import gaussian_analytic_sigma
from dpcore.noise.charge import ZERO, Charge, Neighbour, compose, gaussian_rho, require_ledger_relation
from dpcore.queries import model


def test_basic_composition_sums_epsilon_delta_and_rho():
    total = Charge.pure(0.1) + Charge.pure(0.2) + Charge(0.5, 1e-6, 0.02)
    assert total.epsilon == pytest.approx(0.8) and total.delta == pytest.approx(1e-6)
    assert total.rho == pytest.approx(0.1**2 / 2 + 0.2**2 / 2 + 0.02)
    assert total.neighbour is Neighbour.ADD_REMOVE
    assert compose([Charge.pure(0.1)] * 10).epsilon == pytest.approx(1.0)
    assert compose([]) == ZERO
    assert (Charge(0.5, 0.7) + Charge(0.5, 0.6, 0.1)).delta == 1.0  # δ capped at 1


def test_rho_unknown_stays_unknown_and_zcdp_accounting_refuses_it():
    assert Charge(1.0, 1e-6).rho is None  # an (ε, δ) guarantee with no known ρ
    assert (Charge(1.0, 1e-6) + Charge.pure(1.0)).rho is None
    with pytest.raises(DPError, match="zCDP cost"):
        composition.ledger_costs([Charge(1.0, 1e-6)], 1e-6)


def test_gaussian_rho_uses_the_exact_analytic_sigma():
    # Balle & Wang 2018: ε = 1, δ = 1e-5, Δ = 1 needs σ ≈ 3.7306; ρ = 1/(2σ²) ≈ 0.035926
    c = Charge.gaussian(1.0, 1e-5)
    assert c.rho == pytest.approx(0.0359257, rel=1e-5)
    sigma = gaussian_analytic_sigma(1.0, 1e-5, 1.0)
    assert c.rho == gaussian_rho(sigma, 1.0)
    # σ scales with Δ, so ρ does not depend on Δ (Δ = 0 releases nothing)
    assert Charge.gaussian(1.0, 1e-5, 7.0).rho == pytest.approx(c.rho, rel=1e-9)
    assert Charge.gaussian(1.0, 1e-5, 0.0).rho == 0.0


def test_zcdp_rho_adds_up_over_gaussian_charges():
    k = 20
    one = Charge.gaussian(0.5, 1e-7)
    total = compose([one] * k)
    assert total.rho == pytest.approx(k * one.rho)
    assert total.epsilon == pytest.approx(10.0) and total.delta == pytest.approx(2e-6)
    rows = {r["rule"]: r for r in composition.ledger_costs([one] * k, 1e-6)}
    assert rows["zCDP"]["epsilon"] == pytest.approx(composition.zcdp_epsilon(k * one.rho, 1e-6))
    assert rows["zCDP"]["epsilon"] < rows["basic"]["epsilon"]


def test_neighbour_relation_mismatch_is_refused():
    replace = Charge.pure(0.1, neighbour=Neighbour.REPLACE_ONE)
    with pytest.raises(DPError, match="different neighbours"):
        Charge.pure(0.1) + replace
    with pytest.raises(DPError, match="different neighbours"):
        composition.ledger_costs([Charge.pure(0.1), replace], 1e-6)
    with pytest.raises(DPError, match="one relation"):
        require_ledger_relation(replace)
    assert (replace + replace).neighbour is Neighbour.REPLACE_ONE


def test_frozen_validated_and_stored_round_trip():
    c = Charge.gaussian(1.0, 1e-6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.epsilon = 2.0
    assert Charge.from_dict(c.to_dict()) == c
    old = Charge.from_dict({"epsilon": 0.5, "delta": 0.0, "rho": None})  # answers stored before Charge existed
    assert old.neighbour is Neighbour.ADD_REMOVE and old.rho == pytest.approx(0.125)
    for bad in (
        dict(epsilon=-1),
        dict(epsilon=math.nan),
        dict(epsilon=1, delta=1.5),
        dict(epsilon=1, rho=-0.1),
        dict(epsilon=1, neighbour="swap-two"),
    ):
        with pytest.raises(DPError):
            Charge(**bad)


def test_mean_is_two_half_releases_composed():
    q = model.make_query("mean", epsilon=1.0, column="age", bounds=(18, 90), mechanism="gaussian", delta=1e-6)
    c = q.charge(36.0)
    half = Charge.gaussian(0.5, 5e-7)
    assert c.epsilon == 1.0 and c.delta == 1e-6  # exactly what the ledger charges
    assert c.rho == pytest.approx(2 * half.rho)
    pub = model.make_query("mean", epsilon=1.0, column="age", bounds=(18, 90), public_n=True)
    assert pub.charge(0.01).neighbour is Neighbour.REPLACE_ONE


def test_compose_by_relation_keeps_one_total_per_relation():
    """Charges under different neighbour relations add up to no one guarantee (the noise page's releases)."""
    from dpcore.noise.charge import Charge, Neighbour, compose_by_relation

    a = Charge.pure(1.0)
    r = Charge.pure(0.5, neighbour=Neighbour.REPLACE_ONE)
    totals = compose_by_relation([a, r, a.to_dict(), r])
    assert [(t.neighbour, t.epsilon) for t in totals] == [(Neighbour.ADD_REMOVE, 2.0), (Neighbour.REPLACE_ONE, 1.0)]
    assert compose_by_relation([]) == []
