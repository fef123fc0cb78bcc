"""Speed a person feels, measured in headless Chromium (Debian's /usr/bin/chromium via playwright).

1. Noise page: press ← / → on the ε slider; time from the key press to (a) the numbers and (b) every chart
   showing the new ε. The first pass visits ε values the server has not computed yet, the way back revisits
   them (cached). Measured twice: the page as it opens (one chart depends on ε) and with the "Why private"
   tab open (two). Printed: medians in ms.
2. Cold server: time from `streamlit run` to Home's first chart drawn in the browser, against `import torch`
   alone in a fresh interpreter, measured in the same run (interleaved). Printed: medians and their ratio.

Targets: slider → charts median ≤ 250 ms; Home's first chart ≤ 1.5 × `import torch`. For scale,
the cold start is also measured for an empty Streamlit app and for a one-chart one (what Streamlit itself
costs in the same harness: server start, its frontend bundle, and its Plotly bundle on the first chart).

    .venv/bin/python bench/browser.py [--moves 8] [--cold 3] [--root DIR] [--quick]

``--root`` points at another checkout of the app (e.g. an older commit exported with `git archive`) so
"before" and "after" can be measured the same way. Everything runs on 127.0.0.1 and stops by itself.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def server(root: Path, timeout: float = 120):
    """`streamlit run app.py` on a free loopback port with a throwaway DP_EXPLORER_HOME.

    Yields (url, t_start, pid)."""
    home = Path(tempfile.mkdtemp(prefix="dpx-bench-"))
    port = _free_port()
    env = dict(os.environ, DP_EXPLORER_HOME=str(home))
    log = open(home / "streamlit.log", "w")
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"streamlit did not start: {(home / 'streamlit.log').read_text()[-1500:]}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.05)
        yield url, t0, proc.pid
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
        log.close()
        shutil.rmtree(home, ignore_errors=True)


def wait_idle(pg) -> None:
    pg.wait_for_selector('[data-testid="stMain"]', timeout=120_000)
    pg.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " || !document.querySelector('[data-testid=\"stStatusWidget\"]').innerText.includes('Running')",
        timeout=120_000,
    )


# The numbers: the sentence "At ε = X ..." under the metrics. The charts: every chart drawn that depends on ε
# names the new ε once it is redrawn — the distribution's title (page text above its chart), and with the
# "Why private" tab open its verdict "... (ε = X) ...". (The default tab, several ε side by side, does not
# depend on ε; the other tabs run only when open.)
NUMBERS_JS = """(e) => {
  const main = document.querySelector('[data-testid="stMain"]');
  return main && main.innerText.includes('At ε = ' + e + ',') ? performance.now() : false; }"""
CHARTS_JS = """([e, why]) => {
  // a chart's title is page text above it (pages/ui/common.chart), its other texts are in Plotly's SVG
  const svgs = [...document.querySelectorAll('.dpx-chart-head, .js-plotly-plot .main-svg')]
    .map(s => s.textContent).join('\\n');
  return new RegExp('answers at ε = ' + e.replace('.', '\\.') + '(?![0-9.])').test(svgs)
    && (!why || svgs.includes('(ε = ' + e + ')')) ? performance.now() : false; }"""
TABS = {"default view": None, "'Why private' tab open": "Why private"}


def slider_moves(browser, url: str, moves: int, tab: str | None = None) -> dict[str, list[float]]:
    """Per move: wall ms from the key press to the numbers and to every chart showing the new ε."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = ctx.new_page()

    pg.goto(f"{url}/noise")
    wait_idle(pg)
    pg.wait_for_selector(".js-plotly-plot .main-svg")
    if tab:
        pg.get_by_role("tab", name=tab).click()
        pg.get_by_text("(ε = 1)").first.wait_for(timeout=60_000)
        wait_idle(pg)
    pg.wait_for_timeout(1000)
    slider = pg.get_by_role("slider").first
    out: dict[str, list[float]] = {
        "numbers, new ε": [],
        "charts, new ε": [],
        "numbers, seen ε": [],
        "charts, seen ε": [],
    }
    for key, kind in [("ArrowLeft", "new ε")] * moves + [("ArrowRight", "seen ε")] * moves:
        slider.focus()
        t0 = pg.evaluate("() => performance.now()")
        slider.press(key)
        eps = f"{float(slider.get_attribute('aria-valuetext')):g}"
        t_num = pg.wait_for_function(NUMBERS_JS, arg=eps, polling=20, timeout=60_000).json_value()
        t_chart = pg.wait_for_function(CHARTS_JS, arg=[eps, bool(tab)], polling=20, timeout=60_000).json_value()
        out[f"numbers, {kind}"].append(t_num - t0)
        out[f"charts, {kind}"].append(t_chart - t0)
        wait_idle(pg)
        pg.wait_for_timeout(300)  # a person looks before moving again
    ctx.close()
    return out


