"""Presenter and phone layout in headless Chromium: no sideways scrolling at 390 px, no Deploy button."""

import pytest

from .conftest import chart_text_faults, wait_for_app
from .test_browser_pages import _titles

pytestmark = pytest.mark.e2e

OVERFLOW_JS = "() => [document.scrollingElement.scrollWidth, window.innerWidth]"


@pytest.fixture
def phone(browser):
    ctx = browser.new_context(
        viewport={"width": 390, "height": 844}, device_scale_factor=1, is_mobile=True, has_touch=True
    )
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    ctx.close()


def each_page(pg, app_server):
    """Open every page in turn (by its URL) and yield its title once the page has drawn."""
    for path, title in _titles():
        slug = path.replace("pages/", "").replace(".py", "")
        pg.goto(app_server if slug == "home" else f"{app_server}/{slug}")
        wait_for_app(pg)
        pg.wait_for_selector("h1")
        yield title


SURVEY_SIZES = {"page": (1280, 800), "phone": (390, 844)}


def _survey(app_server, browser, view: str) -> dict:
    """One pass over every page and each of its tabs at a size (a phone's 390 px, or 1280 px), measuring what
    the tests below judge: a page load costs seconds, a measurement milliseconds. The fixtures below keep it
    for the module, which runs whole on one worker (``--dist loadfile``), so each size is surveyed once."""
    w, h = SURVEY_SIZES[view]
    phone = w < 600
    ctx = browser.new_context(
        viewport={"width": w, "height": h}, device_scale_factor=1, is_mobile=phone, has_touch=phone
    )
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    got = {"view": view, "width": w, "pages": {}, "links": {}}
    try:
        for title in each_page(pg, app_server):
            page = got["pages"][title] = {
                "overflow": pg.evaluate(OVERFLOW_JS),
                "tabs": pg.evaluate(TABS_JS),
                "tabs_off": tabs_off_screen(pg),
                "h1": pg.evaluate(HEADING_LINES_JS, "[data-testid=stMain] h1"),
                "h4": pg.evaluate(HEADING_LINES_JS, "[data-testid=stMain] h4"),
                "headline_detail": pg.evaluate(HEADLINE_JS),
                "views": {},
            }
            tabs = pg.get_by_role("tab")
            for k in [None] + list(range(tabs.count())):
                if k is not None:
                    tabs.nth(k).click()
                    wait_for_app(pg)
                pg.wait_for_function(
                    "() => [...document.querySelectorAll('.js-plotly-plot')]"
                    ".every(p => !p.getBoundingClientRect().width || p.querySelector('.main-svg'))"
                )
                pg.wait_for_timeout(300)  # Plotly's automargin redraw
                where = title if k is None else f"{title} / {tabs.nth(k).inner_text().strip()}"
                page["views"][where] = {
                    "chart_faults": chart_text_faults(pg),
                    "h3": pg.evaluate(HEADING_LINES_JS, "[data-testid=stMain] h3"),
                }
        for link in LONGEST_TITLES:
            pg.goto(f"{app_server}/{link}")
            wait_for_app(pg)
            pg.wait_for_selector(".js-plotly-plot .main-svg")
            pg.wait_for_timeout(300)
            got["links"][link] = chart_text_faults(pg)
    finally:
        ctx.close()
    return got


@pytest.fixture(scope="module")
def phone_survey(app_server, browser):
    return _survey(app_server, browser, "phone")


@pytest.fixture(scope="module")
def page_survey(app_server, browser):
    return _survey(app_server, browser, "page")


def test_no_page_scrolls_sideways_on_a_phone(phone_survey):
    wide = {}
    for title, page in phone_survey["pages"].items():
        scroll, inner = page["overflow"]
        if scroll > inner + 1:
            wide[title] = (scroll, inner)
    assert len(phone_survey["pages"]) >= 10, list(phone_survey["pages"])  # every page measured
    assert not wide, f"pages wider than the 390 px screen (scrollWidth, innerWidth): {wide}"


