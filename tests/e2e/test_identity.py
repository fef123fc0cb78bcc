"""A visitor's identity in a real browser (issue 32 §2; DESIGN rule 12): the server gives the browser an HttpOnly
visitor cookie, so a run started in one tab survives a reload and opens in a second tab of the same browser
(My work, on Home), while another browser (another cookie jar) sees nothing of it; no URL the app makes carries the
identity."""

import pytest

from dpcore.jobs import store, workers
from dpcore.jobs.owners import SYSTEM, visitor_owner
from pages.ui.visitor_cookie import COOKIE

from .conftest import wait_for_app

pytestmark = pytest.mark.e2e


def _my_work(pg, base: str) -> str:
    """Home's My work section, or '' when Home shows none."""
    pg.goto(base)
    wait_for_app(pg)
    box = pg.locator(".st-key-mw")
    return box.inner_text() if box.count() else ""


def test_a_visitors_run_survives_a_reload_opens_in_a_new_tab_and_stays_invisible_to_another_browser(
    fresh_app_server, browser, tmp_path, monkeypatch
):
    mine = browser.new_context(viewport={"width": 1280, "height": 800})
    theirs = browser.new_context(viewport={"width": 1280, "height": 800})
    monkeypatch.setenv("DP_EXPLORER_HOME", str(tmp_path / "home"))  # the fresh server's home: read its store here
    urls: list[str] = []
    try:
        pg = mine.new_page()
        pg.on("request", lambda r: urls.append(r.url))
        pg.on("framenavigated", lambda f: urls.append(f.url))
        pg.goto(f"{fresh_app_server}/training")
        wait_for_app(pg)
        (cookie,) = [c for c in mine.cookies() if c["name"] == COOKIE]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Lax" and cookie["path"] == "/"
        assert cookie["expires"] > 0  # a lifetime, not a session cookie
        assert pg.evaluate("document.cookie").find(COOKIE) == -1  # the page's scripts cannot read it
        token, owner = cookie["value"], visitor_owner(cookie["value"])

        pg.get_by_role("button", name="Train DP + baseline").click()
        pg.get_by_text("Status:").first.wait_for(timeout=120_000)
        jobs = store.list_jobs(caller=SYSTEM)
        assert len(jobs) == 2 and {j.owner for j in jobs} == {owner}  # the browser's, not the session's
        run = next(j for j in jobs if j.params["epsilon"] is not None)

        pg.reload()  # F5: a new Streamlit session, the same browser
        wait_for_app(pg)
        assert pg.get_by_test_id("stMain").get_by_text("not yours").count() == 0
        assert run.label in _my_work(pg, fresh_app_server)
        pg.locator(".st-key-mw").get_by_role("button", name="Open").first.click()
        wait_for_app(pg)
        pg.wait_for_url("**/training**")
        assert any(j.id in pg.url for j in jobs)  # the newest (the twin) is shown: its picker writes the id, never who
        assert "No training run yet" not in pg.get_by_test_id("stMain").inner_text()

        tab = mine.new_page()  # a second tab of the same browser
        tab.on("request", lambda r: urls.append(r.url))
        assert run.label in _my_work(tab, fresh_app_server)

        other = theirs.new_page()  # another browser: another cookie jar, another visitor
        assert _my_work(other, fresh_app_server) == ""
        assert run.label not in other.get_by_test_id("stMain").inner_text()
        other.goto(f"{fresh_app_server}/training")
        wait_for_app(other)
        assert "No training run yet" in other.get_by_test_id("stMain").inner_text()
        (their_cookie,) = [c for c in theirs.cookies() if c["name"] == COOKIE]
        assert their_cookie["value"] != token

        hrefs = pg.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        hrefs += tab.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        for url in urls + hrefs + [pg.url, tab.url]:
            assert token not in url and owner not in url and owner.split(":")[1] not in url, url
        assert urls and hrefs
    finally:
        mine.close()
        theirs.close()
        workers.shutdown_workers()
