"""The analyst's client of the front door: for a notebook (:class:`Client`) and for ``python -m dpcore remote``.

It never reads the home — only the server's URL, the analyst's name and key (from ``$DP_EXPLORER_ANALYST_KEY``
unless given) — and uses the standard library alone::

    from dpcore.api.client import Client
    c = Client("http://127.0.0.1:8502", analyst="ann")            # key from $DP_EXPLORER_ANALYST_KEY
    c.datasets()
    c.query("clinic", "count", epsilon=0.5, condition="diagnosis=flu")
    c.statement("clinic")                                          # signed: verify it anywhere

The key goes in the ``Authorization`` header, never in a URL. Over plain HTTP it travels in clear text, so the
client sends it only to a loopback address, or over HTTPS (``insecure=True`` overrides, for a network you trust).
A refusal is a :class:`RemoteError` with the server's one message (exit code 3 when the budget would be exceeded).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from ..errors import DPError

KEY_ENV = "DP_EXPLORER_ANALYST_KEY"
URL_ENV = "DP_EXPLORER_API_URL"
ANALYST_HEADER = "X-DP-Analyst"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
#: The most of a server's answer the client reads (a statement of a long history is the largest).
MAX_RESPONSE_BYTES = 50_000_000

Json = dict[str, Any]


class RemoteError(DPError):
    """The server refused (``status``, ``code`` and its message) or could not be reached (``status`` 0)."""

    def __init__(self, message: str, status: int = 0, code: str = "") -> None:
        super().__init__(message)
        self.status, self.code = status, code
        self.exit_code = 3 if code == "budget_exceeded" else 2


def check_url(url: str, *, insecure: bool = False) -> str:
    """``url`` without a trailing slash, or a DPError: an http(s) URL with no user, password, query or fragment
    (nothing that could carry a key), sent over plain HTTP only to a loopback address unless ``insecure``."""
    if not isinstance(url, str) or not url.strip():
        raise DPError(f"--url is empty; give the API's address, e.g. http://127.0.0.1:8502 (or set ${URL_ENV})")
    u = urllib.parse.urlsplit(url.strip())
    if u.scheme not in ("http", "https") or not u.hostname:
        raise DPError(f"--url must be an http:// or https:// address such as http://127.0.0.1:8502, got {url[:80]!r}")
    if u.username or u.password or u.query or u.fragment:
        raise DPError("--url must hold no user, password, query or fragment: the key goes in a header, never a URL")
    if u.scheme == "http" and u.hostname not in LOOPBACK and not insecure:
        raise DPError(
            f"--url {u.hostname} is not this machine and not https: the key would travel in clear text. Use the "
            "server's https:// address (or --insecure on a network you trust)"
        )
    return url.strip().rstrip("/")


class Client:
    """The API for one analyst: ``url`` (e.g. ``http://127.0.0.1:8502``), ``analyst`` (the name the data owner
    registered) and ``key`` (default: ``$DP_EXPLORER_ANALYST_KEY``)."""

    def __init__(
        self,
        url: str | None = None,
        analyst: str | None = None,
        key: str | None = None,
        *,
        timeout: float = 120.0,
        insecure: bool = False,
    ) -> None:
        self.url = check_url(url if url is not None else os.environ.get(URL_ENV, ""), insecure=insecure)
        self.analyst = analyst
        self._key = key if key is not None else os.environ.get(KEY_ENV, "")
        self.timeout = timeout

    def __repr__(self) -> str:  # never the key
        return f"Client({self.url!r}, analyst={self.analyst!r})"

    # --- what an analyst does -------------------------------------------------------------------------------

    def public_key(self) -> Json:
        """The server's statement-signing public key (PEM) and its fingerprint (no key needed)."""
        return self._object("GET", "/public-key", auth=False)

    def me(self) -> Json:
        return self._object("GET", "/v1/me")

    def datasets(self) -> list[Json]:
        """The datasets this analyst may query."""
        out = self._call("GET", "/v1/datasets")
        if not isinstance(out, list):
            raise RemoteError(f"the server at {self.url} answered with a JSON {type(out).__name__}, not a list")
        return out

    def status(self, dataset: str) -> Json:
        """This analyst's quota on ``dataset`` and the dataset's cap: spent and left."""
        return self._object("GET", "/v1/status", {"dataset": dataset})

    def history(self, dataset: str, latest: int | None = None) -> Json:
        """This analyst's history on ``dataset`` with each released answer."""
        params: dict[str, Any] = {"dataset": dataset}
        if latest is not None:
            params["latest"] = latest
        return self._object("GET", "/v1/history", params)

    def statement(self, dataset: str) -> Json:
        """The signed statement of what ``dataset`` released as a whole, with this analyst's share."""
        return self._object("GET", "/v1/statement", {"dataset": dataset})

    def query(
        self,
        dataset: str,
        kind: str,
        epsilon: float,
        *,
        condition: str | None = None,
        column: str | None = None,
        bounds: str | None = None,
        where: list[str] | tuple[str, ...] = (),
        mechanism: str = "laplace",
        delta: float | None = None,
        bins: int = 10,
        categories: str | None = None,
    ) -> Json:
        """Ask one question (``kind``: count, sum, mean or histogram), charged to the dataset's cap and this
        analyst's quota; the same question again returns the stored answer, free."""
        body: Json = {"dataset": dataset, "kind": kind, "epsilon": epsilon, "where": list(where)}
        body.update(mechanism=mechanism, bins=bins)
        for k, v in (
            ("condition", condition),
            ("column", column),
            ("bounds", bounds),
            ("delta", delta),
            ("categories", categories),
        ):
            if v is not None:
                body[k] = v
        return self._object("POST", "/v1/query", body=body)

    def count(self, dataset: str, condition: str, epsilon: float, **kw: Any) -> Json:
        return self.query(dataset, "count", epsilon, condition=condition, **kw)

    def sum(self, dataset: str, column: str, bounds: str, epsilon: float, **kw: Any) -> Json:
        return self.query(dataset, "sum", epsilon, column=column, bounds=bounds, **kw)

    def mean(self, dataset: str, column: str, bounds: str, epsilon: float, **kw: Any) -> Json:
        return self.query(dataset, "mean", epsilon, column=column, bounds=bounds, **kw)

    def histogram(self, dataset: str, column: str, epsilon: float, **kw: Any) -> Json:
        return self.query(dataset, "histogram", epsilon, column=column, **kw)

    # --- the wire ---------------------------------------------------------------------------------------------

    def _object(self, *args: Any, **kw: Any) -> Json:
        out = self._call(*args, **kw)
        if not isinstance(out, dict):
            raise RemoteError(f"the server at {self.url} answered with a JSON {type(out).__name__}, not an object")
        return out

    def _headers(self, auth: bool) -> dict[str, str]:
        h = {"Accept": "application/json", "User-Agent": "dp-explorer-client"}
        if auth:
            if not (self.analyst or "").strip():
                raise DPError("--analyst is empty; give the analyst name the data owner registered you under")
            if not self._key.strip():
                raise DPError(
                    f"no analyst key: set {KEY_ENV} to the key the data owner gave you (never on the command line, "
                    "where other users could see it)"
                )
            h["Authorization"] = f"Bearer {self._key.strip()}"
            h[ANALYST_HEADER] = urllib.parse.quote(str(self.analyst), safe="")
        return h

    def _call(
        self,
        method: str,
        path: str,
        params: dict[str, Any] | None = None,
        *,
        body: Json | None = None,
        auth: bool = True,
    ) -> Any:
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = self._headers(auth)
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 (the scheme is checked)
                raw = resp.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise _refusal(exc) from None
        except (urllib.error.URLError, OSError) as exc:
            why = getattr(exc, "reason", exc)
            raise RemoteError(f"could not reach the API at {self.url}: {str(why)[:200]}; is it running?") from None
        if len(raw) > MAX_RESPONSE_BYTES:
            raise RemoteError(f"the server's answer is larger than {MAX_RESPONSE_BYTES:,} bytes")
        try:
            return json.loads(raw)
        except ValueError:
            raise RemoteError(f"the server at {self.url} did not answer with JSON (is it DP Explorer's API?)") from None


def _refusal(exc: urllib.error.HTTPError) -> RemoteError:
    try:
        body = json.loads(exc.read(100_000))
        message, code = str(body.get("error")), str(body.get("code", ""))
    except (ValueError, AttributeError, OSError):
        message, code = f"the server answered HTTP {exc.code} without a message", ""
    if exc.code == 429 and exc.headers.get("Retry-After"):
        message = message if "try again" in message else f"{message}; try again in {exc.headers['Retry-After']} s"
    return RemoteError(message, exc.code, code)
