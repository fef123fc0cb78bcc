"""Noise mechanisms: calibration known answers, exact distribution facts, simulation, queries, bad inputs."""

import math

import mpmath
import numpy as np
import pandas as pd
import pytest
from diffprivlib.mechanisms import GaussianAnalytic

from dpcore.errors import DPError
from dpcore.noise import calibration, interpret, release, teaching
from dpcore.noise import mechanisms as mech
from dpcore.noise import view as noise_page
from dpcore.noise.composition import basic_composition
from dpcore.noise.release import release_answer, release_count, release_value

from .test_release_dp import _mp_delta as _mp_delta_discrete  # one 40-digit δ(ε) of the discrete Gaussian

# --- calibration -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps,sens,b", [(1.0, 1.0, 1.0), (0.5, 1.0, 2.0), (2.0, 3.0, 1.5), (0.01, 1.0, 100.0)])
def test_laplace_scale_known_answers(eps, sens, b):
    assert calibration.laplace_scale(eps, sens) == pytest.approx(b)


@pytest.mark.parametrize("eps,delta,sens", [(0.5, 1e-5, 1.0), (0.1, 1e-6, 2.0), (0.9, 1e-3, 0.5)])
def test_classic_sigma_formula(eps, delta, sens):
    expected = sens * math.sqrt(2 * math.log(1.25 / delta)) / eps
    assert calibration.gaussian_classic_sigma(eps, delta, sens) == pytest.approx(expected, rel=1e-12)
    assert calibration.gaussian_classic_sigma(0.5, 1e-5, 1.0) == pytest.approx(9.6896, abs=1e-4)  # by hand


def _independent_analytic_sigma(eps, delta, sens=1.0):
    """Bisection on the Balle-Wang condition in 50-digit arithmetic (no scipy, no dpcore)."""
    mpmath.mp.dps = 50
    eps, delta = mpmath.mpf(eps), mpmath.mpf(delta)

    def d(sigma):
        a, b = 1 / (2 * sigma), eps * sigma
        return mpmath.ncdf(a - b) - mpmath.e**eps * mpmath.ncdf(-a - b)

    lo, hi = mpmath.mpf("1e-6"), mpmath.mpf("1e6")
    for _ in range(200):
        mid = mpmath.sqrt(lo * hi)
        if d(mid) > delta:
            lo = mid
        else:
            hi = mid
    return float(hi) * sens


@pytest.mark.parametrize(
    "eps,delta",
    [(0.01, 1e-5), (0.1, 1e-10), (0.5, 1e-5), (1.0, 1e-5), (1.0, 1e-2), (5.0, 1e-6), (20.0, 1e-10), (20.0, 1e-3)],
)
def test_analytic_sigma_matches_independent_root_finding(eps, delta):
    assert calibration.gaussian_analytic_sigma(eps, delta, 1.0) == pytest.approx(
        _independent_analytic_sigma(eps, delta), rel=1e-8
    )


def _mp_delta(sigma, eps, sens=1.0):
    mpmath.mp.dps = 50
    sigma, eps = mpmath.mpf(sigma) / sens, mpmath.mpf(eps)
    a, b = 1 / (2 * sigma), eps * sigma
    return mpmath.ncdf(a - b) - mpmath.e**eps * mpmath.ncdf(-a - b)


@pytest.mark.parametrize(
    "eps,delta", [(20.0, 1e-7), (10.0, 1e-10), (20.0, 1e-10), (0.01, 1e-10), (15.0, 1e-2), (1.0, 1e-5)]
)
def test_released_sigma_is_never_below_the_exact_one(eps, delta):
    """Issue 11.7 and 25: the σ a Gaussian release uses starts from our exact analytic σ (never diffprivlib's, 5.7%
    over at ε = 20, δ = 1e-7) and is raised until the discrete Gaussian's own δ(ε) — summed over its support in
    40-digit arithmetic here — is at most δ."""
    noise = release.noise_for("gaussian", epsilon=eps, delta=delta, sensitivity=2)
    assert isinstance(noise, mech.DiscreteGaussian)
    assert noise.scale >= calibration.gaussian_analytic_sigma(eps, delta, 2.0)
    assert noise.scale == pytest.approx(2.0 * _independent_analytic_sigma(eps, delta), rel=5e-3)
    if noise.scale < 50:  # 40-digit sums over ±60σ: only where they are quick
        assert _mp_delta_discrete(noise.scale, eps, 2) <= delta
    assert noise.actual_delta() <= delta


def test_diffprivlib_sigma_is_below_the_exact_one_at_extreme_settings():
    """Why releases do not use diffprivlib's solver (documents the regression the test above guards)."""
    theirs = GaussianAnalytic(epsilon=20.0, delta=1e-7, sensitivity=1.0)._scale
    assert float(_mp_delta(theirs, 20.0)) > 1.05e-7


