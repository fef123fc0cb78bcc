"""The front door: an HTTP API through which analysts reach the data without touching the server's files.

Served by ``make run`` on 127.0.0.1 beside the Streamlit UI (``python -m dpcore api``; port in docs/api.md). Every
``/v1`` endpoint needs the analyst's key in ``Authorization: Bearer KEY`` and their name in ``X-DP-Analyst``
(percent-encoded UTF-8): the same name and key the data owner issued (``analyst add``), checked against the stored
hash. What an analyst does, through :mod:`dpcore.api.service`:

* ``GET /v1/datasets`` — the datasets they may query; ``GET /v1/status?dataset=NAME`` — their quota and the cap;
* ``POST /v1/query`` — ask one question: the same gate (cap and quota, one transaction, before any noise), the
  same exact samplers and the same free repeats as the query console;
* ``GET /v1/history?dataset=NAME`` — their history and released answers; ``GET /v1/statement?dataset=NAME`` —
  the signed statement of what the dataset released, with their share;
* ``GET /public-key`` (no key needed) — the statement-signing public key and its fingerprint; ``GET /health``.

Hardening: failed sign-ins are rate-limited per client address and per key id (:mod:`dpcore.api.ratelimit`),
before the key is hashed; a key is never taken from a URL (a query string holding one is refused, so that it is not
kept in logs); request bodies are at most :data:`MAX_BODY_BYTES`; every error is JSON with one message
(``{"error": …, "code": …}``), never a traceback, and a storage fault never shows a server path.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import urllib.parse
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__, limits, storage
from ..budgets import identities
from ..budgets.identities import Identity
from ..errors import DPError
from ..statements import keys
from ..storage.jsonio import dumps
from . import service
from .ratelimit import FailureLimiter

Json = dict[str, Any]
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

ANALYST_HEADER = "X-DP-Analyst"
MAX_BODY_BYTES = 64 * 1024
MAX_NAME_CHARS = 200
#: A query string with any of these, or with something shaped like a key, is refused: keys go in a header.
_KEYISH = re.compile(r"(^|[&;])(key|api_?key|token|access_?token|auth|authorization|password)=|dpx_", re.I)
log = logging.getLogger("dpcore.api")


class ApiError(Exception):
    """An error the API answers with: its status, a short code and one message."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers or {}


class DPJSONResponse(JSONResponse):
    """JSON as dpcore writes it everywhere (numpy values plain, non-finite numbers null)."""

    def render(self, content: Any) -> bytes:
        return dumps(content, indent=None).encode("utf-8")


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> DPJSONResponse:
    return DPJSONResponse({"error": message, "code": code}, status_code=status, headers=headers)


