"""Quotas inside a dataset's cap, and what each identity may read of the ledger.

An analyst's **quota** on a dataset (granted by the admin: ``python -m dpcore analyst add NAME --dataset D
--epsilon E``) is their share; the dataset's cap bounds everyone's together, so quotas may add up to more than
the cap and the first to ask are served. A reset gives an analyst their quota back — never the dataset its cap:
what a dataset has released stays released. Reading: an analyst sees their own quota and history (and the
dataset's totals), a visitor the shared visitors' quota on built-in data, an admin everything. A name without a
key sees nothing of a registered dataset.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from .. import claims
from ..errors import DPError
from ..noise.charge import Neighbour
from . import amounts, registry, store
from .identities import VISITORS, Identity, canonical_analyst, display_name, ensure_analyst, require_admin

NEIGHBOUR = Neighbour.ADD_REMOVE.label  # the one relation of every charge


def quota_key(conn: sqlite3.Connection, who: Identity, dataset: dict[str, Any]) -> str | None:
    """The quota ``who`` asks from on ``dataset``: their own (open, their sign-in not revoked), else — on built-in
    data — the visitors' shared quota; None when they have none."""
    if not who.is_visitor:  # an admin signed in through the provider may hold a quota too (the token's "admin" never)
        kind = "oidc" if who.via == "oidc" else "key"
        row = conn.execute(
            "SELECT 1 FROM quotas q JOIN analysts a ON a.name = q.analyst WHERE q.analyst = ? AND q.dataset = ? AND "
            "q.closed IS NULL AND a.revoked IS NULL AND a.kind = ?",
            (who.name, dataset["fingerprint"], kind),
        ).fetchone()
        if row is not None:
            return who.name
    if dataset["builtin"]:
        return VISITORS
    return None


def no_quota(who: Identity, dataset: dict[str, Any], asked: object = None) -> DPError:
    """``who`` has no quota on ``dataset``: for anyone but the admin the one refusal of an unknown dataset too
    (:func:`dpcore.budgets.registry.unavailable`, naming the dataset as ``asked``), so that it tells nobody which
    datasets exist."""
    if who.is_admin:
        return DPError(
            f"as the admin you have no quota on {dataset['name']!r}: grant yourself one (signed in through "
            "the identity provider), or sign in as an analyst with a quota, to ask a question"
        )
    return registry.unavailable(dataset["name"] if asked is None else asked)


def _quota_row(conn: sqlite3.Connection, analyst: str, fp: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM quotas WHERE analyst = ? AND dataset = ?", (analyst, fp)
    ).fetchone()
    return row


