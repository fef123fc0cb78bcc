"""The DP run's Poisson sampler (dpcore.training.sampling): each record in each batch independently with a
probability that is exactly ⌊q·2³²⌋/2³² (never above the accountant's q), the plan's batches an epoch, and nothing
reproducible from stored state unless the run asked for it."""

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import stats

from dpcore.training import accounting
from dpcore.training.models import make_dataset
from dpcore.training.sampling import PoissonBatches, drawn_sample_rate, poisson_loader, sampling_seed

CASES = [(8000, 64), (455, 64), (1437, 256), (100, 3), (569, 64), (8000, 81), (8000, 9), (5000, 1)]


def test_every_subset_has_its_poisson_probability():
    """The law, not only the mean: over 5 records at q = 0.3 each of the 32 possible batches turns up as often as
    q^|S|·(1−q)^(5−|S|) says (a chi-square test; fixed-size batches or a sampler with replacement fail it)."""
    n, q, draws = 5, 0.3, 60_000
    s = PoissonBatches(n, q, draws, seed=11)
    counts: dict[tuple, int] = {}
    for idx in s:
        key = tuple(idx.tolist())
        counts[key] = counts.get(key, 0) + 1
    subsets = [c for k in range(n + 1) for c in itertools.combinations(range(n), k)]
    assert set(counts) <= set(subsets)  # ascending, no record twice
    p = s.sample_rate
    expected = np.array([draws * p ** len(c) * (1 - p) ** (n - len(c)) for c in subsets])
    observed = np.array([counts.get(c, 0) for c in subsets])
    assert stats.chisquare(observed, expected).pvalue > 1e-4
    # and the test has power: the same counts against q = 0.32 are rejected
    other = np.array([draws * 0.32 ** len(c) * 0.68 ** (n - len(c)) for c in subsets])
    assert stats.chisquare(observed, other * draws / other.sum()).pvalue < 1e-6


@pytest.mark.parametrize("n,batch", CASES)
def test_the_drawn_rate_is_never_above_the_accountants_and_the_epoch_is_the_plans(n, batch):
    """Low bits: the rate drawn is ⌊q·2³²⌋/2³² ≤ q, within 2⁻³² (Opacus's float32 uniforms drew 1/125 at
    0.0080000162 > q); and an epoch is the plan's int(1/q) batches (batch 81 of 8,000 rows, q = 1/99, stopped at a
    'steps mismatch' when Opacus counted int(1/drawn))."""
    q = accounting.sample_rate_for(n, batch)
    loader = poisson_loader(make_dataset(np.zeros((n, 1), np.float32), np.zeros(n, np.int64)), q, 0)
    r = loader.sample_rate
    assert r == drawn_sample_rate(q) and r <= q and q - r < 2**-32 and (r * 2**32).is_integer()
    assert len(loader) == len(list(loader)) == accounting.steps_per_epoch(q) == int(1 / q)


class _Words:
    """A bit generator that hands out given 64-bit words."""

    def __init__(self, words):
        self.words = np.array(words, dtype=np.uint64)

    def random_raw(self, size):
        assert size == len(self.words)
        return self.words.copy()


def test_a_record_is_in_exactly_when_its_32_bit_word_is_below_the_threshold():
    """Low bits at the edge: with m = ⌊q·2³²⌋, the words m − 1 and 0 take a record, m, m + 1 and 2³² − 1 do not —
    so the probability is m/2³² exactly, each record with its own 32 bits."""
    q = 1 / 125
    s = PoissonBatches(6, q, 1, seed=0)
    m = math.floor(q * 2**32)
    w32 = np.array([m - 1, m, m + 1, 0, 2**32 - 1, m], dtype=np.uint32)
    s._bits = _Words(w32.view(np.uint64))
    assert s.draw().tolist() == [0, 3]
    # an odd count of records uses the first half of the last word
    s5 = PoissonBatches(5, q, 1, seed=0)
    s5._bits = _Words(np.array([m - 1, m, m, m, 0, m], dtype=np.uint32).view(np.uint64))
    assert s5.draw().tolist() == [0, 4]


def test_batch_sizes_are_binomial_and_empty_batches_keep_their_shape():
    n, q, steps = 400, 1 / 200, 4000
    loader = poisson_loader(make_dataset(np.ones((n, 3), np.float32), np.zeros(n, np.int64)), q, 5)
    loader.batch_sampler.steps = steps
    sizes, empty = [], None
    for xb, yb in loader:
        sizes.append(len(yb))
        if not len(yb):
            empty = xb
    assert empty is not None and tuple(empty.shape) == (0, 3)
    sizes = np.array(sizes)
    # Binomial(400, 1/200): mean 2, variance 1.99; standard errors sqrt(2/4000) and about sqrt(10/4000)
    assert abs(sizes.mean() - 2) < 5 * math.sqrt(2 / steps)
    assert abs(sizes.var() - n * q * (1 - q)) < 5 * math.sqrt(10 / steps)
    # fixed batches of 2 would have variance 0: the check can fail
    assert sizes.var() > 1.5


def test_the_same_seed_gives_the_same_batches_and_secret_seeds_do_not_repeat():
    a = [b.tolist() for b in PoissonBatches(500, 0.05, 20, seed=3)]
    b = [b.tolist() for b in PoissonBatches(500, 0.05, 20, seed=3)]
    c = [b.tolist() for b in PoissonBatches(500, 0.05, 20, seed=sampling_seed())]
    assert a == b and a != c
    assert len({sampling_seed() for _ in range(100)}) == 100 and sampling_seed() < 2**128


def test_rate_one_takes_every_record():
    assert PoissonBatches(7, 1.0, 1, seed=0).draw().tolist() == list(range(7))
    assert isinstance(next(iter(PoissonBatches(7, 0.5, 1, seed=0))), torch.Tensor)
