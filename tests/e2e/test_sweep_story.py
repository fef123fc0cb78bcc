"""The default privacy–utility story in a real browser: press Start, wait for the whole default sweep (3 seeds per
ε, LiRA, the canary audit, the size control), and read the headline figures off the page as a user sees them."""

import re
import time

import pytest

from dpcore.sweep import summary as sweep_summary

from .conftest import chart_text_faults_at_both_sizes, screenshot, wait_for_app

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _number(text: str) -> float:
    m = re.search(r"-?\d+(?:\.\d+)?", text.replace("−", "-"))
    assert m, f"no number in {text!r}"
    return float(m.group())


def _metrics(page) -> dict[str, str]:
    out = {}
    for m in page.locator('[data-testid="stMetric"]').all():
        out[m.get_by_test_id("stMetricLabel").inner_text().strip()] = m.get_by_test_id("stMetricValue").inner_text()
    return out


def _table(page) -> list[dict[str, str]]:
    """The per-ε table's rows as the data grid draws them (its accessible cells; only the columns in view)."""
    grid = page.get_by_test_id("stDataFrame").filter(has_text="target ε").first  # not the exposure tables below
    grid.scroll_into_view_if_needed()
    grid.locator('[role="gridcell"]').first.wait_for(state="attached", timeout=30_000)
    heads = [h.strip() for h in grid.locator('[role="columnheader"]').all_text_contents()]
    rows = []
    for r in grid.locator('[role="row"]').all():
        cells = [c.strip() for c in r.locator('[role="gridcell"]').all_text_contents()]
        if cells:
            rows.append(dict(zip(heads[-len(cells) :], cells)))
    return rows


INSPECT = ["no DP", "ε = 0.25", "ε = 0.5", "ε = 1", "ε = 2", "ε = 4", "ε = 8"]


def _inspect(page, want: str) -> dict[str, str]:
    """The "Model to inspect" slider set to ``want`` (arrow keys, as a user would) and the metrics then shown.
    The page opens it on ε = 1; once in CI it read "no DP" right after the sweep finished, so the value found
    is printed, and the metrics must always describe the model the slider shows."""
    slider = page.get_by_test_id("stSlider").filter(has_text="Model to inspect").get_by_role("slider").first
    shown = slider.get_attribute("aria-valuetext")
    print("model to inspect on arrival:", shown)
    for _ in range(len(INSPECT)):
        shown = slider.get_attribute("aria-valuetext")
        if shown == want:
            break
        slider.focus()
        slider.press("ArrowRight" if INSPECT.index(shown) < INSPECT.index(want) else "ArrowLeft")
        page.wait_for_timeout(300)
        wait_for_app(page)
    assert slider.get_attribute("aria-valuetext") == want
    m = _metrics(page)
    # the baseline's claim is "∞" under "Claimed ε (no DP)" (as the value, "∞ (no DP)" was cut on a phone)
    assert (m.get("Claimed ε (no DP)") == "∞") == (want == "no DP"), (want, m)
    assert ("Claimed ε" in m) == (want != "no DP"), (want, m)
    return m


def test_default_sweep_started_in_the_browser_shows_the_true_story(fresh_app_server, page, tmp_path, monkeypatch):
    from dpcore.jobs import workers

    try:
        _walk_the_default_sweep(fresh_app_server, page)
    finally:  # the workers the page started: stopped now, not left to their idle timeout
        monkeypatch.setenv("DP_EXPLORER_HOME", str(tmp_path / "home"))  # the fresh server's home
        workers.shutdown_workers()


