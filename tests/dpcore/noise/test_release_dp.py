"""Statistical DP tests of the release path's samplers (OpenDP's discrete Laplace and discrete Gaussian), the
coverage of their 95% intervals, and known answers for the discrete Gaussian's δ(ε).

**Empirical privacy loss.** Draw N releases of neighbouring whole numbers V (dataset D) and V + K (D') through
:func:`dpcore.noise.release.draw` — OpenDP, a secure source, never seeded — and histogram them. For every event E
(each output value seen often enough, and every tail {x ≤ t}, {x ≥ t}), (ε, δ)-DP requires
P_D(E) ≤ e^ε P_D'(E) + δ both ways. The test bounds both probabilities with Clopper–Pearson intervals that hold
together with probability 1 − 1e-7 (Bonferroni over events, sides and directions): a correct sampler fails with
probability below 1e-7, and the same check flags a sampler whose scale is 1.25× too small (seeded, so always).

**Coverage.** The 95% interval of a release is its mechanism's own (the smallest whole t with
P(|noise| > t) ≤ 5%): over many OpenDP draws its coverage is the exact P(|noise| ≤ t) ≥ 95% within 6 standard
errors (failure probability ~2e-9).
"""

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from dpcore.noise import discrete, grid, release
from dpcore.noise.mechanisms import DiscreteGaussian, Geometric

BETA = 1e-7
N = 40_000


def loss_violations(a, b, epsilon: float, delta: float = 0.0, *, min_count: int = 200) -> list[str]:
    """Events (single outputs with enough mass, and tails) where a CP lower bound of one side exceeds e^ε × the
    CP upper bound of the other + δ."""
    a, b = np.sort(np.asarray(a)), np.sort(np.asarray(b))
    values, counts = np.unique(np.r_[a, b], return_counts=True)
    singles = [v for v, c in zip(values, counts) if c >= min_count]
    cuts = np.unique(np.quantile(np.r_[a, b], np.linspace(0.01, 0.99, 25)))
    events = []
    for v in singles:
        events.append((f"x = {v}", lambda s, v=v: np.searchsorted(s, v, "right") - np.searchsorted(s, v, "left")))
    for t in cuts:
        events.append((f"x <= {t}", lambda s, t=t: np.searchsorted(s, t, "right")))
        events.append((f"x >= {t}", lambda s, t=t: len(s) - np.searchsorted(s, t, "left")))
    level = BETA / (4 * len(events))
    bad = []
    for name, count in events:
        for x, y, tag in ((a, b, "D/D'"), (b, a, "D'/D")):
            k1, k2 = int(count(x)), int(count(y))
            lo = stats.beta.ppf(level, k1, len(x) - k1 + 1) if k1 else 0.0
            hi = stats.beta.ppf(1 - level, k2 + 1, len(y) - k2) if k2 < len(y) else 1.0
            if lo > math.exp(epsilon) * hi + delta:
                bad.append(f"{name} {tag}: {k1} vs {k2}")
    return bad


SAMPLERS = {  # the noise every release adds, at the settings the app uses most
    "discrete Laplace, ε = 1, Δ = 1 (counts)": (Geometric(epsilon=1.0, sensitivity=1), 1.0, 0.0),
    "discrete Laplace, ε = 0.5, Δ = 3 (a sum in grid steps)": (Geometric(epsilon=0.5, sensitivity=3), 0.5, 0.0),
    "discrete Gaussian, ε = 1, δ = 1e-5, Δ = 1": (DiscreteGaussian(epsilon=1.0, delta=1e-5, sensitivity=1), 1.0, 1e-5),
    "discrete Gaussian, ε = 0.5, δ = 1e-3, Δ = 2": (
        DiscreteGaussian(epsilon=0.5, delta=1e-3, sensitivity=2),
        0.5,
        1e-3,
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SAMPLERS))
def test_opendp_sampler_empirical_privacy_loss_within_epsilon(name):
    noise, eps, delta = SAMPLERS[name]
    k = int(noise.sensitivity)
    a = release.draw([100] * N, noise)  # D: the true answer 100
    b = release.draw([100 + k] * N, noise)  # D': one record more moves it by K
    assert not loss_violations(a, b, eps, delta)
    assert len(set(a)) > 5  # really noisy, and whole numbers
    assert all(isinstance(v, int) for v in a[:100])


