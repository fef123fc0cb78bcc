"""One synthetic release as a background job (target ``"synth.release"``): the re-identification page's "Your own
data" tab releases an upload this way, so the page never blocks.

Params: ``dataset`` (``"upload:<ref>"``, an upload the page stored with :func:`dpcore.training.data.save_upload`),
``schema`` (:meth:`dpcore.synth.schema.Schema.to_dict`: the columns the user declared), ``config``
(:meth:`dpcore.synth.release.SynthConfig.to_dict`) and ``name`` (the file's name, for the statement). The job
writes ``synthetic.csv`` (formula cells neutralised) and ``statement.json`` into its folder and returns the
statement and the first rows; the stored upload is deleted once no other job needs it.
"""

from __future__ import annotations

import json

from .. import textsafe
from ..data import datasets
from ..errors import DPError
from .release import SynthConfig, release
from .schema import Schema

CSV_NAME = "synthetic.csv"
STATEMENT_NAME = "statement.json"
SHOWN_ROWS = 100


def params(dataset: str, schema: Schema, cfg: SynthConfig, name: str) -> dict:
    cfg.check(schema)
    return {"dataset": dataset, "schema": schema.to_dict(), "config": cfg.to_dict(), "name": str(name)[:100]}


def run_release(p: dict, ctx) -> dict:
    """Job target ``"synth.release"`` (see the module docstring)."""
    from ..training.data import UPLOAD, release_uploads, upload_file

    dataset = str(p.get("dataset") or "")
    if not dataset.startswith(UPLOAD):
        raise DPError("a synthetic release job reads an uploaded file; upload it again")
    try:
        df = datasets.read_csv(upload_file(dataset[len(UPLOAD):]))
        schema, cfg = Schema.from_dict(p["schema"]), SynthConfig.from_dict(p["config"])
        rel = release(df, schema, cfg, cancelled=ctx.cancelled)
    finally:
        try:
            release_uploads(finished_job=ctx.job_id)  # the upload is kept only while a job needs it
        except Exception:  # noqa: BLE001 - clean-up must never turn a release into a failure
            pass
    st = rel.statement(f"upload {p.get('name') or 'CSV'}")
    ctx.save_bytes(CSV_NAME, textsafe.csv_bytes(rel.table))
    ctx.save_bytes(STATEMENT_NAME, json.dumps(st, indent=2).encode())
    head = rel.table.head(SHOWN_ROWS)
    return {"statement": st, "rows": int(len(rel.table)), "columns": schema.names,
            "sample": head.astype(object).where(head.notna(), None).to_dict("records"),
            "seconds": rel.seconds, "notes": rel.notes}
