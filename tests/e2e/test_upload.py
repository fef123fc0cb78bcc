"""Your own data, in a real browser: an uploaded CSV whose column names are as long as the limit allows, have no
spaces and hold markup. They are shown as plain text everywhere (no live tag), every chart keeps their text
inside itself without overlaps at 1280 and 390 px, and a name past the limit is refused with a clear message."""

import pytest

from dpcore import limits

from .conftest import CHART_BOX, chart_text_faults_at_both_sizes, screenshot, wait_for_app

pytestmark = pytest.mark.e2e

# 100 characters, no space, a tag in it: what a careless export (or a hostile one) puts in a header row
LONG = ("<img_src=x_onerror=alert(1)>_zip_code_of_residence_at_first_admission_" + "x" * 100)[
    : limits.UPLOAD_MAX_NAME_CHARS
]


def _csv(first: str) -> bytes:
    rows = [f"{first},age,diagnosis"] + [
        f"{1000 + i % 37},{20 + i % 50},{'flu asthma gout'.split()[i % 3]}" for i in range(300)
    ]
    return ("\n".join(rows) + "\n").encode()


def _upload(page, data: bytes) -> None:
    page.goto(f"{page.app_url}/reidentification")
    wait_for_app(page)
    page.get_by_role("tab", name="7 · Your own data").click()
    wait_for_app(page)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": "mine.csv", "mimeType": "text/csv", "buffer": data}]
    )
    wait_for_app(page)


@pytest.fixture
def upload_page(app_server, page):
    page.app_url = app_server
    return page


def test_long_markup_column_names_stay_text_and_inside_their_charts(upload_page):
    page = upload_page
    _upload(page, _csv(LONG))
    page.get_by_text("300 rows × 3 columns").first.wait_for()
    # the owner chooses the long-named column as a quasi-identifier (age, a known fact, is suggested already)
    qis = page.get_by_role("combobox", name="Quasi-identifiers (in order)")
    qis.scroll_into_view_if_needed()  # its list opens below it: off-screen, no option showed
    qis.click()
    page.keyboard.type("zip_code_of_residence")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    wait_for_app(page)
    page.get_by_text("How unique are people as").first.wait_for()
    assert not page.locator('[data-testid="stException"]').count()
    assert not page.locator('[data-testid="stMain"] img[src="x"]').count()  # the tag was never made live
    titles = page.locator(".dpx-chart-head").all_text_contents()
    assert any("<img_src=x_onerror=alert(1)>" in "".join(t.split()) for t in titles), titles  # shown as text
    faults = chart_text_faults_at_both_sizes(page)
    screenshot(page, "flow_upload_long_names")
    assert not faults, "\n".join(map(repr, faults))


def test_a_column_name_past_the_limit_is_refused_in_words(upload_page):
    page = upload_page
    _upload(page, _csv("n" * (limits.UPLOAD_MAX_NAME_CHARS + 1)))
    alert = page.locator('[data-testid="stAlert"]').filter(has_text="characters long")
    alert.first.wait_for()
    assert f"at most {limits.UPLOAD_MAX_NAME_CHARS} are supported" in alert.first.inner_text()
    assert not page.locator('[data-testid="stException"]').count()
    assert not page.locator(CHART_BOX).filter(has_text="nnnnnnnn").count()