def test_the_check_flags_a_scale_too_small():
    """The same check catches discrete Laplace noise 1.25× too small for the claimed ε = 1 (really ε = 1.25)."""
    weak = Geometric(epsilon=1.25, sensitivity=1)
    rng = np.random.default_rng(7)
    a = release.draw([100] * N, weak, rng)
    b = release.draw([101] * N, weak, rng)
    assert loss_violations(a, b, 1.0)
    assert not loss_violations(a, b, 1.25)


def test_reproducible_mode_draws_the_same_distribution():
    """Seeded draws (tests, labelled examples) are numpy's, of the same whole-number distributions."""
    for noise in (Geometric(epsilon=0.7, sensitivity=2), DiscreteGaussian(epsilon=0.7, delta=1e-4, sensitivity=2)):
        s = np.asarray(release.draw([0] * N, noise, np.random.default_rng(3)))
        assert s.tolist() == release.draw([0] * N, noise, np.random.default_rng(3))
        k = np.arange(-60, 61)
        expected = noise.density(k) * N
        seen = np.array([(s == v).sum() for v in k])
        keep = expected > 20
        chi2 = float(np.sum((seen[keep] - expected[keep]) ** 2 / expected[keep]))
        assert chi2 < stats.chi2.ppf(1 - 1e-7, keep.sum() - 1), chi2


@pytest.mark.parametrize(
    "noise",
    [
        Geometric(epsilon=1.0, sensitivity=1),
        Geometric(epsilon=0.3, sensitivity=1),
        DiscreteGaussian(epsilon=1.0, delta=1e-7, sensitivity=1),
        DiscreteGaussian(epsilon=0.2, delta=1e-5, sensitivity=1),
    ],
    ids=["dlap 1", "dlap 0.3", "dgauss 1", "dgauss 0.2"],
)
def test_interval_coverage_of_opendp_draws(noise):
    t = noise.halfwidth(0.95)
    k = np.arange(-int(10 * noise.scale) - 50, int(10 * noise.scale) + 51)
    exact = noise.density(k)[np.abs(k) <= t].sum()  # P(|noise| <= t) >= 95%, and minimal
    assert exact >= 0.95 > noise.density(k)[np.abs(k) <= t - 1].sum()
    n = 20_000
    covered = np.mean(np.abs(np.asarray(release.draw([0] * n, noise))) <= t)
    assert abs(covered - exact) <= 6 * math.sqrt(exact * (1 - exact) / n)


def test_interval_coverage_of_a_grid_sum():
    """A SUM on the grid: its interval holds the rounded true sum in 95% ± 6 se of OpenDP releases."""
    s = grid.clamped_sum(np.array([20.0, 33.5, 97.0]), 18, 90)
    n = 4_000
    truth = s.value(s.units)
    hits = []
    for _ in range(n):
        r = release.release_sum(s, mechanism="gaussian", epsilon=1.0, delta=1e-6)
        hits.append(abs(r.values[0] - truth) <= r.halfwidth)
    assert abs(np.mean(hits) - 0.95) <= 6 * math.sqrt(0.95 * 0.05 / n) + 0.005  # whole steps: a hair above 95%


# --- the discrete Gaussian's δ(ε): known answers -------------------------------------------------------------


def _mp_delta(sigma, eps, k):
    """δ(ε) = Σ_x max(0, P(x) − e^ε P(x − k)) over the support, in 40-digit arithmetic (independent of dpcore)."""
    mpmath.mp.dps = 40
    s, e = mpmath.mpf(sigma), mpmath.e ** mpmath.mpf(eps)
    w = int(60 * sigma) + 60
    f = {x: mpmath.e ** (-(mpmath.mpf(x) ** 2) / (2 * s * s)) for x in range(-w - k, w + k + 1)}
    z = mpmath.fsum(f[x] for x in range(-w, w + 1))
    return mpmath.fsum(max(0, f[x] - e * f[x - k]) for x in range(-w, w + 1)) / z


