"""Issue 28: text a visitor chose never becomes a live link in the browser's DOM.

A link's value (``?home_eps=http://evil.example/phish``), quoted back in the "Ignoring the link's setting"
warning, became an ``<a href>`` on six of eight pages: Streamlit's markdown autolinks bare URLs, ``www.``
addresses and e-mail addresses even when ``:`` and ``/`` are backslash-escaped. The markdown source looked
safe; only the DOM tells.
"""

from urllib.parse import quote

import pytest

from .conftest import wait_for_app

pytestmark = pytest.mark.e2e

EVIL = ("http://evil.example/phish", "www.evil.example", "someone@evil.example")
# one link setting each page reads (pages/*.py from_url / share_in_url)
PAGES = {
    "": "home_eps",
    "noise": "noise_eps",
    "advisor": "adv_t",
    "reidentification": "re_n",
    "differencing": "dif_n",
    "query_console": "qc_n",
    "training": "tr_pick",
    "privacy_utility": "pu_sweep",
}

LINKS_JS = """() => [...document.querySelectorAll('[data-testid=stMain] a[href]')]
    .map(a => a.getAttribute('href')).filter(h => /evil\\.example/i.test(h))"""


@pytest.mark.parametrize("value", EVIL)
def test_a_link_value_shown_back_is_never_a_live_link(app_server, page, value):
    found = {}
    for slug, key in PAGES.items():
        page.goto(f"{app_server}/{slug}?{key}={quote(value, safe='')}")
        wait_for_app(page)
        links = page.evaluate(LINKS_JS)
        if links:
            found[slug or "home"] = links
    assert not found, f"live links made from a link's value: {found}"