def grant(
    who: Identity,
    name: str,
    dataset: object,
    *,
    epsilon: amounts.Amount,
    delta: amounts.Amount | None = None,
    oidc: bool = False,
    path: store.LedgerPath = None,
) -> dict[str, Any]:
    """Admin: a quota for analyst ``name`` on ``dataset`` (the analyst is created if new, and a key-holding analyst
    without a key gets one: returned once as ``key``). ``oidc``: the analyst signs in through the identity
    provider (``name`` is their verified e-mail or ``sub:<subject>``) and has no key."""
    require_admin(who)
    total = amounts.total_micro(epsilon, name="quota ε")
    with store.immediate(path, unharmed="nothing was granted") as conn:
        d = registry.require(conn, dataset, who)
        key, display, issued = ensure_analyst(conn, name, oidc=oidc, actor=who)
        dtotal = min(
            amounts.delta_total_atto(delta, d["n_rows"], name="quota δ", public_n=d["public_n"]),
            amounts.to_atto(d["delta_cap"] or 0, name="δ cap"),
        )
        old = _quota_row(conn, key, d["fingerprint"])
        if old is not None and old["closed"] is None:
            raise DPError(
                f"{display!r} already has a quota on {d['name']!r}; change it with `python -m dpcore budget "
                "reset --dataset D --analyst NAME --total E --confirm --reason TEXT`"
            )
        if old is not None:  # a closed quota opens again with the new totals; its history stays
            conn.execute(
                "UPDATE quotas SET total_micro = ?, delta_total_atto = ?, spent_micro = 0, delta_spent_atto = "
                "0, closed = NULL WHERE analyst = ? AND dataset = ?",
                (total, dtotal, key, d["fingerprint"]),
            )
        else:
            conn.execute(
                "INSERT INTO quotas (analyst, dataset, total_micro, delta_total_atto, created) VALUES (?,?,?,?,?)",
                (key, d["fingerprint"], total, dtotal, time.time()),
            )
        registry.event(
            conn,
            "grant",
            dataset=d["fingerprint"],
            analyst=key,
            actor=who.display,
            note=f"quota granted by {who.display}: ε = {amounts.from_micro(total):g}, δ = "
            f"{claims.delta(amounts.from_atto(dtotal), 3)} ({NEIGHBOUR})",
        )
        together = conn.execute(
            "SELECT COALESCE(SUM(total_micro), 0) FROM quotas WHERE dataset = ? AND closed IS NULL", (d["fingerprint"],)
        ).fetchone()[0]
    out = {
        "analyst": display,
        "dataset": d["name"],
        "epsilon": amounts.from_micro(total),
        "delta": amounts.from_atto(dtotal),
        "signs_in": "through the identity provider" if oidc else "with a key",
        "dataset_cap": d["cap"],
        "dataset_remaining": d["remaining"],
    }
    if issued is not None:
        out["key"] = issued
        out["key_note"] = (
            "shown once: give it to the analyst, who signs in with it (CLI: DP_EXPLORER_ANALYST_KEY); "
            "only its hash is stored"
        )
    elif not oidc:
        out["key_note"] = f"{display!r} already has a key; it is unchanged (`analyst key NAME` issues a new one)"
    if together > amounts.total_micro(d["cap"] or 0.000001, name="cap"):
        out["note"] = (
            f"the open quotas on {d['name']!r} add up to ε = {amounts.from_micro(together):g}, more than its "
            f"cap of ε = {d['cap']:g}: the cap bounds them together (first asked, first served)"
        )
    return out


def close(who: Identity, name: str, dataset: object, *, path: store.LedgerPath = None) -> dict[str, Any]:
    """Admin: close an analyst's quota on one dataset (no more answers; the history stays)."""
    require_admin(who)
    key = canonical_analyst(name)
    with store.immediate(path, unharmed="nothing was changed") as conn:
        d = registry.require(conn, dataset, who)
        row = _quota_row(conn, key, d["fingerprint"])
        if row is None or row["closed"] is not None:
            raise DPError(f"{display_name(name)!r} has no open quota on {d['name']!r}")
        conn.execute(
            "UPDATE quotas SET closed = ? WHERE analyst = ? AND dataset = ?", (time.time(), key, d["fingerprint"])
        )
        registry.event(
            conn,
            "close",
            dataset=d["fingerprint"],
            analyst=key,
            actor=who.display,
            note=f"quota closed by {who.display}; history kept",
        )
    return {"analyst": display_name(name), "dataset": d["name"], "closed": True}


def reset(
    who: Identity,
    name: str,
    dataset: object,
    *,
    reason: str = "",
    total: amounts.Amount | None = None,
    delta_total: amounts.Amount | None = None,
    confirm: bool = False,
    path: store.LedgerPath = None,
) -> dict[str, Any]:
    """Admin: give an analyst their quota back (spent ε and δ to 0), optionally with new totals; recorded, nothing
    deleted. The dataset's own total is unchanged: its cap still bounds what everyone together releases."""
    require_admin(who)
    if not confirm:
        raise DPError("a quota reset must be confirmed (tick the confirmation, or pass --confirm)")
    reason = reason.strip() if isinstance(reason, str) else ""
    if not reason:
        raise DPError("a quota reset needs a reason, for the record (--reason, or the reason box)")
    key = canonical_analyst(name)
    with store.immediate(path, unharmed="nothing was changed") as conn:
        d = registry.require(conn, dataset, who)
        row = _quota_row(conn, key, d["fingerprint"])
        if row is None:
            raise DPError(f"{display_name(name)!r} has no quota on {d['name']!r}; nothing to reset")
        new_total = row["total_micro"] if total is None else amounts.total_micro(total, name="new quota ε")
        old_dtotal = (
            row["delta_total_atto"]
            if row["delta_total_atto"] is not None
            else amounts.default_delta_atto(d["n_rows"], public_n=d["public_n"])
        )
        new_dtotal = (
            old_dtotal
            if delta_total is None
            else amounts.delta_total_atto(delta_total, d["n_rows"], name="new quota δ")
        )
        conn.execute(
            "UPDATE quotas SET spent_micro = 0, total_micro = ?, delta_spent_atto = 0, delta_total_atto = ? "
            "WHERE analyst = ? AND dataset = ?",
            (new_total, new_dtotal, key, d["fingerprint"]),
        )
        note = (
            f"quota reset by {who.display}: spent ε = {amounts.from_micro(row['spent_micro']):g} of "
            f"{amounts.from_micro(row['total_micro']):g} -> 0 of {amounts.from_micro(new_total):g}, δ total "
            f"{claims.delta(amounts.from_atto(new_dtotal), 3)}; the dataset's released total is unchanged; "
            f"reason: {reason}"
        )
        eid = registry.event(
            conn,
            "reset",
            dataset=d["fingerprint"],
            analyst=key,
            actor=who.display,
            cost_micro=-row["spent_micro"],
            note=note,
        )
    return {
        "analyst": display_name(name),
        "dataset": d["name"],
        "total": amounts.from_micro(new_total),
        "spent": 0.0,
        "remaining": amounts.from_micro(new_total),
        "delta_total": amounts.from_atto(new_dtotal),
        "previous_spent": amounts.from_micro(row["spent_micro"]),
        "event_id": eid,
        "note": note,
    }


