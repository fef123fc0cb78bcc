"""`python -m dpcore train --dataset {medical,breast_cancer,digits,csv:PATH,mnist:PATH} [--target COL]
--model {logreg,mlp,cnn} --epsilon E|none [--delta D] [--noise-multiplier S] [--epochs N] [--batch-size B]
[--lr LR] [--clip C] [--accountant prv|rdp] [--seed K] [--reproducible-noise] [--bounds COL=LOW:HIGH ...]
[--bounds-file FILE.json] [--json OUT] [--background]`

Trains one model (DP-SGD with Opacus, or the non-private baseline with ``--epsilon none``) and prints
its metrics as JSON. The run is recorded as a job (``python -m dpcore jobs list``). A CSV whose rows are (or
nearly are) a registered dataset's is charged to that dataset's cap and the analyst's quota before the run
(``--analyst NAME`` with $DP_EXPLORER_ANALYST_KEY; exit 3 when either would be exceeded, nothing run); a failed run
is refunded, a finished one never. Other CSVs are the uploader's own: nothing is charged, and the JSON says so. ``--background``
submits it to the background workers and prints the job id at once. Unset hyper-parameters take the
recommended values for the dataset and model. ``--bounds``/``--bounds-file`` declare a CSV's public bounds
(:mod:`dpcore.training.bounds`): with every column declared, nothing about the scaling is read from the rows.

The seed fixes the data split and the initial weights; Poisson sampling and noise come from secret seeds that
are never stored. ``--reproducible-noise`` draws them from the seed (tests, teaching): the run is then labelled
"reproducible noise: not a DP release".
"""

from __future__ import annotations

import sys

from ..budgets import charged
from ..errors import DPError
from ..jobs import registry, runner, store, workers
from ..jobs.executors import resolve_device
from ..jobs.owners import CLI_OWNER
from ..serialize import check_json_path, write_json
from ..training import bounds
from ..training.config import GRAD_SAMPLE_MODES, MODELS, OPTIMIZERS, TrainConfig, recommended
from ..training.job import admit, preflight
from ..training.results import TrainMetrics
from . import _who
from ._args import seed_arg


def _epsilon(text: str):
    if str(text).strip().lower() in ("none", "inf", "nonprivate", "non-private"):
        return None
    try:
        return float(text)
    except ValueError:
        raise DPError(f"--epsilon must be a number > 0 or 'none', got {text!r}") from None


def register(sub) -> None:
    p = sub.add_parser("train", help="train a model with DP-SGD (Opacus) or the non-private baseline")
    p.add_argument(
        "--dataset",
        required=True,
        help="medical, breast_cancer, digits, csv:PATH or mnist:PATH (a local keras mnist.npz)",
    )
    p.add_argument("--target", default=None, help="label column: medical has_rare_disease|diagnosis; csv: a column")
    p.add_argument("--model", required=True, choices=list(MODELS), help="model to train")
    p.add_argument(
        "--epsilon",
        required=True,
        type=_epsilon,
        help="target ε (noise calibrated for the planned steps), or 'none' (non-private, or with "
        "--noise-multiplier: ε is computed)",
    )
    p.add_argument("--delta", type=float, default=1e-5, help="δ (default 1e-5; keep it below 1/rows)")
    p.add_argument("--noise-multiplier", type=float, default=None, help="σ instead of a target ε (with --epsilon none)")
    p.add_argument("--epochs", type=int, default=None, help="epochs (default: recommended for dataset/model)")
    p.add_argument("--batch-size", type=int, default=None, help="expected batch size (Poisson sampling)")
    p.add_argument("--lr", type=float, default=None, help="learning rate")
    p.add_argument("--clip", type=float, default=None, help="max per-sample gradient norm C")
    p.add_argument("--optimizer", choices=list(OPTIMIZERS), default=None, help="sgd or adam")
    p.add_argument("--accountant", choices=["prv", "rdp"], default="prv", help="privacy accountant (default prv)")
    p.add_argument(
        "--seed",
        type=seed_arg,
        default=0,
        help="seed of the data split and initial weights (sampling and noise stay secret)",
    )
    p.add_argument(
        "--reproducible-noise",
        action="store_true",
        help="draw sampling and noise from --seed too (tests/teaching): NOT a DP release",
    )
    p.add_argument("--train-size", type=int, default=None, help="use only this many training rows")
    p.add_argument("--hidden", type=int, default=None, help="hidden units of the mlp (default 32)")
    p.add_argument(
        "--grad-sample-mode",
        default="auto",
        choices=list(GRAD_SAMPLE_MODES),
        help="per-sample gradient mode (default: fastest measured for the model)",
    )
    p.add_argument(
        "--device",
        default="auto",
        choices=["auto", "cpu", "cuda"],
        help="auto = a CUDA GPU when present, else CPU; cuda without one is an error (default auto)",
    )
    p.add_argument(
        "--canaries",
        type=int,
        default=None,
        help="canaries of the run's own one-run audit (default for a DP run: a tenth of the training rows, at "
        "most 100; 0 = no audit)",
    )
    add_bounds_options(p)
    p.add_argument("--json", dest="json_out", default=None, help="also write the JSON to this file")
    p.add_argument("--background", action="store_true", help="submit as a background job and print its id")
    add_analyst_option(p)
    p.set_defaults(func=run)


