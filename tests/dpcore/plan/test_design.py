"""The design from public numbers alone: shares add up exactly, the three splits do what they say, ε per person and
per row, and the preview reads no rows."""

import dataclasses
import math

import pytest

from dpcore.errors import DPError
from dpcore.plan import design, model

from .helpers import five


def test_shares_add_up_to_the_total_exactly_in_micro_epsilon():
    for total in (1, 7, 999_999, 1_000_000):
        for w in ([1, 1, 1], [1, 2, 3, 4, 5], [0.001, 1000]):
            s = design.shares(total, w)
            assert sum(s) == total and all(x >= 0 for x in s)
    d = design.design(five(0.7, split="hand"))
    assert round(sum(x.epsilon for x in d.designs) * 1e6) == 700_000 and d.epsilon == 0.7


def test_equal_split_gives_every_statistic_about_the_same_relative_error():
    d = design.design(five(1.0, split="equal"))
    rel = [x.relative for x in d.designs]
    assert max(rel) / min(rel) < 1.1, rel  # whole noise steps make it approximate
    hand = design.design(five(1.0, split="hand"))
    assert max(x.relative for x in hand.designs) > max(rel)  # equal weights waste ε on the easy ones


def test_target_accuracies_give_the_smallest_epsilon_that_meets_them():
    base = five()
    targets = [40.0, 40.0, 400_000.0, 0.5, 80.0]
    p = dataclasses.replace(
        base,
        split="accuracy",
        epsilon=None,
        statistics=tuple(dataclasses.replace(s, target=t) for s, t in zip(base.statistics, targets)),
    )
    d = design.design(p)
    for x, t in zip(d.designs, targets):
        assert x.error <= t
        less = design.design_one(p, x.index, x.statistic, round(x.epsilon * 1e6) - 1)
        assert less.error > t  # one micro-ε less misses the target
    assert math.isclose(d.epsilon, sum(x.epsilon for x in d.designs), rel_tol=1e-12)


def test_a_target_beyond_reach_says_so():
    base = five()
    p = dataclasses.replace(
        base,
        split="accuracy",
        epsilon=None,
        statistics=(dataclasses.replace(base.statistics[2], target=0.0001),),
    )
    with pytest.raises(DPError, match="looser target"):
        design.design(p)


def test_epsilon_per_person_and_per_row():
    person = design.design(five(1.0, k=5))
    assert person.epsilon_per_person == 1.0 and person.epsilon_per_row == 1.0
    rows = design.design(five(1.0, person=False))
    assert rows.epsilon_per_row == 1.0 and rows.epsilon_per_person == 10.0  # at most 10 visits a patient
    unknown = design.design(dataclasses.replace(five(), unit=model.Unit()))
    assert unknown.epsilon_per_person is None
    twin = design.twin(five(1.0, k=5), person="patient_id", public_max_rows=10)
    assert twin.epsilon_per_person == 10.0 and not twin.person_level


def test_person_level_noise_scales_with_the_rows_kept():
    one, five_rows = design.design(five(1.0, k=1)), design.design(five(1.0, k=5))
    for a, b in zip(one.designs, five_rows.designs):
        for p, q in zip(a.parts, b.parts):
            assert q.sensitivity == 5 * p.sensitivity
        assert b.error > a.error


def test_the_preview_never_reads_a_row(monkeypatch):
    import pandas as pd

    def no_data(*a, **k):  # any read of a table during the design fails the test
        raise AssertionError("the preview read data")

    monkeypatch.setattr(pd.DataFrame, "__getitem__", no_data)
    d = design.design(five())
    assert len(d.designs) == 5 and d.epsilon == 1.0
