"""The numpy model fit and sampler against Private-PGM's (known answers on small tables), and the bracketed scale
searches against OpenDP's own (the same scale)."""

import numpy as np
import pytest

from dpcore.synth import fit, search
from dpcore.synth import release as R


@pytest.fixture(scope="module")
def mbi():
    R._opendp()  # jax on the CPU, as a release sets it up
    import mbi

    return mbi


def _measurements(mbi, domain, cliques, seed=0, total=None):
    rng = np.random.default_rng(seed)
    out = [] if total is None else [mbi.LinearMeasurement(np.asarray([float(total)]), (), stddev=20.0)]
    for cl in cliques:
        n = int(np.prod(domain.project(cl).shape))
        out.append(mbi.LinearMeasurement(rng.poisson(6, n) + rng.normal(0, 2, n), cl, stddev=float(rng.uniform(2, 9))))
    return out


@pytest.mark.slow  # Private-PGM compiles its fit: ~10 s each
def test_the_fit_is_private_pgms_mirror_descent(mbi):
    from mbi.estimation import mirror_descent as pgm

    domain = mbi.Domain(["a", "b", "c", "d"], [4, 2, 6, 3])
    # a tree (MST's shape) and a cycle (AIM's can be), with and without a measured total
    for cliques, total in (
        ([("a",), ("b",), ("c",), ("d",), ("a", "c"), ("b", "c"), ("c", "d")], None),
        ([("a", "b"), ("b", "c"), ("a", "c"), ("d",)], 300),
    ):
        ms = _measurements(mbi, domain, cliques, total=total)
        ours, theirs = fit.mirror_descent(domain, ms, iters=300), pgm(domain, ms, iters=300)
        assert isinstance(ours, mbi.MarkovRandomField) and float(ours.total) == pytest.approx(float(theirs.total))
        for q in [c for c in cliques if len(c) == 2] + [("a", "d")]:  # measured, and one outside the factors
            a, b = np.asarray(ours.project(q).values), np.asarray(theirs.project(q).values)
            assert a.shape == b.shape and np.abs(a - b).max() < 1e-5 * max(1.0, np.abs(b).max()), q


@pytest.mark.slow  # Private-PGM compiles its fit: ~10 s each
def test_a_warm_start_expands_the_potentials_as_private_pgm_does(mbi):
    from mbi.estimation import mirror_descent as pgm

    domain = mbi.Domain(["a", "b", "c"], [3, 4, 2])
    first = _measurements(mbi, domain, [("a",), ("b",), ("c",)], seed=1)
    more = first + _measurements(mbi, domain, [("a", "b"), ("b", "c")], seed=2)
    ours = fit.mirror_descent(
        domain, more, potentials=fit.mirror_descent(domain, first, iters=200).potentials, iters=200
    )
    theirs = pgm(domain, more, potentials=pgm(domain, first, iters=200).potentials, iters=200)
    for q in [("a", "b"), ("b", "c"), ("a", "c")]:
        assert np.allclose(np.asarray(ours.project(q).values), np.asarray(theirs.project(q).values), atol=1e-5)


@pytest.mark.slow  # Private-PGM compiles its fit: ~10 s each
def test_an_independent_models_pair_is_the_outer_product(mbi):
    from mbi.estimation import mirror_descent as pgm

    domain = mbi.Domain(["a", "b", "c"], [3, 5, 2])
    ms = _measurements(mbi, domain, [("a",), ("b",), ("c",)], seed=4)
    theirs = pgm(domain, ms, iters=100)
    want = np.asarray(theirs.project(("a", "b")).values)
    for model in (theirs, fit.mirror_descent(domain, ms, iters=100)):
        assert np.allclose(fit.pair_marginal(model, ("a", "b")), want, atol=1e-6)


def test_a_marginal_is_read_in_its_own_column_order(mbi):
    """Two noisy 3-way tables of the same columns, the second given over (c, a, b) or over (a, b, c): the same fit
    (it is read into the model's (a, b, c) factor either way; no Private-PGM run)."""
    domain = mbi.Domain(["a", "b", "c"], [2, 3, 4])
    rng = np.random.default_rng(8)
    y1, y2 = (rng.poisson(9, (2, 3, 4)).astype(float) for _ in range(2))  # over (a, b, c)
    first = mbi.LinearMeasurement(y1.ravel(), ("a", "b", "c"), stddev=2.0)
    plain = [first, mbi.LinearMeasurement(y2.ravel(), ("a", "b", "c"), stddev=3.0)]
    turned = [first, mbi.LinearMeasurement(np.transpose(y2, (2, 0, 1)).ravel(), ("c", "a", "b"), stddev=3.0)]
    one, two = fit.mirror_descent(domain, plain, iters=200), fit.mirror_descent(domain, turned, iters=200)
    assert np.allclose(fit.marginal(one, ("a", "b", "c")), fit.marginal(two, ("a", "b", "c")), atol=1e-9)
    want = (y1 / 4 + y2 / 9) / (1 / 4 + 1 / 9)  # the noise-weighted mean of the two tables
    assert np.allclose(fit.marginal(two, ("a", "b", "c")), want, atol=0.5)