def _walk_the_default_sweep(url, page):
    page.goto(f"{url}/privacy_utility")
    wait_for_app(page)
    page.get_by_text("No sweep yet").first.wait_for(timeout=60_000)
    t0 = time.monotonic()
    page.get_by_role("button", name="Start sweep").click()
    # ~21 s on a quiet 2-core machine; CI runs other work beside it
    page.get_by_text(re.compile(r"Sweep “.+”: done, (\d+) of \1 models")).or_(
        page.get_by_text(re.compile(r"Sweep “.+”: (failed|cancelled)"))
    ).first.wait_for(timeout=360_000)
    wait_for_app(page)
    print(f"default sweep in the browser: {time.monotonic() - t0:.0f} s from Start to done")
    end = page.get_by_text(re.compile(r"Sweep “.+”: \w+, \d+ of \d+ models")).first.inner_text()
    assert ": done, 33 of 33 models" in end, end  # 3 baselines, 6 ε × 3 seeds, size control 2 × 2 × 3
    main = page.get_by_test_id("stMain")
    assert page.get_by_test_id("stException").count() == 0
    assert "Traceback" not in main.inner_text()
    screenshot(page, "story_sweep")

    # the headline row: medians over the seeds, against the targets
    m = _metrics(page)
    assert _number(m["Accuracy without DP"]) >= 95.0, m
    assert _number(m["Accuracy at ε = 1"]) >= 75.0, m
    assert _number(m["Accuracy at ε = 8"]) >= 90.0, m
    # the baseline is caught on the audited canaries: a proved ε >= 1 and the best attack's TPR at 1% FPR >= 10%
    assert m["Leak proved without DP"].startswith("ε ≥ ") and _number(m["Leak proved without DP"]) >= 1.0, m
    text = main.inner_text()
    caught = re.search(
        r"The best attack on the non-private model catches (\d+)% of its members at 1% false "
        r"positives — canaries",
        text,
    )
    assert caught and int(caught.group(1)) >= 10, text[:3000]
    # under DP no proved bound exceeds its claim: per model (the page's check over all 18 audits) ...
    assert "Under DP every proved ε stays below the claimed ε (18 models audited)" in text
    assert "above the claimed ε — that would be a bug" not in text
    # ... per ε in the table (all seeds' audits combined) ...
    rows = _table(page)  # headed in words (sweep_summary.column_label), not by field names
    target, proved, spent = (sweep_summary.column_label(k) for k in ("epsilon", "empirical_epsilon", "epsilon_spent"))
    assert [_number(r[target]) for r in rows] == [0.25, 0.5, 1, 2, 4, 8], rows
    for r in rows:
        assert _number(r[proved]) < _number(r[spent]), r
    # ... and for the model inspected (ε = 1 by default): the slider and the metrics beside it agree
    m = _inspect(page, "ε = 1")
    assert _number(m["Proved ε ≥"]) < _number(m["Claimed ε"]) <= 1.0, m
    m8 = _inspect(page, "ε = 8")  # moving it redraws the metrics for that model (not the previous one's)
    assert 4.0 < _number(m8["Claimed ε"]) <= 8.0 and _number(m8["Proved ε ≥"]) < _number(m8["Claimed ε"]), m8
    print(
        "headline:",
        m,
        "| canary TPR at 1% FPR:",
        caught.group(1),
        "% | per ε (claimed, proved):",
        [(r[spent], r[proved]) for r in rows],
    )
    # the accuracy chart has its chance line
    legend = page.locator(".js-plotly-plot .legendtext").all_text_contents()
    assert any(t.startswith("chance") for t in legend), legend
    # and the finished sweep's charts read on a laptop and a phone: no text on text, none clipped
    faults = chart_text_faults_at_both_sizes(page)
    assert not faults, faults


@pytest.mark.parametrize("label", ["ε grid", "Attacks"])
def test_every_chip_of_the_sweep_choices_is_readable_on_a_phone(app_server, browser, label):
    """At 390 px the chips used to stay on one row and the last one (the ε grid's 8, LiRA) faded out at the edge."""
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        pg = ctx.new_page()
        pg.goto(f"{app_server}/privacy_utility")
        wait_for_app(pg)
        tags = (
            pg.get_by_test_id("stMultiSelect")
            .filter(has_text=label)
            .first.get_by_test_id("stMultiSelectTagsContainer")
            .first
        )
        tags.scroll_into_view_if_needed()
        scroll, width = tags.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert scroll <= width + 1, (label, scroll, width)  # nothing scrolled out of sight
        area, chips = tags.bounding_box(), tags.locator("[data-tag]")
        assert chips.count() == {"ε grid": 6, "Attacks": 3}[label]
        for i in range(chips.count()):
            c = chips.nth(i).bounding_box()
            assert area["x"] <= c["x"] and c["x"] + c["width"] <= area["x"] + area["width"] + 0.5, (
                label,
                chips.nth(i).inner_text(),
                c,
                area,
            )
    finally:
        ctx.close()
