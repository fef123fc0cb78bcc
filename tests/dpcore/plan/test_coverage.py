"""The 95% intervals of a planned release cover the truth in 95% of 1,000 repetitions (binomial slack), for every
kind of statistic; a quantile's 95% bound on its score holds as often. Seeded noise (the same discrete
distributions as OpenDP's, from numpy): a test, not a release."""

import math

import numpy as np
import pytest

from dpcore.data import datasets
from dpcore.noise import grid as noise_grid
from dpcore.noise import release
from dpcore.plan import compute, design

from .helpers import five

REPS = 1_000
# one-sided binomial slack: 3 standard errors below 95% at 1,000 repetitions (a false failure ~0.1%)
FLOOR = 0.95 - 3 * math.sqrt(0.95 * 0.05 / REPS)


def _truths(d, t):
    """The true value of each cell (the clamped data on the grid), or for a quantile each cell's scores."""
    s = d.statistic
    if s.kind in ("count", "histogram"):
        return [float(u) for u in t.units]
    if s.kind == "quantile":
        q = d.quantile
        return [np.asarray(release.quantile_scores(v, q.candidates, q.alpha)) for v in t.values]
    sp = d.parts[0]
    g = noise_grid.Grid(sp.grid_exponent)
    if s.kind == "sum":
        return [g.value(u) for u in t.units]
    return [g.value(sp.centre) + g.value(u) / c if c else None for u, c in zip(t.units, t.counts)]


def _coverage(plan, df, reps=REPS):
    d = design.design(plan)
    prepared = compute.prepare(df, plan, d)
    truths = [_truths(x, t) for x, t in zip(d.designs, prepared.truths)]
    hits = {x.index: [] for x in d.designs}
    for i in range(reps):
        rel = prepared.release(random_state=i)
        assert not rel.secure and rel.label == compute.NOT_DP
        at = 0
        for x, tr in zip(d.designs, truths):
            for j in range(x.cells):
                row = rel.rows[at + j]
                if x.quantile is not None:
                    q, scores = x.quantile, tr[j]
                    chosen = q.candidates.index(row.value)
                    hits[x.index].append(scores[chosen] - scores.min() <= q.gap)
                elif tr[j] is not None:
                    hits[x.index].append(row.low - 1e-9 <= tr[j] <= row.high + 1e-9)
            at += x.cells
    return d, {k: float(np.mean(v)) for k, v in hits.items()}


def test_every_statistic_of_a_five_statistic_plan_covers_the_truth_95_percent_of_the_time():
    df = datasets.medical_visits(400, 3)
    d, cov = _coverage(five(1.0, k=3), df)
    for x in d.designs:
        assert cov[x.index] >= FLOOR, (x.statistic.label(), cov[x.index])


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.1, 5.0])
def test_coverage_holds_at_small_and_large_epsilon_and_row_level(eps):
    df = datasets.medical_visits(400, 4)
    for plan in (five(eps, k=1), five(eps, person=False)):
        d, cov = _coverage(plan, df)
        for x in d.designs:
            assert cov[x.index] >= FLOOR, (eps, x.statistic.label(), cov[x.index])


def test_a_secure_release_draws_through_opendp():
    df = datasets.medical_visits(300, 0)
    plan = five(2.0)
    rel = compute.prepare(df, plan).release()
    assert rel.secure and rel.label is None
    assert len(rel.rows) == sum(x.cells for x in rel.design.designs)
    count = rel.rows[0]
    kept = df.groupby("patient_id").head(5)
    assert count.low <= len(kept) + 3 * (count.high - count.value) and count.high >= len(kept) - 3 * (
        count.high - count.value
    )
