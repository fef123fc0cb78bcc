"""The front door: analysts reach registered data through an HTTP API and its client, never the server's files.

* :mod:`~dpcore.api.app` — the FastAPI application: the analyst's key in ``Authorization: Bearer``, one JSON
  message per error, bounded requests; :mod:`~dpcore.api.ratelimit` — failed sign-ins per address and per key id.
* :mod:`~dpcore.api.service` — what an analyst does (datasets and quota, ask, history, statement), through the
  same functions as the query console.
* :mod:`~dpcore.api.server` — ``python -m dpcore api``: uvicorn on 127.0.0.1 (``make run`` starts it beside the UI).
* :mod:`~dpcore.api.client` — :class:`~dpcore.api.client.Client` for notebooks and ``python -m dpcore remote``:
  the standard library only, and it never reads the home.

The command line on the home (``python -m dpcore query``, ``budget``, ``statement --ledger``) reads the server's
files: it is the operator's. Documented in docs/api.md.
"""