class Guard:
    """Pure ASGI middleware: refuses a request whose body is larger than ``max_bytes`` (by its Content-Length, or
    while it streams in) or whose URL looks like it carries a key — before the application sees it."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        query = urllib.parse.unquote(scope.get("query_string", b"").decode("latin-1"))
        if _KEYISH.search(query):
            await _error(
                400,
                "key_in_url",
                "a key never goes in a URL (servers and proxies log URLs); send it as Authorization: Bearer KEY, "
                "and treat this key as exposed: ask the data owner for a new one",
            )(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await self._too_large(scope, receive, send)
            return
        body, more = [], True
        size = 0
        while more:  # read the body here (bounded), then hand it on whole
            msg = await receive()
            if msg["type"] != "http.request":
                return  # the client went away
            size += len(msg.get("body", b""))
            if size > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
            body.append(msg.get("body", b""))
            more = bool(msg.get("more_body"))
        whole = b"".join(body)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": whole, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _error(
            413, "too_large", f"the request body is larger than {self.max_bytes:,} bytes; a question is far smaller"
        )(scope, receive, send)


class QueryRequest(BaseModel):
    """One question, as the query console asks it (the fields of ``python -m dpcore query``)."""

    model_config = ConfigDict(extra="forbid")

    dataset: str = Field(max_length=MAX_NAME_CHARS, description="a dataset's name (GET /v1/datasets)")
    kind: Literal["count", "sum", "mean", "histogram"]
    epsilon: float = Field(description="ε this answer spends, e.g. 0.1")
    condition: str | None = Field(None, max_length=1000, description="COUNT: COL=VALUE ('*': all rows)")
    column: str | None = Field(None, max_length=MAX_NAME_CHARS, description="SUM, MEAN, HISTOGRAM: the column")
    bounds: str | None = Field(None, max_length=200, description="public bounds LO:HI")
    where: list[Annotated[str, Field(max_length=1000)]] = Field(default_factory=list, max_length=20)
    mechanism: Literal["laplace", "gaussian"] = "laplace"
    delta: float | None = Field(None, description="δ of the Gaussian mechanism (below 1/n)")
    bins: int = Field(10, ge=1, le=limits.QUERY_MAX_BINS)
    categories: str | None = Field(None, max_length=10_000, description="public categories A,B,… of a histogram")


DatasetParam = Annotated[str, Query(max_length=MAX_NAME_CHARS, description="a dataset's name")]


def signed_in(request: Request) -> Identity:
    """The signed-in analyst, or a 401 (a wrong name and a wrong key are one message) / 429 (too many failures
    from this address or for this name: refused before the key is hashed)."""
    failures: FailureLimiter = request.app.state.limiter
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(
            401,
            "unauthorized",
            f"send your analyst key as 'Authorization: Bearer KEY' and your name in {ANALYST_HEADER} (the "
            f"client reads the key from {identities.ANALYST_KEY_ENV})",
            {"WWW-Authenticate": 'Bearer realm="dp-explorer"'},
        )
    name = urllib.parse.unquote(request.headers.get(ANALYST_HEADER, ""), errors="replace")
    if not name.strip():
        raise ApiError(
            401,
            "unauthorized",
            f"send your analyst name in the {ANALYST_HEADER} header (percent-encoded UTF-8)",
            {"WWW-Authenticate": 'Bearer realm="dp-explorer"'},
        )
    address = request.client.host if request.client else "unknown"
    key_id = " ".join(name.casefold().split())[:MAX_NAME_CHARS]
    wait = failures.retry_after(address, key_id)
    if wait:
        raise ApiError(
            429,
            "rate_limited",
            f"too many failed sign-ins from this address or for this analyst; try again in {wait} s",
            {"Retry-After": str(wait)},
        )
    try:
        return identities.sign_in(name, token.strip())
    except DPError as err:
        failures.failed(address, key_id)
        raise ApiError(401, "unauthorized", str(err), {"WWW-Authenticate": 'Bearer realm="dp-explorer"'}) from None


Analyst = Annotated[Identity, Depends(signed_in)]


def create_app(*, limiter: FailureLimiter | None = None) -> FastAPI:
    """The API application (``limiter``: the failed-sign-in limiter; a fresh one by default)."""
    app = FastAPI(
        title="DP Explorer API",
        version=__version__,
        description="Analysts reach registered data through this API, never through the server's files.",
        docs_url=None,  # Swagger UI loads its code from a CDN: nothing here reaches the internet
        redoc_url=None,
        default_response_class=DPJSONResponse,
    )
    app.state.limiter = limiter or FailureLimiter()

    @app.get("/health")
    def health() -> Json:
        return {"ok": True, "version": __version__}

    @app.get("/public-key")
    def public_key() -> Json:
        """The key every statement from this server is signed with: check one with ``python -m dpcore statement
        --verify FILE --public-key KEY.pem``."""
        pub = keys.published(create=True)
        assert pub is not None  # create=True makes the key pair or raises
        return {
            **pub,
            "note": "statements from this server are signed with this key; compare its fingerprint with the one "
            "the data owner publishes before trusting it",
        }

    @app.get("/v1/me")
    def me(who: Analyst) -> Json:
        return service.whoami(who)

    @app.get("/v1/datasets")
    def datasets(who: Analyst) -> list[Json]:
        return service.datasets(who)

    @app.get("/v1/status")
    def status(who: Analyst, dataset: DatasetParam) -> Json:
        return service.status(who, dataset)

    @app.get("/v1/history")
    def history(
        who: Analyst, dataset: DatasetParam, latest: Annotated[int | None, Query(ge=1, le=100_000)] = None
    ) -> Json:
        return service.history(who, dataset, latest=latest)

    @app.get("/v1/statement")
    def statement(who: Analyst, dataset: DatasetParam) -> Json:
        return service.statement(who, dataset)

    @app.post("/v1/query")
    def query(who: Analyst, req: QueryRequest) -> Json:
        return service.ask(who, req.model_dump())

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> DPJSONResponse:
        return _error(exc.status, exc.code, exc.message, exc.headers)

    @app.exception_handler(DPError)
    async def dp_error(request: Request, exc: DPError) -> DPJSONResponse:
        if isinstance(exc, storage.StorageError):  # its message names server paths: logged, not sent
            log.error("storage fault: %s", exc)
            return _error(
                503, "storage", "the server could not read or write its store; try again later, or tell the data owner"
            )
        if exc.exit_code == 3:
            return _error(409, "budget_exceeded", str(exc))
        return _error(400, "refused", str(exc))

    async def store_fault(request: Request, exc: Exception) -> DPJSONResponse:
        log.error("storage fault on %s %s: %s", request.method, request.url.path, storage.fault_message(exc))
        return _error(
            503, "storage", "the server could not read or write its store; try again later, or tell the data owner"
        )

    app.add_exception_handler(sqlite3.Error, store_fault)
    app.add_exception_handler(OSError, store_fault)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> DPJSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "query"))
        text = str(first.get("msg", "invalid request"))[:200]
        more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        return _error(422, "invalid", f"{where or 'request'}: {text}{more}; see docs/api.md")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> DPJSONResponse:
        if exc.status_code == 404:
            return _error(
                404, "not_found", f"no such endpoint: {request.method} {request.url.path[:100]}; see docs/api.md"
            )
        if exc.status_code == 405:
            return _error(405, "method", f"{request.method} is not allowed on {request.url.path[:100]}")
        return _error(exc.status_code, "http", str(exc.detail)[:200])

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> DPJSONResponse:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return _error(
            500,
            "internal",
            "the server failed to answer (an internal error, logged on the server); "
            "if a question was charged, it shows in your history",
        )

    app.add_middleware(Guard, max_bytes=MAX_BODY_BYTES)
    return app
