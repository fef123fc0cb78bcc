import math

import numpy as np
import pytest

from dpcore.errors import DPError
from dpcore.interpret import DEPLOYMENTS, posterior_bound, privacy_level


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
    assert privacy_level(0.5) == "strong" and privacy_level(3) == "moderate" and privacy_level(12) == "very weak"