def cold_home(browser, root: Path, selector: str = ".js-plotly-plot .main-svg") -> float:
    """Seconds from `streamlit run` to ``selector`` drawn on the app's first page in a fresh browser context."""
    with server(root) as (url, t0, _):
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        pg = ctx.new_page()
        pg.goto(url)
        pg.wait_for_selector(selector, timeout=120_000)
        t = time.perf_counter() - t0
        ctx.close()
    return t


# What Streamlit itself costs in this harness: the same server start and fresh browser context, for an app
# whose page is one line of text, and for one whose page is one small Plotly chart (Streamlit loads its
# 4.7 MB Plotly bundle on the first chart). Written to a temporary folder with the project's config.
FLOOR_APPS = {
    "empty Streamlit app, first text": ('st.markdown("hello")', '[data-testid="stMarkdown"]'),
    "one-chart Streamlit app, the chart": (
        "import plotly.graph_objects as go\n"
        'st.plotly_chart(go.Figure(go.Scatter(x=[0, 1], y=[0, 1])), config={"displayModeBar": False})',
        ".js-plotly-plot .main-svg",
    ),
}


def floor_app(body: str) -> Path:
    d = Path(tempfile.mkdtemp(prefix="dpx-floor-"))
    (d / ".streamlit").mkdir()
    shutil.copy(ROOT / ".streamlit" / "config.toml", d / ".streamlit" / "config.toml")
    (d / "app.py").write_text(f"import streamlit as st\n{body}\n")
    return d


def import_torch() -> float:
    code = "import time; t = time.perf_counter(); import torch; print(time.perf_counter() - t)"
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--moves", type=int, default=8, help="slider presses each way (default 8)")
    ap.add_argument("--cold", type=int, default=3, help="cold starts of the server (default 3)")
    ap.add_argument("--root", type=Path, default=ROOT, help="app checkout to measure (default: this one)")
    ap.add_argument("--quick", action="store_true", help="one move on the default view, one cold start: a smoke test")
    args = ap.parse_args()
    tabs = dict(list(TABS.items())[:1]) if args.quick else TABS
    floor_apps = {} if args.quick else FLOOR_APPS
    if args.quick:
        args.moves, args.cold = 1, 1
    from playwright.sync_api import sync_playwright

    print(f"app: {args.root}   load average before: {load_average()}   cores: {os.cpu_count()}")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            if args.moves:
                for view, tab in tabs.items():
                    with server(args.root) as (url, _, _pid):
                        times = slider_moves(browser, url, args.moves, tab)
                    print(
                        f"noise page, {view}: ε slider key press → updated in the browser "
                        f"(median of {args.moves} each):"
                    )
                    for what, ts in times.items():
                        print(f"  {what:16s} {statistics.median(ts):7.0f} ms   (min {min(ts):.0f}, max {max(ts):.0f})")
                    allc = times["charts, new ε"] + times["charts, seen ε"]
                    print(f"  charts, all moves median {statistics.median(allc):.0f} ms   target ≤ 250 ms")
            if args.cold:
                floors = {name: floor_app(body) for name, (body, _) in floor_apps.items()}
                home, torch_t, floor_t = [], [], {name: [] for name in floor_apps}
                for _ in range(args.cold):  # interleaved, so a busy moment hits every measurement alike
                    home.append(cold_home(browser, args.root))
                    torch_t.append(import_torch())
                    for name, (_, selector) in floor_apps.items():
                        floor_t[name].append(cold_home(browser, floors[name], selector))
                for d in floors.values():
                    shutil.rmtree(d, ignore_errors=True)
                h, tt = statistics.median(home), statistics.median(torch_t)
                print(f"cold server → Home's first chart: {h:.2f} s (runs {', '.join(f'{x:.2f}' for x in home)})")
                print(f"import torch alone:               {tt:.2f} s (runs {', '.join(f'{x:.2f}' for x in torch_t)})")
                print(f"ratio: {h / tt:.2f}   target ≤ 1.5")
                for name, ts in floor_t.items():
                    print(
                        f"  same harness, {name}: {statistics.median(ts):.2f} s = {statistics.median(ts) / tt:.2f}"
                        f" × import torch"
                    )
        finally:
            browser.close()
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
