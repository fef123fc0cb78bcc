"""Jobs in a real browser (issue 24.7, issue 28): a double click on Train queues one run and its twin, and a second
visitor who opens the first one's link to the run is told it is not theirs and sees nothing of it."""

import re

import pytest

from dpcore.jobs import store, workers
from dpcore.jobs.owners import SYSTEM

from .conftest import wait_for_app

pytestmark = pytest.mark.e2e


def test_a_double_click_queues_once_and_the_link_is_not_anothers(fresh_app_server, browser, tmp_path, monkeypatch):
    first = browser.new_context(viewport={"width": 1280, "height": 800})
    second = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    monkeypatch.setenv("DP_EXPLORER_HOME", str(tmp_path / "home"))  # the fresh server's home: read its store here
    try:
        pg = first.new_page()
        pg.goto(f"{fresh_app_server}/training")
        wait_for_app(pg)
        pg.get_by_role("button", name="Train DP + baseline").dblclick()
        # the finished pair's headline (the button's own tooltip also says "what DP costs")
        pg.get_by_text(
            re.compile(
                r"(DP (costs \d+\.\d points of accuracy|scores \d+\.\d points above its twin)|No cost shown) at ε = \d"
            )
        ).first.wait_for(timeout=240_000)
        jobs = store.list_jobs(caller=SYSTEM)
        assert len(jobs) == 2, [j.label for j in jobs]  # the run and its twin, once
        run = next(j for j in jobs if j.params["epsilon"] is not None)
        assert f"tr_pick={run.id}" in pg.url

        other = second.new_page()
        other.goto(pg.url)  # the same link, another visitor
        wait_for_app(other)
        other.get_by_text("not yours").first.wait_for(timeout=60_000)
        main = other.get_by_test_id("stMain").inner_text()
        assert run.label not in main and "DP costs" not in main and "No cost shown" not in main
        assert "Status:" not in main
        assert other.get_by_test_id("stDownloadButton").count() == 0  # no weights, metrics or statement
        assert other.get_by_test_id("stException").count() == 0
    finally:
        first.close()
        second.close()
        workers.shutdown_workers()