def test_viewers_get_no_deploy_button_or_developer_menu(app_server, page):
    page.goto(app_server)
    wait_for_app(page)
    page.wait_for_selector("h1")
    assert page.get_by_role("button", name="Deploy").count() == 0
    assert page.get_by_text("Deploy", exact=True).count() == 0
    assert page.locator('[data-testid="stAppDeployButton"]').count() == 0
    # The main menu, if shown at all, offers no developer entries (Clear cache, Rerun are developer tools).
    menu = page.locator('[data-testid="stMainMenu"]')
    if menu.count():
        menu.first.click()
        assert page.get_by_text("Clear cache").count() == 0


# Every tab of every tab bar: its label, box, and whether its bar scrolls sideways (hiding tabs off to the side).
TABS_JS = """() => [...document.querySelectorAll('[data-testid=stMain] [role=tab]')].map(t => {
  const r = t.getBoundingClientRect(), bar = t.closest('[role=tablist]');
  return {label: t.innerText.trim(), left: Math.round(r.left), right: Math.round(r.right), top: Math.round(r.top),
          scrolls: bar.scrollWidth > bar.clientWidth + 1}; })"""


def tabs_off_screen(pg) -> list:
    """Tabs a reader cannot see without swiping the tab bar (or the page) sideways."""
    width = pg.viewport_size["width"]
    return [t for t in pg.evaluate(TABS_JS) if t["left"] < 0 or t["right"] > width or t["scrolls"]]


def test_every_tab_is_on_screen_on_a_phone(phone_survey):
    """At 390 px every tab of every page is on screen, in reading order: the re-identification page's seven
    steps scrolled sideways with the last three hidden (its bar now wraps onto a second row)."""
    hidden, seen = [], {}
    for title, page in phone_survey["pages"].items():
        hidden += [(title, t["label"]) for t in page["tabs_off"]]
        tabs = page["tabs"]
        seen[title] = len(tabs)
        order = [(t["top"], t["left"]) for t in tabs]
        assert order == sorted(order), f"{title}: tabs out of reading order {[t['label'] for t in tabs]}"
    assert seen["Re-identification"] == 7 and seen["Noise mechanisms"] == 4, seen
    assert not hidden, f"tabs off a 390 px screen (page, tab): {hidden}"


def test_noise_tabs_all_fit_a_phone_and_open_lazily(app_server, phone):
    """The noise page's four "Look closer" tabs are all on screen at 390 px in one row (a tab bar that scrolls
    hides the last one), and opening one draws its chart (the tabs run only when open)."""
    phone.goto(f"{app_server}/noise")
    wait_for_app(phone)
    phone.get_by_role("tab").first.wait_for()
    tabs = phone.evaluate(TABS_JS)
    assert len(tabs) == 4 and not tabs_off_screen(phone), tabs
    assert len({t["top"] for t in tabs}) == 1, f"the four tabs take two rows: {tabs}"
    phone.get_by_role("tab", name="Error vs ε").click()
    phone.get_by_text("your ε = 1:").first.wait_for(timeout=60_000)  # the error chart's legend, drawn on opening
    assert phone.locator('[data-testid="stException"]').count() == 0


# A dataframe is a canvas inside a scroller: one wider than its box hides columns a reader must swipe to find.
GRID_WIDTHS_JS = "g => { const s = g.querySelector('.dvn-scroller'); return [s.scrollWidth, s.clientWidth]; }"


@pytest.mark.parametrize(
    "link",
    [
        "noise?noise_tab=Error vs ε",  # a count; below, the widest numbers and the
        "noise?noise_query=sum&noise_mech=gaussian-classic&noise_eps=0.05"  # classic
        "&noise_tab=Error vs ε",
    ],
)  # Gaussian's rows that hold for ε < 1 only
def test_noise_error_table_shows_every_column_on_a_phone(app_server, phone, link):
    """The "error vs ε" table's columns are all on a 390 px screen: its key numbers (typical error, 95% range)
    sat off-screen to the right of the noise scale's column, to be found by swiping the table sideways."""
    phone.goto(f"{app_server}/{link}")
    wait_for_app(phone)
    grid = phone.get_by_test_id("stDataFrame").first
    grid.locator(".dvn-scroller").wait_for()
    scroll, box = grid.evaluate(GRID_WIDTHS_JS)
    assert scroll <= box + 1, f"the error table is {scroll} px wide in a {box} px box: columns hidden off-screen"


