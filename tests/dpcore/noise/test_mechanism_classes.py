"""One class per mechanism (Laplace, analytic / classic Gaussian, Geometric): construction, exact facts at any
level, charges, the secure release path and the labelled teaching simulation; the old copies now delegate."""

import math

import numpy as np
import pytest

from dpcore.errors import DPError
from dpcore.noise import calibration, composition, mechanisms, release, teaching
from dpcore.noise.charge import Charge, Neighbour, compose, require_ledger_relation
from dpcore.noise.mechanisms import DiscreteGaussian, GaussianAnalytic, GaussianClassic, Geometric, Laplace
from dpcore.queries import answering, model


def test_keyword_only_construction_and_validation():
    with pytest.raises(TypeError):
        Laplace(1.0)  # keyword-only, as diffprivlib's mechanisms
    with pytest.raises(DPError, match="abstract"):
        mechanisms.Mechanism(epsilon=1.0)
    with pytest.raises(DPError, match="epsilon"):
        Laplace(epsilon=0)
    with pytest.raises(DPError, match="pure ε-DP: δ must be 0"):
        Laplace(epsilon=1.0, delta=1e-5)
    with pytest.raises(DPError, match="needs δ"):
        GaussianAnalytic(epsilon=1.0)
    with pytest.raises(DPError, match="delta"):
        GaussianAnalytic(epsilon=1.0, delta=0)
    with pytest.raises(DPError, match="only valid for ε < 1"):
        GaussianClassic(epsilon=1.0, delta=1e-5)
    for bad in (0, 1.5, -1, float("nan"), "1"):
        with pytest.raises(DPError, match="whole number >= 1"):
            Geometric(epsilon=1.0, sensitivity=bad)
    with pytest.raises(DPError, match="sensitivity"):
        Laplace(epsilon=1.0, sensitivity=-1)
    with pytest.raises(DPError, match="unknown mechanism"):
        mechanisms.get("cauchy", epsilon=1.0)
    m = GaussianAnalytic(epsilon=1.0, delta=1e-5, sensitivity=2.0)
    with pytest.raises(AttributeError):
        m.epsilon = 5.0  # frozen: a calibration cannot drift from its scale
    assert mechanisms.get("laplace", epsilon=1.0, delta=1e-5).delta == 0.0  # by name: a pure mechanism drops δ


def test_the_class_table_is_the_one_home():
    assert set(mechanisms.CLASSES) == {"laplace", "gaussian", "gaussian-classic", "geometric", "discrete-gaussian"}
    assert calibration.Z95 == pytest.approx(1.959963984540054, rel=1e-15)
    assert calibration.LAPLACE_Q95 == pytest.approx(math.log(20), rel=1e-14)
    # no second spelling at the old homes (issue 15: one concept, one place)
    for module, name in [
        (release, "MECHANISMS"),
        (release, "basic_composition"),
        (release, "gaussian_sigma"),
        (release, "ExactGaussian"),
        (mechanisms, "MAX_RELEASE_DRAWS"),
        (mechanisms, "NoiseSpec"),
        (mechanisms, "calibrate"),
        (mechanisms, "noise_view"),
        (mechanisms, "query"),
        (composition, "gaussian_rho"),
        (answering, "MECHANISMS"),
        (answering, "Z95"),
        (answering, "gaussian_sigma"),
        (answering, "noise_halfwidth"),
        (answering, "column_kind"),
        (model, "MAX_BINS"),
    ]:
        assert not hasattr(module, name), f"{module.__name__}.{name}"


@pytest.mark.parametrize("level", [0.5, 0.8, 0.95, 0.99])
@pytest.mark.parametrize(
    "m",
    [
        Laplace(epsilon=0.7, sensitivity=2.0),
        GaussianAnalytic(epsilon=0.7, delta=1e-5, sensitivity=2.0),
        GaussianClassic(epsilon=0.5, delta=1e-5, sensitivity=1.0),
    ],
)
def test_continuous_halfwidth_holds_its_level_exactly(m, level):
    x = np.linspace(-300, 300, 600_001)
    p = m.density(x, center=3.0)
    lo, hi = m.interval(3.0, level)
    inside = (x >= lo) & (x <= hi)
    assert np.trapezoid(p[inside], x[inside]) == pytest.approx(level, abs=2e-4)


