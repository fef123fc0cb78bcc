"""Registered datasets and their caps: what the data owner gives away, per dataset, to everyone together.

* Registering (an admin action) copies the data into ``$DP_EXPLORER_HOME/datasets/`` (mode 0600; the folder 0700)
  and sets the dataset's **cap**: a total ε and δ (δ below 1/n) that every answer on it, by anyone, is charged
  against, and an optional **per-query ε cap**. Analysts then choose the dataset by name and never need the file.
* A dataset is keyed by its content fingerprint (:func:`dpcore.queries.fingerprint.dataset_identity`): the same
  rows in another order or number format are the same dataset. Data that holds the same people as a registered
  dataset — a column renamed or rescaled, ID columns added, a quarter of the rows dropped
  (:func:`dpcore.queries.fingerprint.near_duplicate`) — is refused unless the admin confirms it is different data.
* Changing a cap is an admin action with a reason, recorded in the history; a cap never goes below what the
  dataset has released. What a dataset has released is never reset: it is the patients' guarantee.
* **n is not free**: a dataset's exact number of rows goes to the admin only, unless its owner declared it public
  (``public_n``, at registration or later with a reason; built-in synthetic data: public, its name says it).
  :func:`shown` is what anyone else reads of a dataset.
* **One refusal**: "no dataset of that name" and "a dataset you have no quota on" are one message
  (:func:`unavailable`), so that a refusal tells nobody which datasets exist.

Past 500 formatted lines, one idea: the registry table (register, look up, caps, migration of old ledgers).
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
import unicodedata
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import claims, limits
from ..errors import DPError
from . import amounts, store
from .identities import Identity, require_admin

if TYPE_CHECKING:  # pandas is loaded only when data is read
    import pandas as pd

DATA_DIR = "datasets"
#: Column names that say "this is a person" (one person may have several rows: ε protects each row).
_PERSON_ID = re.compile(
    r"(?i)^(?:.*[_\s-])?(?:patient|person|people|user|customer|client|member|subject|"
    r"participant|employee|student|citizen|individual|resident)(?:[_\s-]?(?:id|no|nr|number|"
    r"key|code|ref))?$|^(?:id|ssn|nhs[_\s-]?(?:number|no)|mrn|national[_\s-]?id|e-?mail|name|"
    r"full[_\s-]?name)$"
)


def person_identifiers(columns: Iterable[object]) -> list[str]:
    """Columns whose names say they identify a person (e.g. ``patient_id``, ``user``, ``email``, ``name``)."""
    return [str(c) for c in columns if _PERSON_ID.match(str(c).strip())]


class Unavailable(DPError):
    """A dataset the caller may not use: unknown, or no quota of theirs on it — one message for both."""


PUBLIC_N = "the number of rows is public"
HIDDEN_N = (
    "the number of rows is not released (its owner did not declare it public): ask a DP count, charged like any answer"
)


def _row(r: Any) -> dict[str, Any]:
    n = int(r["n_rows"])
    return {
        "name": r["name"],
        "fingerprint": r["fingerprint"],
        "n_rows": n,
        "public_n": bool(r["public_n"]),
        "builtin": bool(r["builtin"]),
        "columns": json.loads(r["columns"]),
        "source": json.loads(r["source"]),
        "cap": amounts.from_micro(r["cap_micro"]),
        "spent": amounts.from_micro(r["spent_micro"]),
        "remaining": amounts.from_micro(max(r["cap_micro"] - r["spent_micro"], 0)),
        "delta_cap": amounts.from_atto(r["cap_delta_atto"]),
        "delta_spent": amounts.from_atto(r["delta_spent_atto"]),
        "delta_remaining": amounts.from_atto(max(r["cap_delta_atto"] - r["delta_spent_atto"], 0)),
        "max_query_epsilon": amounts.from_micro(r["max_query_micro"]),
        "default_delta_total": amounts.default_delta_total(n),
        "person_identifiers": person_identifiers(json.loads(r["columns"])),
    }


def find(conn: sqlite3.Connection, dataset: object) -> dict[str, Any] | None:
    """The registered dataset with this fingerprint or name (inside a connection), or None."""
    if not isinstance(dataset, str) or not dataset.strip():
        raise DPError("dataset is empty; name a registered dataset (`python -m dpcore budget list` shows them)")
    r = conn.execute(
        "SELECT * FROM datasets WHERE fingerprint = ? OR name = ?", (dataset.strip(), _clean_name(dataset, check=False))
    ).fetchone()
    return None if r is None else _row(r)


def shown(d: dict[str, Any], who: Identity) -> dict[str, Any]:
    """A registered dataset as ``who`` may read it: the admin everything; anyone else no ``n_rows`` unless the owner
    declared the number of rows public, and ``number_of_rows`` in words either way."""
    out = dict(d)
    if not who.is_admin and not d["public_n"]:
        out.pop("n_rows", None)
        out.pop("default_delta_total", None)  # 1/(10·n): n again
    out["number_of_rows"] = PUBLIC_N if d["public_n"] else ("known to the admin only" if who.is_admin else HIDDEN_N)
    return out


def unavailable(dataset: object) -> Unavailable:
    """The one refusal for a dataset that does not exist and for one the caller has no quota on."""
    return Unavailable(
        f"{str(dataset)[:80]!r} is not a dataset you may use (no such dataset, or no quota of yours on it: one "
        "message for both); sign in with the name and key the data owner gave you (CLI: --analyst NAME with "
        "DP_EXPLORER_ANALYST_KEY) or ask them for a quota — `python -m dpcore budget list` shows the datasets you "
        "may use; visitors may use the built-in synthetic data"
    )


def not_registered(dataset: object) -> DPError:
    """For the admin, who sees every dataset: the name is not registered, and how to register data."""
    return DPError(
        f"{str(dataset)[:80]!r} is not a registered dataset, so it has no budget and cannot be queried; "
        "the data owner (admin) registers data once: `python -m dpcore budget register --data FILE "
        "--name NAME --epsilon E`, or 'Register a dataset' on the page"
    )


def require(conn: sqlite3.Connection | None, dataset: object, who: Identity | None = None) -> dict[str, Any]:
    """The registered dataset (by fingerprint or name); ``conn`` None (no ledger yet) or unknown: refused — with
    :func:`unavailable` unless ``who`` is the admin."""
    info = None if conn is None else find(conn, dataset)
    if info is None:
        raise not_registered(dataset) if who is not None and who.is_admin else unavailable(dataset)
    return info


def info(dataset: object, *, path: store.LedgerPath = None) -> dict[str, Any] | None:
    """The registered dataset with this fingerprint or name, or None (read-only)."""
    with store.reading(path) as conn:
        return None if conn is None else find(conn, dataset)


def _clean_name(name: object, *, check: bool = True) -> str:
    if not isinstance(name, str) or not name.strip():
        if check:
            raise DPError("dataset name is empty; give the registered dataset a name, e.g. 'clinic-2024'")
        return ""
    name = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", name)).strip()
    name = "".join(ch for ch in name if unicodedata.category(ch) not in ("Cc", "Cf", "Cs"))
    if check and len(name) > 100:
        raise DPError("dataset name is longer than 100 characters; use a shorter name")
    if check and re.fullmatch(r"[0-9a-f]{64}", name):
        raise DPError("a dataset name cannot look like a fingerprint (64 hex digits); choose a readable name")
    return name


def check_identity(identity: dict[str, Any]) -> dict[str, Any]:
    try:
        fp = str(identity["fingerprint"]).strip()
        n = int(identity["n_rows"])
        cols = [str(c) for c in identity["columns"]]
        sketch = {str(k): [int(h) for h in v] for k, v in identity["sketch"].items()}
    except (KeyError, TypeError, ValueError, AttributeError):
        raise DPError(
            "dataset identity is incomplete; compute it with dpcore.queries.fingerprint.dataset_identity"
        ) from None
    if not fp or n <= 0:
        raise DPError("a dataset needs at least one row")
    return {
        "fingerprint": fp,
        "n_rows": n,
        "columns": cols,
        "sketch": sketch,
        "legacy_keys": [str(k) for k in identity.get("legacy_keys", ())],
    }


def event(
    conn: sqlite3.Connection,
    kind: str,
    *,
    dataset: str | None = None,
    analyst: str | None = None,
    actor: str | None = None,
    query: str | None = None,
    description: str | None = None,
    eps_micro: int = 0,
    delta_atto: int = 0,
    cost_micro: int = 0,
    answer: Any = None,
    note: str | None = None,
    release: str | None = None,
    job: str | None = None,
) -> int:
    """Append one event to the history (every module writes its events through this). ``release``: the kind of
    release a spend, reuse, refusal or refund is about; ``job``: the background job that does it."""
    cur = conn.execute(
        "INSERT INTO events (analyst, dataset, actor, ts, kind, query, description, eps_micro, delta_atto, "
        "cost_micro, answer, note, release, job) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            analyst,
            dataset,
            actor,
            time.time(),
            kind,
            query,
            description,
            eps_micro,
            delta_atto,
            cost_micro,
            None if answer is None else json.dumps(answer),
            note,
            release,
            job,
        ),
    )
    return int(cur.lastrowid or 0)


def insert(
    conn: sqlite3.Connection,
    name: str,
    ident: dict[str, Any],
    *,
    builtin: bool,
    source: dict[str, Any],
    cap_micro: int,
    cap_delta_atto: int,
    max_query_micro: int | None,
    note: str,
    actor: str | None,
    profile: dict[str, Any] | None = None,
    public_n: bool = False,
) -> dict[str, Any]:
    """Inside a transaction: a new registered dataset with its cap. Schema-1 budgets kept under the table's CSV
    hash (``legacy_keys``) move to it as quotas; the cap then covers at least what they released."""
    n, fp = ident["n_rows"], ident["fingerprint"]
    conn.execute(
        "INSERT INTO datasets (fingerprint, name, n_rows, columns, sketch, profile, source, builtin, cap_micro,"
        " cap_delta_atto, max_query_micro, created, note, public_n) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            fp,
            name,
            n,
            json.dumps(ident["columns"]),
            json.dumps(ident["sketch"]),
            None if profile is None else json.dumps(profile),
            json.dumps(source),
            int(builtin),
            cap_micro,
            cap_delta_atto,
            max_query_micro,
            time.time(),
            note,
            int(bool(public_n or builtin)),
        ),
    )
    for legacy in ident["legacy_keys"]:
        for r in conn.execute("SELECT analyst FROM quotas WHERE dataset = ?", (legacy,)).fetchall():
            if conn.execute("SELECT 1 FROM quotas WHERE analyst = ? AND dataset = ?", (r["analyst"], fp)).fetchone():
                continue
            conn.execute("UPDATE quotas SET dataset = ? WHERE analyst = ? AND dataset = ?", (fp, r["analyst"], legacy))
            conn.execute("UPDATE events SET dataset = ? WHERE analyst = ? AND dataset = ?", (fp, r["analyst"], legacy))
    conn.execute(
        "UPDATE quotas SET delta_total_atto = ? WHERE dataset = ? AND delta_total_atto IS NULL",
        (amounts.default_delta_atto(n), fp),
    )
    released = conn.execute(
        "SELECT COALESCE(SUM(cost_micro), 0), COALESCE(SUM(delta_atto), 0) FROM events WHERE "
        "kind = 'spend' AND dataset = ?",
        (fp,),
    ).fetchone()
    if released[0] or released[1]:
        conn.execute(
            "UPDATE datasets SET spent_micro = ?, delta_spent_atto = ?, cap_micro = MAX(cap_micro, ?), "
            "cap_delta_atto = MAX(cap_delta_atto, ?) WHERE fingerprint = ?",
            (released[0], released[1], released[0], released[1], fp),
        )
        note += (
            f"; budgets kept before datasets were registered moved here as quotas: they had released ε = "
            f"{amounts.from_micro(released[0]):g}, which the cap covers"
        )
    event(conn, "register", dataset=fp, actor=actor, note=note)
    return _row(conn.execute("SELECT * FROM datasets WHERE fingerprint = ?", (fp,)).fetchone())


def _data_dir(path: store.LedgerPath = None) -> Path:
    d = store.resolve(path).parent / DATA_DIR
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise store.fault(exc, d, "nothing was registered") from None
    return d


def load(dataset: dict[str, Any], *, path: store.LedgerPath = None) -> pd.DataFrame:
    """The registered dataset's rows: the stored copy (checked against its fingerprint), or the built-in synthetic
    population generated again from its size and seed."""
    from ..data import datasets
    from ..queries import fingerprint

    src = dataset.get("source") or {}
    if src.get("kind") == "medical":
        return datasets.medical(int(src["n"]), int(src["seed"]))
    if src.get("kind") != "file":
        raise DPError(
            f"dataset {dataset['name']!r} was registered before data was kept on the server, so there is "
            "nothing to query yet; the admin registers the same file again once (`python -m dpcore budget "
            "register --data FILE --name NAME`) and it keeps its name, cap and history"
        )
    file = store.resolve(path).parent / src["file"]
    try:
        df = datasets.read_csv(file)
    except DPError as err:
        raise DPError(
            f"the stored copy of dataset {dataset['name']!r} could not be read ({err}); the admin registers "
            "the file again"
        ) from None
    if fingerprint.dataset_key(df) != dataset["fingerprint"]:
        raise DPError(
            f"the stored copy of dataset {dataset['name']!r} was changed on disk (its content no longer "
            "matches what was registered); nothing is answered from it — the admin restores it or "
            "registers the file again"
        )
    return df


def _similar_by_sketch(ident: dict[str, Any], r: sqlite3.Row) -> tuple[str, float] | None:
    """Schema 2's check, for datasets registered before their data was kept: columns equal up to one added or
    dropped, and most sampled row hashes shared."""
    cols, rcols, rsk = set(ident["columns"]), set(json.loads(r["columns"])), json.loads(r["sketch"])
    if len(cols ^ rcols) > 1 or (cols != rcols and len(cols) == len(rcols)):
        return None
    if cols == rcols:
        mine, theirs = ident["sketch"].get(""), rsk.get("")
    elif cols > rcols:
        mine, theirs = ident["sketch"].get(next(iter(cols - rcols))), rsk.get("")
    else:
        mine, theirs = ident["sketch"].get(""), rsk.get(next(iter(rcols - cols)))
    if not mine or not theirs:
        return None
    shared = sum((Counter(mine) & Counter(theirs)).values()) / min(len(mine), len(theirs))
    return (r["name"], shared) if shared >= 0.8 else None


def near_duplicates(
    df: pd.DataFrame, ident: dict[str, Any], profile: dict[str, Any], *, path: store.LedgerPath = None
) -> list[dict[str, Any]]:
    """Registered datasets (not the built-in synthetic ones: nobody real is in them) that hold the same people as
    ``df``. Read-only; loads only the stored copies whose columns share values with ``df``."""
    from ..queries import fingerprint

    with store.reading(path) as conn:
        rows = [] if conn is None else conn.execute("SELECT * FROM datasets WHERE builtin = 0").fetchall()
    found = []
    for r in rows:
        if r["fingerprint"] == ident["fingerprint"]:
            continue
        src = json.loads(r["source"])
        if src.get("kind") != "file" or r["profile"] is None:
            sim = _similar_by_sketch(ident, r)
            if sim is not None:
                found.append({"name": r["name"], "shared": sim[1], "columns": [], "left_out": []})
            continue
        theirs = json.loads(r["profile"])
        if fingerprint.shared_columns(profile, theirs) < min(2, len(profile["columns"])):
            continue
        try:
            other = load(_row(r), path=path)
        except DPError:
            continue  # a damaged copy: reported when it is queried
        hit = fingerprint.near_duplicate(df, other)
        if hit is not None:
            found.append({"name": r["name"], **hit})
    return found


def register(
    who: Identity,
    name: object,
    df: pd.DataFrame,
    *,
    data: bytes | None = None,
    epsilon: amounts.Amount,
    delta: amounts.Amount | None = None,
    max_query_epsilon: amounts.Amount | None = None,
    allow_similar: bool = False,
    public_n: bool = False,
    path: store.LedgerPath = None,
) -> dict[str, Any]:
    """Admin: register ``df`` under ``name`` with a cap of ``epsilon`` (and ``delta``, default 1/(10·n)) and an
    optional per-query ε cap; ``public_n``: the owner declares the number of rows public (analysts then read it,
    and DP training may run on the data; otherwise only the admin sees n). Its copy goes into the home: ``data`` (the uploaded file's bytes) or ``df`` written as
    CSV, checked to read back as the same dataset. The same content registered before the data was kept gets its
    copy (name, cap and history unchanged)."""
    from .. import storage
    from ..queries import fingerprint

    require_admin(who)
    name = _clean_name(name)
    ident = check_identity(fingerprint.dataset_identity(df))
    fp, n = ident["fingerprint"], ident["n_rows"]
    cap = amounts.total_micro(epsilon, name="the dataset's ε cap")
    dcap = amounts.delta_total_atto(delta, n, name="the dataset's δ cap", public_n=public_n)
    per_query = (
        None if max_query_epsilon is None else amounts.total_micro(max_query_epsilon, name="the per-query ε cap")
    )
    if per_query is not None and per_query > amounts.total_micro(limits.QUERY_EPSILON_MAX, name="limit"):
        raise DPError(f"the per-query ε cap must be at most {limits.QUERY_EPSILON_MAX:g} (no query may spend more)")
    prof = fingerprint.profile(df)
    existing = info(fp, path=path)
    if existing is not None and existing["source"].get("kind") in ("file", "medical"):
        raise DPError(
            f"this data is already registered as {existing['name']!r} (same rows and columns, whatever "
            "their order or number format); its cap and quotas are kept there"
        )
    if existing is None:
        if info(name, path=path) is not None:
            raise DPError(f"the name {name!r} is taken by another registered dataset; choose another name")
        sims = near_duplicates(df, ident, prof, path=path)
        if sims and not allow_similar:
            s = sims[0]
            how = (
                f" (columns paired by their values: {', '.join(s['columns'][:6])}"
                + (f"; left out: {', '.join(s['left_out'][:6])}" if s["left_out"] else "")
                + ")"
                if s["columns"]
                else ""
            )
            raise DPError(
                f"this data holds the same people as the registered dataset {s['name']!r}: "
                f"{s['shared']:.0%} of the smaller table's rows are in the other{how}. Registering it "
                "would give them a fresh budget; query that dataset instead, or confirm that it is "
                "different data (--allow-similar, or the confirmation box on the page)"
            )
    rel = f"{DATA_DIR}/{fp}.csv"
    target = _data_dir(path) / f"{fp}.csv"
    storage.atomic_write_bytes(target, bytes(data) if data is not None else df.to_csv(index=False).encode())
    try:  # 0600 (mkstemp), renamed into place whole; it must read back as what is registered
        stored = load({"name": name, "fingerprint": fp, "source": {"kind": "file", "file": rel}}, path=path)
    except DPError:
        target.unlink(missing_ok=True)
        raise DPError(
            "the data did not read back as the same table once stored; save it as plain UTF-8 CSV and "
            "register it again; nothing was registered"
        ) from None
    del stored
    try:
        with store.immediate(path, unharmed="nothing was registered") as conn:
            row = conn.execute("SELECT * FROM datasets WHERE fingerprint = ?", (fp,)).fetchone()
            if existing is not None and row is not None:  # a schema-2 registration gets its copy
                conn.execute(
                    "UPDATE datasets SET source = ?, profile = ? WHERE fingerprint = ?",
                    (json.dumps({"kind": "file", "file": rel}), json.dumps(prof), fp),
                )
                event(
                    conn,
                    "copy",
                    dataset=fp,
                    actor=who.display,
                    note="the data is now kept on the server; name, cap and history unchanged",
                )
                return {
                    **_row(conn.execute("SELECT * FROM datasets WHERE fingerprint = ?", (fp,)).fetchone()),
                    "copied": True,
                }
            if row is not None or conn.execute("SELECT 1 FROM datasets WHERE name = ?", (name,)).fetchone():
                raise DPError(f"{name!r} or this data was registered a moment ago by someone else; look again")
            note = (
                f"registered by {who.display} with a cap of ε = {amounts.from_micro(cap):g}, δ = "
                f"{claims.delta(amounts.from_atto(dcap), 3)}"
                + (f", at most ε = {amounts.from_micro(per_query):g} per query" if per_query else "")
                + (
                    "; its owner declared the number of rows public"
                    if public_n
                    else "; its number of rows is not released (the admin's only)"
                    + (
                        "; the default δ cap is a power of ten below 1/(10·n): it tells n's order of magnitude"
                        if delta is None
                        else ""
                    )
                )
                + (
                    f"; the admin confirmed it differs from {', '.join(repr(s['name']) for s in sims)}"
                    if existing is None and sims
                    else ""
                )
            )
            return insert(
                conn,
                name,
                ident,
                builtin=False,
                source={"kind": "file", "file": rel},
                cap_micro=cap,
                cap_delta_atto=dcap,
                max_query_micro=per_query,
                note=note,
                actor=who.display,
                profile=prof,
                public_n=public_n,
            )
    except BaseException:
        if info(fp, path=path) is None or (info(fp, path=path) or {}).get("source", {}).get("kind") != "file":
            target.unlink(missing_ok=True)
        raise


def set_cap(
    who: Identity,
    dataset: object,
    *,
    epsilon: amounts.Amount | None = None,
    delta: amounts.Amount | None = None,
    max_query_epsilon: amounts.Amount | None = None,
    public_n: bool | None = None,
    reason: object,
    path: store.LedgerPath = None,
) -> dict[str, Any]:
    """Admin: change a dataset's cap (ε, δ) or per-query ε cap, or declare its number of rows public
    (``public_n=True``; once public it stays public: it may have been read), with a reason; recorded in the
    history. A cap can never go below what the dataset has released."""
    require_admin(who)
    reason = reason.strip() if isinstance(reason, str) else ""
    if not reason:
        raise DPError("changing a dataset's cap needs a reason, for the record (--reason, or the reason box)")
    if len(reason) > 500:
        raise DPError("the reason is longer than 500 characters; shorten it")
    if epsilon is None and delta is None and max_query_epsilon is None and public_n is None:
        raise DPError(
            "say what changes: a new ε cap (--epsilon), δ cap (--delta), per-query ε cap (--max-query-epsilon) "
            "or the number of rows declared public (--public-n)"
        )
    if public_n is False:
        raise DPError("a number of rows declared public stays public (analysts may have read it); nothing was changed")
    with store.immediate(path, unharmed="nothing was changed") as conn:
        d = require(conn, dataset, who)
        r = conn.execute("SELECT * FROM datasets WHERE fingerprint = ?", (d["fingerprint"],)).fetchone()
        cap = r["cap_micro"] if epsilon is None else amounts.total_micro(epsilon, name="the dataset's ε cap")
        dcap = (
            r["cap_delta_atto"]
            if delta is None
            else amounts.delta_total_atto(delta, d["n_rows"], name="the dataset's δ cap")
        )
        per_query = (
            r["max_query_micro"]
            if max_query_epsilon is None
            else amounts.total_micro(max_query_epsilon, name="the per-query ε cap")
        )
        if cap < r["spent_micro"] or dcap < r["delta_spent_atto"]:
            raise DPError(
                f"a cap cannot go below what the dataset has released (ε = "
                f"{amounts.from_micro(r['spent_micro']):g}, δ = "
                f"{claims.delta(amounts.from_atto(r['delta_spent_atto']), 3)}); nothing was changed"
            )
        conn.execute(
            "UPDATE datasets SET cap_micro = ?, cap_delta_atto = ?, max_query_micro = ? WHERE fingerprint = ?",
            (cap, dcap, per_query, d["fingerprint"]),
        )
        parts = []
        if cap != r["cap_micro"]:
            parts.append(f"ε cap {amounts.from_micro(r['cap_micro']):g} -> {amounts.from_micro(cap):g}")
        if dcap != r["cap_delta_atto"]:
            parts.append(
                f"δ cap {claims.delta(amounts.from_atto(r['cap_delta_atto']), 3)} -> "
                f"{claims.delta(amounts.from_atto(dcap), 3)}"
            )
        if public_n and not r["public_n"]:
            conn.execute("UPDATE datasets SET public_n = 1 WHERE fingerprint = ?", (d["fingerprint"],))
            parts.append("the number of rows declared public")
        if per_query != r["max_query_micro"]:
            parts.append(
                f"per-query ε cap {amounts.from_micro(r['max_query_micro']) or 'none'} -> "
                f"{amounts.from_micro(per_query)}"
            )
        note = f"cap changed by {who.display}: {'; '.join(parts) or 'no change'}; reason: {reason}"
        event(conn, "cap", dataset=d["fingerprint"], actor=who.display, note=note)
        out = _row(conn.execute("SELECT * FROM datasets WHERE fingerprint = ?", (d["fingerprint"],)).fetchone())
    return {**out, "note": note}


#: The fields a list of datasets shows of each (``budget list`` on the CLI, ``GET /v1/datasets`` on the HTTP API):
#: ``n_rows`` only where :func:`shown` keeps it (the admin's, or declared public).
LIST_FIELDS = (
    "name",
    "n_rows",
    "number_of_rows",
    "public_n",
    "builtin",
    "cap",
    "spent",
    "remaining",
    "delta_cap",
    "delta_remaining",
    "max_query_epsilon",
    "columns",
    "person_identifiers",
)


def listing(who: Identity, *, path: store.LedgerPath = None) -> list[dict[str, Any]]:
    """The datasets ``who`` may see (:func:`visible`), each by :data:`LIST_FIELDS`."""
    return [{k: d[k] for k in LIST_FIELDS if k in d} for d in visible(who, path=path)]


def visible(who: Identity, *, path: store.LedgerPath = None) -> list[dict[str, Any]]:
    """The registered datasets ``who`` may see: all for an admin; the built-in synthetic ones (the visitors' quota)
    and those with a quota of theirs for an analyst; the built-in ones for a visitor."""
    with store.reading(path) as conn:
        if conn is None:
            return []
        rows = conn.execute("SELECT * FROM datasets ORDER BY builtin, created").fetchall()
        mine = (
            set()
            if who.is_visitor
            else {
                r["dataset"]
                for r in conn.execute("SELECT dataset FROM quotas WHERE analyst = ? AND closed IS NULL", (who.name,))
            }
        )
    return [shown(_row(r), who) for r in rows if who.is_admin or r["builtin"] or r["fingerprint"] in mine]