# Each visible heading matching a selector, with its words grouped by the line they are drawn on.
HEADING_LINES_JS = """(sel) => [...document.querySelectorAll(sel)].filter(h => h.getBoundingClientRect().width > 0)
  .map(h => { const lines = new Map();
    const walk = document.createTreeWalker(h.querySelector('[data-heading-text]') || h, NodeFilter.SHOW_TEXT);
    for (let n; (n = walk.nextNode());) for (const m of n.data.matchAll(/\\S+/g)) {
      const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
      const top = Math.round(r.getBoundingClientRect().top); lines.set(top, [...(lines.get(top) || []), m[0]]); }
    return [...lines.values()].map(ws => ws.join(' ')); })"""


def wraps_awkwardly(lines: list[str]) -> bool:
    """More than two lines, or a last word alone on its line."""
    return len(lines) > 2 or len(lines) > 1 and len(lines[-1].split()) == 1


@pytest.mark.parametrize("view", ["page", "phone"])
def test_page_titles_leave_no_word_alone_on_a_line(request, view):
    """No page title wraps to leave its last word alone, at 1280 px or on a phone (the re-identification
    title left "anonymisation" on a line of its own at 1280 px and took four lines on a phone; "Choose ε from /
    risk", "Private query / console" and "Privacy–utility / curve" on a phone)."""
    survey = request.getfixturevalue(f"{view}_survey")
    orphans = {}
    for title, page in survey["pages"].items():
        (lines,) = page["h1"]
        if wraps_awkwardly(lines):
            orphans[title] = lines
    assert not orphans, f"page titles wrapping awkwardly at {survey['width']} px (lines): {orphans}"


# Each guided-tour link on Home with the box of the step's line (the last text in the link's row).
TOUR_JS = """() => [...document.querySelectorAll('[data-testid=stMain] [data-testid=stPageLink-NavLink]')].map(a => {
  const range = document.createRange();  // the text's own box, without the paragraph's margins
  range.selectNodeContents([...a.closest('[data-testid=stHorizontalBlock]')
                            .querySelectorAll('[data-testid=stMarkdownContainer]')].pop());
  const text = range.getBoundingClientRect();
  const r = a.getBoundingClientRect();
  return {label: a.innerText.trim(), left: r.left, top: r.top, bottom: r.bottom, mid: (r.top + r.bottom) / 2,
          tLeft: text.left, tTop: text.top, tBottom: text.bottom}; })"""


@pytest.mark.parametrize("view", ["page", "phone"])
def test_home_tour_links_line_up_and_stack_in_order(app_server, request, view):
    """Home's "Start here" tour: one link per step. On a laptop the ten links stand in one column, each level
    with its step's line (two steps a row left 'Open …' links at three different heights and step 1 without
    one); on a phone each link sits right above its own line, steps in order."""
    pg = request.getfixturevalue(view)
    pg.goto(app_server)
    wait_for_app(pg)
    pg.get_by_text("Start here").click()  # the tour's expander, closed on the first screen
    # Wait for what is measured: all ten links drawn, each in its row (the heading can come first: a CI run
    # once measured 0 steps right after "Start here" appeared).
    pg.wait_for_function("""() => [...document.querySelectorAll('[data-testid=stMain] [data-testid=stPageLink-NavLink]')]
        .filter(a => a.closest('[data-testid=stHorizontalBlock]') && a.getBoundingClientRect().height > 0).length >= 10""")
    steps = pg.evaluate(TOUR_JS)
    assert len(steps) == 10, [s["label"] for s in steps]  # one per page (test_home_page checks which)
    if view == "page":
        lefts = {round(s["left"]) for s in steps}
        assert max(lefts) - min(lefts) <= 1, f"tour links not in one column: lefts {sorted(lefts)}"
        off = [s["label"] for s in steps if not s["tTop"] <= s["mid"] <= s["tBottom"]]
        assert not off, f"links not level with their step's line: {off}"
    else:
        for s, nxt in zip(steps, steps[1:] + [None]):
            assert s["bottom"] <= s["tTop"] + 1 and abs(s["left"] - s["tLeft"]) <= 16, s  # link over its line
            if nxt:  # ... closer to its own line than to the step before
                assert s["tBottom"] <= nxt["top"] and s["tTop"] - s["bottom"] < nxt["top"] - s["tBottom"], (s, nxt)


