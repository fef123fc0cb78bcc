"""Open the app in headless Chromium and visit every page from the sidebar."""

import pytest

from ..app.pages import registered_pages
from .conftest import screenshot, wait_for_app

pytestmark = pytest.mark.e2e


def _titles():
    import ast

    from ..app.pages import ROOT

    tree = ast.parse((ROOT / "app.py").read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Page":
            title = next(k.value.value for k in node.keywords if k.arg == "title")
            out.append((node.args[0].value, title))
    return out


def test_every_page_from_the_sidebar(app_server, page):
    page.goto(app_server)
    wait_for_app(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    nav = page.locator('[data-testid="stSidebarNav"]')
    for path, title in _titles():
        nav.get_by_text(title, exact=True).first.click()
        wait_for_app(page)
        page.wait_for_selector("h1")
        exc = page.locator('[data-testid="stException"]')
        assert exc.count() == 0, f"{title}: {exc.first.inner_text()[:500]}"
        screenshot(page, path.replace("pages/", "").replace(".py", ""))
    assert len(_titles()) == len(registered_pages())
