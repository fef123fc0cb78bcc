"""One synthetic release as a background job (target ``"synth.release"``): the re-identification page's "Your own
data" tab releases an upload this way, so the page never blocks.

Params: ``dataset`` (``"upload:<ref>"``, an upload the page stored with :func:`dpcore.training.data.save_upload`),
``schema`` (:meth:`dpcore.synth.schema.Schema.to_dict`: the columns the user declared), ``config``
(:meth:`dpcore.synth.release.SynthConfig.to_dict`) and ``name`` (the file's name, for the statement). The job
writes ``synthetic.csv`` (formula cells neutralised) and ``statement.json`` into its folder and returns the
statement and the first rows; the stored upload is deleted once no other job needs it.

``utility`` (optional, :func:`params`): what the table keeps, measured in the same job — the 1- and 2-way marginal
errors at the declared bins against the rows the generator read, and with a ``target`` a model trained on the
synthetic rows tested on a held-out part of the upload (:func:`dpcore.synth.utility.upload_utility`; computed on
the private rows: not covered by ε, and said so). The held-out part is drawn row by row by a fair coin from the
operating system's secure source (:func:`holdout_coins`; kept with probability :data:`HOLDOUT_SHARE`), never seeded
or stored, and no release reads it. The release then reads a Poisson sample of the rows: for one row added or
removed, the rows it reads differ by at most that row, so the statement's ε and δ (OpenDP's map of the
measurement) still bound every row of the upload — the held-out rows only add the model test, which is not
released. The statement records it (``rows_read``).

What this job does not do on an upload: the attack study of the re-identification page's tab 6. Its linkage needs
the story's neighbour scenario, and its baseline (and membership audit) an independent population drawn from the
same generator as the data — an upload has neither here, so the tab measures utility only and says so.
"""

from __future__ import annotations

import json
import secrets

import numpy as np

from .. import textsafe
from ..budgets import gate
from ..data import datasets
from ..errors import DPError
from ..training.data import UPLOAD, release_uploads, upload_file
from .failures import plain_errors
from .release import SynthConfig, release
from .schema import Schema
from .statement import release_statement
from .utility import upload_task, upload_utility

CSV_NAME = "synthetic.csv"
STATEMENT_NAME = "statement.json"
SHOWN_ROWS = 100


#: The share of an upload's rows held out to test a model trained on its synthetic table (when a target is named).
HOLDOUT_SHARE = 0.2


def params(
    dataset: str,
    schema: Schema,
    cfg: SynthConfig,
    name: str,
    *,
    utility: bool = False,
    target: str | None = None,
    threshold=None,
) -> dict:
    """A release job's parameters, checked before anything is queued. ``utility``: measure what the table keeps;
    ``target``/``threshold``: the model test (:func:`dpcore.synth.utility.upload_task`; a target implies
    ``utility``)."""
    cfg.check(schema)
    task = upload_task(schema, target, threshold)
    out = {"dataset": dataset, "schema": schema.to_dict(), "config": cfg.to_dict(), "name": str(name)[:100]}
    if utility or task is not None:
        out["utility"] = {
            "target": None if task is None else task["target"],
            "threshold": None if task is None else task["threshold"],
        }
    return out


def holdout_coins(n: int) -> np.ndarray:
    """``n`` fair coins, True (held out) with probability :data:`HOLDOUT_SHARE`, from the operating system's secure
    source (``secrets``), one per row and independent of the rows: never seeded, stored or shown."""
    cut = int(HOLDOUT_SHARE * 2**32)
    return np.frombuffer(secrets.token_bytes(4 * n), dtype=np.uint32) < cut


ROWS_READ_SAMPLE = (
    f"a random part of the upload: each row read by the release with probability "
    f"{1 - HOLDOUT_SHARE:g}, by a fair coin from a secure source (never stored); the others were "
    "held out only to test a model for the data owner, not released. ε and δ bound every row of the "
    "upload (one row added or removed changes the rows read by at most that row)"
)
ROWS_READ_ALL = "every row of the upload"


def run_release(p: dict, ctx) -> dict:
    """Job target ``"synth.release"`` (see the module docstring)."""
    dataset = str(p.get("dataset") or "")
    if not dataset.startswith(UPLOAD):
        raise DPError("a synthetic release job reads an uploaded file; upload it again")
    want = p.get("utility")
    try:
        with plain_errors("a synthetic release job", f"job {ctx.job_id}"):
            return _run(p, ctx, dataset, want)
    finally:
        try:
            release_uploads(finished_job=ctx.job_id)  # the upload is kept only while a job needs it
        except Exception:
            pass


def _run(p: dict, ctx, dataset: str, want) -> dict:
    df = datasets.read_csv(upload_file(dataset[len(UPLOAD) :]))
    budget = gate.for_job(ctx.job_id, df)  # a registered dataset's rows run only once charged to it
    schema, cfg = Schema.from_dict(p["schema"]), SynthConfig.from_dict(p["config"])
    task = upload_task(schema, want.get("target"), want.get("threshold")) if want else None
    held = holdout_coins(len(df)) if task is not None else np.zeros(len(df), bool)
    fitted, held_out = df[~held], (df[held] if task is not None else None)
    ctx.progress(step=0, total_steps=2 if want else 1, phase="release")
    rel = release(fitted, schema, cfg, cancelled=ctx.cancelled)
    kept = None
    if want:
        ctx.progress(step=1, total_steps=2, phase="utility")
        kept = upload_utility(fitted, held_out, rel.codes, rel.table, schema, cfg.pairs, task)
    st = release_statement(
        rel,
        f"upload {p.get('name') or 'CSV'}",
        rows_read=ROWS_READ_SAMPLE if task else ROWS_READ_ALL,
        csv_name=CSV_NAME,
        budget=budget,
    )
    ctx.save_bytes(CSV_NAME, textsafe.csv_bytes(rel.table))
    ctx.save_bytes(STATEMENT_NAME, json.dumps(st, indent=2).encode())
    head = rel.table.head(SHOWN_ROWS)
    return {
        "statement": st,
        "rows": int(len(rel.table)),
        "columns": schema.names,
        "sample": head.astype(object).where(head.notna(), None).to_dict("records"),
        "seconds": rel.seconds,
        "notes": rel.notes,
        "utility": kept,
    }
