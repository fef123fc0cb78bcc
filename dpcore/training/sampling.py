"""Poisson sampling for DP-SGD: the batches the accountant's sample rate q describes.

Each batch holds each record independently with probability q (the subsampled Gaussian mechanism's sampling, what
Opacus's accountants assume), and an epoch is the plan's ``int(1 / q)`` batches (Opacus's DPDataLoader's count).

The draw is Opacus's construction — one uniform number per record, compared with the rate — with whole 32-bit words
for uniforms: record i is in the batch when its word is below ``m = ⌊q·2³²⌋``, probability exactly ``m / 2³²``, never
above q and within 2⁻³² of it (:func:`drawn_sample_rate`). Opacus's own sampler compares float32 uniforms (multiples
of 2⁻²⁴) with the rate, so asked for q = 1/125 it drew at 0.0080000162, a little above the rate its accountant was
told; and a float32 uniform a row costs 2 ns on the CPU generator, where two 32-bit words from one 64-bit PCG64
output cost under 1 ns: the MLP's DP step spent a third of its overhead there.

The words come from numpy's PCG64 seeded with 128 bits from :mod:`secrets` (never stored or shown), or from the run's
seed for a ``reproducible_noise`` run; a batch is an index tensor, gathered by the dataset's ``__getitems__``.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import accounting

#: Bits in each record's uniform word.
UNIFORM_BITS = 32


def drawn_sample_rate(sample_rate: float) -> float:
    """The probability with which :class:`PoissonBatches` includes each record for a plan's rate q:
    ``⌊q·2³²⌋ / 2³²`` (1 for q ≥ 1), at most q, so the accountant's ε at q bounds the run (ε grows with the rate)."""
    q = float(sample_rate)
    return math.floor(q * 2.0**UNIFORM_BITS) / 2.0**UNIFORM_BITS if q < 1.0 else 1.0


def sampling_seed() -> int:
    """128 bits from the operating system's CSPRNG, for a sampler whose state is never stored."""
    return secrets.randbits(128)


class PoissonBatches:
    """A batch sampler: ``steps`` batches per pass over ``n`` records, each record in each batch with probability
    :func:`drawn_sample_rate` (``sample_rate``), independently; an empty batch is an empty index tensor."""

    def __init__(self, n: int, sample_rate: float, steps: int, seed: int) -> None:
        self.n, self.steps = int(n), int(steps)
        self.sample_rate = drawn_sample_rate(sample_rate)
        self._threshold = math.floor(self.sample_rate * 2.0**UNIFORM_BITS)  # below 2³² unless q = 1
        self._bits = np.random.Generator(np.random.PCG64(seed)).bit_generator

    def __len__(self) -> int:
        return self.steps

    def draw(self) -> Any:
        """One batch's record indices (ascending, int64 tensor)."""
        # lazy: torch takes ~2 s to import
        import torch

        if self._threshold >= 2**UNIFORM_BITS:
            return torch.arange(self.n)
        words = self._bits.random_raw((self.n + 1) // 2).view(np.uint32)[: self.n]
        return torch.from_numpy(np.flatnonzero(words < np.uint32(self._threshold)))

    def __iter__(self) -> Iterator[Any]:
        for _ in range(self.steps):
            yield self.draw()


class PoissonLoader:
    """The DP run's data loader: :class:`PoissonBatches` gathered from ``dataset`` with one index op a batch (its
    ``__getitems__``), without a ``DataLoader``'s per-batch machinery (5–6 µs a batch, a twentieth of the MLP's
    step); Opacus's ``make_private`` reads its ``dataset`` and ``len`` as a DataLoader's."""

    def __init__(self, dataset: Any, batch_sampler: PoissonBatches) -> None:
        self.dataset, self.batch_sampler = dataset, batch_sampler
        self.sample_rate = batch_sampler.sample_rate

    def __len__(self) -> int:
        return len(self.batch_sampler)

    def __iter__(self) -> Iterator[Any]:
        fetch = self.dataset.__getitems__
        for idx in self.batch_sampler:
            yield fetch(idx)


def poisson_loader(dataset: Any, sample_rate: float, seed: int) -> PoissonLoader:
    """The loader of :class:`PoissonBatches` over ``dataset`` (one made by
    :func:`~dpcore.training.models.make_dataset`) at the plan's rate q, ``int(1 / q)`` batches an epoch. The rate is
    the plan's, from the real training rows: canaries added to ``dataset`` change neither it nor the steps."""
    sampler = PoissonBatches(len(dataset), sample_rate, accounting.steps_per_epoch(sample_rate), seed)
    return PoissonLoader(dataset, sampler)