def test_analytic_sigma_agrees_with_diffprivlib_and_beats_classic():
    for eps, delta in [(0.1, 1e-5), (0.5, 1e-6), (1.0, 1e-5), (3.0, 1e-5)]:
        ref = GaussianAnalytic(epsilon=eps, delta=delta, sensitivity=2.0)._scale
        assert calibration.gaussian_analytic_sigma(eps, delta, 2.0) == pytest.approx(ref, rel=1e-6)
    assert calibration.gaussian_analytic_sigma(0.5, 1e-5, 1) < calibration.gaussian_classic_sigma(0.5, 1e-5, 1)
    assert calibration.gaussian_analytic_sigma(1.0, 1e-5, 3.0) == pytest.approx(
        3 * calibration.gaussian_analytic_sigma(1, 1e-5, 1)
    )


def test_gaussian_delta_at_calibrated_sigma_is_the_requested_delta():
    spec = mech.get("gaussian", epsilon=1.0, delta=1e-5, sensitivity=1.0)
    assert spec.actual_delta() == pytest.approx(1e-5, rel=1e-6)
    classic = mech.get("gaussian-classic", epsilon=0.5, delta=1e-5, sensitivity=1.0)
    assert classic.actual_delta() < 1e-5  # classic over-provisions noise


# --- exact distribution facts --------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism,delta", [("laplace", None), ("gaussian", 1e-5)])
def test_density_integrates_to_one_and_ci95_holds_95_percent(mechanism, delta):
    spec = mech.get(mechanism, epsilon=0.7, delta=delta, sensitivity=2.0)
    x = np.linspace(-200, 200, 400_001)
    p = spec.density(x, center=3.0)
    assert np.trapezoid(p, x) == pytest.approx(1.0, abs=1e-4)
    lo, hi = spec.interval(3.0)
    inside = (x >= lo) & (x <= hi)
    assert np.trapezoid(p[inside], x[inside]) == pytest.approx(0.95, abs=1e-3)
    # expected |error| from the density
    assert np.trapezoid(np.abs(x - 3.0) * p, x) == pytest.approx(spec.expected_abs_error(), rel=1e-3)


def test_laplace_privacy_loss_never_leaves_the_band():
    spec = mech.get("laplace", epsilon=0.8, delta=None, sensitivity=1.5)
    z = np.linspace(-50, 50, 10_001)
    loss = spec.privacy_loss(z, value=2.0)
    assert np.max(np.abs(loss)) == pytest.approx(0.8, rel=1e-9)
    assert spec.loss_exceeds_mass() == 0.0 and spec.actual_delta() == 0.0


def test_gaussian_privacy_loss_leaves_the_band_with_small_mass():
    spec = mech.get("gaussian", epsilon=1.0, delta=1e-5, sensitivity=1.0)
    z = np.linspace(-30, 30, 1001)
    loss = spec.privacy_loss(z)
    assert loss.max() > 1.0  # unbounded: leaves the band
    p_d, p_d2 = spec.density(z), spec.density(z, 1.0)
    assert np.allclose(loss, np.log(p_d / p_d2))
    mass = spec.loss_exceeds_mass()
    assert 1e-5 < mass < 1e-2  # the bad region is bigger than δ, but δ is what it costs
    # Monte Carlo check of the mass, seeded
    sims = spec.simulate(0.0, 2_000_000, seed=1)
    mc = np.mean(spec.privacy_loss(sims) > 1.0)
    assert mc == pytest.approx(mass, rel=0.1)


# --- simulation -----------------------------------------------------------------------------------------------


def test_simulation_is_seeded_and_statistically_right():
    spec = mech.get("laplace", epsilon=0.5, delta=None, sensitivity=1.0)
    a = spec.simulate(10.0, 100_000, seed=3)
    assert np.array_equal(a, spec.simulate(10.0, 100_000, seed=3))
    assert not np.array_equal(a, spec.simulate(10.0, 100_000, seed=4))
    # mean |error| = b = 2 with sd 2/sqrt(n) ~ 0.006: 5-sigma bound
    assert abs(np.mean(np.abs(a - 10.0)) - 2.0) < 0.035
    assert abs(np.mean(a) - 10.0) < 5 * math.sqrt(2) * 2 / math.sqrt(100_000)
    g = mech.get("gaussian", epsilon=1.0, delta=1e-5, sensitivity=1.0)
    s = g.simulate(0.0, 100_000, seed=np.random.default_rng(5))
    assert np.std(s) == pytest.approx(g.scale, rel=0.02)


