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


class SlowStreamlit(FakeStreamlit):
    """Answers only once ``release`` is set: the first request's file is still being read."""

    def __init__(self, release):
        super().__init__()
        self.release = release

    async def __call__(self, scope, receive, send):
        await self.release.wait()
        await super().__call__(scope, receive, send)  # counts the call


def _together(app, n, release_after):
    """``n`` GETs of one asset at once in one event loop; ``release`` set after ``release_after`` s."""
    import asyncio

    async def main():
        release = asyncio.Event()
        app.app.release = release
        out = [[] for _ in range(n)]

        async def one(i):
            async def send(message):
                out[i].append(message)

            async def receive():
                return {"type": "http.request"}

            scope = {"type": "http", "method": "GET", "path": "/static/js/a.js", "headers": []}
            await app(scope, receive, send)

        tasks = [asyncio.create_task(one(i)) for i in range(n)]
        await asyncio.sleep(release_after)
        release.set()
        await asyncio.gather(*tasks)
        return [b"".join(m.get("body", b"") for m in o if m["type"] == "http.response.body") for o in out]

    bodies = []
    _run(_collect(main, bodies))
    return bodies[0]


async def _collect(main, into):
    into.append(await main())


def test_browsers_asking_at_once_share_the_first_answer():
    """A fresh server's twenty visitors ask for the same files at the same moment: Streamlit answers once."""
    inner = SlowStreamlit(None)
    app = StaticAssetCache(inner)
    assert _together(app, 6, release_after=0.1) == [b"console.log(1)"] * 6
    assert inner.calls == ["/static/js/a.js"]  # one read of the file for six browsers


def test_a_slow_first_answer_holds_the_others_back_no_longer_than_the_wait(monkeypatch):
    monkeypatch.setattr(static_cache, "COALESCE_WAIT_S", 0.05)
    inner = SlowStreamlit(None)
    app = StaticAssetCache(inner)
    assert _together(app, 4, release_after=0.3) == [b"console.log(1)"] * 4
    assert inner.calls == ["/static/js/a.js"] * 4  # each waited 0.05 s, then asked Streamlit itself
