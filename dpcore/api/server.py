"""Serving the API: uvicorn on one address, with the limits the front door needs.

:func:`serve` runs until stopped. It binds 127.0.0.1 unless told otherwise: keys travel in the ``Authorization``
header, in clear text over plain HTTP, so a server others reach belongs behind TLS (a reverse proxy) — and then
every request comes from the proxy's address, so the per-address limit of failed sign-ins counts them together
(the per-key limit still holds).
"""

from __future__ import annotations

import sys

from .app import create_app

DEFAULT_PORT = 8502
LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: Connections served at once (more wait for a 503); seconds an idle keep-alive connection is kept.
MAX_CONNECTIONS = 64
KEEP_ALIVE_SECONDS = 5
#: The most a request line and its headers may hold (h11's incomplete-event limit).
MAX_HEADER_BYTES = 16 * 1024


def serve(host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> None:
    """Serve the API on ``host:port`` until interrupted (the home is ``$DP_EXPLORER_HOME``, as for the UI)."""
    import uvicorn  # the server, only when serving: the API's client and its tests never start one this way

    if host not in LOOPBACK:
        print(
            f"WARNING: serving the API on {host}:{port}: analysts' keys travel in clear text over plain HTTP; "
            "put it behind TLS (a reverse proxy) before anyone uses it over a network",
            file=sys.stderr,
        )
    uvicorn.run(
        create_app(),
        host=host,
        port=port,
        limit_concurrency=MAX_CONNECTIONS,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        proxy_headers=False,  # the client address is the socket's peer: a forged X-Forwarded-For cannot dodge limits
        server_header=False,
        log_level="info",
    )
