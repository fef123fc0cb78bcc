"""The last-iterate heuristic (Steinke et al., ICLR 2025): the paper's own identities as known answers (one step and
full batches are the standard analysis), a Monte Carlo check of δ(ε), the ordering against the accountant, and the
trade-off curve against the privacy profile."""

import math

import numpy as np
import pytest

from dpcore.attacks import audit, last_iterate
from dpcore.errors import DPError
from dpcore.noise.calibration import gaussian_epsilon
from dpcore.training import accounting


@pytest.mark.parametrize("sigma,q", [(1.0, 0.01), (0.8, 0.1), (2.0, 0.5)])
def test_one_step_is_the_standard_analysis(sigma, q):
    """T = 1: the last iterate is the only one, so the heuristic is the subsampled Gaussian's exact ε (dp_accounting's
    PLD, a pessimistic discretisation) — to two digits."""
    h = last_iterate.heuristic_epsilon(sigma, q, 1, 1e-5)
    assert h == pytest.approx(accounting.pld_epsilon(sigma, q, 1, 1e-5), abs=0.005)


@pytest.mark.parametrize("sigma,steps", [(1.0, 100), (2.0, 10), (5.0, 1000)])
def test_full_batch_is_one_gaussian(sigma, steps):
    """q = 1: every step samples the canary, so the final model is one Gaussian release with μ = √T/σ (the paper: the
    heuristic equals the standard analysis for full-batch DP-GD)."""
    h = last_iterate.heuristic_epsilon(sigma, 1.0, steps, 1e-5)
    assert h == pytest.approx(gaussian_epsilon(sigma / math.sqrt(steps), 1e-5), rel=1e-6)


@pytest.mark.parametrize(
    "sigma,q,steps", [(1.0, 0.01, 1000), (0.8, 0.01, 10_000), (1.5, 0.004, 3000), (1.1, 0.02, 500)]
)
def test_heuristic_is_below_the_accountant(sigma, q, steps):
    """The last iterate is a post-processing of all iterates: the heuristic never exceeds the accountant's ε, and with
    many small steps it is well below it."""
    h = last_iterate.heuristic_epsilon(sigma, q, steps, 1e-5)
    assert 0 < h < 0.95 * accounting.pld_epsilon(sigma, q, steps, 1e-5)


def test_delta_matches_monte_carlo():
    """δ(ε) = E_P[(1 − e^(ε − L))₊] for the add direction, estimated from 400,000 draws of Binomial(T, q) + N(0, σ²T):
    within 4 standard errors of the exact value."""
    sigma, q, steps, eps = 0.7, 0.05, 50, 0.5
    rng = np.random.default_rng(0)
    n = 400_000
    s = sigma * math.sqrt(steps)
    y = rng.binomial(steps, q, n) + rng.normal(0.0, s, n)
    pair = last_iterate._Pair(sigma, q, steps)
    loss = np.array([pair.loss(v) for v in y[:20_000]])  # the loss is exact but per point; vectorise a slice
    k, w = pair.k, pair.w
    a = np.log(w)[None, :] + (2 * k[None, :] * y[:, None] - k[None, :] ** 2) / (2 * s * s)
    top = a.max(axis=1)
    full = top + np.log(np.exp(a - top[:, None]).sum(axis=1))
    assert np.allclose(full[:20_000], loss)
    terms = np.maximum(1 - np.exp(eps - full), 0.0)
    est, se = terms.mean(), terms.std() / math.sqrt(n)
    exact = pair.p_above(pair.crossing(eps)) - math.exp(eps) * pair.q_above(pair.crossing(eps))
    assert abs(est - exact) < 4 * se
    assert last_iterate.heuristic_delta(sigma, q, steps, eps) >= exact


def test_epsilon_inverts_delta():
    sigma, q, steps = 1.0, 0.02, 400
    e = last_iterate.heuristic_epsilon(sigma, q, steps, 1e-6)
    assert last_iterate.heuristic_delta(sigma, q, steps, e) == pytest.approx(1e-6, rel=1e-4)
    assert last_iterate.heuristic_epsilon(100.0, 0.001, 1, 0.5) == 0.0  # δ(0) already below δ


def test_tradeoff_curve_is_the_profiles_envelope():
    """The ROC drawn from the optimal threshold tests equals the envelope of the heuristic's privacy profile
    (:func:`dpcore.attacks.audit.roc_from_privacy_profile`), and lies under the accountant's curve."""
    sigma, q, steps = 1.0, 0.05, 100
    curve = last_iterate.heuristic_tradeoff(sigma, q, steps)
    fpr, tpr = np.array(curve["fpr"]), np.array(curve["tpr"])
    eps = np.linspace(0.0, 12.0, 600)
    deltas = np.array([last_iterate.heuristic_delta(sigma, q, steps, e) for e in eps])
    via_profile = audit.roc_from_privacy_profile(eps, deltas, fpr)
    keep = fpr >= 1e-4
    assert np.allclose(tpr[keep], via_profile[keep], atol=2e-3)
    acc = np.array(accounting.dpsgd_tradeoff(sigma, q, steps)["tpr"])
    assert np.all(tpr <= acc + 1e-6)


def test_bad_settings():
    with pytest.raises(DPError, match="noise multiplier"):
        last_iterate.heuristic_epsilon(0.0, 0.1, 10)
    with pytest.raises(DPError, match="sample rate"):
        last_iterate.heuristic_epsilon(1.0, 1.5, 10)
    with pytest.raises(DPError, match="steps"):
        last_iterate.heuristic_epsilon(1.0, 0.1, 0)
