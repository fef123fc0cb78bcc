"""The accounting check (issue 37 §5): the loop's batches, records, steps and noise are counted as they happen and
compared with the accountant's inputs; a run whose sampler or noise differs from what the accountant was told ends
with a clear failure and no ε (Opacus issue #813: a weighted sampler spent budget ~781× faster than reported)."""

import numpy as np
import pytest
import torch

from dpcore.jobs import registry, runner, store
from dpcore.jobs.owners import CLI, CLI_OWNER
from dpcore.training import accounting_check, loop
from dpcore.training.accounting_check import AccountingMismatch, Witness
from dpcore.training.config import TrainConfig
from dpcore.training.loop import train
from dpcore.training.models import batch_as_is

RUN = dict(dataset="breast_cancer", model="logreg", epsilon=2.0, epochs=3, batch_size=64, canaries=0)


class _Loader(torch.utils.data.DataLoader):
    """A loader that *says* it samples at rate q (what the accountant is told) but draws batches its own way."""

    def __init__(self, dataset, batch_sampler, q):
        super().__init__(dataset, batch_sampler=batch_sampler, collate_fn=batch_as_is)
        self.sample_rate = q


class _FixedBatches(torch.utils.data.Sampler):
    """Uniform sampling without replacement: a shuffle cut into int(1/q) batches of the expected size."""

    def __init__(self, n, q, gen):
        self.n, self.q, self.gen = n, q, gen

    def __len__(self):
        return int(1 / self.q)

    def __iter__(self):
        perm = torch.randperm(self.n, generator=self.gen).tolist()
        size = int(self.n * self.q)
        for i in range(len(self)):
            yield perm[i * size : (i + 1) * size]


class _Weighted(torch.utils.data.Sampler):
    """Opacus #813's shape: a weighted sampler with replacement (a few heavy records drawn again and again)."""

    def __init__(self, n, q, gen):
        self.n, self.q, self.gen = n, q, gen
        self.w = torch.ones(n)
        self.w[:10] = 50.0

    def __len__(self):
        return int(1 / self.q)

    def __iter__(self):
        for _ in range(len(self)):
            yield torch.multinomial(self.w, int(self.n * self.q), True, generator=self.gen).tolist()


def _wrong(monkeypatch, sampler_cls):
    def loader(dataset, q, seed):
        gen = torch.Generator().manual_seed(seed % 2**63)
        return _Loader(dataset, sampler_cls(len(dataset), q, gen), q)

    monkeypatch.setattr(loop, "poisson_loader", loader)


def test_an_honest_run_passes_and_stores_what_was_compared():
    m = train(TrainConfig(**RUN)).metrics
    c = m.accounting_check
    assert c["passed"] and c["steps"] == {"accountant": 24, "batches": 24, "optimiser_steps": 24, "noise_draws": 24}
    assert c["sample_rate"]["accountant"] == m.sample_rate and abs(c["sample_rate"]["z"]) < accounting_check.Z
    assert c["noise_multiplier"]["accountant"] == m.noise_multiplier
    assert abs(c["noise_multiplier"]["observed"] / m.noise_multiplier - 1) < 0.1
    assert c["poisson"]["duplicate_batches"] == 0


@pytest.mark.parametrize(
    "sampler,words",
    [(_FixedBatches, "too even"), (_Weighted, "held a record twice")],
    ids=["uniform-without-replacement", "weighted-with-replacement"],
)
def test_a_wrong_sampler_is_refused(monkeypatch, sampler, words):
    _wrong(monkeypatch, sampler)
    with pytest.raises(AccountingMismatch, match="no ε is claimed") as err:
        train(TrainConfig(**RUN))
    assert words in str(err.value)


def test_a_weighted_sampler_without_duplicates_is_refused_by_the_records_counts(monkeypatch):
    """Heavy records drawn far more often than q, each at most once a batch: the draw counts give it away."""

    class Heavy(_Weighted):
        def __iter__(self):
            for _ in range(len(self)):
                heavy = torch.arange(10)
                rest = torch.randperm(self.n - 10, generator=self.gen)[: int(self.n * self.q) - 10] + 10
                yield torch.cat([heavy, rest]).tolist()

    _wrong(monkeypatch, Heavy)
    with pytest.raises(AccountingMismatch, match="too uneven"):
        train(TrainConfig(**RUN))


