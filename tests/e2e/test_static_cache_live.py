"""The app's server answers Streamlit's hashed assets from memory (pages/ui/static_cache.py): on the real server a
script fetched twice is the same bytes under the same headers, and a ranged request still gets Streamlit's 206."""

import re
import urllib.request


def _get(url, headers=None):
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=30) as r:
        return r.status, {k.lower(): v for k, v in r.headers.items() if k.lower() != "date"}, r.read()


def test_an_asset_twice_is_the_same_answer_and_a_range_is_streamlits(app_server):
    html = _get(app_server)[2].decode()
    asset = re.search(r'(static/js/[^"]+\.js)', html).group(1)
    first, again = _get(f"{app_server}/{asset}"), _get(f"{app_server}/{asset}")
    assert first == again and first[0] == 200 and len(first[2]) > 1000
    assert "immutable" in first[1]["cache-control"] and first[1]["content-length"] == str(len(first[2]))
    status, headers, body = _get(f"{app_server}/{asset}", {"Range": "bytes=0-9"})
    assert status == 206 and body == first[2][:10] and headers["content-range"].startswith("bytes 0-9/")
    # the page's HTML is never kept: it still sets the visitor cookie on every load
    with urllib.request.urlopen(app_server, timeout=30) as r:
        assert "dp_explorer_visitor=" in (r.headers.get("set-cookie") or "")