@pytest.mark.parametrize("eps,sens", [(0.1, 1), (0.5, 1), (1.0, 2), (3.0, 1)])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.975])
def test_geometric_facts_against_its_pmf(eps, sens, level):
    g = Geometric(epsilon=eps, sensitivity=sens)
    a = math.exp(-eps / sens)
    k = np.arange(-20_000, 20_001)
    pmf = g.density(k)
    assert pmf == pytest.approx((1 - a) / (1 + a) * a ** np.abs(k))
    assert pmf.sum() == pytest.approx(1.0, abs=1e-9)
    assert g.density(0.5) == 0.0  # no mass between whole numbers
    assert np.sum(np.abs(k) * pmf) == pytest.approx(g.expected_abs_error(), rel=1e-9)
    h = g.halfwidth(level)  # the smallest whole half-width that holds the level
    assert h == int(h) and pmf[np.abs(k) <= h].sum() >= level > pmf[np.abs(k) <= h - 1].sum()
    assert np.max(np.abs(g.privacy_loss(k[19_900:20_100]))) == pytest.approx(eps)  # pure ε-DP


def test_geometric_teaching_simulation_matches_its_pmf():
    g = Geometric(epsilon=0.5)
    s = g.simulate(100, 200_000, seed=7)
    assert np.array_equal(s, g.simulate(100, 200_000, seed=7)) and np.all(s == np.round(s))
    # mean |error| has sd ~ 2.8/sqrt(n) ~ 0.006: a 5-sigma bound
    assert abs(np.mean(np.abs(s - 100)) - g.expected_abs_error()) < 0.035
    h, a = g.halfwidth(0.95), g.alpha
    exact = 1 - 2 * a ** (h + 1) / (1 + a)  # P(|X| <= h) >= 95% (whole h: a little above)
    assert exact >= 0.95 and np.mean(np.abs(s - 100) <= h) == pytest.approx(exact, abs=0.003)  # sd 0.0004


def test_charges_come_from_each_class():
    assert Laplace(epsilon=0.8).charge() == Charge.pure(0.8) and Charge.pure(0.8).rho == pytest.approx(0.32)
    g = GaussianAnalytic(epsilon=1.0, delta=1e-5, sensitivity=3.0)
    c = g.charge(neighbour=Neighbour.REPLACE_ONE)
    assert c.rho == pytest.approx(9 / (2 * g.scale**2)) and c.neighbour is Neighbour.REPLACE_ONE
    assert c.rho == pytest.approx(GaussianAnalytic(epsilon=1.0, delta=1e-5).rho)  # ρ depends on ε, δ alone
    gc = GaussianClassic(epsilon=0.5, delta=1e-5)
    assert gc.rho == pytest.approx(1 / (2 * gc.scale**2))
    assert gc.rho < GaussianAnalytic(epsilon=0.5, delta=1e-5).rho  # classic over-provisions noise
    assert Geometric(epsilon=0.3).charge().rho == pytest.approx(0.045)
    assert (
        Charge.of_release("gaussian", 1.0, 1e-5, 3.0)
        == GaussianAnalytic(epsilon=1.0, delta=1e-5, sensitivity=3.0).charge()
    )
    assert Charge.gaussian(1.0, 1e-5, 0.0).rho == 0.0


def test_basic_composition_is_compose_of_charges():
    assert composition.basic([0.5, 0.25, 1.0], [0, 1e-5, 1e-5]) == pytest.approx((1.75, 2e-5))
    total = compose([Charge(0.5), Charge(0.25, 1e-5), Charge(1.0, 1e-5)])
    assert composition.basic([0.5, 0.25, 1.0], [0, 1e-5, 1e-5]) == (total.epsilon, total.delta)
    assert composition.basic([1.0, 1.0], 0.6) == (2.0, 1.0)  # δ capped at 1
    with pytest.raises(DPError, match="epsilon"):
        composition.basic([1.0, 0.0])


