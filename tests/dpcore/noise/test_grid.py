"""The release grid (dpcore.noise.grid): the sensitivity in grid steps that its docstring proves holds for every
neighbour, the grid a user reads, and the one check of what a release can represent."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore import limits
from dpcore.errors import DPError
from dpcore.noise import grid

finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)


@settings(max_examples=120, deadline=None, derandomize=True)
@given(st.lists(finite, max_size=30), finite, finite, finite)
def test_one_record_moves_a_clamped_sum_by_at_most_k_steps(values, a, b, extra):
    """SUM, add/remove: |S(D + x) − S(D)| ≤ K = max(|r(lo)|, |r(hi)|), whatever the floats."""
    lo, hi = min(a, b), max(a, b)
    if hi - lo < 1e-6 * max(abs(lo), abs(hi), 1.0):
        return
    d = grid.clamped_sum(values, lo, hi)
    d2 = grid.clamped_sum([*values, extra], lo, hi)
    assert d.grid == d2.grid and abs(d2.units - d.units) <= d.k
    assert 10**6 - 1 <= d.k <= 10**7 + 1  # Δ spans 10^6 to 10^7 grid steps


@settings(max_examples=120, deadline=None, derandomize=True)
@given(st.lists(finite, min_size=1, max_size=30), finite, finite, finite, st.booleans())
def test_one_record_moves_a_centred_sum_by_at_most_k_steps(values, a, b, extra, replace):
    """MEAN's centred sum: add/remove moves it by ≤ max(C − r(lo), r(hi) − C); replacing one record (n public) by
    ≤ r(hi) − r(lo)."""
    lo, hi = min(a, b), max(a, b)
    if hi - lo < 1e-6 * max(abs(lo), abs(hi), 1.0):
        return
    d = grid.centred_sum(values, lo, hi, replace_one=replace)
    other = [*values[:-1], extra] if replace else [*values, extra]
    d2 = grid.centred_sum(other, lo, hi, replace_one=replace)
    assert abs(d2.units - d.units) <= d.k


@settings(max_examples=300, deadline=None, derandomize=True)
@given(finite, st.floats(min_value=1e-6, max_value=1e9), st.floats(min_value=-1, max_value=1))
def test_a_typed_value_moves_by_at_most_floor_delta_over_g_plus_one(v, delta, where):
    """A single value and a claimed Δ: any v' within Δ rounds at most ⌊Δ/g⌋ + 1 steps away (exact arithmetic)."""
    g = grid.for_sensitivity(delta)
    v2 = v + where * delta
    if abs(v2 - v) > delta:  # the float sum may overshoot by an ulp: outside the claim
        return
    assert abs(g.exact_units(v2) - g.exact_units(v)) <= g.value_k(delta)


@pytest.mark.parametrize(
    "delta,step,text",
    [
        (90, 1e-5, "0.00001"),
        (72, 1e-5, "0.00001"),
        (1, 1e-6, "0.000001"),
        (250_000, 0.1, "0.1"),
        (1e15, 1e9, "1e9"),
        (0.0072, 1e-9, "1e-9"),
        (10, 1e-5, "0.00001"),
        (9.999999, 1e-6, "0.000001"),
    ],
)
def test_the_grid_follows_delta(delta, step, text):
    g = grid.for_sensitivity(delta)
    assert g.step == pytest.approx(step) and g.text() == text
    assert 10**6 * (1 - 1e-9) <= delta / g.step < 10**7 + 1


def test_values_come_back_exactly_and_on_the_grid():
    s = grid.clamped_sum(np.array([18.0, 33.25, 97.0, 10.0]), 18, 90)
    assert s.units == (18 + 33.25 + 90 + 18) * 10**5 and s.k == 90 * 10**5
    assert s.value(s.units) == 159.25 and s.value(s.units + 1) == 159.25001
    c = grid.centred_sum(np.array([18.0, 90.0, 54.0]), 18, 90)
    assert c.centre == 54 * 10**5 // 1 and c.k == 36 * 10**5 and c.value(c.units, 3) == 54.0


@pytest.mark.parametrize(
    "kw,message",
    [
        ({"magnitude": 1e308}, "between −1e15 and 1e15, got 1e308"),
        ({"magnitude": float("inf")}, "between"),
        ({"magnitude": 1.0, "sensitivity": 1e308}, "from 0 to 1e15"),
        ({"magnitude": 1.0, "sensitivity": 1e-300}, "0 or at least 1e-12"),
        ({"magnitude": 1e12, "sensitivity": 1e-3}, "too small beside"),
        ({"magnitude": "x"}, "must be a number"),
    ],
)
def test_what_a_release_cannot_represent_is_one_message(kw, message):
    with pytest.raises(DPError, match=message):
        grid.check_release(**kw)


def test_the_largest_numbers_a_release_takes_are_released():
    top = limits.RELEASE_MAGNITUDE_MAX
    grid.check_release(magnitude=top, sensitivity=top)
    grid.check_release(magnitude=top, sensitivity=top * limits.RELEASE_RESOLUTION)
    s = grid.clamped_sum(np.full(1_000, top), -top, top)  # 1,000 rows at the top: exact, finite
    assert s.value(s.units) == 1e18 and math.isfinite(s.value(s.units + 10**9))
    with pytest.raises(DPError, match="cannot be summed exactly"):
        grid.exact_sum(np.zeros(10, dtype=np.int64), 2**61)