@pytest.mark.parametrize(
    "sigma,eps,k",
    [(0.5, 1.0, 1), (1.0, 1.0, 1), (3.7, 1.0, 1), (2.0, 0.5, 2), (10.0, 0.3, 3), (0.3, 2.0, 1), (5.0, 0.01, 1)],
)
def test_discrete_gaussian_delta_known_answers(sigma, eps, k):
    exact = float(_mp_delta(sigma, eps, k))
    ours = discrete.delta_upper(sigma, eps, k)
    assert exact <= ours <= exact * (1 + 1e-7) + 1e-300  # an upper bound, tight


def test_discrete_gaussian_delta_hand_checked():
    """σ = 1, K = 1, ε = 1: the loss exceeds ε below t = 1/2 − 1 = −1/2, so δ = F(−1) − e·F(−2)."""
    z = sum(math.exp(-x * x / 2) for x in range(-40, 41))
    f = lambda m: sum(math.exp(-x * x / 2) for x in range(-40, m + 1)) / z  # noqa: E731
    assert discrete.delta_upper(1.0, 1.0, 1) == pytest.approx(f(-1) - math.e * f(-2), rel=1e-8)


def test_large_sigma_bounds_bracket_the_direct_sum():
    """Above DIRECT_SIGMA_MAX the CDF is bracketed by integrals: check the brackets against the direct sum."""
    for m, sigma in [(-80_000, 15_000.0), (-25_000, 15_000.0), (-3, 15_000.0), (10, 15_000.0), (-4, 3.0)]:
        lo, hi = discrete.cdf_bounds(m, sigma)
        x = np.arange(-int(45 * sigma), int(45 * sigma) + 1, dtype=float)
        f = np.exp(-x * x / (2 * sigma * sigma))
        direct = f[x <= m].sum() / f.sum()
        assert lo <= direct * (1 + 1e-9) and direct <= hi * (1 + 1e-9)
        saved = discrete.DIRECT_SIGMA_MAX
        try:
            discrete.DIRECT_SIGMA_MAX = 1.0  # force the integral brackets
            lo2, hi2 = discrete.cdf_bounds(m, sigma)
        finally:
            discrete.DIRECT_SIGMA_MAX = saved
        if sigma > 1.0:
            assert lo2 <= direct * (1 + 1e-9) and direct <= hi2 * (1 + 1e-9)


@pytest.mark.parametrize(
    "eps,delta,k",
    [(1.0, 1e-5, 1), (1.0, 1e-7, 1), (0.1, 1e-6, 1), (5.0, 1e-6, 3), (1.0, 1e-5, 1_000_000), (1e-3, 1e-8, 10_000)],
)
def test_calibrated_sigma_holds_delta_and_starts_from_balle_wang(eps, delta, k):
    from dpcore.noise.calibration import gaussian_analytic_sigma

    sigma = discrete.calibrate_sigma(eps, delta, k)
    assert sigma >= gaussian_analytic_sigma(eps, delta, float(k))
    assert discrete.delta_upper(sigma, eps, k) <= delta
    assert sigma <= gaussian_analytic_sigma(eps, delta, float(k)) * 1.01  # raised only a little
    if sigma < 6:  # and the 40-digit sum agrees
        assert float(_mp_delta(sigma, eps, k)) <= delta


def test_discrete_gaussian_at_balle_wang_sigma_can_exceed_delta():
    """Why σ is checked, not copied: at ε = 1, δ = 1e-5, K = 1 the continuous σ gives the discrete Gaussian a δ
    above 1e-5, so releases raise it (3.7306 → 3.7405)."""
    from dpcore.noise.calibration import gaussian_analytic_sigma

    s0 = gaussian_analytic_sigma(1.0, 1e-5, 1.0)
    assert float(_mp_delta(s0, 1.0, 1)) > 1e-5
    assert discrete.calibrate_sigma(1.0, 1e-5, 1) == pytest.approx(3.7405, abs=1e-3)
