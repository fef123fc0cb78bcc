"""`python -m dpcore sweep [--dataset D | --data FILE.csv --target COL [--bounds COL=LOW:HIGH ...] [--bounds-file F]
[--analyst NAME]]
[--model M] [--epsilons 0.25,0.5,...] [--seeds K] [--attacks threshold,loss,lira,rmia] [--shadows N] [--canaries M]
[--size-fractions 0.25,0.5] [--reproducible-noise] [--json OUT]`: a privacy–utility sweep with membership-inference
attacks, a canary audit (one-run, Steinke et al. 2023) and a training-set-size control. No options: the page's default
demo (about two minutes on 2 cores). ``--data``: your own CSV with the table defaults
(:data:`dpcore.sweep.config.TABLE_DEFAULTS`), its public bounds as for ``train``. A CSV whose rows are (or nearly
are) a registered dataset's is charged — the composition of its DP points — to that dataset's cap and the analyst's
quota before any point runs (exit 3 when either would be exceeded); a point that fails is refunded, a finished one
never."""

from __future__ import annotations

import sys
from pathlib import Path

from ..budgets import charged
from ..errors import DPError
from ..jobs.executors import RayExecutor
from ..jobs.owners import CLI_OWNER, Caller
from ..limits import WORKERS_MAX
from ..serialize import check_json_path, write_json
from ..sweep import budget
from ..sweep import runs as sweep_runs
from ..sweep import summary as sweep_summary
from ..sweep.config import TABLE_DEFAULTS, SweepConfig, for_upload
from ..training import bounds
from . import _who
from .train import add_analyst_option, add_bounds_options

_D = SweepConfig()
_T = SweepConfig(**TABLE_DEFAULTS)


def _csv(values) -> str:
    return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values)


def _floats(text: str, option: str = "--epsilons") -> tuple:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise DPError(f"{option} must be comma-separated numbers like 0.5,1,2, got {text!r}") from None


def register(sub) -> None:
    p = sub.add_parser("sweep", help="privacy–utility sweep: accuracy, membership inference and empirical ε per ε")
    p.add_argument("--dataset", default=None, help=f"digits, breast_cancer, medical, ... (default {_D.dataset})")
    p.add_argument(
        "--data",
        default=None,
        metavar="FILE.csv",
        help="your own CSV (with --target): the table defaults below, its bounds from --bounds",
    )
    p.add_argument("--target", default=None, help="target column (medical / csv datasets)")
    p.add_argument(
        "--model", default=None, choices=["logreg", "mlp", "cnn"], help=f"default {_D.model} (--data: {_T.model})"
    )
    p.add_argument(
        "--epsilons",
        default=None,
        help=f"comma-separated ε grid (default {_csv(_D.epsilons)}; --data: {_csv(_T.epsilons)})",
    )
    p.add_argument(
        "--seeds", type=int, default=None, help=f"models per ε (error bars; default {_D.seeds}; --data: {_T.seeds})"
    )
    p.add_argument(
        "--attacks",
        default=None,
        help=f"of threshold,loss,lira,rmia (default {_csv(_D.attacks)}; --data: {_csv(_T.attacks)})",
    )
    p.add_argument(
        "--shadows",
        type=int,
        default=None,
        help=f"shadow (reference) models of LiRA and RMIA (default {_D.shadows}; --data: {_T.shadows})",
    )
    p.add_argument("--epochs", type=int, default=None, help=f"default {_D.epochs} (--data: {_T.epochs})")
    p.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help=f"expected batch size (default {_D.batch_size}; --data: {_T.batch_size})",
    )
    p.add_argument("--lr", type=float, default=None, help=f"learning rate (default {_D.lr}; --data: {_T.lr})")
    p.add_argument("--train-size", type=int, default=None, help="training rows (default: all)")
    p.add_argument(
        "--canaries",
        type=int,
        default=None,
        help=f"canaries (public random inputs, random labels) for the one-run audit, each in with probability 1/2 (default "
        f"{_D.canaries}; --data: {_T.canaries})",
    )
    p.add_argument(
        "--size-fractions",
        default=None,
        help=f"training-set-size control: fractions of the rows, '' for none (default "
        f"{_csv(_D.size_fractions)}; --data: none)",
    ).empty_ok = True  # '' is a value here ("none"), not "left out" (dpcore.cli refuses empty values elsewhere)
    add_bounds_options(p)
    p.add_argument(
        "--reproducible-noise",
        action="store_true",
        help="draw sampling, noise and canary coins from the seeds (tests/teaching): NOT a DP release",
    )
    p.add_argument("--delta", type=float, default=_D.delta, help="default %(default)s")
    p.add_argument(
        "--workers",
        type=int,
        default=2,
        help="parallel worker processes via background jobs; 0 = one after another here (default 2)",
    )
    # --- executor and device ---
    p.add_argument(
        "--executor",
        default="local",
        choices=["local", "ray"],
        help="local worker processes (default) or a Ray cluster (needs requirements-ray.txt)",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        help="Ray cluster HOST:PORT for --executor ray (default: $DP_EXPLORER_RAY_ADDRESS)",
    )
    p.add_argument(
        "--device",
        default="auto",
        choices=["auto", "cpu", "cuda"],
        help="training device: auto = a CUDA GPU when present, else CPU (default auto)",
    )
    p.add_argument("--json", dest="json_out", default=None, help="also write the JSON to this file")
    add_analyst_option(p)
    p.set_defaults(func=run)


