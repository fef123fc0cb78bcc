"""The HTML report on a phone, in headless Chromium (issue 28): it had no viewport meta tag, so a phone laid it
out 980 px wide and shrank it; table headers broke mid-word ("tar get"). At 390 px the page is as wide as the
screen (wide tables scroll inside their own box) and every header word is whole."""

import json

import pytest

from dpcore.cli import main
from dpcore.jobs.owners import SYSTEM
from dpcore.report import document as report

pytestmark = pytest.mark.e2e


def test_report_fits_a_390_px_phone_with_whole_header_words(browser, tmp_path, capsys):
    from tests.dpcore.test_statement import _fake_sweep

    decision = tmp_path / "decision.json"
    assert (
        main(
            [
                "advise",
                "--mechanism",
                "gaussian",
                "--max-tpr",
                "0.05",
                "--at-fpr",
                "0.01",
                "--within",
                "10",
                "--statement",
                str(decision),
            ]
        )
        == 0
    )
    capsys.readouterr()
    path = tmp_path / "report.html"
    path.write_text(
        report.build(1.0, n=1500, sweep_id=_fake_sweep(), advice=[json.loads(decision.read_text())], caller=SYSTEM)
    )
    ctx = browser.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True, device_scale_factor=2
    )
    try:
        pg = ctx.new_page()
        pg.goto(path.as_uri())
        pg.wait_for_function(
            "() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 6", timeout=120_000
        )
        assert pg.evaluate("() => window.innerWidth") == 390  # the viewport tag: laid out at the phone's width
        wide = pg.evaluate("() => document.documentElement.scrollWidth")
        assert wide <= 391, f"the page is {wide} px wide on a 390 px phone"
        # every header cell wraps between words only: no line of a header starts inside a word
        broken = pg.evaluate("""() => [...document.querySelectorAll('th')].flatMap(th => {
            const words = th.innerText.split(/[\\s\\-–]+/).filter(Boolean);  // a hyphen may break
            const range = document.createRange(), out = [];
            const text = th.firstChild;
            if (!text || text.nodeType !== 3) return [];
            let at = 0;
            for (const w of words) {
              const i = text.data.indexOf(w, at); at = i + w.length;
              if (w.length < 2) continue;
              range.setStart(text, i); range.setEnd(text, i + w.length);
              if (range.getClientRects().length > 1) out.push(w);
            }
            return out;
        })""")
        assert not broken, f"header words broken across lines: {broken}"
        assert pg.get_by_text("Decision record: choosing ε from a risk limit").count() == 1
    finally:
        ctx.close()