@pytest.mark.parametrize("mode", ["fused", "hooks"])
def test_a_loop_that_skips_the_noise_is_refused(monkeypatch, mode):
    if mode == "fused":
        from dpcore.training.fused import FusedDPSGD

        init = FusedDPSGD.__init__

        def no_noise(self, *a, **k):
            init(self, *a, **k)
            self.sigma = 0.0  # the accountant is still told the calibrated σ

        monkeypatch.setattr(FusedDPSGD, "__init__", no_noise)
    else:
        from opacus.optimizers.optimizer import DPOptimizer

        def add_no_noise(self):
            for p in self.params:
                p.grad = p.summed_grad.view_as(p).clone()

        monkeypatch.setattr(DPOptimizer, "add_noise", add_no_noise)
    with pytest.raises(AccountingMismatch, match="noise") as err:
        train(TrainConfig(**RUN, grad_sample_mode=mode))
    assert "σ" in str(err.value) or "no noise" in str(err.value) or "noise was added in 0" in str(err.value)


def test_half_the_noise_is_refused(monkeypatch):
    from opacus.optimizers.optimizer import DPOptimizer

    add = DPOptimizer.add_noise

    def half(self):
        self.noise_multiplier, keep = self.noise_multiplier / 2, self.noise_multiplier
        add(self)
        self.noise_multiplier = keep

    monkeypatch.setattr(DPOptimizer, "add_noise", half)
    with pytest.raises(AccountingMismatch, match="the noise added had σ"):
        train(TrainConfig(**RUN, grad_sample_mode="hooks"))


def test_a_refused_run_ends_as_a_failed_job_with_the_reason_and_no_epsilon(monkeypatch):
    _wrong(monkeypatch, _FixedBatches)
    with pytest.raises(AccountingMismatch):
        runner.run_inline(registry.TRAIN, TrainConfig(**RUN).to_dict(), owner=CLI_OWNER, group="train")
    job = store.list_jobs(caller=CLI, limit=1)[0]
    assert job["status"] == "failed" and not job.get("result")
    assert "the privacy accountant was told" in job["error"] and "no ε is claimed" in job["error"]


def test_the_cli_ends_with_the_reason_and_exits_2(monkeypatch, capsys):
    """The CLI says one line (no traceback above it: a refusal is not a crash), and no ε."""
    from dpcore import cli

    _wrong(monkeypatch, _Weighted)
    rc = cli.main(["train", "--dataset", "breast_cancer", "--model", "logreg", "--epsilon", "2", "--epochs", "1"])
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()  # the run's progress line, then the refusal
    assert "Traceback" not in cap.err and len(lines) == 2 and lines[0].startswith("[train]"), cap.err
    last = lines[-1]
    assert rc == 2 and "no ε is claimed" in last and "the privacy accountant was told" in last
    assert "epsilon" not in cap.out


def _honest_witness(rng, n, q, T, d, sigma, clip):
    w = Witness(n)
    for _ in range(T):
        w.on_batch(np.flatnonzero(rng.random(n) < q))
        w.on_step()
        w.on_noise(torch.from_numpy(rng.normal(0, sigma * clip, d)))
    return w


def test_honest_sampling_and_noise_pass_in_every_simulated_run():
    """The statistical comparisons refuse an honest run with probability below 1e-9 each: 300 simulated honest runs
    of small, skewed shapes (few steps, tiny q, few rows) all pass."""
    rng = np.random.default_rng(0)
    shapes = [(455, 1 / 8, 80, 62), (20, 0.1, 30, 200), (8000, 1 / 32, 160, 100), (150, 1 / 75, 10, 10)]
    for i in range(300):
        n, q, T, d = shapes[i % len(shapes)]
        w = _honest_witness(rng, n, q, T, d, 1.3, 0.5)
        out = accounting_check.check([(1.3, q, T)], w, clip=0.5)
        assert out["passed"]


def test_a_wrong_sample_rate_or_step_count_told_to_the_accountant_is_refused():
    rng = np.random.default_rng(1)
    w = _honest_witness(rng, 455, 1 / 8, 80, 62, 1.0, 1.0)
    with pytest.raises(AccountingMismatch, match="sample rate was"):
        accounting_check.check([(1.0, 1 / 16, 80)], w, clip=1.0)
    with pytest.raises(AccountingMismatch, match="counted 40 steps but the data loader drew 80"):
        accounting_check.check([(1.0, 1 / 8, 40)], w, clip=1.0)
    with pytest.raises(AccountingMismatch, match="not the accountant's 2"):
        accounting_check.check([(2.0, 1 / 8, 80)], w, clip=1.0)
