"""Benchmark: the default privacy–utility demo (``python -m dpcore sweep`` with no arguments; the page's Start).

Prints the wall time of the default sweep as background jobs on 2 local worker processes (worker start-up
included: what a user waits for), then the demo's headline figures checked against their targets:
non-private accuracy >= 0.95, DP median accuracy >= 0.75 at ε = 1 and >= 0.90 at ε = 8, the non-private
model caught by the canary audit (TPR at 1% FPR >= 0.10, empirical ε >= 1.0), every DP bound below its
claimed ε, and DP costing less accuracy with more training rows.

    .venv/bin/python bench/sweep.py [--workers 2] [--sequential] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import warnings

from dpcore.jobs.owners import CLI_OWNER as OWNER

os.environ.setdefault("DP_EXPLORER_HOME", tempfile.mkdtemp(prefix="bench-sweep-"))
warnings.simplefilter("ignore")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--sequential", action="store_true", help="also time the same sweep in this one process")
    ap.add_argument("--quick", action="store_true", help="one ε, one seed, one epoch: a smoke test (targets MISS)")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    from dpcore.jobs import workers
    from dpcore.sweep import runs as sweep_runs
    from dpcore.sweep import summary as sweep_summary
    from dpcore.sweep.config import SweepConfig

    cfg = (
        SweepConfig(epsilons=(1.0,), seeds=1, epochs=1, hidden=8, attacks=("threshold", "loss"), size_fractions=())
        if args.quick
        else SweepConfig()
    ).validate()
    n = len(cfg.point_params())
    t0 = time.perf_counter()
    res = sweep_runs.run_sweep_parallel(cfg, workers=args.workers, owner=OWNER)
    t_par = time.perf_counter() - t0
    workers.shutdown_workers()
    print(
        f"default demo: {cfg.dataset} {cfg.model} (hidden {cfg.hidden}), {cfg.n_rows()} training rows, "
        f"{cfg.epochs} epochs, {len(cfg.epsilons)} ε × {cfg.seeds} seeds + baselines + size control "
        f"{list(cfg.size_fractions)} = {n} models, {cfg.canaries} canaries, attacks {','.join(cfg.attacks)}"
    )
    print(
        f"wall time, {args.workers} cold worker processes (start-up + imports included): {t_par:6.1f} s "
        f"(target: about 120 s on 2 cores)"
    )
    if args.sequential:
        t0 = time.perf_counter()
        sweep_runs.run_sweep_inline(cfg, store=False, owner=OWNER)
        t_seq = time.perf_counter() - t0
        print(f"one after another in this process: {t_seq:6.1f} s; ratio sequential / parallel {t_seq / t_par:.2f}x")

    bases = res.get("baselines") or [res["baseline"]]
    acc = [b["test_accuracy"] for b in bases]
    tpr = [b["mia"]["canary"]["tpr_at_1pct_fpr"] for b in bases]
    lbs = [b["empirical_epsilon"]["lower_bound"] for b in bases]
    ok = lambda c: "OK " if c else "MISS"  # noqa: E731
    print(f"{ok(min(acc) >= 0.95)} baseline accuracy per seed {[round(a, 3) for a in acc]} (target >= 0.95)")
    print(
        f"{ok(statistics.median(tpr) >= 0.10)} baseline canary TPR at 1% FPR {[round(t, 3) for t in tpr]} "
        f"(target >= 0.10)"
    )
    print(
        f"{ok(statistics.median(lbs) >= 1.0)} baseline empirical ε >= {[round(v, 2) for v in lbs]} per seed, each "
        f"95% alone (target >= 1.0); over all {len(lbs)} seeds at 95%: ε >= "
        f"{sweep_summary.baseline_summary(res)['empirical_epsilon'] or 0:.2f}"
    )
    for r in sweep_summary.by_epsilon(res):
        target = {1.0: 0.75, 8.0: 0.90}.get(r["epsilon"])
        tag = "    " if target is None else ok(r["accuracy_median"] >= target)
        print(
            f"{tag} ε = {r['epsilon']:<5g} median accuracy {r['accuracy_median']:.3f} "
            f"(mean {r['accuracy']:.3f} ± {r['accuracy_sd']:.3f}, {r['n']} seeds)"
            + (f" target >= {target}" if target else "")
            + f"; canary AUC {r['canary.auc']:.3f}, proved ε >= {r['empirical_epsilon'] or 0:.2f} over "
            f"{r['empirical_epsilon_k']} seeds at 95% (claimed {r['epsilon_spent']:.2f})"
        )
    bad = sweep_summary.violations(res)
    print(f"{ok(not bad)} every empirical ε <= claimed ε" + ("" if not bad else f": VIOLATED {bad}"))
    rows = sweep_summary.size_control(res)
    for r in rows:
        print(
            f"     size {r['fraction']:.0%} ({r['n_train']} rows): baseline {r['baseline_accuracy']:.3f}, "
            f"DP ε = {r['epsilon']:g} {r['dp_accuracy']:.3f}, cost {r['cost']:.3f}"
        )
    costs = [r["cost"] for r in rows]
    print(f"{ok(len(costs) > 1 and costs[0] > costs[-1])} DP gets cheaper with more data")


if __name__ == "__main__":
    main()