def test_for_release_picks_the_mechanism_that_really_releases():
    g = mechanisms.for_release("laplace", epsilon=1.0, sensitivity=1.5, integer=True)
    assert isinstance(g, Geometric) and g.sensitivity == 2  # Δ rounded up to a whole number
    dg = mechanisms.for_release("gaussian", epsilon=1.0, delta=1e-5, integer=True)
    assert isinstance(dg, DiscreteGaussian) and dg.scale >= calibration.gaussian_analytic_sigma(1.0, 1e-5, 1.0)
    assert isinstance(mechanisms.for_release("laplace", epsilon=1.0), Laplace)


def test_mechanism_classes_never_draw_a_release():
    """Issue 25: the classes are maths (scale, interval, charge, pictures); only dpcore.noise.release draws, with
    OpenDP's exact samplers (secure), or numpy's for a labelled reproducible example."""
    for m in (
        Laplace(epsilon=1.0),
        GaussianAnalytic(epsilon=1.0, delta=1e-5),
        Geometric(epsilon=1.0),
        DiscreteGaussian(epsilon=1.0, delta=1e-5),
    ):
        assert not any(hasattr(m, name) for name in ("release", "release_many", "_sampler"))
    assert release.release_count(10, epsilon=1.0, random_state=3) == release.release_count(
        10, epsilon=1.0, random_state=3
    )
    assert isinstance(release.release_count(10, epsilon=1.0), int)
    with pytest.raises(DPError, match="whole numbers"):
        release.release_count(2.5, epsilon=1.0)
    with pytest.raises(DPError, match="whole numbers"):
        release.release_count(float("nan"), epsilon=1.0)
    with pytest.raises(DPError, match="true value"):
        release.release_value(float("inf"), mechanism="laplace", epsilon=1.0, sensitivity=2.0)
    many = release.release_counts([7] * 20, epsilon=1.0, random_state=1)[0]
    assert len(many) == 20 and all(isinstance(v, int) for v in many)
    with pytest.raises(DPError, match="at most"):
        release.draw([0] * (release.MAX_RELEASE_DRAWS + 1), Geometric(epsilon=1.0))
    with pytest.raises(DPError, match="whole-number noise"):
        release.draw([0], Laplace(epsilon=1.0))  # continuous noise never reaches a release


def test_discrete_gaussian_facts_against_its_pmf():
    m = DiscreteGaussian(epsilon=1.0, delta=1e-5, sensitivity=2)
    k = np.arange(-200, 201)
    pmf = m.density(k)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12) and m.density(0.5) == 0.0
    assert np.sum(np.abs(k) * pmf) == pytest.approx(m.expected_abs_error(), rel=1e-9)
    h = m.halfwidth(0.95)
    assert h == int(h) and pmf[np.abs(k) <= h].sum() >= 0.95 > pmf[np.abs(k) <= h - 1].sum()
    loss = m.privacy_loss(k)
    assert np.allclose(loss, np.log(m.density(k) / m.density(k, 2.0)))
    # δ(ε) = Σ max(0, P(x) − e^ε Q(x)) over the support, as the pmf gives it
    exact = np.sum(np.maximum(0.0, pmf - math.exp(1.0) * m.density(k, 2.0)))
    assert exact <= m.actual_delta() <= 1e-5 and m.actual_delta() == pytest.approx(exact, rel=1e-6)
    assert m.rho == pytest.approx(4 / (2 * m.scale**2))  # CKS20: K²/(2σ²)-zCDP
    s = m.simulate(0, 200_000, seed=4)  # the numpy teaching sampler draws the same distribution
    assert np.all(s == np.round(s)) and abs(np.mean(np.abs(s)) - m.expected_abs_error()) < 0.05


def test_teaching_query_states_its_replace_one_relation_and_the_ledger_refuses_it():
    from dpcore.data.datasets import medical

    a = teaching.query(medical(300, seed=0), "mean", "age", 18, 90)  # the page's one replace-one exception
    assert a.neighbour is Neighbour.REPLACE_ONE
    c = a.charge("laplace", 1.0)
    assert c.neighbour is Neighbour.REPLACE_ONE and c.epsilon == 1.0
    with pytest.raises(DPError, match="one relation"):
        require_ledger_relation(c)
    assert isinstance(teaching.query(medical(300, seed=0), "count").mechanism("laplace", 1.0), Geometric)
