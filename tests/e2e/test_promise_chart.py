"""The promise-and-proof chart in a real browser, at 1280×800 and 390×844: drawn (its marks inside its box, no text
cut or overlapping) on the privacy–utility page from a stored sweep; the training page's is checked in
test_flows.py on the run it trains."""

import numpy as np
import pytest

from .conftest import CHART_TITLE_FN, chart_text_faults, screenshot, settle_charts, wait_for_app

pytestmark = pytest.mark.e2e

SIZES = ((1280, 800), (390, 844))

# The chart whose title starts with the given words: its box, how many marks it draws, and whether it is seen.
PLOT_JS = r"""(start) => {
  CHART_TITLE_FN
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    const t = chartTitle(plot);
    if (!t.startsWith(start)) continue;
    plot.scrollIntoView();
    const r = plot.getBoundingClientRect();
    const marks = plot.querySelectorAll('.scatterlayer .point').length;
    const inside = [...plot.querySelectorAll('.scatterlayer .point')].every(p => {
      const b = p.getBoundingClientRect();
      return b.left >= r.left - 1 && b.right <= r.right + 1;
    });
    return {width: r.width, height: r.height, marks, inside, visible: plot.checkVisibility(), title: t};
  }
  return null; }""".replace("CHART_TITLE_FN", CHART_TITLE_FN)


def promise_plot(pg, start: str = "Promise and proof") -> dict | None:
    """The promise-and-proof chart as drawn, once Plotly has drawn its marks (None if the page has none)."""
    try:
        pg.wait_for_function(
            "(s) => { " + CHART_TITLE_FN + " return [...document.querySelectorAll('.js-plotly-plot')].some(p => "
            "chartTitle(p).startsWith(s) && p.querySelectorAll('.scatterlayer .point').length > 0); }",
            arg=start,
            timeout=60_000,
        )
    except Exception:  # noqa: BLE001 — reported below as "no chart"
        return None
    return pg.evaluate(PLOT_JS, start)


def assert_drawn(pg, start: str, width: int) -> None:
    settle_charts(pg)
    box = promise_plot(pg, start)
    assert box is not None, f"no chart titled {start!r} at {width} px"
    assert box["visible"] and box["marks"] >= 2 and box["inside"], box  # the promise and one more at least
    assert 0.5 * min(width, 1280) < box["width"] <= width and box["height"] > 250, box
    faults = [f for f in chart_text_faults(pg) if f[0].startswith(start[:30])]
    assert not faults, faults


def _stored_sweep(home, monkeypatch):
    """A finished sweep saved in the server's home without training (two seeds of one ε, DP-SGD settings,
    canary and records audits), shared so that any visitor reads it."""
    monkeypatch.setenv("DP_EXPLORER_HOME", str(home))
    from dpcore.attacks import audit, one_run
    from dpcore.sweep import runs as sweep_runs
    from dpcore.training import accounting

    from ..dpcore.sweep.helpers import multi_seed_result

    res = multi_seed_result(seeds=2)
    rng = np.random.default_rng(5)
    s, q, t, d = 1.0, 0.05, 200, 1e-5
    spent = accounting.pld_epsilon(s, q, t, d)
    curve = accounting.dpsgd_tradeoff(s, q, t)
    for p in res["points"]:
        inc = rng.random(300) < 0.5
        canary = one_run.one_run_lower_bound(inc * 1.5 + rng.normal(0, 1, 300), inc, delta=d)
        canary["max_certifiable"] = audit.stored_bound(canary, 0.95)[1]
        records = audit.audit_scores({"loss": (rng.normal(0.4, 1, 400), rng.normal(0, 1, 400))}, d)
        p.update(
            epsilon_spent=spent,
            noise_multiplier=s,
            sample_rate=q,
            steps=t,
            tradeoff=curve,
            empirical_epsilon={**canary, "attack": "canary", "claimed": spent, "records": records},
        )
    sweep_runs.save(
        {
            "id": "promise1",
            "name": "promise and proof",
            "created": 1.0,
            "status": "done",
            "config": res["config"],
            "jobs": [],
            "failed": [],
            "result": res,
            "owner": "cli",
            "shared": True,
        }
    )


def test_privacy_utility_promise_chart_at_both_sizes(fresh_app_server, browser, tmp_path, monkeypatch):
    _stored_sweep(tmp_path / "home", monkeypatch)
    for w, h in SIZES:
        ctx = browser.new_context(viewport={"width": w, "height": h})
        pg = ctx.new_page()
        pg.set_default_timeout(60_000)
        try:
            pg.goto(f"{fresh_app_server}/privacy_utility")
            wait_for_app(pg)
            assert_drawn(pg, "Promise and proof across", w)
            screenshot(pg, f"promise_privacy_utility_{w}")
        finally:
            ctx.close()