def test_rows_are_drawn_from_the_model(mbi):
    domain = mbi.Domain(["a", "b", "c"], [3, 4, 5])
    model = fit.mirror_descent(domain, _measurements(mbi, domain, [("a", "b"), ("b", "c")], seed=5), iters=300)
    n = 60_000
    rows = fit.sample(model, n, np.random.default_rng(0))
    assert set(rows) == {"a", "b", "c"} and all(len(v) == n for v in rows.values())
    for q in (("a", "b"), ("b", "c"), ("a", "c")):
        want = np.asarray(model.project(q).values) / float(model.total)
        got = np.zeros(want.shape)
        np.add.at(got, (rows[q[0]], rows[q[1]]), 1.0 / n)
        # each cell within 5 standard errors of its share
        assert np.all(np.abs(got - want) <= 5 * np.sqrt(want * (1 - want) / n) + 1e-3), q
    again = fit.sample(model, n, np.random.default_rng(0))
    assert all(np.array_equal(rows[k], again[k]) for k in rows)  # post-processing: the seed decides the rows


@pytest.mark.slow  # Private-PGM compiles its fit: ~10 s each
def test_a_partial_query_goes_to_private_pgm(mbi):
    from opendp.extras.mbi._utilities import SelectPrefixQuery

    domain = mbi.Domain(["a", "b"], [3, 4])
    ms = [mbi.LinearMeasurement(np.array([5.0, 7.0]), ("a",), stddev=1.0, query=SelectPrefixQuery(2))]
    ms += _measurements(mbi, domain, [("b",)])
    assert not isinstance(fit.mirror_descent(domain, ms, iters=50), fit._model_class())


def test_bracketed_searches_find_opendps_scale():
    dp = R._opendp()
    from opendp import mod

    space = dp.atom_domain(T=int), dp.absolute_distance(T=int)
    for measure, make, d_out in (
        ("pure", lambda s: dp.m.make_laplace(*space, scale=s), 0.37),
        ("zcdp", lambda s: dp.m.make_gaussian(*space, scale=s), 0.021),
    ):
        calls = []

        def counted(s, make=make, calls=calls):
            calls.append(s)
            return make(s)

        ours = search.binary_search_param(counted, 3, d_out)
        assert len(calls) <= 45, len(calls)  # a bracket within 1e-6 of the scale: ~35 halvings
        assert ours == mod.binary_search_param(make, 3, d_out, T=float), measure  # OpenDP's boundary
        assert make(ours).check(3, d_out) and not make(np.nextafter(ours, 0)).check(3, d_out)


def test_a_bracket_that_misses_falls_back_to_opendps_search():
    dp = R._opendp()
    space = dp.atom_domain(T=int), dp.absolute_distance(T=int)

    def odd(s):  # the loss at scale 1 says nothing about the answer: the scale is ignored below 1e7
        return dp.m.make_laplace(*space, scale=1e-3 if s < 1e7 else s)

    assert search.bracket(odd, 1, 0.5) is None
    s = search.binary_search_param(odd, 1, 0.5)
    assert odd(s).check(1, 0.5) and 1e7 <= s < 1e7 * (1 + 1e-9)


def _independent(mbi):
    """A model over a (2) and b (3) whose pair table is the outer product of its shares: b's conditional given a is
    b's own distribution, whatever a."""
    domain = mbi.Domain(["a", "b"], [2, 3])
    pair = np.outer([300.0, 700.0], [0.2, 0.3, 0.5])
    return fit.mirror_descent(domain, [mbi.LinearMeasurement(pair.ravel(), ("a", "b"), stddev=1.0)], iters=300)


def test_a_conditional_without_mass_draws_from_the_columns_own(mbi, monkeypatch):
    """Issue 32: a conditional row with no finite mass went to np.searchsorted, which gives the first category for
    NaN (every row of that group, silently). Such rows now follow the column's own distribution, and a note says
    how many there were."""
    model = _independent(mbi)
    real = fit.marginal

    def broken(m, attrs):
        out = real(m, attrs)
        if len(attrs) == 2:  # the child's conditional given its parent's first value: NaN, as an underflow gives
            out = out.copy()
            out[0, ...] = np.nan
        return out

    monkeypatch.setattr(fit, "marginal", broken)
    n, notes = 30_000, []
    rows = fit.sample(model, n, np.random.default_rng(3), notes)
    parent, child = list(rows)  # in the order drawn: the first is the second's parent
    hit = rows[parent] == 0
    own = real(model, (child,)) / float(model.total)
    got = np.bincount(rows[child][hit], minlength=len(own)) / hit.sum()
    assert np.all(np.abs(got - own) <= 5 * np.sqrt(own * (1 - own) / hit.sum())), (got, own)
    assert got.max() < 0.9  # not every row in one category
    assert len(notes) == 1 and f"{int(hit.sum()):,} drawn values" in notes[0]


def test_a_draw_that_does_not_follow_the_model_is_refused(mbi, monkeypatch):
    """A conditional that puts all weight on one category while the model's own marginal does not is a sampler
    defect: sample() refuses it (the release then draws with Private-PGM's sampler) instead of returning it."""
    model = _independent(mbi)
    real = fit.marginal

    def skewed(m, attrs):
        out = real(m, attrs)
        if len(attrs) == 2:
            out = np.zeros_like(out)
            out[..., 0] = 1.0
        return out

    monkeypatch.setattr(fit, "marginal", skewed)
    with pytest.raises(fit.Unsupported, match="do not follow"):
        fit.sample(model, 5_000, np.random.default_rng(4))


def test_the_draw_check_passes_draws_from_the_model_and_fails_a_stuck_one():
    rng = np.random.default_rng(11)
    want = np.array([0.05, 0.15, 0.3, 0.5])
    for n in (20, 686, 20_000):  # a false alarm at 6 standard errors is under 1e-8 a category
        for _ in range(200):
            fit._check_draw("x", rng.choice(4, size=n, p=want), want)
    with pytest.raises(fit.Unsupported):
        fit._check_draw("x", np.zeros(686, dtype=np.int64), want)