# Right edges of what a reader sees: KaTeX's drawn formula (its MathML twin is visually hidden) and chart titles.
RIGHT_EDGES_JS = """(sel) => [...document.querySelectorAll(sel)].filter(e => e.getBoundingClientRect().width > 0)
    .map(e => [e.textContent.slice(0, 40), Math.round(e.getBoundingClientRect().right)])"""


def test_formula_and_chart_titles_fit_a_phone(app_server, phone):
    phone.goto(app_server)
    wait_for_app(phone)
    phone.get_by_text("The formal definition").click()
    phone.wait_for_selector(".katex-display .katex-html")
    wide = [r for r in phone.evaluate(RIGHT_EDGES_JS, ".katex-display .katex-html") if r[1] > 390]
    # nor hidden in a box the reader has to scroll sideways (KaTeX's struts overhang by a pixel or two)
    wide += phone.evaluate(
        "() => [...document.querySelectorAll('.katex-display, .katex-display *')]"
        ".filter(e => !e.closest('.katex-mathml') && e.scrollWidth > e.clientWidth + 8)"
        ".map(e => ['scrolls', e.className, e.scrollWidth, e.clientWidth])"
    )
    for slug in ("noise", "advisor"):
        phone.goto(f"{app_server}/{slug}")
        wait_for_app(phone)
        phone.wait_for_selector(".dpx-chart-title")
        wide += [(slug, *r) for r in phone.evaluate(RIGHT_EDGES_JS, ".dpx-chart-title, .dpx-chart-note") if r[1] > 390]
    assert not wide, f"text past the right edge of a 390 px screen (text, right edge px): {wide}"


def test_html_report_fits_a_1280_window(browser, tmp_path):
    """The report opened in a 1280×800 window never scrolls sideways, even with a sweep, a query history and
    an analyst name with no spaces (it ran 300 px past the edge in the statement's heading)."""
    from dpcore.budgets import visitors
    from dpcore.data import datasets
    from dpcore.queries import answering, fingerprint, model
    from dpcore.report import document as report
    from tests.budgets_helpers import analyst
    from tests.dpcore.test_statement import _fake_sweep

    name = "analyst_" + "x" * 90
    df = datasets.medical(1500, 0)
    fp = visitors.open_builtin(1500, 0, fingerprint.dataset_identity(df))["fingerprint"]
    who = analyst(name, fp, 2.0)
    answering.ask(df, who, model.make_query("count", epsilon=0.5, condition="age>50"))
    path = tmp_path / "report.html"
    from dpcore.jobs.owners import SYSTEM

    path.write_text(
        report.build(1.0, n=1500, sweep_id=_fake_sweep(), ledgers=[(fp,)], caller=SYSTEM, viewer=who), encoding="utf-8"
    )
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = ctx.new_page()
    pg.goto(path.as_uri())
    pg.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 6", timeout=60_000)
    pg.wait_for_timeout(500)
    scroll, inner = pg.evaluate(OVERFLOW_JS)
    faults = chart_text_faults(pg)  # in the report's own template ("0%" and "0%" met at a chart's corner)
    ctx.close()
    assert scroll <= inner + 1, f"the report is {scroll} px wide in a {inner} px window"
    assert not faults, f"report charts with overlapping or clipped text: {faults}"


# Views beyond the defaults whose chart titles are longest: the classic Gaussian's name ("…, ε < 1 only") in
# every noise tab, and the advisor's other mechanisms, risks and utility targets.
LONGEST_TITLES = [
    f"noise?noise_mech=gaussian-classic&noise_eps=0.05&noise_delta=1e-06&noise_tab={t}"
    for t in ("Compare ε", "Why private", "Best attack", "Error vs ε")
] + [
    "advisor?adv_mech=laplace&adv_risk=posterior",
    "advisor?adv_mech=dpsgd",
    "advisor?adv_risk=advantage&adv_query=mean&adv_k=0.001",
]


