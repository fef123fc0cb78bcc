"""The visitor cookie: the identity a browser keeps, so a reload or a second tab finds its runs again.

Streamlit's ``st.context.cookies`` only reads cookies; setting one needs the server. ``app.py`` therefore serves
the app as a Streamlit ``st.App`` with :class:`VisitorCookie`, a plain ASGI middleware on Streamlit's own
Starlette server (no endpoint, no JavaScript): every page load (the HTML that starts the app, 200 or 304, not
Streamlit's ``/_stcore/``, ``/static/``, ``/media/`` or ``/component/`` routes, a 404 or an image) answers with

    Set-Cookie: dp_explorer_visitor=<token>; HttpOnly; SameSite=Lax; Path=/; Max-Age=30 days [; Secure]

— the token the browser sent (its lifetime renewed) or, when it sent none or a malformed one, a new one from
:func:`dpcore.jobs.owners.new_visitor_token` (256 bits from ``secrets``). The browser sends it with the
WebSocket that carries the session, so the script reads it (:func:`token`) on the very first run. ``HttpOnly``:
the page's JavaScript cannot read it; ``SameSite=Lax``: sent when a link from another site opens the app (Strict
would not send it and the page load would replace the visitor), not with other sites' embedded requests;
``Secure`` whenever the request came over https (uvicorn's TLS, or a proxy on this machine saying so).

The job store never sees the token, only :func:`dpcore.jobs.owners.visitor_owner` of it (a one-way hash).
This module imports nothing of Streamlit: it runs in the server, around every request.
"""

from __future__ import annotations

from http.cookies import SimpleCookie
from typing import Any

from dpcore.jobs import owners

#: The cookie's name (Streamlit's own cookies start with ``_streamlit``).
COOKIE = "dp_explorer_visitor"
#: How long a browser keeps the visitor after its last page load (renewed on every load).
MAX_AGE_S = 30 * 24 * 3600
#: Streamlit's own routes (under ``server.baseUrlPath``): they never set the cookie.
_STREAMLIT_ROUTES = ("_stcore", "static", "media", "component")


def token_from_header(cookie_header: str | None) -> str | None:
    """The visitor token in a ``Cookie:`` header, or None when there is none or it is malformed."""
    if not cookie_header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(cookie_header)
    except Exception:  # a malformed Cookie header from a client: no visitor in it
        return None
    morsel = jar.get(COOKIE)
    value = morsel.value if morsel is not None else None
    return value if owners.is_visitor_token(value) else None


def set_cookie_header(token: str, *, secure: bool) -> str:
    """The ``Set-Cookie`` value that gives (or renews) the visitor ``token``."""
    if not owners.is_visitor_token(token):
        raise ValueError("not a visitor token")
    return f"{COOKIE}={token}; HttpOnly; SameSite=Lax; Path=/; Max-Age={MAX_AGE_S}" + ("; Secure" if secure else "")


def _is_page(path: str, base: str) -> bool:
    base = "/" + base.strip("/") if base.strip("/") else ""
    if base and not (path == base or path.startswith(base + "/")):
        return False
    first = path[len(base) :].lstrip("/").split("/", 1)[0]
    return first not in _STREAMLIT_ROUTES


def _is_page_response(message: dict) -> bool:
    """The app's HTML (or the browser's cached copy of it confirmed): not a 404 probe, an image or a redirect."""
    status = message.get("status")
    if status == 304:
        return True
    types = [v for k, v in message.get("headers") or () if k.lower() == b"content-type"]
    return status == 200 and any(t.startswith(b"text/html") for t in types)


class VisitorCookie:
    """ASGI middleware: a page load's response gives or renews the visitor cookie (see the module docstring).

    ``base_url``: Streamlit's ``server.baseUrlPath`` (read by ``app.py``)."""

    def __init__(self, app: Any, base_url: str = "") -> None:
        self.app = app
        self.base_url = base_url or ""

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or not _is_page(scope.get("path") or "/", self.base_url):
            await self.app(scope, receive, send)
            return
        header = b"; ".join(v for k, v in scope.get("headers") or () if k == b"cookie")
        token = token_from_header(header.decode("latin-1")) or owners.new_visitor_token()
        value = set_cookie_header(token, secure=scope.get("scheme") == "https").encode("latin-1")

        async def send_with_cookie(message: dict) -> None:
            if message.get("type") == "http.response.start" and _is_page_response(message):
                message = {**message, "headers": [*(message.get("headers") or []), (b"set-cookie", value)]}
            await send(message)

        await self.app(scope, receive, send_with_cookie)
