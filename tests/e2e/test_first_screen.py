"""The first screen a new visitor meets, in a real browser at 1280×800 and 390×844, light and dark: the page's headline
(:func:`pages.ui.first_screen.headline`) wholly inside the first viewport, its main chart's top inside it, at most
about 60 words of prose above the fold (what is measured: tests/e2e/first_screen.py), and no exception.

The server's home holds a stored shared sweep, for the pages whose chart needs one (saved without training)."""

from pathlib import Path

import pytest

from tests.app.pages import registered_pages

from .conftest import SHOTS, serve_app, wait_for_app
from .first_screen import FIRST_SCREEN_JS

pytestmark = pytest.mark.e2e

SIZES = {"desk": (1280, 800), "phone": (390, 844)}
SCHEMES = ("light", "dark")
VIEWS = [f"{size}-{scheme}" for size in SIZES for scheme in SCHEMES]
# The app follows the browser's scheme (Streamlit's "use system setting"): dark when its background is.
IS_DARK_JS = """() => { const el = document.querySelector('.stApp'); if (!el) return false;
  const m = getComputedStyle(el).backgroundColor.match(/\\d+/g);
  return !!m && (+m[0] + +m[1] + +m[2]) < 150; }"""
PAGES = tuple(Path(p).stem for p in registered_pages())  # every page in the sidebar, by its URL slug
# What stands for the main chart where a first visit has none: the training page before any run shows its form,
# and its first step, the Train button, is on the first screen.
FIRST_STEP = {"training": ".st-key-tr_train_dp button >> visible=true"}
MAX_WORDS = 60
CHART_SEEN = 120  # px of the main chart inside the first screen at least: its title and the top of its plot


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    home = tmp_path_factory.mktemp("first-screen-home")
    with pytest.MonkeyPatch.context() as mp:
        from .test_promise_chart import _stored_sweep

        _stored_sweep(home, mp)
    yield from serve_app(home)


def measure(browser, url: str, size: str, slug: str) -> dict:
    """The first screen at ``size``, light and then dark: one page load, the scheme switched in place as a
    visitor's system setting would (a load takes most of the time; the scheme changes only colours)."""
    w, h = SIZES[size]
    ctx = browser.new_context(viewport={"width": w, "height": h}, color_scheme="light", is_mobile=w < 600)
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        pg.goto(url)
        wait_for_app(pg)
        pg.wait_for_selector(".st-key-headline", timeout=180_000)
        step = FIRST_STEP.get(slug)
        try:
            pg.wait_for_selector(step or ".st-key-main_chart .js-plotly-plot .main-svg", timeout=180_000)
        except Exception:  # noqa: BLE001 — the screen as it was, for the failure's reader
            pg.screenshot(path=str(SHOTS / f"first_screen_{slug}_{size}_timeout.png"))
            raise
        got = {}
        for scheme in SCHEMES:
            view = f"{size}-{scheme}"
            if scheme == "dark":
                pg.emulate_media(color_scheme="dark")
                pg.wait_for_function(IS_DARK_JS, timeout=30_000)
            pg.wait_for_timeout(800)  # Plotly's automargin redraw
            got[view] = pg.evaluate(FIRST_SCREEN_JS)
            if step:  # the whole button on the first screen
                box = pg.locator(step).first.bounding_box()
                got[view]["chart_top"] = round(box["y"] + box["height"]) - CHART_SEEN
            # the first screen as measured (the viewport, not the whole page)
            pg.screenshot(path=str(SHOTS / f"first_screen_{slug}_{view}.png"))
        return got
    finally:
        ctx.close()


@pytest.mark.parametrize("slug", PAGES)
def test_headline_and_main_chart_are_on_the_first_screen(server, browser, slug):
    url = server if slug == "home" else f"{server}/{slug}"
    faults = {}
    seen = {view: got for size in SIZES for view, got in measure(browser, url, size, slug).items()}
    assert list(seen) == VIEWS
    for view, got in seen.items():
        fold = got["fold"]
        why = []
        if got["exceptions"]:
            why.append("an exception is shown")
        if got["headline_top"] is None or got["headline_top"] < 0 or got["headline_bottom"] > fold:
            why.append(f"headline at {got['headline_top']}–{got['headline_bottom']} px, fold {fold}")
        if got["chart_top"] is None or got["chart_top"] > fold - CHART_SEEN:
            why.append(f"main chart's top at {got['chart_top']} px, fold {fold}")
        if got["words"] > MAX_WORDS:
            why.append(f"{got['words']} words above the fold: {got['blocks']}")
        if why:
            faults[view] = why
    assert not faults, faults
