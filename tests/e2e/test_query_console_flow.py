"""The query console in headless Chromium: ask a COUNT, see the answer, its interval and the budget fall; ask
until refused and see the refusal, with no stale answer left on screen."""

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .conftest import chart_text_faults_at_both_sizes, screenshot, wait_for_app

pytestmark = pytest.mark.e2e


def _metrics(page) -> dict[str, str]:
    labels = page.locator('[data-testid="stMetricLabel"]').all_inner_texts()
    values = page.locator('[data-testid="stMetricValue"]').all_inner_texts()
    return {lab.strip(): val.strip() for lab, val in zip(labels, values)}


def _fill(page, label: str, text: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(text)
    box.press("Enter")  # Streamlit commits a text/number input on Enter
    wait_for_app(page)


def misaligned_labels(page, labels: list[str]) -> list:
    """The labels of one row of inputs that do not start at the same height or do not fit on one line (a label
    that wraps pushes its input below its neighbours'): [] when the row lines up."""
    find = """(names) => names.map(n => {
        const el = [...document.querySelectorAll('[data-testid="stWidgetLabel"]')]
            .find(e => e.innerText.trim() === n && e.getBoundingClientRect().height > 0);
        if (!el) return [n, null, null];
        const r = el.getBoundingClientRect(); return [n, r.top, r.height]; })"""
    wait_for_app(page)  # not mid-rerun, when Streamlit may have some of the widgets off the page
    try:
        page.wait_for_function(f"(names) => ({find})(names).every(b => b[1] !== null)", arg=labels, timeout=30_000)
    except PlaywrightTimeout:
        pass  # reported below, with the labels that are missing
    boxes = page.evaluate(find, labels)
    missing = [b for b in boxes if b[1] is None]
    if missing:
        return missing
    top, height = min(b[1] for b in boxes), min(b[2] for b in boxes)
    return [b for b in boxes if b[1] > top + 2 or b[2] > height + 2]


def _ask(page) -> None:
    page.get_by_role("button", name="Ask (spends ε)").click()
    wait_for_app(page)


def test_a_visitor_asks_confirms_a_near_exact_answer_sees_the_budget_fall_then_a_refusal(app_server, page):
    # A link sets the data (1,000 rows, seed 7: a synthetic population no other test queries, so its visitors'
    # quota of ε = 10 inside a cap of ε = 20 is fresh on this session's server) and ε; never who asks.
    page.goto(f"{app_server}/query_console?qc_n=1000&qc_seed=7&qc_eps=4")
    wait_for_app(page)
    page.get_by_text("You are asking as a visitor: this dataset has ε = 20 of 20").first.wait_for()
    # at 1280 px each row's inputs line up: short labels, the syntax in their help
    for row in (["Dataset", "Rows", "Seed"], ["Query", "Count rows where…"], ["Mechanism", "ε for this query"]):
        assert not misaligned_labels(page, row), misaligned_labels(page, row)

    _ask(page)  # COUNT(*) WHERE has_rare_disease=true at ε = 4: its 95% interval would be ±0 — asked first
    page.get_by_text("This answer would protect almost nobody").first.wait_for()
    assert "Noisy answer (DP)" not in _metrics(page)
    page.get_by_role("button", name="Ask anyway (spends ε = 4)").click()
    wait_for_app(page)
    page.get_by_text("Noisy answer (DP)").first.wait_for()
    m = _metrics(page)
    assert re.fullmatch(r"-?[\d,]+", m["Noisy answer (DP)"]), m  # a count: a whole number
    lo, hi = (float(x.replace(",", "")) for x in re.fullmatch(r"\[(.+), (.+)\]", m["95% interval"]).groups())
    assert lo == hi == float(m["Noisy answer (DP)"].replace(",", ""))  # nearly exact, as the page warned
    assert m["ε spent now"] == "4" and m["ε remaining"] == "6"
    page.get_by_text("this dataset has ε = 16 of 20").first.wait_for()  # the sentence follows the spend
    faults = chart_text_faults_at_both_sizes(page)  # the budget gauge and the composition chart, once spent
    assert not faults, faults

    _fill(page, "ε for this query", "3.5")
    _fill(page, "Count rows where…", "sex=F")  # a new question, no warning at ε = 3.5
    _ask(page)
    page.get_by_text("ε = 2.5 of 10 left").first.wait_for()
    _fill(page, "Count rows where…", "sex=M")
    _ask(page)  # needs 3.5, only 2.5 left in the visitors' quota: refused before any noise is drawn
    alert = page.locator('[data-testid="stAlert"]').filter(has_text="budget exceeded")
    alert.first.wait_for()
    assert "only ε = 2.5 of 10 is left in the visitors' shared quota" in alert.first.inner_text()
    m = _metrics(page)
    assert "Noisy answer (DP)" not in m and "95% interval" not in m  # no stale answer under the refusal
    assert not page.locator('[data-testid="stException"]').count()
    screenshot(page, "flow_query_console_refused")