def test_noise_view_has_everything_and_matches_exact_numbers():
    v = noise_page.noise_view("gaussian", 0.5, 1e-5, 1.0, 42.0, draws=50_000, seed=0)
    assert v.draws == 50_000 and v.value == 42.0
    assert v.sim_coverage == pytest.approx(0.95, abs=0.01)
    assert v.sim_mean_abs_error == pytest.approx(v.expected_abs_error, rel=0.03)
    assert [c[0] for c in v.compare] == list(noise_page.COMPARE_EPSILONS)
    assert len(v.curve) == 60 and v.curve["expected_abs_error"].is_monotonic_decreasing
    again = noise_page.noise_view("gaussian", 0.5, 1e-5, 1.0, 42.0, draws=50_000, seed=0)
    assert np.array_equal(v.hist_density, again.hist_density)


def test_classic_curve_is_nan_where_invalid_and_table_marks_it():
    c = noise_page.epsilon_curve("gaussian-classic", 1e-5, 1.0, [0.1, 0.5, 1.0, 5.0])
    assert c["scale"].iloc[:2].notna().all() and c["scale"].iloc[2:].isna().all()
    t = noise_page.epsilon_table("gaussian-classic", 1e-5, 1.0, 10.0)
    assert t["expected |error|"].iloc[:2].notna().all()
    assert t["privacy level"].iloc[-1].startswith("n/a")


def test_epsilon_table_shows_typical_errors_not_one_lucky_draw():
    """Issue 13: ε = 0.1 on a count must read as an error of about 10, whatever a seed would have drawn."""
    t1 = noise_page.epsilon_table("laplace", None, 1.0, 169, integer=True, seed=3)
    t2 = noise_page.epsilon_table("laplace", None, 1.0, 169, integer=True, seed=4)
    pd.testing.assert_frame_equal(t1, t2)
    assert "example release" not in t1.columns
    row = t1.iloc[0]
    p = math.exp(-0.1)
    assert row["epsilon"] == 0.1 and row["expected |error|"] == pytest.approx(2 * p / (1 - p * p))  # ≈ 10.0
    # the geometric mechanism's 95% range, checked against its own distribution
    k = np.arange(-2000, 2001)
    pmf = (1 - p) / (1 + p) * p ** np.abs(k)
    h = row["95% within ±"]
    assert pmf[np.abs(k) <= h].sum() >= 0.95 > pmf[np.abs(k) <= h - 1].sum()
    g = noise_page.epsilon_table("gaussian", 1e-5, 1.0)
    assert g["expected |error|"].iloc[1] == pytest.approx(
        calibration.gaussian_analytic_sigma(0.5, 1e-5, 1) * math.sqrt(2 / math.pi)
    )
    assert list(t1["privacy level"]) == [interpret.privacy_level(e) for e in t1["epsilon"]]  # one home for the words


# --- queries on the medical data ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def df():
    from dpcore.data.datasets import medical

    return medical(2_000, seed=0)


def test_count_query(df):
    a = teaching.query(df, "count", "has_rare_disease")
    assert a.true_value == df["has_rare_disease"].sum() and a.sensitivity == 1.0 and a.integer


def test_bounded_mean_and_sum_clamp_and_sensitivity(df):
    a = teaching.query(df, "mean", "age", 30, 60)
    expected = np.clip(df["age"].to_numpy(float), 30, 60).mean()
    assert a.true_value == pytest.approx(expected)
    assert a.sensitivity == pytest.approx(30 / 2_000)
    assert a.clamped == int(((df["age"] < 30) | (df["age"] > 60)).sum()) > 0
    s = teaching.query(df, "sum", "salary", 0, 100_000)
    assert s.sensitivity == 100_000 and s.true_value == pytest.approx(np.clip(df["salary"], 0, 1e5).sum())
    assert teaching.bounded_mean_sensitivity(18, 90, 72) == pytest.approx(1.0)
    assert teaching.bounded_sum_sensitivity(-1, 2) == 2  # add/remove one record: max(|L|, |U|)
    assert s.neighbour is teaching.Neighbour.ADD_REMOVE and a.neighbour is teaching.Neighbour.REPLACE_ONE
    assert teaching.query(df, "count").neighbour is teaching.Neighbour.ADD_REMOVE
    assert np.array_equal(teaching.clamp([-5, 0.5, 9], 0, 1), [0, 0.5, 1])


def test_query_bad_column_and_kind(df):
    with pytest.raises(DPError, match="unknown column"):
        teaching.query(df, "mean", "nope", 0, 1)
    with pytest.raises(DPError, match="unknown query"):
        teaching.query(df, "median", "age", 0, 1)
    with pytest.raises(DPError, match="numeric"):
        teaching.query(df, "mean", "diagnosis", 0, 1)


# --- release path helpers ------------------------------------------------------------------------------------------


