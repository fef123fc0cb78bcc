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
