"""Large ε flagged where it is spent: known answers for when an answer is nearly exact or ε is above "weak"."""

import math

import pytest

from dpcore.noise import composition
from dpcore.noise.charge import Charge
from dpcore.queries import caution
from dpcore.queries.model import make_query


def test_the_weak_level_is_ln_99():
    assert caution.weak_limit() == pytest.approx(math.log(99))


@pytest.mark.parametrize("eps, flagged", [(0.1, False), (1.0, False), (3.6, False), (3.7, True), (4.0, True)])
def test_a_count_is_nearly_exact_when_its_95_interval_is_zero(eps, flagged):
    # geometric noise: P(noise = 0) = (1 − α)/(1 + α), α = e^−ε; it reaches 95% between ε = 3.6 and 3.7
    alpha = math.exp(-eps)
    assert ((1 - alpha) / (1 + alpha) >= 0.95) == flagged
    said = caution.cautions(make_query("count", epsilon=eps, condition="sex=F"))
    assert bool(said) == flagged
    if flagged:
        assert "95% noise interval is ±0, narrower than what one person changes it by (±1)" in said[0]


def test_a_sum_is_nearly_exact_below_one_persons_effect():
    # Laplace: 95% half-width ln(20)·Δ/ε < Δ exactly when ε > ln 20 ≈ 3.0
    assert not caution.cautions(make_query("sum", epsilon=2.9, column="age", bounds=(18, 90)))
    said = caution.cautions(make_query("sum", epsilon=3.1, column="age", bounds=(18, 90)))
    assert said and "narrower than what one person changes it by (±90)" in said[0]


def test_above_weak_is_said_with_its_belief_bound():
    said = caution.cautions(make_query("histogram", epsilon=5, column="diagnosis", categories="a,b"))
    assert any('above the "weak" privacy level (ε ≤ 4.59)' in s and "99.4% sure" in s for s in said)
    assert caution.cautions(make_query("mean", epsilon=1, column="age", bounds=(18, 90))) == []


def test_the_composition_reading_names_the_tightest_rule():
    few = composition.ledger_costs([Charge.pure(0.3)] * 3, 1e-6)
    assert composition.tightest(few).startswith("Here basic composition is the tightest (ε = 0.9)")
    many = composition.ledger_costs([Charge.gaussian(0.1, 1e-7)] * 400, 1e-6)
    text = composition.tightest(many)
    assert text.startswith("Here zCDP is the tightest") or text.startswith("Here RDP is the tightest")
    assert "basic ε = 40" in text
    assert composition.tightest(composition.ledger_costs([], 1e-6)).startswith("No answers yet")
