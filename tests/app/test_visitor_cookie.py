"""The visitor cookie middleware (pages/ui/visitor_cookie.py), as ASGI: a page load gives a new visitor a random
HttpOnly cookie, renews a returning one's, replaces a malformed one, marks it Secure over https, and leaves
Streamlit's own routes and the WebSocket alone."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

from dpcore.jobs import owners
from pages.ui import visitor_cookie as vc


def _answer(status=200, content_type=b"text/html; charset=utf-8"):
    async def app(scope, receive, send):
        headers = [(b"content-type", content_type)] if content_type else []
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"<html></html>"})

    return app


_inner = _answer()


def _run(coro) -> None:
    """``asyncio.run`` in a thread of its own: a real-browser test before this one in the same worker leaves
    Playwright's event loop running in the main thread, where ``asyncio.run`` refuses to start."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, coro).result()


def _request(path="/", cookie=None, scheme="http", base="", kind="http", app=None) -> list[str]:
    """The Set-Cookie headers the middleware adds to a response to ``path``."""
    sent = []
    headers = [(b"host", b"127.0.0.1")] + ([(b"cookie", cookie.encode())] if cookie else [])
    scope = {"type": kind, "path": path, "scheme": scheme, "headers": headers}

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request"}

    _run(vc.VisitorCookie(app or _inner, base_url=base)(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    return [v.decode() for k, v in start["headers"] if k == b"set-cookie"]


def _token(set_cookie: str) -> str:
    return set_cookie.split(";", 1)[0].split("=", 1)[1]


def test_a_new_visitor_gets_a_random_http_only_cookie():
    (first,) = _request("/")
    (second,) = _request("/training")
    assert first.startswith(f"{vc.COOKIE}=")
    assert "HttpOnly" in first and "SameSite=Lax" in first and "Path=/" in first
    assert f"Max-Age={vc.MAX_AGE_S}" in first and "Secure" not in first
    assert owners.is_visitor_token(_token(first)) and _token(first) != _token(second)


def test_a_returning_visitor_keeps_their_token_and_it_is_renewed():
    token = owners.new_visitor_token()
    (again,) = _request("/privacy_utility", cookie=f"_streamlit_xsrf=x; {vc.COOKIE}={token}; other=1")
    assert _token(again) == token and f"Max-Age={vc.MAX_AGE_S}" in again


def test_a_malformed_token_is_replaced_never_adopted():
    for bad in ("short", "a" * 42 + ";", "", "x" * 100):
        (got,) = _request("/", cookie=f"{vc.COOKIE}={bad}")
        assert _token(got) != bad and owners.is_visitor_token(_token(got))
    assert vc.token_from_header('bad"cookie; =;;') is None


def test_secure_over_https():
    (got,) = _request("/", scheme="https")
    assert got.endswith("; Secure")


def test_streamlit_routes_and_the_websocket_are_left_alone():
    for path in ("/_stcore/health", "/_stcore/host-config", "/static/js/main.js", "/media/x.png", "/component/c"):
        assert _request(path) == []
    sent = []

    async def app(scope, receive, send):
        sent.append(scope["type"])

    _run(vc.VisitorCookie(app)({"type": "websocket", "path": "/_stcore/stream", "headers": []}, None, None))
    assert sent == ["websocket"]


def test_under_a_base_url_path():
    assert len(_request("/dp", base="dp")) == 1 and len(_request("/dp/training", base="/dp/")) == 1
    assert _request("/dp/_stcore/health", base="dp") == [] and _request("/elsewhere", base="dp") == []


def test_only_the_apps_html_sets_it_not_a_404_probe_or_an_image():
    assert len(_request("/training", app=_answer(304, None))) == 1  # the browser's cached page, confirmed
    assert _request("/noise/_stcore/health", app=_answer(404, b"text/plain")) == []  # the frontend's probe
    assert _request("/favicon.png", app=_answer(200, b"image/png")) == []
    assert _request("/", app=_answer(302, None)) == []
