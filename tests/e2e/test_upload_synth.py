"""An upload's DP synthetic release in a real browser (issue 27, tab "7 · Your own data"): upload a CSV whose
values hold markup, declare its public columns, choose a column to predict, release with MST in the server's
background workers, and read the released table, its statement and what it keeps — labelled as computed on the
private rows (not covered by ε) — with the markup shown as text and every chart's text inside its chart."""

import re

import pytest

from .conftest import CHART_BOX, chart_text_faults_at_both_sizes, screenshot, wait_for_app

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TAB = "7 · Your own data"
# a ward name that is markup: an upload is shown as text everywhere, the released rows included
WARDS = ("<b>north</b>", "south")
CSV = ("ward,stay,age\n" + "".join(f"{WARDS[int(i % 70 > 40)]},{i % 9},{20 + i % 70}\n" for i in range(600))).encode()
# the declarations typed in the one editor (age keeps its public pre-fill, 18–90, with the default bin width 1)
DECL = {"ward: categories": f"{WARDS[0]}, {WARDS[1]}", "stay: lower": "0", "stay: upper": "10", "stay: bin width": "1"}


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def test_release_an_uploads_synthetic_table_and_read_what_it_keeps(app_server, page):
    page.goto(f"{app_server}/reidentification")
    wait_for_app(page)
    page.get_by_role("tab", name=TAB).click()
    wait_for_app(page)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": "wards.csv", "mimeType": "text/csv", "buffer": CSV}]
    )
    wait_for_app(page)
    page.get_by_text("600 rows × 3 columns").first.wait_for()

    for label, value in DECL.items():
        box = page.get_by_label(label, exact=True)
        box.fill(value)
        box.press("Enter")  # a text or number box commits on Enter
        wait_for_app(page)
    predict = page.get_by_role("combobox", name="Model: predict")
    predict.scroll_into_view_if_needed()  # below the editor: its list opened off-screen and showed no option
    predict.click()
    page.get_by_role("option", name="ward", exact=True).click()
    wait_for_app(page)
    page.get_by_role("button", name="Release a synthetic table").click()
    wait_for_app(page)
    page.get_by_text(re.compile(r"Synthetic release \S+:")).first.wait_for(timeout=120_000)  # the fragment polls

    page.locator('[data-testid="stAlert"]').filter(has_text=re.compile(r"Released\. ε = ")).filter(
        visible=True
    ).first.wait_for(timeout=600_000)
    wait_for_app(page)
    text = main_text(page)
    assert "ε = 1, δ = 0 (MST); add/remove one record" in text, text[-3000:]
    assert "What the synthetic table keeps." in text and "Not covered by ε" in text
    assert re.search(r"1-way marginals, worst cell\s+\d+(\.\d)? points", text), text[-3000:]
    assert re.search(r"Model on synthetic rows\s+\d+(\.\d)?%", text) and "Model on your rows" in text
    assert "Rows read: a random part of the upload" in text
    assert page.get_by_role("button", name="Synthetic table (CSV)").count() == 1
    assert page.get_by_role("button", name="Privacy statement (JSON)").count() == 1
    main = page.locator('[data-testid="stMain"]')
    assert main.locator("b").filter(has_text="north").count() == 0  # the markup in the data never became a tag
    assert page.locator('[data-testid="stException"]').count() == 0
    chart = page.locator(CHART_BOX).filter(has_text="not covered by ε").locator(".js-plotly-plot")
    chart.first.wait_for(timeout=60_000)
    chart.first.scroll_into_view_if_needed()
    screenshot(page, "flow_upload_synthetic")
    faults = chart_text_faults_at_both_sizes(page)
    assert not faults, "\n".join(map(repr, faults))
