"""`python -m dpcore api [--host 127.0.0.1] [--port 8502]`: serve the analysts' HTTP API (the operator's command).

It reads the home (``$DP_EXPLORER_HOME``) as the UI does; analysts reach it with ``python -m dpcore remote`` or
:class:`dpcore.api.client.Client`, never with the home. ``make run`` starts it beside the Streamlit UI.
"""

from __future__ import annotations

from ..api import server


def register(sub) -> None:
    p = sub.add_parser("api", help="serve the analysts' HTTP API (the front door), on 127.0.0.1 by default")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", default=server.DEFAULT_PORT, help=f"port (default {server.DEFAULT_PORT})")
    p.set_defaults(func=run)


def run(args) -> None:
    server.serve(args.host, args.port)
