"""Streamlit's hashed assets answered from memory (pages/ui/static_cache.py, issue 32 §5): the first immutable 200
under /static/ is kept, headers and body as they were, and given again; nothing else is kept, and a ranged or
conditional request, a HEAD, a 404 fallback or the page's HTML always reach Streamlit."""

import pytest

from pages.ui import static_cache
from pages.ui.static_cache import StaticAssetCache

from .test_visitor_cookie import _run

IMMUTABLE = [(b"content-type", b"application/javascript"), (b"cache-control", b"public, immutable, max-age=9")]


class FakeStreamlit:
    """An ASGI app that answers every request with ``status``, ``headers`` and a body in two chunks."""

    def __init__(self, status=200, headers=IMMUTABLE, body=b"console.log(1)"):
        self.status, self.headers, self.body, self.calls = status, headers, body, []

    async def __call__(self, scope, receive, send):
        self.calls.append(scope["path"])
        await send({"type": "http.response.start", "status": self.status, "headers": list(self.headers)})
        half = len(self.body) // 2
        await send({"type": "http.response.body", "body": self.body[:half], "more_body": True})
        await send({"type": "http.response.body", "body": self.body[half:]})


def _get(app, path, method="GET", headers=()):
    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request"}

    scope = {"type": "http", "method": method, "path": path, "headers": list(headers)}
    _run(app(scope, receive, send))  # in a thread: Playwright's loop may hold this one
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], start["headers"], body


def test_an_immutable_asset_is_kept_and_given_again_as_it_was():
    inner = FakeStreamlit()
    app = StaticAssetCache(inner)
    first = _get(app, "/static/js/index.abc.js")
    again = _get(app, "/static/js/index.abc.js")
    assert first == again == (200, IMMUTABLE, b"console.log(1)")
    assert inner.calls == ["/static/js/index.abc.js"]  # the second answer came from memory
    _get(app, "/static/js/other.def.js")
    assert inner.calls[-1] == "/static/js/other.def.js"  # each path its own entry


def test_under_a_base_url_only_its_static_folder():
    inner = FakeStreamlit()
    app = StaticAssetCache(inner, base_url="/dp/")
    for _ in range(2):
        _get(app, "/dp/static/js/a.js")
        _get(app, "/static/js/a.js")  # outside the base: not Streamlit's assets here
    assert inner.calls == ["/dp/static/js/a.js", "/static/js/a.js", "/static/js/a.js"]


@pytest.mark.parametrize(
    ("status", "headers", "path"),
    [
        (200, [(b"cache-control", b"no-cache")], "/static/index.html"),  # the SPA fallback or the page's HTML
        (404, IMMUTABLE, "/static/js/missing.js"),
        (200, IMMUTABLE, "/"),  # the page, not the static folder
        (200, IMMUTABLE, "/_stcore/host-config"),
    ],
)
def test_what_is_not_an_immutable_asset_always_reaches_streamlit(status, headers, path):
    inner = FakeStreamlit(status, headers)
    app = StaticAssetCache(inner)
    for _ in range(3):
        assert _get(app, path)[0] == status
    assert len(inner.calls) == 3


@pytest.mark.parametrize(
    ("method", "headers"),
    [
        ("HEAD", ()),
        ("GET", [(b"range", b"bytes=0-3")]),
        ("GET", [(b"if-none-match", b'"x"')]),
        ("GET", [(b"if-modified-since", b"Fri, 04 Dec 2026 01:19:50 GMT")]),
    ],
)
def test_ranged_conditional_and_head_requests_reach_streamlit(method, headers):
    inner = FakeStreamlit()
    app = StaticAssetCache(inner)
    _get(app, "/static/js/a.js")  # kept
    for _ in range(2):
        _get(app, "/static/js/a.js", method, headers)
    assert len(inner.calls) == 3


def test_the_cache_never_holds_more_than_its_limit(monkeypatch):
    monkeypatch.setattr(static_cache, "MAX_BYTES", 25)
    inner = FakeStreamlit(body=b"x" * 10)
    app = StaticAssetCache(inner)
    for name in ("a", "b", "c", "a", "b", "c"):
        assert _get(app, f"/static/js/{name}.js")[2] == b"x" * 10
    assert inner.calls.count("/static/js/a.js") == 1 and inner.calls.count("/static/js/b.js") == 1
    assert inner.calls.count("/static/js/c.js") == 2  # 30 bytes would pass the limit: c is always served anew
    assert app._bytes == 20
