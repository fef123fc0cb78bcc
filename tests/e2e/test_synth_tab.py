"""The re-identification story's last defence in a real browser: open the DP synthetic data tab from a link, run a
one-release study in the background (a real OpenDP release and its baseline, in the server's workers), and read
its end of the story, the defences side by side, the charts and the statement, with the page polling meanwhile."""

import re

import pytest

from .conftest import CHART_BOX, chart_text_faults_at_both_sizes, screenshot, wait_for_app

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TAB = "6 · DP synthetic data"


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def test_run_a_study_and_read_the_end_of_the_story(app_server, page):
    page.goto(f"{app_server}/reidentification?re_tab={TAB}")
    wait_for_app(page)
    tab = page.get_by_role("tab", name=TAB)
    assert tab.get_attribute("aria-selected") == "true"  # the link opened the tab
    page.get_by_text("No study with these settings yet").first.wait_for(timeout=60_000)

    # one ε (1) and one release: the quickest real study (two releases)
    eps = page.locator('[data-testid="stMultiSelect"]').filter(has_text="ε of the synthetic tables")
    for other in ("0.3", "3", "10"):
        eps.get_by_role("button", name=f"Remove {other}", exact=True).click()
        wait_for_app(page)
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="Releases per ε").get_by_role("slider")
    for _ in range(3):  # a key press that lands while the page reruns is lost: press again until it shows
        slider.focus()
        page.keyboard.press("Home")
        wait_for_app(page)
        if "2 synthetic releases in a background worker" in main_text(page):
            break
    assert "2 synthetic releases in a background worker" in main_text(page)
    page.get_by_role("button", name="Start the study").click()
    page.get_by_text(re.compile(r"Study “.+”: (queued|running)")).first.wait_for(timeout=60_000)
    assert page.get_by_role("tab", name=TAB).get_attribute("aria-selected") == "true"

    # the fragment polls until the study is done, then the page redraws with its numbers
    page.locator('[data-testid="stMain"] h4').filter(has_text=re.compile(r"^At ε = 1 the ")).first.wait_for(
        timeout=600_000
    )
    wait_for_app(page)
    text = main_text(page)
    assert re.search(r"In 1 DP synthetic table of the 1,000 patients, \d+ rows? match", text), text[:2000]
    assert "The guarantee that applies." in text and "differentially private for adding or removing one" in text
    assert "Side by side at the same ε." in text  # the table below it is a canvas grid: AppTest reads its rows
    assert page.locator('[data-testid="stMain"] [data-testid="stDataFrame"]').filter(visible=True).count() >= 2
    assert "not covered by ε" in text
    assert page.get_by_role("button", name="Privacy statement (JSON)").count() == 1
    assert page.locator('[data-testid="stException"]').count() == 0
    attack = page.locator(CHART_BOX).filter(has_text="Linking patients to").locator(".js-plotly-plot")
    attack.first.wait_for(timeout=60_000)  # the tab's charts drawn (the other tabs' are hidden)
    assert attack.count() == 1
    assert page.locator(CHART_BOX).filter(has_text="What the synthetic table keeps").count() == 2
    screenshot(page, "flow_synthetic_study")
    faults = chart_text_faults_at_both_sizes(page)
    assert not faults, "\n".join(map(repr, faults))
