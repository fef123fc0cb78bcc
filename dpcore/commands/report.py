"""`python -m dpcore report --out FILE.html [--sweep ID] [--job ID ...] [--ledger DATASET ...] [--analyst NAME]
[--advice FILE ...] [--synth ID ...] [--audit SCORES.csv [--audit-epsilon E | --audit-noise-multiplier S
--audit-sample-rate Q --audit-steps T] [--audit-delta D] ...] [--epsilon E] [--admin]`: a self-contained HTML report, with a
privacy statement for the sweep, each training run and each dataset's query history (what the dataset released as
a whole, with your quota's share; --analyst with $DP_EXPLORER_ANALYST_KEY, or the admin token), the decision record
of each advice, each DP synthetic-data study, and the audit of your own model. Runs, sweeps and studies are the
command line's own (and the shared demos); ``--admin`` includes anyone's, after the admin check.

``--audit`` takes the scores file itself (``member``, ``score``[, ``canary``], as ``audit --scores``) and the stated
mechanism (the ``audit`` command's options, prefixed ``--audit-``), and audits it again with the same function as
the page — not the JSON the page downloads: that file is unsigned, so its numbers could have been edited, while a
report states what the scores prove; recomputing from the scores costs seconds at most (``limits.AUDIT_MAX_ROWS``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dpcore import limits, storage
from dpcore.report import document as report
from dpcore.statements import keys
from dpcore.statements import verify as verification

from ..errors import DPError
from ..jobs import registry, store
from ..limits import STATEMENT_MAX_BYTES
from ..storage import check_user_path, write_user_file
from . import _who
from . import audit as audit_cmd
from ._args import int_arg, seed_arg


def register(sub) -> None:
    p = sub.add_parser("report", help="write a self-contained HTML report (opens offline)")
    p.add_argument("--out", required=True, help="output .html path")
    p.add_argument(
        "--epsilon",
        type=float,
        default=None,
        help="the ε the report explains (default: the first --advice record's recommended ε at its δ, else 1)",
    )
    p.add_argument("--sweep", default=None, help="include a stored privacy–utility sweep by id")
    p.add_argument(
        "--job",
        action="append",
        default=[],
        metavar="ID",
        help="add the privacy statement of a finished training run (repeatable)",
    )
    p.add_argument(
        "--ledger",
        action="append",
        default=[],
        metavar="DATASET",
        help="add the privacy statement of a registered dataset's query history (repeatable)",
    )
    p.add_argument(
        "--analyst",
        default=None,
        help="with --ledger: your analyst name ($DP_EXPLORER_ANALYST_KEY); an admin: any analyst's share",
    )
    p.add_argument(
        "--advice",
        action="append",
        default=[],
        metavar="FILE.json",
        help="add the decision record of an advice (advise … --statement FILE; verified first; repeatable)",
    )
    p.add_argument(
        "--synth",
        action="append",
        default=[],
        metavar="ID",
        help="add a finished DP synthetic-data study (its statement, attacks and utility; repeatable)",
    )
    p.add_argument(
        "--audit",
        default=None,
        metavar="SCORES.csv",
        help="add the audit of your own model: its scores file (member, score[, canary]) as for `audit "
        "--scores`, audited again here; state its claim with --audit-epsilon (or --audit-noise-"
        "multiplier, --audit-sample-rate and --audit-steps)",
    )
    audit_cmd.add_options(p, prefix="audit-")
    p.add_argument(
        "--n",
        type=int_arg(limits.REID_MIN_ROWS, limits.REID_MAX_ROWS),
        default=10_000,
        help=f"rows of synthetic medical data, {limits.REID_MIN_ROWS:,} to {limits.REID_MAX_ROWS:,} (default 10000)",
    )
    p.add_argument("--seed", type=seed_arg, default=0, help=f"data seed, 0 to {limits.SEED_MAX} (default 0)")
    _who.add_admin_flag(p, "everyone's runs, sweeps, studies and ledgers")
    p.set_defaults(func=run)


def run(args) -> dict:
    check_user_path(args.out)  # before the work: empty, a folder, a missing folder, a device
    caller = _who.job_caller(args)  # before the work: a refused admin check costs nothing
    for ids, kind in ((args.job, registry.TRAIN), (args.synth, registry.SYNTH_STUDY)):  # an id of another kind
        for job_id in ids:  # fails now, before the audit and the slow sections
            registry.check_kind(store.get(job_id, caller=caller, history=False), kind)
    advice = [_advice(path) for path in args.advice]  # before the slow sections: a bad file fails first
    if args.audit is None and audit_cmd.given(args, "audit-"):
        raise DPError(
            f"{audit_cmd.given(args, 'audit-')[0]} states the claim of an audit: give its scores file with "
            "--audit SCORES.csv"
        )
    audits: list[dict[str, Any]] = (
        [] if args.audit is None else [{"result": _audit(args), "name": Path(args.audit).name}]
    )
    viewer = (_who.admin() if args.admin else _who.reader(args.analyst)) if args.ledger else None
    eps, delta, source = report.chosen_epsilon(
        1.0 if args.epsilon is None else args.epsilon, advice, given=args.epsilon is not None
    )
    html = report.build(
        eps,
        delta=delta,
        epsilon_source=source or ("--epsilon" if args.epsilon is not None else "the command's default"),
        sweep_id=args.sweep,
        n=args.n,
        seed=args.seed,
        job_ids=args.job,
        ledgers=[(x, args.analyst) for x in args.ledger],
        advice=advice,
        caller=caller,
        viewer=viewer,
        synth_ids=args.synth,
        audits=audits,
    )
    write_user_file(args.out, html.encode())
    return {
        "out": args.out,
        "bytes": len(html.encode()),
        "epsilon": eps,
        "delta": delta,
        "epsilon_source": source or ("--epsilon" if args.epsilon is not None else "the command's default"),
        "sweep": args.sweep,
        "jobs": args.job,
        "ledgers": len(args.ledger),
        "advice": len(advice),
        "synth": args.synth,
        "audit": None
        if not audits
        else {"scores": args.audit, "verdict": (audits[0]["result"].get("verdict") or {}).get("words")},
    }


def _audit(args) -> dict:
    """The audit of ``--audit``'s scores file with the ``--audit-*`` options; a refusal names the option."""
    try:
        return audit_cmd.audit(args.audit, args, "audit-")
    except DPError as err:
        raise DPError(f"--audit {args.audit}: {err}") from None


def _advice(path: str) -> dict:
    """An advice statement that checks out (signed by this home's key, and every figure), or a DPError naming what
    does not: the report is this home's, so a decision record signed elsewhere does not go in it."""
    raw = storage.read_user_file(path, max_bytes=STATEMENT_MAX_BYTES, what="statement file", option="--advice")
    if len(raw) > STATEMENT_MAX_BYTES:
        raise DPError(f"{path} is larger than a statement can be ({STATEMENT_MAX_BYTES:,} bytes)")
    st = verification.parse(raw, path)
    if st.get("kind") != "advice":
        raise DPError(
            f"--advice {path} is a {st.get('kind') or 'non'}-statement, not an advice's decision record "
            "(python -m dpcore advise … --statement FILE makes one)"
        )
    out = verification.verify(st, public_key=keys.home_public())
    if not out["verified"]:
        raise DPError(f"--advice {path} does not check out: {out['problems'][0]}")
    return st
