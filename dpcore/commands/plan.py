"""`python -m dpcore plan --template [--out FILE]` · `python -m dpcore plan --plan FILE (--builtin patients|visits
[--n N] [--seed S] | --dataset NAME | --data FILE) [--analyst NAME] [--preview | --out DIR]`

A planned release: several statistics (counts, histograms over public categories, bounded sums and means,
quantiles, each optionally grouped by public keys) released once on one budget. The plan is a JSON or YAML file
(``--template`` writes one to start from). ``--preview`` prints each statistic's ε and 95% error from public numbers
alone and spends nothing. Otherwise the plan is charged once, for its whole ε, to the dataset's cap and the asker's
quota (exit 3 when it does not fit: nothing spent, nothing drawn), drawn by OpenDP's exact samplers, and ``--out DIR``
receives the table (release.csv), its signed statement, the plan, a notebook and a script that reproduce it with
OpenDP, and a draft record for OpenDP's deployments registry.

The built-in data (visitors' quota, no sign-in) is charged to the built-in patients' cap: ``visits`` holds the same
patients, 1 to 10 rows each. ``--dataset`` is a registered dataset (an analyst's key from $DP_EXPLORER_ANALYST_KEY
with ``--analyst``); ``--data`` a CSV, charged to the registered datasets it is, or the caller's own rows.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .. import export, limits, storage
from ..budgets import quotas, registry, visitors
from ..data import datasets
from ..errors import DPError
from ..plan import design, forms, model, run
from ..plan import registry as deployments
from . import _who
from ._args import int_arg, seed_arg

TEMPLATE = forms.EXAMPLES["visits"]


def register(sub) -> None:
    p = sub.add_parser("plan", help="plan several statistics on one budget, preview their error, release them once")
    p.add_argument("--template", action="store_true", help="write an example plan (for the built-in visits)")
    p.add_argument("--plan", metavar="FILE", help="the plan: a JSON or YAML file")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--builtin", choices=list(run.BUILTIN_KINDS), help="the built-in synthetic medical data")
    src.add_argument("--dataset", help="a registered dataset's name (`python -m dpcore budget list`)")
    src.add_argument("--data", help="a CSV file (charged to the registered datasets it is, else your own rows)")
    p.add_argument(
        "--n",
        type=int_arg(limits.QUERY_CONSOLE_MIN_ROWS, limits.QUERY_CONSOLE_MAX_ROWS // datasets.VISITS_MAX),
        default=2_000,
        help="with --builtin: patients (default 2,000)",
    )
    p.add_argument("--seed", type=seed_arg, default=0, help="with --builtin: the population's seed (default 0)")
    p.add_argument("--analyst", default=None, help="who asks (with $DP_EXPLORER_ANALYST_KEY); default: a visitor")
    p.add_argument("--preview", action="store_true", help="each statistic's ε and 95%% error; reads and spends nothing")
    p.add_argument("--out", metavar="DIR|FILE", help="the release's folder (with --template: the plan file)")
    p.set_defaults(func=run_command)


def _preview(d: design.PlanDesign) -> dict:
    return {
        "epsilon": d.epsilon,
        "delta": 0.0,
        "level": d.level_words(),
        "epsilon_per_person": d.epsilon_per_person,
        "epsilon_per_row": d.epsilon_per_row,
        "charged": run.charged_epsilon(d),
        "split": d.split_words(),
        "statistics": [
            {
                "label": x.statistic.label(),
                "epsilon": x.epsilon,
                "cells": x.cells,
                "error_95": x.error_text(),
                "relative_error_95": x.relative,
            }
            for x in d.designs
        ],
        "spent": 0.0,
        "note": "computed from the plan's public numbers alone: nothing was read and nothing spent",
    }


def _out_folder(text: str) -> Path:
    """The release's folder, made now and checked writable before anything is charged."""
    out = Path(text)
    if out.exists() and not out.is_dir():
        raise DPError(f"--out {text} is a file; give a folder for the release's files")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DPError(
            f"could not make the folder --out {text} ({exc.strerror or 'refused'}); give one you can write"
        ) from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise DPError(f"--out {text}: this folder cannot be written; give one you can write")
    return out


def run_command(args) -> dict:
    if args.template:
        text = model.dumps(
            model.Plan.from_dict(TEMPLATE), "yaml" if str(args.out or "").endswith((".yaml", ".yml")) else "json"
        )
        if args.out:
            storage.write_user_file(args.out, text.encode(), option="--out")
            return {"out": args.out}
        return model.Plan.from_dict(TEMPLATE).to_dict()
    if not args.plan:
        raise DPError("give the plan with --plan FILE (`plan --template` writes one to start from)")
    raw = storage.read_user_file(args.plan, max_bytes=limits.PLAN_FILE_MAX_BYTES, what="plan file", option="--plan")
    try:
        plan = model.loads(raw, args.plan)
    except UnicodeDecodeError:
        raise DPError(f"{args.plan} is not UTF-8 text (a plan is a JSON or YAML file)") from None
    d = design.design(plan)
    if args.preview:
        return _preview(d)
    if not (args.builtin or args.dataset or args.data):
        raise DPError("name the data: --builtin patients|visits, --dataset NAME or --data FILE (or --preview)")
    if not args.out:
        raise DPError("--out DIR receives the release's files (the table, its statement, the code)")
    out = _out_folder(args.out)  # before anything is charged: a release whose files cannot be written is lost
    who = _who.asker(args.analyst)
    data_name = None
    if args.builtin:
        outcome = run.release_builtin(plan, args.builtin, args.n, args.seed, who)
    elif args.dataset:
        info = visitors.resolve(args.dataset)
        quotas.status(who, info["fingerprint"], with_history=False)  # no quota: refused before the data is read
        df = registry.load(info)
        outcome = run.release_on_dataset(
            plan, df, who, info["fingerprint"], subject=f"registered dataset {info['name']}", source="dataset"
        )
        data_name = f"{info['name']}.csv"
    else:
        df = datasets.read_csv(args.data)
        data_name = Path(args.data).name
        outcome = run.release_upload(plan, df, who, name=data_name)
    files = export.plan_files(outcome, n=args.n, seed=args.seed, data_name=data_name)
    for name, data in files.items():
        storage.atomic_write_bytes(out / name, data)
    st = json.loads(files["release.statement.json"])
    ctx = deployments.context(run.charged_epsilon(outcome.release.design))
    return {
        **_preview(outcome.release.design),
        "spent": outcome.charge.get("epsilon_spent") if outcome.charge else 0.0,
        "reused": outcome.reused,
        "budget": outcome.budget,
        "out": str(out),
        "files": sorted(files),
        "rows": len(outcome.release.rows),
        "nist_hazards": [f["code"] for f in st["nist"]["flags"] if f["kind"] == "hazard"],
        "registry": ctx.words(),
        "note": "released once: the table, its signed statement and the code are in the folder",
    }
