"""The one gate: every release that reads a registered dataset's rows is charged here, before anything runs.

:func:`charge` is the only function that spends a dataset's cap. Console answers (:mod:`dpcore.budgets.spend`),
DP training runs, sweeps (the composition of their DP points), DP synthetic tables and planned releases all call it,
each with the :class:`~dpcore.noise.charge.Charge` its own accountant gives (see the constructors there). In one
``BEGIN IMMEDIATE`` transaction it looks the dataset up, picks the caller's quota, and checks the per-release ε cap,
the dataset's cap (ε and δ, everyone together) and the quota (ε and δ); only when all allow it is the charge
recorded — a ``spend`` event naming the release kind — and, for an answer, the noise drawn (``compute``) and the
answer stored with it. A refusal is recorded and raised after the commit (:class:`~dpcore.errors.BudgetExceededError`,
exit 3): nothing run, nothing spent.

Work that runs after the charge (a background job) holds a **ticket** per part (a training run: one; a sweep: one per
DP point). :func:`attach` ties a ticket to its job; when the job ends (:func:`job_ended`, called by the job runner) a
finished job's ticket is kept and a job that failed or was cancelled before anything left the server is refunded,
with a ``refund`` event that says why. A finished release is never refunded. A ticket whose job's end is never
reported (its worker was killed) stays held: counted as spent, which never overstates what is left.

Rows that arrive as a file (an upload on a page, ``--data FILE`` or ``--dataset csv:FILE`` on the CLI) are charged to
every registered dataset they are, or nearly are (:func:`registered_rows`: the fingerprint, then the near-duplicate
check of :mod:`dpcore.queries.fingerprint`). Rows that are no registered dataset are the uploader's own: nothing is
charged and the statement says so (:func:`statement_block`).

Past 500 formatted lines, one idea: the one place a cap is spent and given back. The charge, its refusals, the
tickets it holds and the admission of rows from a file share one transaction and one ticket table; split, a spend and
its refund would live in different modules.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import claims
from ..errors import BudgetExceededError, DPError
from ..noise.charge import Charge, ReleaseKind, require_ledger_relation
from . import amounts, quotas, registry, store
from .identities import VISITORS, Identity

PathLike = store.LedgerPath

#: Release kinds whose mechanism reads the exact number of rows n (DP-SGD's sample rate is batch/n and its step
#: count follows from n; the run reports n): allowed on a registered dataset only when its owner declared n public.
NEEDS_PUBLIC_N = (ReleaseKind.TRAINING, ReleaseKind.SWEEP)
NOTHING = "nothing was spent and nothing was run"


@dataclass(frozen=True)
class Part:
    """One piece of a release that ends on its own (a sweep's DP point): its charge and how the history names it."""

    charge: Charge
    label: str


def _parts(charge: Charge, parts: Sequence[Part] | None) -> tuple[list[Part], int, int]:
    """The parts of a release and what it is charged in integers: the sum of its parts' charges, each rounded up
    (so refunding every part gives back exactly what was charged), never less than the whole's own."""
    if not parts:
        return [Part(charge, charge.kind.label)], amounts.to_micro(charge.epsilon), amounts.to_atto(charge.delta)
    for p in parts:
        require_ledger_relation(p.charge)
    eps = sum(amounts.to_micro(p.charge.epsilon) for p in parts)
    d_atto = sum(amounts.to_atto(p.charge.delta) for p in parts)
    if eps < amounts.to_micro(charge.epsilon) or d_atto < amounts.to_atto(charge.delta):
        raise DPError("a release's parts add up to less than its charge; charge their composition")
    return list(parts), eps, d_atto


def charge(
    who: Identity,
    datasets: str | Sequence[str],
    charge: Charge,
    *,
    description: str,
    query: str | None = None,
    compute: Callable[[], Any] | None = None,
    parts: Sequence[Part] | None = None,
    job: str | None = None,
    path: PathLike = None,
) -> dict[str, Any]:
    """Charge ``charge`` to each dataset in ``datasets`` (fingerprints or names) and ``who``'s quota on it — atomically.

    ``who``: a checked :class:`~dpcore.budgets.identities.Identity`. ``charge``: what the release costs, under the
    ledger's relation (add or remove one record; anything else is refused). ``description``: how the history names
    it. An answer passes ``query`` (its canonical text: an identical earlier question of the same quota returns the
    stored answer for free) and ``compute`` (called once, inside the transaction, only when everything allows the
    charge; its JSON-able result is stored). Other releases pass neither: each of their ``parts`` (default: one)
    gets a held ticket, to :func:`attach` to its job (``job``: already known) and settle when it ends.

    Returns the first dataset's totals after the charge (``spent``/``total``/``remaining`` and ``delta_*`` of the
    quota, ``dataset_*`` of the cap), ``answer``, ``reused``, ``epsilon_spent``/``delta_spent_now``,
    ``epsilon_charged``, ``event_id``, ``tickets`` (every ticket, all datasets), ``datasets`` (the names charged),
    ``release`` (the kind), ``dataset_name``, ``dataset``, ``visitors``, ``neighbour``.
    """
    if not isinstance(who, Identity):
        raise DPError("who asks must be a checked identity (sign in first); a typed name is not one")
    if not isinstance(charge, Charge):
        raise DPError(f"the gate charges a Charge, got {type(charge).__name__}")
    require_ledger_relation(charge)
    names = [datasets] if isinstance(datasets, str) else list(datasets)
    if not names:
        raise DPError("name the registered dataset(s) the release reads")
    if (query is None) != (compute is None) or (compute is not None and (parts or len(names) != 1)):
        raise DPError("an answer passes its query and compute together, on one dataset, in one part")
    if not isinstance(description, str) or not description.strip():
        raise DPError("a release needs a description for the history")
    pieces, eps, d_atto = _parts(charge, parts)
    kind = charge.kind.value
    refused: BudgetExceededError | None = None
    results: list[dict[str, Any]] = []
    tickets: list[int] = []

    def record(conn: sqlite3.Connection, what: str, fp: str, key: str, **more: Any) -> int:
        """One history row of this release: what happened, on which dataset, for which quota."""
        return registry.event(
            conn,
            what,
            dataset=fp,
            analyst=key,
            query=query,
            description=description,
            eps_micro=eps,
            delta_atto=d_atto,
            release=kind,
            **more,
        )

    with store.immediate(path) as conn:
        found = [registry.require(conn, name, who) for name in names]
        for asked, d in zip(names, found):
            key = quotas.quota_key(conn, who, d)
            if key is None:  # before anything else is said about the dataset: one refusal, as for no such name
                raise quotas.no_quota(who, d, asked)
            if charge.kind in NEEDS_PUBLIC_N and not d["public_n"]:
                raise DPError(needs_public_n(d))
            if d_atto > amounts.max_delta_atto(d["n_rows"]) and d["public_n"]:
                n = d["n_rows"]  # public: the message may name it (otherwise the δ cap, below 1/n, refuses it)
                raise DPError(
                    f"δ = {claims.delta(charge.delta, 6)} is not below 1/n = {1 / n:.3g} for this dataset of {n:,} "
                    f"rows: one release could then give away a whole record; use δ ≤ "
                    f"{claims.down(amounts.max_query_delta(n))} (or Laplace, δ = 0)"
                )
        if len({d["fingerprint"] for d in found}) != len(found):
            raise DPError("the same dataset is named twice; charge it once")
        for d in found:
            fp = d["fingerprint"]
            key = quotas.quota_key(conn, who, d)
            assert key is not None  # checked above, in this transaction
            q = conn.execute("SELECT * FROM quotas WHERE analyst = ? AND dataset = ?", (key, fp)).fetchone()
            ds = conn.execute("SELECT * FROM datasets WHERE fingerprint = ?", (fp,)).fetchone()
            qdt = (
                q["delta_total_atto"]
                if q["delta_total_atto"] is not None
                else amounts.default_delta_atto(d["n_rows"], public_n=d["public_n"])
            )
            if query is not None:
                prior = conn.execute(
                    "SELECT id, answer, cost_micro FROM events WHERE kind = 'spend' AND analyst = ? AND "
                    "dataset = ? AND query = ? AND eps_micro = ? ORDER BY id LIMIT 1",
                    (key, fp, query, eps),
                ).fetchone()
                if prior is not None:
                    eid = record(
                        conn,
                        "reuse",
                        fp,
                        key,
                        note=f"same question as event {prior['id']}: stored answer returned, free",
                    )
                    results.append(
                        _result(json.loads(prior["answer"]), True, 0, 0, prior["cost_micro"], eid, q=q, ds=ds, qdt=qdt)
                    )
                    continue
            part_eps = max(amounts.to_micro(p.charge.epsilon) for p in pieces)
            why = _refusal(who, key, d, charge.kind, eps, part_eps, d_atto, q, qdt, ds)
            if why is not None:
                record(conn, "refused", fp, key, job=job, note=f"{why[0]}; {NOTHING}")
                refused = BudgetExceededError(why[1])
                break
        if refused is None and not results:
            answer = None
            if compute is not None:
                answer = compute()
                json.dumps(answer)  # must be storable; fails before anything is committed
            for d in found:
                fp = d["fingerprint"]
                key = quotas.quota_key(conn, who, d)
                assert key is not None
                eid = record(
                    conn,
                    "spend",
                    fp,
                    key,
                    cost_micro=eps,
                    answer=answer if compute is not None else {"charge": charge.to_dict()},
                    job=job,
                    note=None if compute is not None else _spend_note(charge, pieces, d),
                )
                _add(conn, key, fp, eps, d_atto)
                if compute is None:
                    for p in pieces:
                        tickets.append(_ticket(conn, eid, fp, key, charge.kind, p, job))
                q = conn.execute("SELECT * FROM quotas WHERE analyst = ? AND dataset = ?", (key, fp)).fetchone()
                ds = conn.execute("SELECT * FROM datasets WHERE fingerprint = ?", (fp,)).fetchone()
                qdt = (
                    q["delta_total_atto"]
                    if q["delta_total_atto"] is not None
                    else amounts.default_delta_atto(d["n_rows"], public_n=d["public_n"])
                )
                results.append(_result(answer, False, eps, d_atto, eps, eid, q=q, ds=ds, qdt=qdt))
    if refused is not None:
        raise refused
    first, d0 = results[0], found[0]
    first.update(
        dataset_name=d0["name"],
        dataset=d0["fingerprint"],
        visitors=first.get("visitors", False),
        tickets=tickets,
        datasets=[d["name"] for d in found],
        release=kind,
    )
    return first


def _spend_note(charge: Charge, pieces: Sequence[Part], d: dict[str, Any]) -> str:
    held = "held until its job ends (kept when it finishes, refunded if it fails before anything left the server)"
    parts = f"; {len(pieces)} parts: " + ", ".join(p.label for p in pieces[:8]) if len(pieces) > 1 else ""
    n = "; the number of rows is public" if d["public_n"] else ""
    return f"{charge.describe()}; {held}{parts}{n}"


def _add(conn: sqlite3.Connection, key: str, fp: str, eps: int, d_atto: int) -> None:
    conn.execute(
        "UPDATE quotas SET spent_micro = spent_micro + ?, delta_spent_atto = delta_spent_atto + ? "
        "WHERE analyst = ? AND dataset = ?",
        (eps, d_atto, key, fp),
    )
    conn.execute(
        "UPDATE datasets SET spent_micro = spent_micro + ?, delta_spent_atto = delta_spent_atto + ? "
        "WHERE fingerprint = ?",
        (eps, d_atto, fp),
    )


def _ticket(
    conn: sqlite3.Connection, eid: int, fp: str, key: str, kind: ReleaseKind, part: Part, job: str | None
) -> int:
    cur = conn.execute(
        "INSERT INTO tickets (event, dataset, analyst, release, part, eps_micro, delta_atto, job, state, created) "
        "VALUES (?,?,?,?,?,?,?,?,'held',?)",
        (
            eid,
            fp,
            key,
            kind.value,
            part.label[:200],
            amounts.to_micro(part.charge.epsilon),
            amounts.to_atto(part.charge.delta),
            job,
            time.time(),
        ),
    )
    return int(cur.lastrowid or 0)


def needs_public_n(d: dict[str, Any]) -> str:
    """Why a DP training run or a sweep is refused on a dataset whose number of rows is not public."""
    return (
        f"DP training reads the exact number of rows of {d['name']!r}: its sample rate is batch/n, its number of "
        "steps follows from n and the run reports n, so a run would release n exactly, outside ε — and its owner "
        "has not declared the number of rows public. Nothing was spent and nothing was run; the data owner can "
        "declare it public (`python -m dpcore budget cap --dataset NAME --public-n --reason TEXT`), or ask the "
        "console (a DP count costs ε like any answer) or release a DP synthetic table instead"
    )


# --- refusals ---------------------------------------------------------------------------------------------


def _refusal(
    who: Identity,
    key: str,
    d: dict[str, Any],
    kind: ReleaseKind,
    eps: int,
    part_eps: int,
    d_atto: int,
    q: sqlite3.Row,
    qdt: int,
    ds: sqlite3.Row,
) -> tuple[str, str] | None:
    """(history note, message) when the per-release cap, the dataset's cap or the quota refuses; else None."""
    what = "this query" if kind is ReleaseKind.ANSWER else f"this release ({kind.label})"
    cost = f"{what} costs ε = {amounts.from_micro(eps):g}"
    nothing = "nothing was spent and no noise was drawn" if kind is ReleaseKind.ANSWER else NOTHING
    if q["closed"] is not None:
        return ("the quota is closed", f"your quota on {d['name']!r} was closed by the admin; {nothing}")
    if ds["max_query_micro"] is not None and part_eps > ds["max_query_micro"]:
        cap = amounts.from_micro(ds["max_query_micro"])
        return (
            f"above the per-query cap ε = {cap:g}",
            f"budget exceeded: {cost} but dataset {d['name']!r} allows at most ε = {cap:g} per query or model (a "
            f"larger ε makes one answer nearly exact); {nothing} — ask with ε ≤ {cap:g}",
        )
    whose = (
        "the visitors' shared quota (everyone who has not signed in)"
        if key == VISITORS
        else f"the quota of analyst {who.display!r}"
    )
    for label, total, spent in (
        ("the dataset's cap (everyone's releases together)", ds["cap_micro"], ds["spent_micro"]),
        (whose, q["total_micro"], q["spent_micro"]),
    ):
        if spent + eps > total:
            left = amounts.from_micro(max(total - spent, 0)) or 0.0
            said = (
                f"only ε = {left:g} of {amounts.from_micro(total):g} is left"
                if left > 0
                else f"the whole ε = {amounts.from_micro(total):g} is spent"
            )
            if kind is ReleaseKind.ANSWER:
                step = (f"ask with ε ≤ {left:g}, repeat" if left > 0 else "repeat") + " an earlier question (free)"
            else:
                step = f"release with ε ≤ {left:g}" if left > 0 else "nothing more can be released"
            return (
                f"{label} would be exceeded",
                f"budget exceeded: {cost} but {said} in {label} on {d['name']!r}; {nothing} — {step} or ask the "
                "data owner",
            )
    for label, total, spent in (
        ("the dataset's δ cap (everyone's releases together)", ds["cap_delta_atto"], ds["delta_spent_atto"]),
        (f"the δ of {whose}", qdt, q["delta_spent_atto"]),
    ):
        if d_atto > 0 and spent + d_atto > total:
            left_d = amounts.from_atto(max(total - spent, 0)) or 0.0
            said = (
                f"only δ = {claims.down(left_d)} of {claims.delta(amounts.from_atto(total), 3)} is left"
                if left_d > 0
                else f"the whole δ of {claims.delta(amounts.from_atto(total), 3)} is spent"
            )
            return (
                f"{label} would be exceeded",
                f"budget exceeded: {what} needs δ = {claims.delta(amounts.from_atto(d_atto), 3)} but {said} "
                f"in {label} on {d['name']!r}; {nothing} — use a smaller δ, Laplace noise (δ = 0), or ask the "
                "data owner",
            )
    if d_atto > amounts.max_delta_atto(d["n_rows"]):  # pragma: no cover - every δ cap is below 1/n already
        return ("δ not below 1/n", f"{what} needs a δ above what this dataset allows; {nothing}")
    return None


def _left(total: int, spent: int) -> int:
    return max(total - spent, 0)


def _result(
    answer: Any,
    reused: bool,
    now_micro: int,
    now_atto: int,
    charged_micro: int,
    eid: int,
    *,
    q: sqlite3.Row,
    ds: sqlite3.Row,
    qdt: int,
) -> dict[str, Any]:
    return {
        "answer": answer,
        "reused": reused,
        "epsilon_spent": amounts.from_micro(now_micro),
        "delta_spent_now": amounts.from_atto(now_atto),
        "epsilon_charged": amounts.from_micro(charged_micro),
        "spent": amounts.from_micro(q["spent_micro"]),
        "total": amounts.from_micro(q["total_micro"]),
        "remaining": amounts.from_micro(_left(q["total_micro"], q["spent_micro"])),
        "delta_spent": amounts.from_atto(q["delta_spent_atto"]),
        "delta_total": amounts.from_atto(qdt),
        "delta_remaining": amounts.from_atto(_left(qdt, q["delta_spent_atto"])),
        "dataset_spent": amounts.from_micro(ds["spent_micro"]),
        "dataset_cap": amounts.from_micro(ds["cap_micro"]),
        "dataset_remaining": amounts.from_micro(_left(ds["cap_micro"], ds["spent_micro"])),
        "dataset_delta_spent": amounts.from_atto(ds["delta_spent_atto"]),
        "dataset_delta_cap": amounts.from_atto(ds["cap_delta_atto"]),
        "dataset_delta_remaining": amounts.from_atto(_left(ds["cap_delta_atto"], ds["delta_spent_atto"])),
        "event_id": eid,
        "neighbour": quotas.NEIGHBOUR,
        "visitors": q["analyst"] == VISITORS,
    }


# --- the life of a held ticket ----------------------------------------------------------------------------


def attach(tickets: Sequence[int], job_ids: Sequence[str], *, path: PathLike = None) -> None:
    """Tie each held ticket to the job that does its part (one job per ticket, in order). A job that already ended
    before it was tied (a fast worker) is settled here from its end state (``ended``, see :func:`job_ended`)."""
    if len(tickets) != len(job_ids):
        raise DPError("one job per ticket: the release's parts and its jobs do not match")
    with store.immediate(path, unharmed="the charge stays held") as conn:
        for t, j in zip(tickets, job_ids):
            conn.execute("UPDATE tickets SET job = ? WHERE id = ? AND job IS NULL", (str(j), int(t)))


def settle(
    tickets: Sequence[int], *, finished: bool, why: str, path: PathLike = None, conn: sqlite3.Connection | None = None
) -> int:
    """End held tickets: ``finished`` keeps them (the release left, or may leave, the server: never refunded);
    otherwise each is refunded — what it charged comes back to the dataset's cap and the quota, with a ``refund``
    event saying ``why``. Tickets already settled are left as they are. Returns how many were refunded."""
    if conn is None:
        with store.immediate(path, unharmed="the charge stays held") as c:
            return settle(tickets, finished=finished, why=why, conn=c)
    now, refunded = time.time(), 0
    for t in tickets:
        row = conn.execute("SELECT * FROM tickets WHERE id = ? AND state = 'held'", (int(t),)).fetchone()
        if row is None:
            continue
        if finished:
            conn.execute(
                "UPDATE tickets SET state = 'kept', settled = ?, note = ? WHERE id = ?", (now, why[:500], row["id"])
            )
            continue
        conn.execute(
            "UPDATE tickets SET state = 'refunded', settled = ?, note = ? WHERE id = ?", (now, why[:500], row["id"])
        )
        conn.execute(
            "UPDATE quotas SET spent_micro = MAX(spent_micro - ?, 0), delta_spent_atto = MAX(delta_spent_atto - ?, 0) "
            "WHERE analyst = ? AND dataset = ?",
            (row["eps_micro"], row["delta_atto"], row["analyst"], row["dataset"]),
        )
        conn.execute(
            "UPDATE datasets SET spent_micro = MAX(spent_micro - ?, 0), delta_spent_atto = MAX(delta_spent_atto - ?, "
            "0) WHERE fingerprint = ?",
            (row["eps_micro"], row["delta_atto"], row["dataset"]),
        )
        registry.event(
            conn,
            "refund",
            dataset=row["dataset"],
            analyst=row["analyst"],
            description=f"refund of {row['part']} (event {row['event']})",
            eps_micro=row["eps_micro"],
            delta_atto=row["delta_atto"],
            cost_micro=-row["eps_micro"],
            release=row["release"],
            job=row["job"],
            note=f"{why}; nothing of it left the server, so its ε = {amounts.from_micro(row['eps_micro']):g} and "
            f"δ = {claims.delta(amounts.from_atto(row['delta_atto']), 3)} are given back",
        )
        refunded += 1
    return refunded


def on_job_end(end: Any) -> None:
    """The job-end hook (:mod:`dpcore.jobs.hooks`, registered there): ``end`` is its ``JobEnd``, announced once the
    job's end is committed. Only a ``done`` job published anything (a job's files become visible with ``done``), so
    only its tickets are kept; any other end refunds them."""
    job_ended(str(end.job_id), "done" if end.released else str(end.status), end.error)


def job_ended(job_id: str, status: str, error: str | None = None, *, path: PathLike = None) -> int:
    """Settle the tickets of ``job_id`` from its end state — ``done`` keeps them; ``failed`` or ``cancelled`` refunds
    them (a job that did not end done published nothing: nothing of it left the server). Returns how many were
    refunded. No ledger, or no ticket for the job: nothing to do."""
    p = store.resolve(path)
    if not p.exists():
        return 0
    with store.immediate(path, unharmed="the charge stays held") as conn:
        ids = [r["id"] for r in conn.execute("SELECT id FROM tickets WHERE job = ? AND state = 'held'", (job_id,))]
        if not ids:
            return 0
        if status == "done":
            return settle(ids, finished=True, why=f"job {job_id} finished: its release stands", conn=conn)
        said = f": {error}" if error else ""
        return settle(ids, finished=False, why=f"job {job_id} {status} before it finished{said}"[:400], conn=conn)


def tickets_of(job_id: str, *, path: PathLike = None) -> list[dict[str, Any]]:
    """The tickets of one job (read-only): id, dataset, release, part, ε, δ, state, note."""
    with store.reading(path) as conn:
        if conn is None:
            return []
        rows = conn.execute(
            "SELECT t.*, d.name AS dataset_name, d.public_n AS public_n FROM tickets t JOIN datasets d ON "
            "d.fingerprint = t.dataset WHERE t.job = ? ORDER BY t.id",
            (job_id,),
        ).fetchall()
    return [
        {
            "id": r["id"],
            "dataset": r["dataset_name"],
            "release": r["release"],
            "part": r["part"],
            "epsilon": amounts.from_micro(r["eps_micro"]),
            "delta": amounts.from_atto(r["delta_atto"]),
            "state": r["state"],
            "note": r["note"],
            "public_n": bool(r["public_n"]),
        }
        for r in rows
    ]


# --- rows that arrive as a file ---------------------------------------------------------------------------


def registered_rows(df: Any, *, path: PathLike = None) -> list[dict[str, Any]]:
    """The registered datasets ``df`` is, or nearly is (same people under renamed, rescaled or added columns, rows
    dropped or added): the exact fingerprint first, then every near-duplicate. Empty: the rows are no registered
    dataset's. Read-only."""
    from ..queries import fingerprint  # numpy and pandas: loaded only when rows arrive as a file

    found: list[dict[str, Any]] = []
    exact = registry.info(fingerprint.dataset_key(df), path=path)
    if exact is not None:
        found.append(exact)
    ident = registry.check_identity(fingerprint.dataset_identity(df))
    for sim in registry.near_duplicates(df, ident, fingerprint.profile(df), path=path):
        d = registry.info(sim["name"], path=path)
        if d is not None and all(d["fingerprint"] != f["fingerprint"] for f in found):
            found.append({**d, "near_duplicate": sim})
    return found


def for_job(job_id: str, df: Any, *, wait: float = 30.0, path: PathLike = None) -> dict[str, Any]:
    """At the start of a job that reads rows from a file: the statement block of its charge. Rows that are (nearly)
    a registered dataset's must have been charged to it, by a ticket tied to this job; the job waits up to ``wait``
    seconds for whoever queued it to tie the ticket, then refuses to run. So nothing reads a registered dataset's
    rows uncharged, whatever queued it."""
    found = registered_rows(df, path=path)
    if not found:
        return {"charged_to": [], "owner": OWN_ROWS}
    deadline = time.monotonic() + wait
    while True:
        held = {t["dataset"] for t in tickets_of(job_id, path=path) if t["state"] == "held"}
        if all(d["name"] in held for d in found):
            return statement_block(job=job_id, path=path)
        if time.monotonic() > deadline:
            raise DPError(
                "these rows are (or nearly are) a registered dataset's, and this job was not charged to its cap "
                "through the budget gate; nothing was run — start the release from a page or the CLI, signed in "
                "with a quota on it"
            )
        time.sleep(0.25)


def rows_refusal(who: Identity) -> str:
    """The one message for rows that are a registered dataset's when ``who`` may not release from it."""
    return (
        "these rows are (or nearly are) a registered dataset's, so what is released from them is charged to that "
        "dataset's cap — and you have no quota on it. Nothing was spent and nothing was run; "
        + (
            "sign in with the name and key the data owner gave you (CLI: --analyst NAME with "
            "DP_EXPLORER_ANALYST_KEY), or use data of your own"
            if who.is_visitor
            else "ask the data owner for a quota on it, or use data of your own"
        )
    )


@dataclass(frozen=True)
class Admission:
    """What the gate decided for a release read from a file: the datasets charged (none: the uploader's own rows),
    the totals after the charge, and the held tickets (one per part)."""

    charge: Charge | None
    datasets: tuple[str, ...]
    tickets: tuple[int, ...]
    result: dict[str, Any]
    path: PathLike = None
    public_n: frozenset[str] = frozenset()  # the datasets charged whose owner declared the number of rows public

    @property
    def charged(self) -> bool:
        return bool(self.datasets)

    def block(self) -> dict[str, Any]:
        """The statement's ``budget`` block (:func:`statement_block`) for this admission."""
        return statement_block(self)

    def tie(self, job_ids: Sequence[str]) -> None:
        """Tie the held tickets to their jobs (:func:`attach`)."""
        if self.tickets:
            attach(self.tickets, job_ids, path=self.path)

    def keep(self, why: str = "the release finished") -> None:
        """The release left (or may leave) the server: its tickets are kept, never refunded."""
        if self.tickets:
            settle(self.tickets, finished=True, why=why, path=self.path)

    def refund(self, why: str) -> int:
        """Nothing of the release left the server (it failed, or was never queued): give its charge back."""
        return settle(self.tickets, finished=False, why=why, path=self.path) if self.tickets else 0


def admit(
    who: Identity,
    df: Any,
    price: Callable[[], tuple[Charge, Sequence[Part] | None]],
    *,
    kind: ReleaseKind,
    description: str,
    path: PathLike = None,
) -> Admission:
    """The gate for rows that arrive as a file: charge ``price()`` (evaluated only when the rows are registered: a
    training run's calibration is not free) to every registered dataset ``df`` is or nearly is, or admit it as
    the uploader's own. Refused (nothing spent, nothing run) as :func:`charge` refuses, and with
    :func:`rows_refusal` when ``who`` has no quota on one of them."""
    found = registered_rows(df, path=path)
    if not found:
        return Admission(None, (), (), {}, path)
    with store.reading(path) as conn:  # no quota on one of them: refused before anything is priced
        for d in found:
            if conn is not None and quotas.quota_key(conn, who, d) is None:
                raise DPError(rows_refusal(who))
            if kind in NEEDS_PUBLIC_N and not d["public_n"]:
                raise DPError(needs_public_n(d))
    c, parts = price()
    try:
        r = charge(who, [d["fingerprint"] for d in found], c, description=description, parts=parts, path=path)
    except registry.Unavailable:
        raise DPError(rows_refusal(who)) from None
    public = frozenset(d["name"] for d in found if d["public_n"])
    return Admission(c, tuple(r["datasets"]), tuple(r["tickets"]), r, path, public)


def admit_dataset(who: Identity, dataset: str, cost: Charge, *, description: str, path: PathLike = None) -> Admission:
    """The gate for a release of a registered dataset chosen by name (a planned release: one charge for the whole
    plan, at its own accountant's ε and δ): charged to the dataset's cap and ``who``'s quota before a row is read,
    refused as :func:`charge` refuses (one refusal for "no such dataset" and "not yours"). The caller then runs the
    release and calls :meth:`Admission.keep` once anything of it may have left, or :meth:`Admission.refund` when it
    failed before."""
    r = charge(who, dataset, cost, description=description, path=path)
    d = registry.info(r["dataset"], path=path)
    public = frozenset([r["dataset_name"]]) if d is not None and d["public_n"] else frozenset()
    return Admission(cost, tuple(r["datasets"]), tuple(r["tickets"]), r, path, public)


OWN_ROWS = (
    "the uploader's own data: these rows are no registered dataset (nor a near-duplicate of one), so no dataset's "
    "cap was charged; ε bounds what this release says about each of its rows"
)


#: What a statement says of a charged dataset's number of rows when its owner did not declare it public.
NOT_RELEASED = "not released"

BUILTIN_ROWS = "the app's built-in data (synthetic, or public): no registered dataset's, so no cap was charged"


def statement_block(
    admission: Admission | None = None,
    *,
    job: str | Sequence[str] | None = None,
    uploaded: bool = True,
    path: PathLike = None,
) -> dict[str, Any]:
    """What a statement says about budgets: the registered datasets the release was charged to (ε and δ as charged
    and not refunded, whether the number of rows is public), or that the rows were the uploader's own
    (``uploaded``; else the app's built-in data). From an :class:`Admission`, or from the tickets of ``job`` (one
    job id or several: a sweep's points)."""
    if admission is not None:
        if not admission.charged:
            return {"charged_to": [], "owner": OWN_ROWS if uploaded else BUILTIN_ROWS}
        assert admission.charge is not None
        return {
            "charged_to": [
                {
                    "dataset": name,
                    "epsilon": admission.charge.epsilon,
                    "delta": admission.charge.delta,
                    "number_of_rows": registry.PUBLIC_N if name in admission.public_n else NOT_RELEASED,
                }
                for name in admission.datasets
            ],
            "note": CHARGED_NOTE,
        }
    jobs = [job] if isinstance(job, str) else list(job or [])
    ts = [t for j in jobs for t in tickets_of(j, path=path)]
    if not ts:
        return {"charged_to": [], "owner": OWN_ROWS if uploaded else BUILTIN_ROWS}
    by: dict[str, dict[str, Any]] = {}
    for t in ts:
        row = by.setdefault(t["dataset"], {"dataset": t["dataset"], "epsilon": 0.0, "delta": 0.0, "refunded": 0})
        if t["state"] == "refunded":
            row["refunded"] += 1
            continue
        row["epsilon"] += t["epsilon"] or 0.0
        row["delta"] += t["delta"] or 0.0
        row["number_of_rows"] = registry.PUBLIC_N if t["public_n"] else NOT_RELEASED
    return {"charged_to": list(by.values()), "note": CHARGED_NOTE}


CHARGED_NOTE = (
    "charged to each dataset's cap and the asker's quota before it ran (add or remove one record); a finished "
    "release is never refunded, a part that failed before anything left the server is (refunded: how many)"
)
