"""`python -m dpcore api [--host 127.0.0.1] [--port 8502]`: serve the analysts' HTTP API (the operator's command).

It reads the home (``$DP_EXPLORER_HOME``) as the UI does; analysts reach it with ``python -m dpcore remote`` or
:class:`dpcore.api.client.Client`, never with the home. ``make run`` starts it beside the Streamlit UI.
"""

from __future__ import annotations

from .. import limits
from ..api import server
from ..errors import DPError


def register(sub) -> None:
    p = sub.add_parser("api", help="serve the analysts' HTTP API (the front door), on 127.0.0.1 by default")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", default=str(server.DEFAULT_PORT), help=f"port (default {server.DEFAULT_PORT})")
    p.set_defaults(func=run)


def run(args) -> None:
    host = (args.host or "").strip()
    if not host or len(host) > 255 or any(c.isspace() or not c.isprintable() for c in host):
        raise DPError("--host needs an address to bind, e.g. 127.0.0.1 (this machine only)")
    server.serve(host, limits.check_int_range(args.port, 1, 65_535, "--port", "e.g. 8502"))
