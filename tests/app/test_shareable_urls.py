"""A link carries a page's main settings: opening it shows the same view; bad link values are ignored."""

import pytest
from streamlit.testing.v1 import AppTest

from .pages import ROOT


def open_with(page_url: str, params: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    if page_url:
        at.switch_page(page_url)
        at.run()
    return at


def test_home_epsilon_from_link_and_back_into_url(chdir_root):
    at = open_with("", {"home_eps": "8.0"})
    assert not at.exception
    assert at.select_slider(key="home_eps").value == 8.0
    at.select_slider(key="home_eps").set_value(2.0).run()
    assert at.query_params["home_eps"] == ["2.0"] or at.query_params["home_eps"] == "2.0"


def test_noise_settings_from_link(chdir_root):
    at = open_with("pages/noise.py", {"noise_eps": "5", "noise_mech": "gaussian", "noise_delta": "1e-06"})
    assert not at.exception
    assert at.select_slider(key="noise_eps").value == 5.0
    assert at.radio(key="noise_mech").value == "gaussian"
    assert at.select_slider(key="noise_delta").value == pytest.approx(1e-6)


def test_bad_link_values_fall_back_to_defaults(chdir_root):
    at = open_with("pages/noise.py", {"noise_eps": "banana", "noise_mech": "nope"})
    assert not at.exception
    assert at.select_slider(key="noise_eps").value == 1.0
    assert any("Ignoring the link" in w.value for w in at.warning)


def test_reidentification_and_differencing_links(chdir_root):
    at = open_with("pages/reidentification.py", {"re_eps": "10", "re_n": "5", "re_seed": "3"})
    assert not at.exception
    assert at.select_slider(key="re_eps").value == 10.0
    assert at.number_input(key="re_n").value == 1_000  # clamped into the widget's range
    at = open_with("pages/differencing.py", {"dif_eps": "3.0"})
    assert not at.exception
    assert at.select_slider(key="dif_eps").value == 3.0
