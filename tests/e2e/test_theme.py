"""The theme in a real browser (issue 34.5): the primary colour is the brand's teal, not Streamlit's red, in the
light and the dark theme, and the visitor's light or dark preference is still followed."""

import pytest

from .conftest import wait_for_app

pytestmark = pytest.mark.e2e

BRAND = "rgb(33, 127, 116)"  # #217f74 (.streamlit/config.toml)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_primary_buttons_are_the_brand_teal_and_the_scheme_is_followed(app_server, browser, scheme):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme=scheme)
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    try:
        pg.goto(f"{app_server}/differencing")
        wait_for_app(pg)
        button = pg.locator(".st-key-dif_next button")
        button.wait_for()
        colours = pg.evaluate(
            """(b) => ({
                button: getComputedStyle(b).backgroundColor,
                page: getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor,
            })""",
            button.element_handle(),
        )
        assert colours["button"] == BRAND, colours
        r, g, b = (int(v) for v in colours["page"].removeprefix("rgb(").rstrip(")").split(",")[:3])
        assert (r + g + b < 150) == (scheme == "dark"), colours  # the dark theme is dark, the light one light
    finally:
        ctx.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_privacy_zone_bands_take_the_themes_fills(app_server, browser, scheme):
    """Issue 34.5: the noise page's error chart shades the privacy zones; in the dark theme with the dark fills
    (dpcore.figures.style.DARK_ZONE_FILLS), in the light theme with the light ones."""
    from dpcore.figures import style

    want = list(style.DARK_ZONE_FILLS.values()) if scheme == "dark" else list(style.DARK_ZONE_FILLS)
    opacities = sorted({float(c.rsplit(",", 1)[1].rstrip(")")) for c in want})
    ctx = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme=scheme)
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    try:
        pg.goto(f"{app_server}/noise?noise_tab=Error%20vs%20%CE%B5")  # the tab with the zone-shaded chart
        wait_for_app(pg)
        pg.wait_for_selector(".js-plotly-plot .shapelayer path")
        got: list = []
        for _ in range(20):  # the theme is known after the first run: the chart is then drawn with its fills
            seen = pg.evaluate(
                """() => [...document.querySelectorAll('.js-plotly-plot .shapelayer path')]
                    .map(p => parseFloat(getComputedStyle(p).fillOpacity)).filter(o => o > 0 && o < 1)"""
            )
            got = sorted({round(o, 2) for o in seen})
            if set(opacities) <= set(got):
                break
            pg.wait_for_timeout(500)
        assert set(opacities) <= set(got), (scheme, got)
    finally:
        ctx.close()
