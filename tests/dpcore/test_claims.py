"""dpcore.claims: a bound shown rounded is still a bound (upper bounds round up, lower bounds down)."""

import math

import numpy as np
import pytest

from dpcore import claims


@pytest.mark.parametrize(
    "x, up, down",
    [
        (1.004, "1.01", "1"),  # ":.2f" wrote "1.00": below the ε an accountant proved
        (0.1, "0.1", "0.1"),  # the float's shortest decimal, not its binary tail
        (1.2345, "1.24", "1.23"),
        (9.996, "10", "9.99"),  # the carry into the next power of ten
        (0.7097, "0.71", "0.709"),
        (1e-5, "1e-5", "1e-5"),  # not Python's "1e-05"
        (1.234e-5, "1.24e-5", "1.23e-5"),
        (12345.6, "12,400", "12,300"),  # not "1.24e+04"
        (0.0, "0", "0"),
        (math.inf, "∞", "∞"),
    ],
)
def test_known_answers(x, up, down):
    assert claims.up(x) == up and claims.down(x) == down


def test_missing_values_read_as_a_dash():
    assert claims.up(None) == claims.down(float("nan")) == "—"


def test_delta_rounds_up_to_two_digits():
    assert claims.delta(1e-5) == "1e-5" and claims.delta(1.01e-5) == "1.1e-5" and claims.delta(2.5e-6) == "2.5e-6"


@pytest.mark.parametrize("sig", [1, 2, 3, 4])
def test_never_on_the_wrong_side(sig):
    rng = np.random.default_rng(0)  # values across sixteen orders of magnitude
    for x in 10.0 ** rng.uniform(-8, 8, 2000):
        u, d = (float(s.replace(",", "")) for s in (claims.up(x, sig), claims.down(x, sig)))
        assert d <= x <= u, (x, sig, u, d)
        assert (u - x) <= 10 ** (math.floor(math.log10(x)) - sig + 1) * 1.0000001  # one step of the last digit


def test_percent_keeps_its_side():
    """A ceiling shown as a percentage rounds up (e/(1 + e) = 73.106% → "73.2%", nearest said 73.1%); a floor
    rounds down; never more than one step of the last decimal away."""
    assert claims.percent(math.e / (1 + math.e), up=True) == "73.2%"
    assert claims.percent(math.e / (1 + math.e), up=False) == "73.1%"
    assert claims.percent(0.5, 0, up=True) == "50%"
    assert claims.percent(0.9991, 0, up=True) == "100%"
    assert claims.percent(0.25, 1, up=True) == "25.0%"
    assert claims.percent(None, up=True) == "—"
    rng = np.random.default_rng(3)
    for x in rng.uniform(0, 1, 4000):
        for dec in (0, 1, 2):
            hi, lo = (float(claims.percent(x, dec, up=u)[:-1]) for u in (True, False))
            assert lo <= x * 100 + 1e-9 and hi >= x * 100 - 1e-9
            assert hi - lo <= 10**-dec + 1e-9
