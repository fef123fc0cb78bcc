"""Presenter and phone layout in headless Chromium: no sideways scrolling at 390 px, no Deploy button."""

import pytest

from .conftest import wait_for_app
from .test_browser_pages import _titles

pytestmark = pytest.mark.e2e

OVERFLOW_JS = "() => [document.scrollingElement.scrollWidth, window.innerWidth]"


@pytest.fixture
def phone(browser):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1, is_mobile=True,
                              has_touch=True)
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    ctx.close()


def test_no_page_scrolls_sideways_on_a_phone(app_server, phone):
    wide = {}
    for path, title in _titles():
        slug = path.replace("pages/", "").replace(".py", "")
        phone.goto(app_server if slug == "home" else f"{app_server}/{slug}")
        wait_for_app(phone)
        phone.wait_for_selector("h1")
        scroll, inner = phone.evaluate(OVERFLOW_JS)
        if scroll > inner + 1:
            wide[title] = (scroll, inner)
    assert not wide, f"pages wider than the 390 px screen (scrollWidth, innerWidth): {wide}"


def test_viewers_get_no_deploy_button_or_developer_menu(app_server, page):
    page.goto(app_server)
    wait_for_app(page)
    page.wait_for_selector("h1")
    assert page.get_by_role("button", name="Deploy").count() == 0
    assert page.get_by_text("Deploy", exact=True).count() == 0
    assert page.locator('[data-testid="stAppDeployButton"]').count() == 0
    # The main menu, if shown at all, offers no developer entries (Clear cache, Rerun are developer tools).
    menu = page.locator('[data-testid="stMainMenu"]')
    if menu.count():
        menu.first.click()
        assert page.get_by_text("Clear cache").count() == 0
