"""Your own data and your own model in a real browser (issue 26, "Done when"): upload a small CSV on the
privacy–utility page, declare its public bounds, run the sweep, and read "At ε = …, your model loses X points" with
"No attack proves more than ε ≥ …", the privacy statement, the most exposed records and a script that reproduces it;
then audit your own model's scores. Each step is a README screenshot (assets/screenshots/own_*.png)."""

import json
import re

import numpy as np
import pytest

from dpcore.statements import common as statement

from .conftest import SHOTS, chart_text_faults_at_both_sizes, wait_for_app

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NAME = "clinic.csv"


def _csv() -> bytes:
    rng = np.random.default_rng(0)
    age = rng.integers(18, 90, 300)
    city = rng.choice(["north", "south"], 300)
    label = np.where(age + rng.normal(0, 8, 300) > 52, "yes", "no")
    return ("age,city,label\n" + "".join(f"{a},{c},{y}\n" for a, c, y in zip(age, city, label))).encode()


def _shot(page, name: str, locator=None) -> None:
    """The step as a user sees it (the viewport, scrolled to ``locator``), for the README."""
    wait_for_app(page)
    if locator is not None:
        locator.scroll_into_view_if_needed()
        page.wait_for_timeout(400)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def _fill(page, label: str, value: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(value)
    box.press("Enter")
    wait_for_app(page)


def test_own_csv_to_an_answer_with_statement_exposed_records_and_code(fresh_app_server, page, tmp_path, monkeypatch):
    from dpcore.jobs import workers

    try:
        _walk(fresh_app_server, page, tmp_path)
    finally:  # the workers the page started: stopped now, not left to their idle timeout
        monkeypatch.setenv("DP_EXPLORER_HOME", str(tmp_path / "home"))
        workers.shutdown_workers()


def _walk(url, page, tmp_path):
    page.goto(f"{url}/privacy_utility")
    wait_for_app(page)
    page.get_by_text("No sweep yet").first.wait_for(timeout=60_000)
    # 1 · upload: the new-sweep form is open when there is no sweep yet
    page.get_by_text("Your CSV", exact=True).click()
    wait_for_app(page)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": NAME, "mimeType": "text/csv", "buffer": _csv()}]
    )
    wait_for_app(page)
    page.get_by_text("Public bounds of each column").first.wait_for()
    # 2 · bounds: age's public range is pre-filled (18–90); city and the label's classes are typed, not read
    assert page.get_by_label("age: lower", exact=True).input_value() == "18"
    page.get_by_role("button", name="Start sweep").click()
    wait_for_app(page)
    page.get_by_text(re.compile(r"Declare public bounds for city, label")).first.wait_for()
    _fill(page, "age: lower", "0")
    _fill(page, "age: upper", "120")
    _fill(page, "city: categories", "north, south")
    _fill(page, "label: categories", "no, yes")
    page.get_by_text("3 of 3 columns declared public").first.wait_for()
    _shot(page, "own_upload", page.get_by_text("Public bounds of each column").first)
    # 3 · the sweep: the table defaults, run as background jobs
    page.get_by_role("button", name="Start sweep").click()
    page.get_by_text(re.compile(r"Sweep “.+”: done, (\d+) of \1 models")).or_(
        page.get_by_text(re.compile(r"Sweep “.+”: (failed|cancelled)"))
    ).first.wait_for(timeout=420_000)
    wait_for_app(page)
    main = page.get_by_test_id("stMain")
    assert "done, 12 of 12 models" in main.inner_text()  # 5 ε × 2 seeds + 2 baselines
    assert page.get_by_test_id("stException").count() == 0
    # 4 · the answer: what DP costs at ε = 1 and the most any attack proves, with δ and the relation
    head = page.locator("[data-testid=stMain] h4").filter(has_text="At ε = 1").first
    claim = head.inner_text()
    assert re.fullmatch(
        r"At ε = 1, (your model (loses \d+\.\d points|loses nothing measurable|gains \d+\.\d points)|no cost shown on [\d,]+ test rows)",
        claim.strip(),
    ), claim
    text = main.inner_text()
    m = re.search(r"No attack proves (more than ε ≥ ([\d.]+)|any leak)", text)
    assert m, text[:2000]
    proved = float(m.group(2) or 0)
    spent = float(
        re.search(r"against the accountant's ε ≤ ([\d.]+) at δ = 1e-5 \(add/remove one record\)", text).group(1)
    )
    assert proved < spent <= 1.0
    _shot(page, "own_sweep", head)
    # 5 · who is most exposed: the baseline's records as the model saw them, labelled private, followed across ε
    page.get_by_text("Who is most exposed").first.wait_for()
    assert "Private rows, shown to their owner" in text
    grid = page.get_by_test_id("stDataFrame").filter(has_text="row").first
    heads = [h.strip() for h in grid.locator('[role="columnheader"]').all_text_contents()]
    assert {"row", "age", "city", "label"} <= set(heads), heads
    _shot(page, "own_exposed", page.get_by_text("Who is most exposed").first)
    # 6 · take it away: the privacy statement (bounds declared public) and a script that re-runs the sweep
    with page.expect_download() as dl:
        page.get_by_role("button", name="Privacy statement (JSON)").click()
    stmt = json.loads(open(dl.value.path()).read())
    assert stmt["kind"] == "sweep" and stmt["preprocessing"]["declared_public"]
    assert stmt["neighbour_relation"] == statement.ADD_REMOVE_N_PUBLIC  # n and the classes are public for a sweep
    assert stmt["signature"]["scheme"] == "Ed25519"  # signed like every statement that leaves the server
    with page.expect_download() as dl:
        page.get_by_role("button", name="Download as Python script").click()
    code = open(dl.value.path()).read()
    assert f"DATA = {NAME!r}" in code and "SweepConfig.from_dict(settings)" in code
    assert "uploads" not in code and str(tmp_path) not in code and "north, south" not in code
    compile(code, "sweep.py", "exec")
    _shot(page, "own_code", page.get_by_text("Take it with you").first)
    faults = chart_text_faults_at_both_sizes(page)
    assert not faults, faults


def test_audit_your_own_model_in_the_browser(app_server, page):
    from dpcore.attacks import model_audit

    page.goto(f"{app_server}/audit")
    wait_for_app(page)
    page.get_by_text("Shown: the example file").first.wait_for()  # a first visit sees the example audited
    page.get_by_text(re.compile(r"The example's scores prove ε\s≥\s[\d.]+")).first.wait_for()
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": "scores.csv", "mimeType": "text/csv", "buffer": model_audit.example_csv()}]
    )
    wait_for_app(page)
    page.get_by_text(re.compile(r"Your scores prove ε\s≥\s[\d.]+")).first.wait_for()
    page.get_by_text("ε and δ", exact=True).click()
    wait_for_app(page)
    alert = page.locator('[data-testid="stAlert"]').filter(has_text="contradict the claimed ε = 1")
    alert.first.wait_for()
    assert "add/remove one record" in alert.first.inner_text()
    assert page.get_by_test_id("stException").count() == 0
    _shot(page, "own_audit", alert.first)
    faults = chart_text_faults_at_both_sizes(page)
    assert not faults, faults