def test_release_helpers_seeded_and_composition():
    a = release_value(5.0, mechanism="laplace", epsilon=1, sensitivity=1, random_state=1)
    assert a == release_value(5.0, mechanism="laplace", epsilon=1, sensitivity=1, random_state=1)
    assert a.grid.text() == "0.000001" and int(a.noise.sensitivity) == 1_000_001  # ⌊Δ/g⌋ + 1 grid steps
    c = release_answer(10, mechanism="laplace", epsilon=1, sensitivity=1, integer=True, random_state=2)
    assert isinstance(c, int) and c == release_count(10, epsilon=1, random_state=2)
    g = release_answer(10, mechanism="gaussian", epsilon=1, delta=1e-5, sensitivity=1, integer=True, random_state=2)
    assert isinstance(g, int)  # a count under Gaussian noise: the discrete Gaussian, whole numbers
    many = release_value(0.0, mechanism="gaussian", epsilon=1, delta=1e-5, sensitivity=1, draws=50, random_state=0)
    assert len(many.values) == 50 and len(set(many.values)) == 50
    assert all(v == round(v, 6) for v in many.values)  # on the grid of 10^-6
    assert basic_composition([(0.5, 0.0), (0.5, 1e-5), {"epsilon": 1.0, "delta": 1e-5}]) == pytest.approx((2.0, 2e-5))
    assert basic_composition([]) == (0.0, 0.0)
    with pytest.raises(DPError, match="classic Gaussian"):
        release_value(1.0, mechanism="gaussian-classic", epsilon=2, delta=1e-5, sensitivity=1)
    classic = release_value(1.0, mechanism="gaussian-classic", epsilon=0.5, delta=1e-5, sensitivity=1)
    assert classic.noise.scale * 1e-6 >= calibration.gaussian_classic_sigma(0.5, 1e-5, 1.0)  # never below stated


# --- bad input: one test each -----------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0, -1, float("nan"), float("inf"), "abc"])
def test_bad_epsilon(eps):
    with pytest.raises(DPError, match="epsilon"):
        mech.get("laplace", epsilon=eps, delta=None, sensitivity=1.0)
    with pytest.raises(DPError, match="epsilon"):
        calibration.gaussian_analytic_sigma(eps, 1e-5, 1.0)


@pytest.mark.parametrize("delta", [0, 1, 1.5, -1e-5, float("nan"), float("inf")])
def test_bad_delta(delta):
    with pytest.raises(DPError, match="delta"):
        mech.get("gaussian", epsilon=1.0, delta=delta, sensitivity=1.0)
    with pytest.raises(DPError, match="delta"):
        calibration.gaussian_classic_sigma(0.5, delta, 1.0)


def test_gaussian_without_delta():
    with pytest.raises(DPError, match="needs δ"):
        mech.get("gaussian", epsilon=1.0, delta=None, sensitivity=1.0)


@pytest.mark.parametrize("sens", [-1, float("nan"), float("inf")])
def test_bad_sensitivity(sens):
    with pytest.raises(DPError, match="sensitivity"):
        mech.get("laplace", epsilon=1.0, delta=None, sensitivity=sens)


def test_zero_sensitivity_needs_no_noise():
    spec = mech.get("laplace", epsilon=1.0, delta=None, sensitivity=0.0)
    assert spec.scale == 0.0
    with pytest.raises(DPError, match="no noise is needed"):
        noise_page.noise_view("laplace", 1.0, None, 0.0, 5.0)


@pytest.mark.parametrize("lo,hi", [(5, 5), (10, 1), (float("nan"), 1), (0, float("inf"))])
def test_bad_bounds(lo, hi, df):
    with pytest.raises(DPError, match="bounds"):
        teaching.query(df, "mean", "age", lo, hi)
    with pytest.raises(DPError, match="bounds"):
        teaching.bounded_mean_sensitivity(lo, hi, 10)


@pytest.mark.parametrize("n", [0, -5, 2.5])
def test_bad_n(n):
    with pytest.raises(DPError, match="n \\(number of rows\\)"):
        teaching.bounded_mean_sensitivity(0, 1, n)


def test_bad_n_on_empty_data(df):
    with pytest.raises(DPError, match="n \\(number of rows\\)"):
        teaching.query(df.iloc[:0], "count", "has_rare_disease")


@pytest.mark.parametrize("draws", [0, -1, 10**9])
def test_bad_draws(draws):
    spec = mech.get("laplace", epsilon=1.0, delta=None, sensitivity=1.0)
    with pytest.raises(DPError, match="draws"):
        spec.simulate(0.0, draws)


def test_bad_value_and_mechanism():
    with pytest.raises(DPError, match="true value"):
        noise_page.noise_view("laplace", 1.0, None, 1.0, float("nan"))
    with pytest.raises(DPError, match="unknown mechanism"):
        mech.get("cauchy", epsilon=1.0, delta=None, sensitivity=1.0)
    with pytest.raises(DPError, match="only valid for ε < 1"):
        mech.get("gaussian-classic", epsilon=1.0, delta=1e-5, sensitivity=1.0)