# --- reading -------------------------------------------------------------------------------------------------


def _events(
    conn: sqlite3.Connection,
    fp: str,
    analyst: str | None,
    *,
    names: dict[str, Any],
    latest: int | None = None,
    spends_after: int | None = None,
) -> list[dict[str, Any]]:
    """Events of a quota (or, ``analyst`` None, of the whole dataset), oldest first: the ``latest`` ones only, or
    only the spends after event id ``spends_after``."""
    args: list[object]
    where, args = ("dataset = ?", [fp]) if analyst is None else ("analyst = ? AND dataset = ?", [analyst, fp])
    if spends_after is not None:
        where += " AND kind = 'spend' AND id > ?"
        args.append(spends_after)
    rows = conn.execute(
        f"SELECT * FROM (SELECT * FROM events WHERE {where} ORDER BY id DESC"
        + (" LIMIT ?" if latest is not None else "")
        + ") ORDER BY id",
        (*args, latest) if latest is not None else args,
    ).fetchall()
    return [
        {
            "id": r["id"],
            "time": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r["ts"])) + " UTC",
            "ts": r["ts"],
            "kind": r["kind"],
            "analyst": names.get(r["analyst"], r["analyst"]),
            "quota": r["analyst"],
            "actor": r["actor"],
            "query": r["description"] or r["query"],
            "canonical": r["query"],
            "epsilon": amounts.from_micro(r["eps_micro"]),
            "delta": amounts.from_atto(r["delta_atto"]),
            "cost": amounts.from_micro(r["cost_micro"]),
            "answer": None if r["answer"] is None else json.loads(r["answer"]),
            "note": r["note"],
            "release": r["release"],
            "job": r["job"],
        }
        for r in rows
    ]


def by_release(conn: sqlite3.Connection, fp: str, analyst: str | None = None) -> dict[str, dict[str, Any]]:
    """What each kind of release has spent on a dataset (or one quota), net of refunds, and what running jobs hold."""
    where, args = ("dataset = ?", [fp]) if analyst is None else ("dataset = ? AND analyst = ?", [fp, analyst])
    out: dict[str, dict[str, Any]] = {}
    for r in conn.execute(
        f"SELECT release, COUNT(CASE WHEN kind = 'spend' THEN 1 END) AS n, COALESCE(SUM(cost_micro), 0) AS eps, "
        f"COALESCE(SUM(CASE WHEN kind = 'spend' THEN delta_atto WHEN kind = 'refund' THEN -delta_atto END), 0) AS dl "
        f"FROM events WHERE {where} AND kind IN ('spend', 'refund') AND release IS NOT NULL GROUP BY release",
        args,
    ):
        out[r["release"]] = {
            "releases": r["n"],
            "epsilon": amounts.from_micro(max(r["eps"], 0)),
            "delta": amounts.from_atto(max(r["dl"], 0)),
        }
    for r in conn.execute(
        f"SELECT release, COALESCE(SUM(eps_micro), 0) AS eps FROM tickets WHERE {where} AND state = 'held' "
        "GROUP BY release",
        args,
    ):
        out.setdefault(r["release"], {"releases": 0, "epsilon": 0.0, "delta": 0.0})["held"] = amounts.from_micro(
            r["eps"]
        )
    return out


