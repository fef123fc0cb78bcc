"""Benchmark: the first privacy–utility sweep a user runs on their own table.

Writes a synthetic 5,000-row × 20-column CSV (19 numeric features and one text column, a binary label with 10% of
the labels flipped: a model can memorise them), declares every column's public bounds, and runs the upload's default
sweep (:data:`dpcore.sweep.config.TABLE_DEFAULTS`) as background jobs on 2 local worker processes, cold (worker
start-up included: what a user waits for). Prints the wall time, the seconds per model (median), then the headline a
user reads: the baseline's and each ε's median test accuracy, what DP costs, the largest ε proved by any audit, and
the time of each phase of one point.

    .venv/bin/python bench/upload_sweep.py [--workers 2] [--rows 5000] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("DP_EXPLORER_HOME", tempfile.mkdtemp(prefix="bench-upload-sweep-"))
warnings.simplefilter("ignore")


def table(rows: int, path: Path) -> dict:
    """The synthetic upload and its public bounds (declared: nothing read from the rows)."""
    import numpy as np
    import pandas as pd
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=rows, n_features=19, n_informative=8, flip_y=0.1, random_state=0)
    df = pd.DataFrame(np.round(X * 10 + 50, 2), columns=[f"measure_{i:02d}" for i in range(19)])
    df["region"] = np.random.default_rng(0).choice(["north", "south", "east", "west"], rows)
    df["outcome"] = np.where(y == 1, "yes", "no")
    df.to_csv(path, index=False)
    bounds = {c: {"lower": 0.0, "upper": 100.0} for c in df.columns[:19]}
    bounds.update(region={"categories": ["north", "south", "east", "west"]}, outcome={"categories": ["no", "yes"]})
    return bounds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--quick", action="store_true", help="300 rows, one ε, one seed, one epoch: a smoke test")
    args = ap.parse_args()
    small = dict(epsilons=(1.0,), seeds=1, epochs=1, attacks=("threshold", "loss"), canaries=20) if args.quick else {}
    if args.quick:
        args.rows = 300

    import torch

    torch.set_num_threads(1)
    from dpcore.jobs import workers
    from dpcore.sweep import runs as sweep_runs
    from dpcore.sweep import summary as sweep_summary
    from dpcore.sweep.config import for_upload
    from dpcore.training.data import save_upload

    src = Path(tempfile.mkdtemp()) / "my_table.csv"
    b = table(args.rows, src)
    stored = save_upload(src.read_bytes())  # as the page stores an upload for its jobs
    cfg = for_upload(stored, "outcome", bounds=b, upload_name="my_table.csv", **small)
    n = len(cfg.point_params())
    t0 = time.perf_counter()
    from dpcore.jobs.owners import CLI_OWNER

    res = sweep_runs.run_sweep_parallel(cfg, owner=CLI_OWNER, workers=args.workers)
    wall = time.perf_counter() - t0
    workers.shutdown_workers()
    pts = [*(res.get("baselines") or [res["baseline"]]), *res["points"]]
    print(
        f"upload sweep: {args.rows:,} rows × 20 columns, {cfg.model} (hidden {cfg.hidden}), {cfg.epochs} epochs, "
        f"{len(cfg.epsilons)} ε × {cfg.seeds} seeds + {cfg.seeds} baselines = {n} models, attacks "
        f"{','.join(cfg.attacks)} ({cfg.shadows} shadows), {cfg.canaries} canaries"
    )
    print(
        f"wall time, {args.workers} cold worker processes (start-up and imports included): {wall:6.1f} s "
        f"(target: minutes on 2 cores)"
    )
    print(
        f"seconds per model (training + shadows + attacks + audit), median: "
        f"{statistics.median(p['seconds'] for p in pts):.1f} s; training alone {statistics.median(p['train_seconds'] for p in pts):.1f} s"
    )
    base = sweep_summary.baseline_summary(res)
    print(
        f"baseline (no DP) median test accuracy: {base['accuracy_median']:.1%}; proved ε ≥ "
        f"{base.get('empirical_epsilon') or 0:.2f} (canaries, {base['empirical_epsilon_k']} models, 95%)"
    )
    for r in sweep_summary.by_epsilon(res):
        print(
            f"  ε = {r['epsilon']:g}: median accuracy {r['accuracy_median']:.1%} (DP costs "
            f"{(base['accuracy_median'] - r['accuracy_median']) * 100:+.1f} points), proved ε ≥ "
            f"{r.get('empirical_epsilon') or 0:.3f} of a claimed {r['epsilon_spent']:.3f}"
        )
    print(f"violations (a proved ε above its claim): {len(sweep_summary.violations(res))}")


if __name__ == "__main__":
    main()
