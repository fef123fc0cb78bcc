"""Issue 12: a shared link can never ask for more than a widget allows; garbled links never crash."""

import pytest

from dpcore import limits as L

from .test_shareable_urls import open_with


@pytest.mark.parametrize(
    "params, expect",
    [
        ({"dif_n": "5000000"}, {"dif_n": L.DIFFERENCING_MAX_N}),  # cost ~20 s CPU and ~2 GB before
        ({"dif_seed": "-1"}, {"dif_seed": 0}),  # crashed before
        ({"dif_seed": str(2**53 + 7)}, {"dif_seed": L.SEED_MAX}),  # above 2^53: crashed before
        ({"dif_min_group": "1e9"}, {"dif_min_group": L.DIFFERENCING_MAX_MIN_GROUP}),
        ({"dif_n": "nan", "dif_seed": "1e400"}, {}),
    ],
)
def test_differencing_links_are_clamped(chdir_root, params, expect):
    at = open_with("pages/differencing.py", params)
    assert not at.exception, [e.value for e in at.exception]
    for key, value in expect.items():
        assert at.number_input(key=key).value == value
    assert at.warning  # the visitor is told the link was changed


def test_link_warning_escapes_the_value(chdir_root):
    at = open_with("pages/differencing.py", {"dif_n": "[x](http://evil/)![i](http://evil/i.png)"})
    assert not at.exception
    assert at.number_input(key="dif_n").value == 5_000
    assert all("](http" not in w.value for w in at.warning), [w.value for w in at.warning]
