"""The stakeholder demo: built-in synthetic data that anyone may query without signing in.

Each synthetic population — the app's generator at one size and seed — is registered by the app itself (its
content is fixed by code) with the documented cap of built-in data (:data:`dpcore.limits.BUILTIN_EPSILON_CAP`,
δ 1/(10·n), at most :data:`dpcore.limits.BUILTIN_MAX_QUERY_EPSILON` per query) and one shared quota for everyone
who has not signed in, the ``visitors`` quota (:data:`dpcore.limits.VISITORS_EPSILON_QUOTA` of the cap's ε, all of
its δ). Another
size or seed is another synthetic population with its own cap: nobody real is in any of them, so that is no way
around a real dataset's cap.
"""

from __future__ import annotations

import re
import sqlite3
import time
from typing import Any

from .. import limits
from ..data import datasets
from ..errors import DPError
from ..queries import fingerprint
from . import amounts, registry, store
from .identities import VISITORS

_NAME = re.compile(r"\s*synthetic medical \(n=([\d,]+), seed=(\d+)\)\s*", re.I)


def builtin_name(n: int, seed: int) -> str:
    return f"synthetic medical (n={int(n):,}, seed={int(seed)})"


def resolve(dataset: str, *, path: store.LedgerPath = None) -> dict[str, Any]:
    """A registered dataset by name or fingerprint; a built-in synthetic population's name (``synthetic medical
    (n=1,000, seed=0)``) registers that population on first use."""
    found = registry.info(dataset, path=path) if isinstance(dataset, str) and dataset.strip() else None
    if found is not None:
        return found
    m = _NAME.fullmatch(dataset) if isinstance(dataset, str) else None
    if m is None:
        raise registry.unavailable(dataset)
    return open_builtin(int(m.group(1).replace(",", "")), int(m.group(2)), path=path)


def _quota(n: int) -> tuple[int, int]:
    return (amounts.total_micro(limits.VISITORS_EPSILON_QUOTA, name="visitors' quota"), amounts.default_delta_atto(n))


def open_builtin(
    n: int, seed: int, identity: dict[str, Any] | None = None, *, path: store.LedgerPath = None
) -> dict[str, Any]:
    """The built-in synthetic population (n rows, seed) as a registered dataset with its cap and the visitors'
    quota, registered on first use (idempotent; no write once it exists). ``identity``: its
    :func:`~dpcore.queries.fingerprint.dataset_identity` when the caller has it already."""
    n = limits.check_int_range(n, limits.QUERY_CONSOLE_MIN_ROWS, limits.QUERY_CONSOLE_MAX_ROWS, "rows")
    seed = limits.check_int_range(seed, 0, limits.QUERY_CONSOLE_SEED_MAX, "seed")
    ident = registry.check_identity(identity or fingerprint.dataset_identity(datasets.medical(n, seed)))
    ident["sketch"] = {}  # nobody real is in it: no near-duplicate check compares with it (and each size and seed a
    # visitor opens adds a row: it stays small)
    fp = ident["fingerprint"]
    with store.reading(path) as conn:
        ready = (
            conn is not None
            and conn.execute(
                "SELECT 1 FROM datasets d JOIN quotas q ON q.dataset = d.fingerprint AND q.analyst = ? "
                "WHERE d.fingerprint = ?",
                (VISITORS, fp),
            ).fetchone()
            is not None
        )
    if not ready:
        with store.immediate(path, unharmed="nothing was registered") as conn:
            if registry.find(conn, fp) is None:
                name = builtin_name(n, seed)
                if registry.find(conn, name) is not None:
                    raise DPError(f"a different dataset is already registered as {name!r}")
                registry.insert(
                    conn,
                    name,
                    ident,
                    builtin=True,
                    source={"kind": "medical", "n": n, "seed": seed},
                    cap_micro=amounts.total_micro(limits.BUILTIN_EPSILON_CAP, name="cap"),
                    cap_delta_atto=amounts.default_delta_atto(n),
                    max_query_micro=amounts.total_micro(limits.BUILTIN_MAX_QUERY_EPSILON, name="cap"),
                    note="built-in synthetic data (made by the app from its size and seed): the "
                    "documented cap of built-in data",
                    actor=None,
                )
            ensure_quota(conn, fp, n)
    return registry.require(None, fp) if (found := registry.info(fp, path=path)) is None else found


def ensure_quota(conn: sqlite3.Connection, fingerprint: str, n: int) -> None:
    """Inside a transaction: the visitors' shared quota on a built-in dataset (created once)."""
    if conn.execute("SELECT 1 FROM quotas WHERE analyst = ? AND dataset = ?", (VISITORS, fingerprint)).fetchone():
        return
    conn.execute(
        "INSERT OR IGNORE INTO analysts (name, display, kind, created) VALUES (?, 'visitors', 'visitors', ?)",
        (VISITORS, time.time()),
    )
    eps, dl = _quota(n)
    conn.execute(
        "INSERT INTO quotas (analyst, dataset, total_micro, delta_total_atto, created) VALUES (?,?,?,?,?)",
        (VISITORS, fingerprint, eps, dl, time.time()),
    )
    registry.event(
        conn,
        "grant",
        dataset=fingerprint,
        analyst=VISITORS,
        note=f"the visitors' shared quota: ε = {amounts.from_micro(eps):g}, δ = {dl / amounts.ATTO:.2g}, "
        "for everyone who has not signed in",
    )
