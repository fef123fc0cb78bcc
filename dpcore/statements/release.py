"""What a finished run offers for download: the *release*, which ε covers, apart from the *diagnostics*, which
it does not.

The release (:func:`release_files`, :func:`release_zip`: the default download) holds the model weights, the
run's public settings and its signed privacy statement (what ε covers, with δ, the neighbour relation, n and
the classes treated as public, and every leak the run warned about). The diagnostics (:func:`diagnostics`) are
everything computed on private rows — test and training accuracy and loss, the per-epoch curves, the classes a
model saw — labelled "not covered by ε" and rounded to what a chart needs. They never go into the release: with
the released weights and the public seed, someone who knows every other record read a test patient's diagnosis
off a full-precision test loss (tests/dpcore/training/test_release.py runs that attack on the downloads).
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

from .. import claims
from ..errors import DPError
from ..jobs import registry, store
from ..jobs.owners import Caller
from ..jobs.records import JobRecord
from ..storage.jsonio import dumps
from ..training.config import NOT_DP_NOTE
from ..training.results import DIAGNOSTIC_FIELDS, TrainMetrics
from . import signing
from . import training as training_statement

#: The label a diagnostic carries wherever it is shown or downloaded.
NOT_COVERED = "NOT COVERED BY ε"

_README = """DP Explorer release of run {job}

statement.json  the signed privacy statement: what ε covers (δ, the neighbour relation, n and the classes treated
                as public, every leak the run warned about), the run's public settings, and the SHA-256 of
                each file here. Check it, and these files, on any machine with
                python -m dpcore statement --verify RELEASE.zip --public-key OWNER.pem
                (the data owner's published public key; see its fingerprint on their Home page).
{weights:<15} the model weights (covered by the statement's ε).

Not in this release: the diagnostics computed on private rows (test and training accuracy and loss, their
curves). They are not covered by ε and are downloaded apart, labelled.
"""


def _finished(job_id: str, caller: Caller) -> tuple[JobRecord, TrainMetrics]:
    job = store.get(job_id, caller=caller, history=False)
    registry.check_kind(job, registry.TRAIN)
    m = TrainMetrics.from_job(job) if job["status"] == "done" else None
    if m is None:
        raise DPError(f"job {job_id} is {job['status']}: only a finished run has downloads")
    return job, m


def shipped(job_id: str, *, caller: Caller) -> dict[str, bytes]:
    """The files a finished run's release ships beside its statement, file name → bytes: the weights and a README.
    The statement covers each by SHA-256 (:func:`signed_statement`). Nothing computed on private rows is in it."""
    job, _m = _finished(job_id, caller)
    files: dict[str, bytes] = {}
    wname = (job["result"] or {}).get("weights_file")
    wpath = store.result_path(job_id, wname, caller=caller) if wname else None
    if wpath is not None and wpath.exists():
        files[str(wname)] = wpath.read_bytes()
    files["README.txt"] = _README.format(job=job_id, weights=wname or "(no weights)").encode()
    return files


def signed_statement(job_id: str, *, caller: Caller, files: dict[str, bytes] | None = None) -> dict[str, Any]:
    """The run's statement as it leaves the server: signed, covering the weights and the README by SHA-256
    (``files``: :func:`shipped`, computed when not given)."""
    files = shipped(job_id, caller=caller) if files is None else files
    return signing.issue(training_statement.for_job(job_id, caller=caller), files=files)


def release_files(job_id: str, *, caller: Caller, signed: dict[str, Any] | None = None) -> dict[str, bytes]:
    """The release of a finished run, file name → bytes: ``statement.json`` (signed, covering the others by
    SHA-256; ``signed``: one already made), the weights, a README. ``caller``: who asks (a
    :class:`dpcore.jobs.owners.Caller`; someone else's run is refused, as everywhere)."""
    files = shipped(job_id, caller=caller)
    signed = signed if signed is not None else signed_statement(job_id, caller=caller, files=files)
    return {"statement.json": dumps(signed).encode(), **files}


def release_zip(job_id: str, *, caller: Caller, signed: dict[str, Any] | None = None) -> bytes:
    """:func:`release_files` as one zip: the default download of a run."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in release_files(job_id, caller=caller, signed=signed).items():
            zf.writestr(name, data)
    return buf.getvalue()


def downloads(job_id: str, *, caller: Caller) -> dict[str, Any]:
    """Everything a run's page offers, from one signed statement: ``statement`` (signed), ``release`` (the zip),
    ``diagnostics`` (labelled JSON bytes)."""
    signed = signed_statement(job_id, caller=caller)
    return {
        "statement": signed,
        "release": release_zip(job_id, caller=caller, signed=signed),
        "diagnostics": diagnostics_json(job_id, caller=caller),
    }


def diagnostics(job_id: str, *, caller: Caller) -> dict[str, Any]:
    """A run's diagnostics, labelled and rounded: what a chart needs, never part of the release."""
    job, m = _finished(job_id, caller)
    d = m.to_dict()
    out = {
        "label": f"{NOT_COVERED}: diagnostics computed on private rows",
        "not_covered_by_epsilon": True,
        "note": NOT_DP_NOTE,
        "run": job_id,
    }
    for k in DIAGNOSTIC_FIELDS:
        v = d.get(k)
        if k == "history":
            v = [
                {
                    key: (claims.diagnostic(x) if key in ("loss", "accuracy", "test_loss", "batch_loss") else x)
                    for key, x in dict(h).items()
                }
                for h in v or []
            ]
        elif isinstance(v, float):
            v = claims.diagnostic(v)
        out[k] = v
    out["n_test"] = m.n_test
    return out


def diagnostics_json(job_id: str, *, caller: Caller) -> bytes:
    return json.dumps(diagnostics(job_id, caller=caller), indent=2, ensure_ascii=False).encode()