def _names(conn: sqlite3.Connection) -> dict[str, str]:
    return {r["name"]: r["display"] for r in conn.execute("SELECT name, display FROM analysts")}


def status(
    who: Identity,
    dataset: object,
    *,
    analyst: str | None = None,
    with_history: bool = True,
    latest: int | None = None,
    path: store.LedgerPath = None,
) -> dict[str, Any]:
    """What ``who`` may see on ``dataset`` (a name or fingerprint): the dataset's cap, what everyone together has
    spent and what is left; their quota (an admin: ``analyst``'s quota, or none with the dataset's whole
    history); the history (only its ``latest`` events when given: ``events`` says how many there are) and
    ``spends``, the answers that count now (the quota's since its last reset; the dataset's, all). Read-only. A
    visitor or an analyst without a quota on a registered dataset is refused: a name alone sees nothing."""
    with store.reading(path) as conn:
        d = registry.require(conn, dataset, who)
        assert conn is not None  # require refuses before a ledger exists
        names = _names(conn)
        if who.is_admin:
            key = canonical_analyst(analyst) if analyst else None
        else:
            if analyst is not None and canonical_analyst(analyst) != who.name:
                raise DPError("only an admin reads another analyst's quota; sign in as that analyst")
            key = quota_key(conn, who, d)
            if key is None:
                raise no_quota(who, d, dataset)
        row = None if key is None else _quota_row(conn, key, d["fingerprint"])
        if key is not None and row is None and who.is_admin:
            raise DPError(f"{display_name(analyst or key)!r} has no quota on {d['name']!r}")
        if with_history:
            fp = d["fingerprint"]
            hist = _events(conn, fp, key, names=names, latest=latest)
            scope = ("dataset = ?", (fp,)) if key is None else ("analyst = ? AND dataset = ?", (key, fp))
            count = conn.execute(f"SELECT count(*) FROM events WHERE {scope[0]}", scope[1]).fetchone()[0]
            last_reset = (
                0
                if key is None
                else conn.execute(
                    f"SELECT COALESCE(MAX(id), 0) FROM events WHERE kind = 'reset' AND {scope[0]}", scope[1]
                ).fetchone()[0]
            )
            spends = _events(conn, fp, key, names=names, spends_after=last_reset)
        kinds = by_release(conn, d["fingerprint"])
    seen = registry.shown(d, who)
    out = {
        "dataset": d["name"],
        "fingerprint": d["fingerprint"],
        **({"n_rows": d["n_rows"]} if "n_rows" in seen else {}),
        "number_of_rows": seen["number_of_rows"],
        "public_n": d["public_n"],
        "builtin": d["builtin"],
        "neighbour": NEIGHBOUR,
        "asked_as": who.describe(),
        "cap": {
            "epsilon": d["cap"],
            "spent": d["spent"],
            "remaining": d["remaining"],
            "delta": d["delta_cap"],
            "delta_spent": d["delta_spent"],
            "delta_remaining": d["delta_remaining"],
            "max_query_epsilon": d["max_query_epsilon"],
            "by_release": kinds,
        },
        "person_identifiers": d["person_identifiers"],
        "quota": None,
    }
    if row is not None:
        dtotal = (
            row["delta_total_atto"]
            if row["delta_total_atto"] is not None
            else amounts.default_delta_atto(d["n_rows"], public_n=d["public_n"])
        )
        out["quota"] = {
            "analyst": names.get(key, key) if key is not None else None,
            "visitors": key == VISITORS,
            "total": amounts.from_micro(row["total_micro"]),
            "spent": amounts.from_micro(row["spent_micro"]),
            "remaining": amounts.from_micro(max(row["total_micro"] - row["spent_micro"], 0)),
            "delta_total": amounts.from_atto(dtotal),
            "delta_spent": amounts.from_atto(row["delta_spent_atto"]),
            "delta_remaining": amounts.from_atto(max(dtotal - row["delta_spent_atto"], 0)),
            "closed": row["closed"] is not None,
        }
    if with_history:
        out.update(history=hist, events=count, spends=spends)
    return out