@pytest.mark.parametrize("view", ["phone", "page"])
def test_chart_texts_never_overlap_or_get_cut_off(request, view):
    """Every page as it opens and with each of its tabs open, on a phone and a laptop: no chart text sits on
    another and none is clipped at the chart's edge. (Privacy-zone labels drawn inside the plot sat on each
    other and on a deployment's ε at 390 px; long titles ran 150 px out of the re-identification charts; the
    generalisation chart's tilted measure names ran into its legend; legends rose into axis titles.)"""
    survey = request.getfixturevalue(f"{view}_survey")
    bad = [
        (where, *r)
        for page in survey["pages"].values()
        for where, v in page["views"].items()
        for r in v["chart_faults"]
    ]
    bad += [(link, *r) for link, faults in survey["links"].items() for r in faults]
    assert len(survey["links"]) == len(LONGEST_TITLES)
    assert not bad, f"chart texts overlapping or cut off at {survey['width']} px (page, chart, text, other): {bad}"


def test_reidentification_headline_is_a_short_bold_claim_on_a_phone(app_server, phone):
    """At 390 px the page leads with a short bold claim (at most two lines) and the detail in plain weight:
    the whole sentence as one heading took six bold lines. The detail keeps every fact."""
    phone.goto(f"{app_server}/reidentification")
    wait_for_app(phone)
    phone.get_by_text("998 of the 1,000 patients").first.wait_for()
    heads = phone.evaluate(HEADING_LINES_JS, "[data-testid=stMain] h4")
    assert len(heads) == 1 and " ".join(heads[0]).startswith("99.8% of patients"), heads
    assert len(heads[0]) <= 2, f"the headline takes {len(heads[0])} bold lines at 390 px: {heads[0]}"
    detail = phone.get_by_text("998 of the 1,000 patients").first
    assert "age, sex, zip code and salary" in detail.inner_text()
    assert int(detail.evaluate("e => getComputedStyle(e).fontWeight")) <= 400


# Each page's bold headline (the "so what", an h4) with the weight of the paragraph right after it, if any.
HEADLINE_JS = """() => [...document.querySelectorAll('[data-testid=stMain] h4')]
  .filter(h => h.getBoundingClientRect().width > 0).map(h => { const next = h.nextElementSibling;
    return next ? [next.innerText, getComputedStyle(next).fontWeight] : null; })"""


def test_every_headline_is_a_short_bold_claim_on_a_phone(phone_survey):
    """Every page's bold headline takes at most two lines at 390 px and leaves no word alone on a line; the
    detail, if any, follows in plain weight. One-sentence headlines took four bold lines on the noise and
    differencing pages, the last word alone (six on re-identification)."""
    bad, seen = [], []
    for title, page in phone_survey["pages"].items():
        heads = page["h4"]
        seen += [title] * bool(heads)
        bad += [(title, lines) for lines in heads if wraps_awkwardly(lines)]
        bad += [(title, text, weight) for text, weight in filter(None, page["headline_detail"]) if int(weight) > 400]
    assert {"Noise mechanisms", "Differencing attack", "Re-identification"} <= set(seen), seen  # drawn, measured
    assert not bad, f"headlines wrapping awkwardly or details in bold at 390 px (page, lines): {bad}"


def test_section_headings_wrap_well_on_a_phone(phone_survey):
    """Every page's section headings (st.subheader), with each of its tabs open, take at most two lines at
    390 px and leave no word alone on a line ("1 · Choose a query and a / mechanism", "The attack, step by step
    (exact / answers)")."""
    bad = []
    for title, page in phone_survey["pages"].items():
        for v in page["views"].values():
            bad += [(title, lines) for lines in v["h3"] if wraps_awkwardly(lines) and (title, lines) not in bad]
    assert not bad, f"section headings wrapping awkwardly at 390 px (page, lines): {bad}"
