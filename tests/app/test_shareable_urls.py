"""A link carries a page's main settings: opening it shows the same view; bad link values are ignored."""

import pytest
from streamlit.testing.v1 import AppTest

from .pages import ME, ROOT, SOMEONE_ELSE


def open_with(page_url: str, params: dict, owner: str | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    if owner is not None:  # this session's job owner (a browser gets a random one)
        at.session_state["_job_owner"] = owner
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


def test_query_console_link_carries_the_query_but_never_the_analyst(chdir_root):
    at = open_with(
        "pages/query_console.py",
        {"qc_analyst": "dora", "id_name": "dora", "qc_n": "999999999", "qc_eps": "nan", "qc_kind": "MEAN"},
    )
    assert not at.exception
    assert "_dp_identity" not in at.session_state and at.text_input(key="id_name").value == ""  # nobody from a link
    assert any("You are asking as a visitor" in m.value for m in at.markdown)
    assert at.number_input(key="qc_n").value == 200_000  # clamped
    assert at.number_input(key="qc_eps").value == pytest.approx(0.1)  # NaN ignored
    assert at.selectbox(key="qc_kind").value == "MEAN"
    assert "qc_analyst" not in at.query_params and "id_name" not in at.query_params
    at = open_with("pages/query_console.py", {"qc_eps": "710"})  # OverflowError before: clamped to the widget's max
    assert not at.exception and at.number_input(key="qc_eps").value == 100.0


def test_sweep_link_opens_that_sweep(chdir_root):
    from dpcore.sweep import runs as sweep_runs

    cfg = {
        "dataset": "breast_cancer",
        "model": "logreg",
        "epsilons": [1.0],
        "epochs": 1,
        "train_size": 40,
        "hidden": None,
        "lr": 0.5,
        "baseline": False,
        "batch_size": 16,
        "canaries": 0,
        "size_fractions": [],
    }
    first = sweep_runs.run_sweep_inline(cfg, owner=ME)["id"]
    sweep_runs.run_sweep_inline(cfg, owner=ME)  # a newer one, which the page would show by default
    at = open_with("pages/privacy_utility.py", {"pu_sweep": first}, owner=ME)
    assert not at.exception
    assert at.selectbox(key="pu_sweep").value == first
    at = open_with("pages/privacy_utility.py", {"pu_sweep": "no-such-sweep"}, owner=ME)
    assert not at.exception
    assert at.selectbox(key="pu_sweep").value != "no-such-sweep"
    # the same link in someone else's session: "not yours", and nothing of the sweep
    at = open_with("pages/privacy_utility.py", {"pu_sweep": first}, owner=SOMEONE_ELSE)
    assert not at.exception and any("not yours" in w.value for w in at.warning)
    assert not at.get("plotly_chart") and not [b for b in at.selectbox if b.key == "pu_sweep"]


def _param(at, key):
    v = at.query_params.get(key)
    return v[0] if isinstance(v, list) else v


def test_link_follows_the_widgets_even_when_the_page_stops_on_an_error(chdir_root):
    """Regression: the URL was written at the end of the page, so a page stopped by an error kept the old link."""
    at = open_with("pages/noise.py", {})
    at.toggle(key="noise_exact").set_value(True).run()
    at.radio(key="noise_mech").set_value("gaussian-classic").run()
    at.number_input(key="noise_eps_typed").set_value(2.0).run()  # classic needs ε < 1: the page stops here
    assert at.error and _param(at, "noise_mech") == "gaussian-classic"

    at = open_with("pages/differencing.py", {})
    at.text_input(key="dif_target").set_value("Nobody Here").run()  # not in the population: stops on an error
    at.number_input(key="dif_min_group").set_value(40).run()
    assert at.error and _param(at, "dif_min_group") == "40"