def add_analyst_option(p) -> None:
    """``--analyst``: who releases from a registered dataset's rows (train, sweep and synth share it)."""
    p.add_argument(
        "--analyst",
        default=None,
        help="who releases (with $DP_EXPLORER_ANALYST_KEY): needed when the CSV is a registered dataset's rows, "
        "which are charged to its cap and your quota",
    )


def add_bounds_options(p) -> None:
    """``--bounds`` and ``--bounds-file``: an uploaded CSV's public bounds (train and sweep share them)."""
    p.add_argument(
        "--bounds",
        action="append",
        default=[],
        metavar="COL=LOW:HIGH",
        help="public bounds of a CSV column, repeatable: age=0:120 (a range), sex=F,M (categories; for the "
        "target: its classes) or income=from-data (learned from the rows: not covered by ε). A column "
        "left out is scaled as before (a known public range, or its own min/max: a leak, listed)",
    )
    p.add_argument(
        "--bounds-file",
        default=None,
        metavar="FILE.json",
        help='public bounds of every column as JSON: {"age": [0, 120], "sex": ["F", "M"], '
        '"label": ["no", "yes"]}; --bounds entries replace its entries',
    )


def params_from_args(args) -> dict:
    rec = recommended(args.dataset, args.model)
    params = {
        "dataset": args.dataset,
        "target": args.target,
        "model": args.model,
        "epsilon": args.epsilon,
        "delta": args.delta,
        "noise_multiplier": args.noise_multiplier,
        "accountant": args.accountant,
        "seed": args.seed,
        "train_size": args.train_size,
        "grad_sample_mode": args.grad_sample_mode,
        "device": args.device,
        "reproducible_noise": bool(getattr(args, "reproducible_noise", False)),
        "bounds": bounds.from_cli(args.bounds, args.bounds_file),
    }
    if getattr(args, "canaries", None) is not None:
        params["canaries"] = args.canaries
    for key in ("epochs", "batch_size", "lr", "clip", "optimizer", "hidden"):
        value = getattr(args, key)
        if value is not None:
            params[key] = value
        elif key in rec:
            params[key] = rec[key]
    if args.device == "cuda":  # runs on this machine: no GPU here is a clear error before any job is queued
        resolve_device("cuda")
    return TrainConfig.from_dict(params).to_dict()  # validates: bad input fails here, before a job


def run(args):
    check_json_path(args.json_out)  # a bad --json target fails now, not after the run
    who = _who.asker(args.analyst)
    params = params_from_args(args)
    label = f"{params['model']} on {params['dataset']} " + (
        f"ε={params['epsilon']:g}"
        if params["epsilon"] is not None
        else (f"σ={params['noise_multiplier']:g}" if params["noise_multiplier"] else "non-private")
    )
    adm = admit(who, params, label=f"DP training run: {label}")  # the gate, before anything reads the data further
    try:
        preflight(params)  # bad data / target / batch size: one clear line, before any job exists
    except BaseException:
        adm.refund("the run was refused before it was queued (its settings do not fit the data)")
        raise
    if args.background:
        (job_id,) = charged.submit(
            adm,
            lambda: [store.submit(registry.TRAIN, params, owner=CLI_OWNER, group=registry.TRAIN_GROUP, label=label)],
        )
        workers.ensure_workers()
        out = {
            "job_id": job_id,
            "status": "queued",
            "show": f"python -m dpcore jobs show {job_id}",
            "budget": adm.block(),
        }
        if args.json_out:
            write_json(args.json_out, out)
        return out
    print(f"[train] {label} ...", file=sys.stderr, flush=True)
    tied = []

    def submitted(job_id: str) -> None:
        charged.tie(adm, [job_id])  # from here on the job's end settles the charge
        tied.append(job_id)

    try:
        result = runner.run_inline(
            registry.TRAIN, params, owner=CLI_OWNER, group=registry.TRAIN_GROUP, label=label, submitted=submitted
        )
    except BaseException:
        if not tied:
            adm.refund("the run was not recorded as a job: nothing ran")
        raise
    result = {**result, "budget": adm.block()}
    m = TrainMetrics.from_dict(result)
    for w in m.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if m.release_label:
        print(f"warning: {m.release_label}", file=sys.stderr)
    if args.json_out:
        write_json(args.json_out, result)
    return result
