"""Real-browser fixtures: a Streamlit server on a free port and headless Debian Chromium via Playwright.

Browser tests skip (with the reason) only when no Chromium is installed; with
DP_EXPLORER_REQUIRE_BROWSER=1 (set by .ci/run) a missing browser is a failure instead.
"""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "tests" / "e2e" / "screenshots"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


def chromium_path():
    for cand in (
        os.environ.get("CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if cand and os.path.exists(cand):
            return cand
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    """Start `streamlit run app.py` on a free port with a temporary DP_EXPLORER_HOME; yield its URL."""
    yield from serve_app(tmp_path_factory.mktemp("e2e-home"))


@pytest.fixture
def fresh_app_server(tmp_path):
    """A server of its own (no session has opened it yet), for first-visit behaviour such as deep links."""
    yield from serve_app(tmp_path / "home")


def serve_app(home: Path, *, port: int | None = None, args=()):
    """Serve the app on ``port`` (default: a free one) with ``DP_EXPLORER_HOME=home``; ``args``: more Streamlit
    options (e.g. ``--secrets.files PATH``)."""
    port = port or _free_port()
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, DP_EXPLORER_HOME=str(home))
    log = open(home / "streamlit.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.port",
            str(port),
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
            *args,
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
        if proc.poll() is not None:
            break
    else:
        proc.kill()
        pytest.fail(f"streamlit did not become healthy; log: {(home / 'streamlit.log').read_text()[-2000:]}")
    if proc.poll() is not None:
        pytest.fail(f"streamlit exited: {(home / 'streamlit.log').read_text()[-2000:]}")
    yield url
    os.killpg(proc.pid, 15)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
    log.close()


@pytest.fixture(scope="session")
def browser():
    exe = chromium_path()
    if exe is None:
        if os.environ.get("DP_EXPLORER_REQUIRE_BROWSER"):
            pytest.fail("no Chromium found at /usr/bin/chromium but DP_EXPLORER_REQUIRE_BROWSER is set")
        pytest.skip("no Chromium installed (apt-get install chromium); real-browser tests need it")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_FLAGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    ctx.close()


def wait_for_app(pg, timeout: int = 180_000) -> None:
    """Wait until Streamlit has finished a script run and drawn it: the app is connected and its script state
    is "notRunning" (the frontend's own flag, which Streamlit's e2e tests wait on too).

    The old check ("no Running in the status widget") also passed before the first run had even started
    (state "initial": a fresh tab's skeleton), so on a busy machine tests read widgets from the first paint
    (a number input's proto default before its session value) or waited on text from a run that had not
    begun. A click that reruns sets "rerunRequested" at once, so calling this right after a click waits for
    that run too.
    """
    pg.wait_for_selector(
        '[data-testid="stApp"][data-test-connection-state="CONNECTED"][data-test-script-state="notRunning"]',
        state="attached",
        timeout=timeout,
    )
    pg.wait_for_selector('[data-testid="stMain"]', timeout=60_000)
    pg.wait_for_timeout(500)  # React commits the last deltas of the run


def screenshot(pg, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    pg.screenshot(path=str(path), full_page=True)
    return path


# A chart's box (pages/ui/common.chart): its title and its plot; find a chart by its title's words with
# ``page.locator(CHART_BOX).filter(has_text=...)``.
CHART_BOX = '[class*="st-key-chartbox-"]'

# A chart's title: the page draws it above the chart, in the chart's box (pages/ui/common.chart); the HTML
# report's charts still carry Plotly's own (.gtitle).
CHART_TITLE_FN = r"""const chartTitle = (plot) => (((plot.closest('[class*="st-key-chartbox-"]') || plot)
    .querySelector('.dpx-chart-head') || plot.querySelector('.gtitle') || {}).textContent || '').trim();"""


# Every text a chart draws (titles, axis titles, tick labels, legend entries, annotations, data labels):
# pairs whose boxes overlap by more than 2 px either way, and texts that stick out of the chart's own box
# (Plotly clips them: a title or axis title cut off mid-word).
_CHART_TEXT_JS = r"""() => {
  const out = [];
  CHART_TITLE_FN
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    const pr = plot.getBoundingClientRect();
    // a closed tab's or a closed expander's chart: not seen, and drawn at a stale width until it opens
    if (!pr.width || !plot.checkVisibility()) continue;
    const title = (chartTitle(plot) || '?').slice(0, 40);
    const boxes = [...plot.querySelectorAll('text')].filter(t => t.textContent.trim()
        && getComputedStyle(t).visibility !== 'hidden' && getComputedStyle(t).opacity !== '0')
      .map(t => [t.textContent.trim().slice(0, 30), t.getBoundingClientRect()])
      .filter(([, r]) => r.width > 0 && r.height > 0);
    for (let i = 0; i < boxes.length; i++) {
      const [a, ra] = boxes[i];
      if (ra.left < pr.left - 2 || ra.right > pr.right + 2) out.push([title, a, 'sticks out of its chart']);
      for (let j = i + 1; j < boxes.length; j++) {
        const [b, rb] = boxes[j];
        const w = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
        const h = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
        if (w > 2 && h > 2) out.push([title, a, b]);
      }
    }
  }
  return out; }""".replace("CHART_TITLE_FN", CHART_TITLE_FN)


def chart_text_faults(pg) -> list:
    """[chart title, text, other text | "sticks out of its chart"] for every chart drawn on the page."""
    return pg.evaluate(_CHART_TEXT_JS)


def chart_text_faults_at_both_sizes(pg) -> list:
    """:func:`chart_text_faults` at the page's own size, then at a phone's width (the charts redraw for it),
    with every expander in sight opened (they open in the browser alone; no rerun)."""
    closed = pg.locator(
        '[data-testid="stMain"] [data-testid="stExpander"] details:not([open]) > summary >> visible=true'
    )  # not those in a closed tab
    for _ in range(50):  # each click takes one off the list
        if not closed.count():
            break
        closed.first.click()
    pg.wait_for_timeout(800)
    faults = [("as opened", *f) for f in chart_text_faults(pg)]
    size = pg.viewport_size
    pg.set_viewport_size({"width": 390, "height": 844})
    try:
        pg.wait_for_timeout(1000)  # Streamlit relays the new width; Plotly redraws and re-runs its automargin
        settle_charts(pg)
        faults += [("390 px", *f) for f in chart_text_faults(pg)]
    finally:
        pg.set_viewport_size(size)
        settle_charts(pg)  # back at the page's own size: the charts redrawn before anyone measures them again
    return faults


_PLOT_BOXES_JS = r"""() => [...document.querySelectorAll('.js-plotly-plot')].map(p => {
  const r = p.getBoundingClientRect();
  const t = [...p.querySelectorAll('text')].map(x => Math.round(x.getBoundingClientRect().right)).join(',');
  return `${Math.round(r.width)}:${t}`; }).join('|')"""


def settle_charts(pg, timeout_ms: int = 15_000) -> None:
    """Wait until every chart on the page has stopped redrawing: its box and its texts' places the same over
    half a second (after a resize Streamlit relays the width, then Plotly redraws and re-runs its automargin; a
    check made mid-way sees tick labels at the old width's places)."""
    pg.wait_for_timeout(300)
    last, waited = pg.evaluate(_PLOT_BOXES_JS), 0
    while waited < timeout_ms:
        pg.wait_for_timeout(500)
        waited += 500
        now = pg.evaluate(_PLOT_BOXES_JS)
        if now == last:
            return
        last = now
