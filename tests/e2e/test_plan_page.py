"""Plan a release in a real browser, at 1280×800 and on a 390 px phone: the first screen holds the headline (one
sentence, one number) and the preview chart with little prose above the fold; the release runs once and hands out
the table, its statement and the code; nothing scrolls sideways; chart texts never overlap."""

import re

import pytest

from .conftest import chart_text_faults, screenshot, wait_for_app

pytestmark = pytest.mark.e2e

FOLD_JS = """(fold) => {
  const main = document.querySelector('[data-testid=stMain]');
  const h4 = [...main.querySelectorAll('h4')].find(h => h.innerText.includes('statistics for'));
  const plot = main.querySelector('.js-plotly-plot');
  let words = 0;
  for (const p of main.querySelectorAll('[data-testid=stMarkdownContainer] p, [data-testid=stCaptionContainer]')) {
    const r = p.getBoundingClientRect();
    if (r.bottom > 0 && r.top < fold && r.height > 0) words += p.innerText.split(/\\s+/).filter(Boolean).length;
  }
  return {
    headline: h4 ? h4.innerText : null,
    headline_bottom: h4 ? h4.getBoundingClientRect().bottom : null,
    chart_top: plot ? plot.getBoundingClientRect().top : null,
    chart_bottom: plot ? plot.getBoundingClientRect().bottom : null,
    words,
    scroll: document.scrollingElement.scrollWidth,
    inner: window.innerWidth,
  };
}"""


def _open(pg, url):
    pg.goto(f"{url}/plan")
    wait_for_app(pg)
    pg.wait_for_selector("h1")
    pg.wait_for_selector(".js-plotly-plot")


@pytest.mark.parametrize("view", ["wide", "phone"])
def test_the_first_screen_is_the_headline_and_the_preview(app_server, browser, view):
    size = {"width": 1280, "height": 800} if view == "wide" else {"width": 390, "height": 844}
    ctx = browser.new_context(viewport=size, is_mobile=view == "phone", has_touch=view == "phone")
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    try:
        _open(pg, app_server)
        got = pg.evaluate(FOLD_JS, size["height"])
        screenshot(pg, f"plan_{view}")
        assert got["headline"] and re.search(r"5 statistics for ε = 1 per person", got["headline"])
        assert got["scroll"] <= got["inner"] + 1, got  # nothing sideways
        if view == "wide":
            assert got["chart_top"] < size["height"] - 150, got  # the main chart starts on the first screen
            assert got["words"] <= 60, got
        assert not chart_text_faults(pg)
    finally:
        ctx.close()


def test_release_once_and_download_the_files(app_server, page):
    _open(page, app_server)
    page.get_by_role("button", name="Release", exact=True).click()
    wait_for_app(page)
    page.get_by_text("Released once").wait_for()
    screenshot(page, "plan_released")
    for name in ("release.csv", "release.statement.json", "plan.ipynb", "plan.py", "registry-draft.yaml"):
        assert page.get_by_role("button", name=name).count() == 1, name
    with page.expect_download() as dl:
        page.get_by_role("button", name="release.statement.json").click()
    text = open(dl.value.path(), encoding="utf-8").read()
    assert '"kind": "plan"' in text and '"level": "person-level"' in text
    page.get_by_role("button", name="Release", exact=True).click()  # the same plan again: the stored release, free
    wait_for_app(page)
    page.get_by_text("The same plan was released before").wait_for()
    assert not chart_text_faults(page)
