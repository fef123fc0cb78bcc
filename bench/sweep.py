"""Benchmark: the default privacy–utility demo sweep (6 ε + baseline, threshold and loss attacks).

Prints the wall time of the sweep as background jobs on 2 worker processes (worker start-up included),
the time of the same trainings one after another in this process, and their ratio; plus the demo's
headline numbers (baseline loss-attack AUC, and whether every empirical ε stays below its claim).

    .venv/bin/python bench/sweep.py [--workers 2] [--seeds 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DP_EXPLORER_HOME", tempfile.mkdtemp(prefix="bench-sweep-"))
warnings.simplefilter("ignore")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=1)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    from dpcore import jobs, sweep

    cfg = sweep.SweepConfig(seeds=args.seeds).validate()
    n = len(cfg.point_params())
    t0 = time.perf_counter()
    sweep.run_sweep_parallel(cfg, workers=args.workers)
    t_cold = time.perf_counter() - t0
    # Second run: the workers are already up with torch/Opacus imported, as they are in the running app.
    t0 = time.perf_counter()
    par = sweep.run_sweep_parallel(cfg, workers=args.workers)
    t_par = time.perf_counter() - t0
    jobs.shutdown_workers()

    sweep.run_point(cfg.point_params()[0])  # warm this process the same way (imports)
    t0 = time.perf_counter()
    seq = sweep.run_sweep_inline(cfg, store=False)
    t_seq = time.perf_counter() - t0

    base = par["baseline"]
    print(f"default demo: {cfg.dataset} {cfg.model}, {cfg.train_size} training rows, {cfg.epochs} epochs, "
          f"{len(cfg.epsilons)} ε × {cfg.seeds} seed(s) + baseline = {n} models, attacks {','.join(cfg.attacks)}")
    print(f"parallel, {args.workers} cold worker processes (start-up + imports included): {t_cold:6.1f} s")
    print(f"parallel, {args.workers} warm worker processes (as in the running app):    {t_par:6.1f} s")
    print(f"one after another in one warm process:                        {t_seq:6.1f} s")
    print(f"ratio sequential / parallel (warm): {t_seq / t_par:.2f}x;  sequential / parallel (cold): "
          f"{t_seq / t_cold:.2f}x")
    print(f"baseline: test accuracy {base['test_accuracy']:.3f}, loss-attack AUC {base['mia']['loss']['auc']:.3f} "
          f"(target >= 0.6)")
    for p in par["points"]:
        e = p["empirical_epsilon"]
        print(f"  ε = {p['epsilon']:<5g} acc {p['test_accuracy']:.3f}  loss AUC {p['mia']['loss']['auc']:.3f}  "
              f"empirical ε ≥ {e['lower_bound']:.3f} (claimed {e['claimed']:.3f}, max certifiable "
              f"{e['max_certifiable']:.2f})")
    bad = sweep.violations(par) + sweep.violations(seq)
    print("truth check: every empirical ε ≤ claimed ε:", "OK" if not bad else f"VIOLATED {bad}")
    same = all(abs(a["test_accuracy"] - b["test_accuracy"]) < 1e-9 for a, b in zip(par["points"], seq["points"]))
    print("parallel and sequential runs give identical accuracies:", same)


if __name__ == "__main__":
    main()
