"""A shared link to a page opens that page with the app's navigation, even as a server's first visit."""

import pytest

from .conftest import wait_for_app

pytestmark = pytest.mark.e2e


def test_deep_link_as_first_visit_uses_app_navigation(fresh_app_server, page):
    page.goto(f"{fresh_app_server}/differencing")
    wait_for_app(page)
    page.wait_for_selector("h1:has-text('Differencing attack')", timeout=120_000)
    nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
    assert "Private query console" in nav  # app.py's titles, not raw file names
    assert "query console" not in nav.replace("Private query console", "")
    assert page.locator('[data-testid="stException"]').count() == 0


def test_back_takes_one_press_per_page_visited(app_server, page):
    """Issue 28: each visit added three history entries (the page, then its default settings written into the URL
    twice), so Back needed three presses per page. A visit with default settings is one entry now."""
    page.goto(app_server)
    wait_for_app(page)
    start = page.evaluate("history.length")
    visited = ["Noise mechanisms", "Differencing attack", "Choose ε from risk"]
    for title in visited:
        page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title).click()
        page.wait_for_selector(f"h1:has-text('{title}')")
        wait_for_app(page)
    assert page.evaluate("history.length") - start == len(visited)
    for title in reversed(["Home", *visited[:-1]]):
        page.go_back()
        wait_for_app(page)
        heading = "DP Explorer" if title == "Home" else title
        page.wait_for_selector(f"h1:has-text('{heading}')", timeout=30_000)
