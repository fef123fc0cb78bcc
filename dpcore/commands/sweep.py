"""`python -m dpcore sweep [--dataset D] [--model M] [--epsilons 0.25,0.5,...] [--seeds K]
[--attacks threshold,loss,lira] [--shadows N] [--canaries M] [--size-fractions 0.25,0.5] [--reproducible-noise]
[--json OUT]`: a privacy–utility sweep with membership-inference attacks, a canary audit (one-run, Steinke et al.
2023) and a training-set-size control. No options: the page's default demo (about two minutes on 2 cores)."""

from __future__ import annotations

import sys

from ..errors import DPError
from ..serialize import check_json_path, write_json
from ..sweep import runs as sweep_runs, summary as sweep_summary
from ..sweep.config import SweepConfig

_D = SweepConfig()


def _floats(text: str, option: str = "--epsilons") -> tuple:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise DPError(f"{option} must be comma-separated numbers like 0.5,1,2, got {text!r}") from None


def register(sub) -> None:
    p = sub.add_parser("sweep", help="privacy–utility sweep: accuracy, membership inference and empirical ε per ε")
    p.add_argument("--dataset", default=_D.dataset, help=f"digits, breast_cancer, medical, ... (default {_D.dataset})")
    p.add_argument("--target", default=None, help="target column (medical / csv datasets)")
    p.add_argument("--model", default=_D.model, choices=["logreg", "mlp", "cnn"], help=f"default {_D.model}")
    p.add_argument("--epsilons", default=",".join(f"{e:g}" for e in _D.epsilons),
                   help="comma-separated ε grid (default %(default)s)")
    p.add_argument("--seeds", type=int, default=_D.seeds, help="models per ε (error bars; default %(default)s)")
    p.add_argument("--attacks", default=",".join(_D.attacks), help="threshold,loss,lira (default %(default)s)")
    p.add_argument("--shadows", type=int, default=_D.shadows, help="LiRA shadow models (default %(default)s)")
    p.add_argument("--epochs", type=int, default=_D.epochs, help="default %(default)s")
    p.add_argument("--batch-size", type=int, default=_D.batch_size, help="expected batch size (default %(default)s)")
    p.add_argument("--lr", type=float, default=_D.lr, help="learning rate (default %(default)s)")
    p.add_argument("--train-size", type=int, default=_D.train_size, help="training rows (default: all)")
    p.add_argument("--canaries", type=int, default=_D.canaries,
                   help="mislabelled canaries for the one-run audit, each in with probability 1/2 (default %(default)s)")
    p.add_argument("--size-fractions", default=",".join(f"{f:g}" for f in _D.size_fractions),
                   help="training-set-size control: fractions of the rows, '' for none (default %(default)s)")
    p.add_argument("--reproducible-noise", action="store_true",
                   help="draw sampling, noise and canary coins from the seeds (tests/teaching): NOT a DP release")
    p.add_argument("--delta", type=float, default=_D.delta, help="default %(default)s")
    p.add_argument("--workers", type=int, default=2,
                   help="parallel worker processes via background jobs; 0 = one after another here (default 2)")
    # --- engineer H (issue 17): executor and device ---
    p.add_argument("--executor", default="local", choices=["local", "ray"],
                   help="local worker processes (default) or a Ray cluster (needs requirements-ray.txt)")
    p.add_argument("--ray-address", default=None,
                   help="Ray cluster HOST:PORT for --executor ray (default: $DP_EXPLORER_RAY_ADDRESS)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                   help="training device: auto = a CUDA GPU when present, else CPU (default auto)")
    p.add_argument("--json", dest="json_out", default=None, help="also write the JSON to this file")
    p.set_defaults(func=run)


def run(args) -> dict:
    check_json_path(args.json_out)  # a bad --json target fails now, not after the sweep
    cfg = SweepConfig(
        dataset=args.dataset, target=args.target, model=args.model, epsilons=_floats(args.epsilons),
        seeds=args.seeds, attacks=tuple(a.strip() for a in args.attacks.split(",")), shadows=args.shadows,
        epochs=args.epochs, train_size=args.train_size, batch_size=args.batch_size, lr=args.lr, delta=args.delta,
        hidden=_D.hidden if args.model == "mlp" else None, device=args.device, canaries=args.canaries,
        size_fractions=_floats(args.size_fractions, "--size-fractions"), reproducible_noise=args.reproducible_noise,
    ).validate()
    from ..limits import WORKERS_MAX

    if not 0 <= args.workers <= WORKERS_MAX:  # refused before any job is submitted
        raise DPError(f"--workers must be 0 (inline) to {WORKERS_MAX} processes, got {args.workers}")

    seen = []

    def tell(s):
        if not seen or seen[-1] != s["done"]:
            seen.append(s["done"])
            print(f"[sweep] {s['done']}/{s['total']} points done", file=sys.stderr, flush=True)

    from ..jobs.owners import CLI_OWNER

    executor = None
    if args.executor == "ray":
        from ..jobs.executors import RayExecutor

        executor = RayExecutor(args.ray_address)
        args.workers = max(args.workers, 1)
    if args.workers == 0:
        result = sweep_runs.run_sweep_inline(
            cfg, owner=CLI_OWNER, progress=lambda i, n, e, s: print(f"[sweep] point {i + 1}/{n}: "
                                                   f"{'baseline' if e is None else f'ε={e:g}'} seed {s}",
                                                   file=sys.stderr, flush=True))
    else:
        result = sweep_runs.run_sweep_parallel(cfg, owner=CLI_OWNER, workers=args.workers, progress=tell,
                                               executor=executor)
    out = sweep_summary.cli_json(result)
    bad = sweep_summary.violations(result)
    if bad:
        out["violations"] = bad
        print(f"warning: {len(bad)} point(s) have an empirical ε above the claimed ε — please report",
              file=sys.stderr)
    if out.get("release_label"):
        print(f"warning: {out['release_label']}", file=sys.stderr)
    if args.json_out:
        write_json(args.json_out, out)
    return out
