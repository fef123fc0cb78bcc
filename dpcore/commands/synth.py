"""`python -m dpcore synth --data FILE|--builtin --epsilon E [--delta D] [--generator mst|aim] [--rows N] --out FILE.csv`

A DP synthetic table written as CSV, its privacy statement as JSON beside it (``FILE.statement.json``). An
upload's columns are released only as declared: ``--column age=18:90:1`` (public bounds and bin width) or
``--column sex=F,M`` (public categories), one per column. A CSV whose rows are (or nearly are) a registered
dataset's is charged — OpenDP's privacy map of the release — to that dataset's cap and the analyst's quota before
anything runs (``--analyst NAME`` with $DP_EXPLORER_ANALYST_KEY; exit 3 when either would be exceeded); a release that
fails before its files are written is refunded. Other CSVs are the uploader's own, and the statement says so."""

from __future__ import annotations

import json
from pathlib import Path

from .. import limits, textsafe
from ..budgets import gate
from ..data import datasets
from ..errors import DPError
from ..noise.charge import ReleaseKind
from ..storage import check_user_path, write_user_file
from ..synth import release as synth_release
from ..synth import schema as synth_schema
from ..synth.statement import release_statement
from . import _who
from ._args import int_arg, seed_arg
from .train import add_analyst_option


def register(sub) -> None:
    p = sub.add_parser("synth", help="release a DP synthetic table (OpenDP's MST or AIM) with its privacy statement")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", help="the private table as CSV (declare every column to release with --column)")
    src.add_argument(
        "--builtin",
        action="store_true",
        help="the synthetic medical data of the re-identification story (its columns are declared)",
    )
    p.add_argument(
        "--epsilon",
        type=float,
        required=True,
        help=f"ε for adding or removing one record, {limits.SYNTH_EPSILON_MIN:g} to "
        f"{limits.SYNTH_EPSILON_MAX:g} (e.g. 1)",
    )
    p.add_argument(
        "--delta",
        type=float,
        default=0.0,
        help="δ: 0 (default) runs MST with pure ε; AIM needs δ > 0, e.g. 1e-6 (Gaussian noise under zCDP)",
    )
    p.add_argument("--generator", default="mst", choices=list(synth_release.GENERATORS), help="mst (default) or aim")
    p.add_argument(
        "--rows",
        type=int_arg(1, limits.SYNTH_MAX_OUTPUT_ROWS),
        default=None,
        help=f"synthetic rows, 1 to {limits.SYNTH_MAX_OUTPUT_ROWS:,} (default: the generator's DP "
        "estimate of the number of records)",
    )
    p.add_argument(
        "--column",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="declare a column public: NAME=LO:HI:WIDTH (a number: public bounds, bin width) or "
        "NAME=A,B,C (public categories); repeatable, one per released column",
    )
    p.add_argument(
        "--columns",
        default=None,
        metavar="A,B,...",
        help="with --builtin: which medical columns to release (default "
        f"{','.join(synth_schema.STORY_COLUMNS)}; all: {','.join(synth_schema.MEDICAL_COLUMNS)})",
    )
    p.add_argument(
        "--pairs",
        default=None,
        metavar="A+B,...",
        help="column pairs that matter, e.g. age+diagnosis,age+salary (AIM measures them)",
    )
    p.add_argument(
        "--allow-missing",
        action="store_true",
        help="declare that values may be missing (synthetic rows may then hold missing values too)",
    )
    p.add_argument(
        "--n",
        type=int_arg(limits.REID_MIN_ROWS, limits.SYNTH_MAX_ROWS),
        default=datasets.REID_N,
        help=f"with --builtin: patients, {limits.REID_MIN_ROWS:,} to {limits.SYNTH_MAX_ROWS:,} "
        f"(default {datasets.REID_N:,})",
    )
    p.add_argument(
        "--seed",
        type=seed_arg,
        default=datasets.REID_SEED,
        help=f"with --builtin: the data seed (default {datasets.REID_SEED}, the story's patients)",
    )
    p.add_argument(
        "--sample-seed",
        type=seed_arg,
        default=None,
        help="seed of the post-processing only (which rows are drawn from the DP model); the noise is "
        "never seeded. Default: drawn from a secure source and written in the statement",
    )
    p.add_argument("--out", required=True, help="output CSV path (the statement goes beside it)")
    add_analyst_option(p)
    p.set_defaults(func=run)


