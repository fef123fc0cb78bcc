"""The default stories in a real browser: the headline figures a presenter relies on are on screen."""

import re

import pytest

from .conftest import chart_text_faults_at_both_sizes, screenshot, wait_for_app

pytestmark = pytest.mark.e2e


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def no_exception(page) -> None:
    exc = page.locator('[data-testid="stException"]')
    assert exc.count() == 0, exc.first.inner_text()[:500]


# Inline code in prose that a line break splits in two (the range hint's `LO-HI` read "LO-" / "HI" on a phone).
SPLIT_CODE_JS = """() => [...document.querySelectorAll('[data-testid=stMarkdownContainer] code')]
    .filter(c => !c.closest('pre') && c.getClientRects().length > 1).map(c => c.textContent)"""
# Code boxes and formulas whose text runs past their right edge (a phone saw "WHERE r" and had to scroll inside
# the box; the subtraction's formula ran off at "51.4896 ·"). KaTeX's struts overhang by a pixel or two.
WIDE_CODE_JS = """() => [...document.querySelectorAll('[data-testid=stCode] pre')]
    .filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.textContent.slice(0, 60))
    .concat([...document.querySelectorAll('.katex-display, .katex-display *')]
    .filter(e => !e.closest('.katex-mathml') && e.scrollWidth > e.clientWidth + 8).map(e => e.className))"""


def at_phone_width(page, js: str):
    size = page.viewport_size
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        page.wait_for_timeout(800)
        return page.evaluate(js)
    finally:
        page.set_viewport_size(size)


def test_reidentification_story_singles_out_the_neighbour(app_server, page):
    page.goto(f"{app_server}/reidentification")
    wait_for_app(page)
    page.get_by_text("Exactly 1 patient matches").first.wait_for(timeout=120_000)
    text = main_text(page)
    assert text.count("99.8% of patients are unique") == 1  # the strongest true figure leads
    assert text.count("998 of the 1,000 patients") == 1
    first = page.locator('[data-testid="stMetricValue"]').first
    first.wait_for(timeout=60_000)
    assert first.inner_text() == "1 patient", main_text(page)[:1500]  # the first "matching records" figure
    assert re.search(r"diagnosis 'hypertension'", text)
    no_exception(page)
    screenshot(page, "story_reidentification")
    split = at_phone_width(page, SPLIT_CODE_JS)
    assert not split, f"inline code split across lines at 390 px: {split}"
    page.get_by_role("tab", name=re.compile("DP defence")).click()
    page.get_by_text("The guarantee that applies").first.wait_for(timeout=60_000)
    assert "replace-one" in main_text(page)
    no_exception(page)


def test_differencing_story_recovers_the_exact_age(app_server, page):
    page.goto(f"{app_server}/differencing")
    wait_for_app(page)
    page.get_by_text("exact age leaks: 54 years").first.wait_for(timeout=120_000)
    page.get_by_role("button", name="Show all steps").click()
    wait_for_app(page)
    page.get_by_text("Recovered age of Jan Kees").first.wait_for(timeout=60_000)
    m = dict(
        zip(
            page.locator('[data-testid="stMetricLabel"]').all_inner_texts(),
            page.locator('[data-testid="stMetricValue"]').all_inner_texts(),
        )
    )
    assert m["Recovered age of Jan Kees"] == "54 years" == m["True age (hidden data)"]
    no_exception(page)
    screenshot(page, "story_differencing")
    assert page.locator('[data-testid="stCode"]').count() == 5
    wide = at_phone_width(page, WIDE_CODE_JS)
    assert not wide, f"SQL or formula that scrolls sideways at 390 px: {wide}"
    # every step's chart drawn: their texts read on a laptop and a phone (side by side, the exact totals'
    # panels ran their labels and titles into each other at 390 px)
    page.wait_for_selector(".js-plotly-plot .main-svg")
    faults = chart_text_faults_at_both_sizes(page)
    assert not faults, faults