def released(who: Identity, dataset: object, *, path: store.LedgerPath = None) -> list[dict[str, Any]]:
    """Every release ever charged on ``dataset`` and not refunded, by anyone, of every kind (the patients' guarantee
    composes all of them): ε, δ, the kind and the stored charge of each. Query texts, answers and askers only of
    ``who``'s own quota (an admin: all). ``who`` must be able to read the dataset (:func:`status`)."""
    status(who, dataset, with_history=False, path=path)  # refuses who may not read it
    with store.reading(path) as conn:
        d = registry.require(conn, dataset, who)
        assert conn is not None  # require refuses before a ledger exists
        own = None if who.is_admin else quota_key(conn, who, d)
        refunded = {
            r["event"]: (r["eps"], r["dl"])
            for r in conn.execute(
                "SELECT event, SUM(eps_micro) AS eps, SUM(delta_atto) AS dl FROM tickets WHERE dataset = ? AND "
                "state = 'refunded' GROUP BY event",
                (d["fingerprint"],),
            )
        }
        raw = {
            r["id"]: (r["eps_micro"], r["delta_atto"])
            for r in conn.execute(
                "SELECT id, eps_micro, delta_atto FROM events WHERE dataset = ? AND kind = 'spend'", (d["fingerprint"],)
            )
        }
        events = []
        for e in _events(conn, d["fingerprint"], None, names=_names(conn)):
            if e["kind"] != "spend":
                continue
            if e["id"] in refunded:  # part or all of a job's charge came back: what stands is the rest
                eps = raw[e["id"]][0] - refunded[e["id"]][0]
                dl = raw[e["id"]][1] - refunded[e["id"]][1]
                if eps <= 0:
                    continue
                e["epsilon"] = e["cost"] = amounts.from_micro(eps)
                e["delta"] = amounts.from_atto(max(dl, 0))
            events.append(e)
    for e in events:
        if not who.is_admin and e["quota"] != own:
            a = e["answer"] if isinstance(e["answer"], dict) else {}
            e.update(
                query=None,
                canonical=None,
                analyst=None,
                quota=None,
                answer={k: a[k] for k in ("mechanism", "charge", "rho", "secure") if k in a},
            )
    return events


def ledgers(who: Identity, *, path: store.LedgerPath = None) -> list[dict[str, Any]]:
    """The histories ``who`` may put in a report, newest first: an admin every dataset with answers (as a whole) and
    every quota with answers; anyone else the quota they ask from on each dataset they may read (their own, or the
    visitors' on built-in data). Each {dataset (fingerprint), dataset_name, n_rows, spent, analyst (the quota to
    name in :func:`dpcore.statements.ledger.for_ledger`: None for the dataset as a whole or for one's own), shown (the
    quota's name as shown, or None)}. Read-only."""
    with store.reading(path) as conn:
        if conn is None:
            return []
        names = _names(conn)
        out = []
        for r in conn.execute("SELECT * FROM datasets ORDER BY created DESC").fetchall():
            d = registry.require(conn, r["fingerprint"], who)
            seen = registry.shown(d, who)
            base = {"dataset": d["fingerprint"], "dataset_name": d["name"], "n_rows": seen.get("n_rows")}
            if who.is_admin:
                if r["spent_micro"] > 0:
                    out.append({**base, "spent": d["spent"], "analyst": None, "shown": None})
                for q in conn.execute(
                    "SELECT analyst, spent_micro FROM quotas WHERE dataset = ? AND spent_micro > 0 "
                    "ORDER BY created DESC",
                    (d["fingerprint"],),
                ):
                    out.append(
                        {
                            **base,
                            "spent": amounts.from_micro(q["spent_micro"]),
                            "analyst": q["analyst"],
                            "shown": names.get(q["analyst"], q["analyst"]),
                        }
                    )
                continue
            key = quota_key(conn, who, d)
            q = None if key is None else _quota_row(conn, key, d["fingerprint"])
            if q is not None and q["spent_micro"] > 0:
                out.append(
                    {
                        **base,
                        "spent": amounts.from_micro(q["spent_micro"]),
                        "analyst": None,
                        "shown": names.get(key, key) if key is not None else None,
                    }
                )
    return out