def statement_path(out: Path) -> Path:
    return out.with_name(out.stem + ".statement.json")


def _check_delta(args) -> None:
    """δ is the chance the guarantee fails for everyone: at most limits.SYNTH_DELTA_MAX (the page's largest), and
    below 1/n where n is public (the built-in patients)."""
    d = float(args.delta)
    if d > limits.SYNTH_DELTA_MAX:
        raise DPError(
            f"--delta {d:g} is far too large: δ is the chance the guarantee fails for everyone; at most "
            f"{limits.SYNTH_DELTA_MAX:g} (AIM: e.g. 1e-6; MST runs with pure ε when --delta is left out)"
        )
    if args.builtin and d >= 1 / args.n:
        raise DPError(f"--delta {d:g} must be below 1/n = {1 / args.n:.2g} for {args.n:,} patients; try 1e-7")


def run(args) -> dict:
    # before the release: a folder, a missing folder, a device or pipe (the statement goes beside the CSV, so --out
    # is a file) or a place that cannot be written is refused first, and so is the statement's place
    out = Path(args.out)
    check_user_path(out, "--out", special=False)
    check_user_path(statement_path(out), "--out's statement", special=False)
    cfg = synth_release.SynthConfig(
        args.epsilon, args.delta, args.generator, args.rows, synth_release.parse_pairs(args.pairs), args.sample_seed
    )
    _check_delta(args)
    if args.builtin:
        if args.column:
            raise DPError("--column declares an upload's columns; with --builtin use --columns to choose them")
        cols = [c.strip() for c in args.columns.split(",")] if args.columns else list(synth_schema.STORY_COLUMNS)
        schema = synth_schema.medical(cols)
        df = datasets.medical(args.n, args.seed)
        dataset = f"synthetic medical, {args.n:,} patients (seed {args.seed})"
    else:
        if args.columns:
            raise DPError("--columns chooses built-in columns; declare an upload's columns with --column NAME=SPEC")
        if not args.column:
            raise DPError(
                "declare each column to release with --column: NAME=LO:HI:WIDTH for a number (public "
                "bounds and bin width) or NAME=A,B for categories, e.g. --column age=18:90:1 "
                "--column sex=F,M; nothing is learned from the rows"
            )
        schema = synth_schema.parse_schema(args.column, complete=not args.allow_missing)
        df = datasets.read_csv(args.data)
        dataset = f"upload {Path(args.data).name}"
    cfg = cfg.check(schema)
    adm = (
        gate.Admission(None, (), (), {})
        if args.builtin
        else gate.admit(
            _who.asker(args.analyst),
            df,
            lambda: (synth_release.charge(schema, cfg), None),
            kind=ReleaseKind.SYNTHETIC,
            description=f"DP synthetic table ({cfg.generator.upper()}) of {Path(args.data).name}"[:200],
        )
    )
    spath = statement_path(out)
    try:
        rel = synth_release.release(df, schema, cfg)
        st = release_statement(rel, dataset, csv_name=out.name, budget=adm.block())
        write_user_file(out, textsafe.csv_bytes(rel.table))  # whole file or nothing; formula cells neutralised
        write_user_file(spath, json.dumps(st, indent=2).encode(), option="--out's statement")
    except BaseException:
        if adm.refund("the release failed before its table was written: nothing left the server"):
            out.unlink(missing_ok=True)
        raise
    adm.keep("the table was written")
    return {
        "budget": st["budget"],
        "out": str(out),
        "statement": str(spath),
        "rows": len(rel.table),
        "columns": schema.names,
        "epsilon": st["epsilon"],
        "delta": st["delta"],
        "generator": cfg.generator,
        "seconds": round(rel.seconds, 2),
        "notes": rel.notes,
        "summary": st["summary"],
    }
