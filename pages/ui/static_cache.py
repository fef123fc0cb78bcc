"""Streamlit's own hashed assets (its JavaScript, styles and fonts under ``/static/``) answered from memory.

Twenty visitors joining at once fetch ~60 files each, and Streamlit's Starlette handler serves every one from disk
(``StaticFiles``: a thread-pool hop to stat the file, more to open and read it), about 1.2 ms of the server's one
event loop per request: most of what the twenty waited for before their first chart (issue 32 §5; bench/load.py
--join). :class:`StaticAssetCache` keeps the first answer Streamlit gives for each such file, headers and body as
they were, and gives it again to the next browser that asks; browsers asking for a file while its first answer is
on its way wait for it (at most :data:`COALESCE_WAIT_S`, then they ask Streamlit themselves).

What it keeps: a ``GET`` for a path under ``<base>/static/`` that Streamlit answered ``200`` with
``Cache-Control: … immutable`` (its content-hashed files, which never change while the server runs). Nothing
else: not the page's HTML or manifest (``no-cache``), not a 404 fallback, not a request with ``Range`` or a
conditional header (``If-None-Match``, ``If-Modified-Since``: Streamlit answers those itself), never more than
:data:`MAX_BYTES` in all. Bounded by the files Streamlit ships (~25 MB), whatever a visitor asks for.

This module imports nothing of Streamlit: it runs in the server, around every request.
"""

from __future__ import annotations

import asyncio
from typing import Any

#: The most the cache holds, in bytes of bodies (Streamlit's static folder holds ~25 MB).
MAX_BYTES = 64 * 1024 * 1024
#: How long a request for a file already being fetched waits for that answer before asking Streamlit itself (a
#: slow client on the first request holds nobody else back longer than this).
COALESCE_WAIT_S = 2.0
#: Request headers that ask for something other than the whole file as it is: passed to Streamlit.
_PASS_HEADERS = (b"range", b"if-none-match", b"if-modified-since", b"if-range")


class StaticAssetCache:
    """ASGI middleware (see the module docstring). ``base_url``: Streamlit's ``server.baseUrlPath``."""

    def __init__(self, app: Any, base_url: str = "") -> None:
        self.app = app
        base = (base_url or "").strip("/")
        self.prefix = ("/" + base if base else "") + "/static/"
        self._entries: dict[str, tuple[list, bytes]] = {}
        self._inflight: dict[str, asyncio.Event] = {}  # paths whose first answer is on its way
        self._bytes = 0  # one event loop reads and writes these: no lock

    def _cacheable(self, scope: dict) -> bool:
        return (
            scope.get("type") == "http"
            and scope.get("method") == "GET"
            and (scope.get("path") or "").startswith(self.prefix)
            and not any(k in _PASS_HEADERS for k, _ in scope.get("headers") or ())
        )

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if not self._cacheable(scope):
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        hit = self._entries.get(path)
        if hit is None and path in self._inflight:
            # the twenty visitors of a fresh server ask for the same files at once: one answer from Streamlit,
            # the others wait for it (bounded) instead of each reading the file again
            try:
                await asyncio.wait_for(self._inflight[path].wait(), COALESCE_WAIT_S)
            except TimeoutError:
                pass
            hit = self._entries.get(path)
        if hit is not None:
            headers, body = hit
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        start: dict = {}
        chunks: list[bytes] = []
        mine = path not in self._inflight
        if mine:
            self._inflight[path] = asyncio.Event()

        async def keep(message: dict) -> None:
            if message.get("type") == "http.response.start":
                start.update(message)
            elif message.get("type") == "http.response.body" and start:
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    self._keep(path, start, b"".join(chunks))
            await send(message)

        try:
            await self.app(scope, receive, keep)
        finally:
            if mine:
                self._inflight.pop(path).set()

    def _keep(self, path: str, start: dict, body: bytes) -> None:
        headers = list(start.get("headers") or ())
        control = b", ".join(v for k, v in headers if k.lower() == b"cache-control")
        if start.get("status") != 200 or b"immutable" not in control:
            return
        if path in self._entries or self._bytes + len(body) > MAX_BYTES:
            return
        self._entries[path] = (headers, body)
        self._bytes += len(body)