def config_from_args(args) -> SweepConfig:
    """The sweep the options ask for: the demo's defaults, or with ``--data`` the table defaults and its bounds."""
    if args.data is not None and args.dataset is not None:
        raise DPError("give either --data FILE.csv (your table) or --dataset, not both")
    b = bounds.from_cli(args.bounds, args.bounds_file)
    if args.data is None and b is not None and not str(args.dataset or "").startswith("csv:"):
        raise DPError("--bounds are for your own CSV: give it with --data FILE.csv --target COLUMN")
    base = _T if args.data is not None else _D
    model = args.model or base.model
    given = {
        "model": model,
        "epsilons": None if args.epsilons is None else _floats(args.epsilons),
        "seeds": args.seeds,
        "shadows": args.shadows,
        "epochs": args.epochs,
        "train_size": args.train_size,
        "batch_size": args.batch_size,
        "lr": args.lr,
        "canaries": args.canaries,
        "attacks": None if args.attacks is None else tuple(a.strip() for a in args.attacks.split(",")),
        "size_fractions": None if args.size_fractions is None else _floats(args.size_fractions, "--size-fractions"),
    }
    settings = {k: v for k, v in given.items() if v is not None}
    settings.update(
        delta=args.delta,
        device=args.device,
        reproducible_noise=args.reproducible_noise,
        hidden=base.hidden if model == "mlp" else None,
    )
    if args.data is not None:
        if not args.target:
            raise DPError("--data needs --target COLUMN: the label to predict")
        return for_upload(args.data, args.target, bounds=b, upload_name=Path(args.data).name, **settings)
    return SweepConfig(dataset=args.dataset or _D.dataset, target=args.target, bounds=b, **settings).validate()


def run(args) -> dict:
    check_json_path(args.json_out)  # a bad --json target fails now, not after the sweep
    who = _who.asker(args.analyst)
    cfg = config_from_args(args)
    if not 0 <= args.workers <= WORKERS_MAX:  # refused before any job is submitted
        raise DPError(f"--workers must be 0 (inline) to {WORKERS_MAX} processes, got {args.workers}")
    adm = budget.admit(who, cfg)  # the gate: charged before any point runs
    tied: list[str] = []

    seen: list[int] = []

    def tell(s):
        if not seen or seen[-1] != s["done"]:
            seen.append(s["done"])
            print(f"[sweep] {s['done']}/{s['total']} points done", file=sys.stderr, flush=True)

    executor = None
    if args.executor == "ray":
        executor = RayExecutor(args.ray_address)
        args.workers = max(args.workers, 1)

    def queued(sweep_id: str) -> None:
        jobs = budget.point_jobs(cfg, sweep_runs.load(sweep_id, caller=Caller(CLI_OWNER)))
        charged.tie(adm, jobs)  # from here on each point's end settles its part
        tied.extend(jobs)

    try:
        if args.workers == 0:
            result = sweep_runs.run_sweep_inline(
                cfg,
                owner=CLI_OWNER,
                progress=lambda i, n, e, s: print(
                    f"[sweep] point {i + 1}/{n}: {'baseline' if e is None else f'ε={e:g}'} seed {s}",
                    file=sys.stderr,
                    flush=True,
                ),
            )
            adm.keep("the sweep finished: its points are released")
        else:
            result = sweep_runs.run_sweep_parallel(
                cfg, owner=CLI_OWNER, workers=args.workers, progress=tell, executor=executor, queued=queued
            )
    except BaseException:
        if not tied:  # nothing was returned or stored: no point of it left the server
            adm.refund("the sweep stopped before it finished (run here) or before its points were queued")
        raise
    out = sweep_summary.cli_json(result)
    out["budget"] = adm.block()
    bad = sweep_summary.violations(result)
    if bad:
        out["violations"] = bad
        print(f"warning: {len(bad)} point(s) have an empirical ε above the claimed ε — please report", file=sys.stderr)
    if out.get("release_label"):
        print(f"warning: {out['release_label']}", file=sys.stderr)
    if args.json_out:
        write_json(args.json_out, out)
    return out
