import math
import re

import numpy as np
import pytest

from dpcore.errors import DPError
from dpcore.noise.interpret import (
    DEPLOYMENTS,
    EXAMPLE_TAIL,
    LEVELS,
    fact_bound,
    fact_reading,
    guess_ceiling,
    level_sentence,
    loss_tail,
    posterior_bound,
    privacy_level,
    reading,
)


def test_posterior_bound_known_values():
    # eps = ln 3, prior 1/2 -> 3/4
    assert posterior_bound(0.5, math.log(3)) == pytest.approx(0.75)
    # prior 0 and 1 are fixed points
    np.testing.assert_allclose(posterior_bound([0.0, 1.0], 2.0), [0.0, 1.0])
    # bound always >= prior and increasing in eps
    p = np.linspace(0.01, 0.99, 50)
    assert np.all(posterior_bound(p, 1.0) >= p)
    assert np.all(posterior_bound(p, 2.0) > posterior_bound(p, 1.0))


def test_bad_inputs():
    for eps in (0, -1, float("nan"), float("inf")):
        with pytest.raises(DPError):
            posterior_bound(0.5, eps)
    with pytest.raises(DPError, match="probability"):
        posterior_bound(1.5, 1.0)


def test_deployments_and_levels():
    names = {d.name: d.epsilon for d in DEPLOYMENTS}
    assert names["US Census 2020"] == 12.2 and names["Apple emoji suggestions"] == 4.0
    assert privacy_level(0.5) == "strong" and privacy_level(1) == "strong" and privacy_level(2) == "moderate"
    assert privacy_level(3) == "weak" and privacy_level(12) == "very weak"


@pytest.mark.parametrize("eps", list(np.geomspace(0.01, 100, 301)) + [math.log(3), math.log(9), math.log(99)])
def test_level_word_agrees_with_the_posterior_bound(eps):
    """The word shown beside the bound never contradicts it: e.g. 'moderate' only while 50% → at most 90%.

    Old code: 'moderate' for ε ≤ 5, next to "an attacker goes from 50% to 99% sure" (ε = 4.6)."""
    post = float(posterior_bound(0.5, eps))
    word = privacy_level(eps)
    limits = dict((w, lim) for lim, w in LEVELS)
    words = [w for _, w in LEVELS]
    assert post <= limits[word] + 1e-9
    i = words.index(word)
    if i:  # and the bound is above the previous word's limit: not a weaker word than it needs
        assert post > limits[words[i - 1]] - 1e-9
    sentence = level_sentence(eps)
    assert sentence.startswith(word + ":")
    # "at most X%" stays true: X is the bound rounded *up* at one decimal (nearest wrote 73.1% for 73.106%)
    shown = float(re.search(r"at most ([0-9.]+)% sure", sentence).group(1))
    assert post * 100 <= shown + 1e-9 and shown < post * 100 + 0.1 + 1e-9


def test_chart_zones_use_the_same_words_and_edges():
    from dpcore.figures import style

    for lo, hi, word, _ in style.ZONES:
        mid = math.sqrt(lo * hi)
        assert privacy_level(mid) == word


def test_guess_ceiling_known_answers():
    assert guess_ceiling(math.log(2), 0.3) == pytest.approx(0.6)
    assert guess_ceiling(5.0, 0.3) == 1.0
    with pytest.raises(DPError, match="probability"):
        guess_ceiling(1.0, 1.2)


def test_reading_says_how_often_the_bound_fails_when_delta_is_positive():
    """ "With δ > 0 the guarantee may fail outright with probability up to δ" was false: for the Gaussian at
    ε = 1, δ = 1e-5 the bound fails with P[privacy loss > ε] = 1.6e-4, 16 × δ (issue 25 §4)."""
    assert "privacy loss" not in reading(1.0, 0.5) and "privacy loss" not in reading(1.0, 0.5, 0)
    text = reading(1.0, 0.5, 1e-5)
    assert "up to δ" not in text and "fails outright" not in text
    assert "δ = 1e-5" in text and "privacy loss exceeds ε" in text
    assert "probability 0.00017 (16 × δ)" in text
    # P[L > ε] of the Gaussian, by hand: L ~ N(μ²/2, μ²) with μ = Δ/σ, so P[L > ε] = Φ(μ/2 − ε/μ)
    from scipy.stats import norm

    from dpcore.noise.calibration import gaussian_analytic_sigma

    mu = 1 / gaussian_analytic_sigma(1.0, 1e-5, 1.0)
    assert loss_tail(1.0, 1e-5) == pytest.approx(norm.cdf(mu / 2 - 1 / mu), rel=1e-9)
    e, d, p = EXAMPLE_TAIL  # the copy Home shows without importing scipy
    assert loss_tail(e, d) == pytest.approx(p, rel=1e-3)


def test_each_reading_names_the_question_it_bounds():
    """e^ε bounds whether a person is in the data; a fact about a person known to be in it is a replace-one
    question, bounded by e^(2ε): at ε = 1, 50% → 73.2% vs 88.1% (issue 25 §4)."""
    assert float(fact_bound(0.5, 1.0)) == pytest.approx(math.exp(2) / (1 + math.exp(2)))
    assert float(fact_bound(0.5, 1.0)) == pytest.approx(float(posterior_bound(0.5, 2.0)))
    sentence = level_sentence(1.0)
    assert "50% sure that a person is in the data ends at most 73.2% sure" in sentence
    assert "a fact about someone known to be in it: at most 88.1%" in sentence
    assert "that a person is in the data" in reading(1.0, 0.5)
    assert "known to be in the data" in fact_reading(1.0) and "at most 88.1%" in fact_reading(1.0)
    assert "fact about a person ends" not in sentence  # the old wording read a fact off the membership bound


def test_posterior_bound_never_overflows():
    assert float(posterior_bound(0.5, 1000.0)) == 1.0 and float(fact_bound(0.01, 900.0)) == 1.0
    assert float(posterior_bound(0.0, 1000.0)) == 0.0
