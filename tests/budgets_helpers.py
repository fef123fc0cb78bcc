"""Test helpers for budgets: an initialised admin, raw registered datasets and signed-in analysts."""

from __future__ import annotations

from dpcore.budgets import amounts, identities, quotas, registry, store

TOKEN = "test-admin-token-0123456789"


def admin(path=None) -> identities.Identity:
    """The admin identity (``admin init`` with :data:`TOKEN` on first use)."""
    if not identities.admin_initialised(path=path):
        identities.init_admin(TOKEN, path=path)
    return identities.check_admin_token(TOKEN, path=path)


def dataset(
    fp: str = "d" * 64,
    *,
    n: int = 1000,
    cap: float = 1.0,
    delta=None,
    per_query=None,
    name=None,
    builtin: bool = False,
    legacy_keys=(),
    public_n: bool = False,
    path=None,
) -> str:
    """A registered dataset of ``n`` rows standing for a table (no data file), with a cap (``public_n``: its owner
    declared the number of rows public). Returns its fingerprint."""
    ident = {"fingerprint": fp, "n_rows": n, "columns": ["a"], "sketch": {"": []}, "legacy_keys": list(legacy_keys)}
    with store.immediate(path) as conn:
        registry.insert(
            conn,
            name or f"data {fp[:6]}",
            ident,
            builtin=builtin,
            source={"kind": "none"},
            cap_micro=amounts.total_micro(cap, name="cap"),
            cap_delta_atto=amounts.delta_total_atto(delta, n),
            max_query_micro=None if per_query is None else amounts.total_micro(per_query, name="q"),
            note="test data",
            actor="test",
            public_n=public_n,
        )
    return fp


def analyst(name: str, fp: str, epsilon: float, *, delta=None, path=None) -> identities.Identity:
    """Grant ``name`` a quota on ``fp`` and sign them in with the key they were given."""
    r = quotas.grant(admin(path), name, fp, epsilon=epsilon, delta=delta, path=path)
    if "key" not in r:
        return identities.Identity("analyst", identities.canonical_analyst(name), r["analyst"], "key")
    return identities.sign_in(name, r["key"], path=path)


def grant_key(name: str, fp: str, epsilon: float, *, path=None) -> str:
    """Grant a quota and return the key (for a child process to sign in with)."""
    return quotas.grant(admin(path), name, fp, epsilon=epsilon, path=path)["key"]
