"""Benchmark: the default privacy–utility demo (``python -m dpcore sweep`` with no arguments; the page's Start).

Prints the wall time of the default sweep as background jobs on 2 local worker processes (worker start-up
included: what a user waits for) with where it went — from the job store: the wait for the first job to start,
the span of the jobs, the time after the last one; the CPU seconds of the workers and of this process (which
waits on the store as the CLI does) — and the load average beside it (CPU seconds are steadier than wall time on a
shared machine). Then the demo's headline figures checked against their targets: non-private accuracy >= 0.95, DP
median accuracy >= 0.75 at ε = 1 and >= 0.90 at ε = 8, the non-private model caught by the canary audit (TPR at 1%
FPR >= 0.10, empirical ε >= 1.0), every DP bound below its claimed ε, and DP costing less accuracy with more
training rows. Target (issue 32): at most 25 s on the quiet 2-core machine.

    .venv/bin/python bench/sweep.py [--workers 2] [--repeat 1] [--sequential] [--profile FILE] [--quick]

``--profile FILE``: also run the points one after another in this process under cProfile, write the stats to FILE
and print the functions that took the most (cumulative) time. ``--quick``: one ε, one seed, one epoch (a smoke
test: its targets MISS).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import warnings

# the store goes to a fresh folder: set before anything of dpcore is imported (it reads the variable when used, but
# a bench must not depend on that)
os.environ.setdefault("DP_EXPLORER_HOME", tempfile.mkdtemp(prefix="bench-sweep-"))
warnings.simplefilter("ignore")


def _cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a live process (Linux /proc); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _self_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def _where_time_went(t0: float, t1: float) -> dict:
    """From the job store: when the jobs ran, and the CPU of the live workers (read before they are stopped)."""
    import sqlite3

    from dpcore import storage

    conn = sqlite3.connect(storage.home() / "jobs.sqlite")
    try:
        jobs = conn.execute(
            "SELECT started, ended FROM jobs WHERE started >= ? AND ended IS NOT NULL", (t0,)
        ).fetchall()
        pids = [r[0] for r in conn.execute("SELECT pid FROM workers") if r[0]]
    finally:
        conn.close()
    first, last = min(s for s, _ in jobs), max(e for _, e in jobs)
    cpu = [c for c in (_cpu_s(p) for p in pids) if c is not None]
    return {
        "to_first": first - t0,
        "span": last - first,
        "after_last": t1 - last,
        "job_median": statistics.median(e - s for s, e in jobs),
        "job_max": max(e - s for s, e in jobs),
        "workers_cpu": cpu,
    }


def _profile(cfg, path: str) -> None:
    import cProfile
    import io
    import pstats

    from dpcore.sweep.point import run_point

    prof = cProfile.Profile(time.process_time)
    c0 = time.process_time()
    prof.enable()
    for p in cfg.point_params():
        run_point(p)
    prof.disable()
    prof.dump_stats(path)
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(r"dpcore", 25)
    print(f"profile: {time.process_time() - c0:.1f} CPU s for the points in this process (profiler included); {path}")
    print("\n".join(line[:160] for line in out.getvalue().splitlines() if line.strip())[:6000])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1, help="run the sweep this many times (cold workers each time)")
    ap.add_argument("--sequential", action="store_true", help="also time the same sweep in this one process")
    ap.add_argument("--profile", metavar="FILE", default=None, help="also profile the points in this process")
    ap.add_argument("--quick", action="store_true", help="one ε, one seed, one epoch: a smoke test (targets MISS)")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    from dpcore.jobs import workers
    from dpcore.jobs.owners import CLI_OWNER as OWNER
    from dpcore.sweep import runs as sweep_runs
    from dpcore.sweep import summary as sweep_summary
    from dpcore.sweep.config import SweepConfig

    cfg = (
        SweepConfig(epsilons=(1.0,), seeds=1, epochs=1, hidden=8, attacks=("threshold", "loss"), size_fractions=())
        if args.quick
        else SweepConfig()
    ).validate()
    n = len(cfg.point_params())
    print(
        f"default demo: {cfg.dataset} {cfg.model} (hidden {cfg.hidden}), {cfg.n_rows()} training rows, "
        f"{cfg.epochs} epochs, {len(cfg.epsilons)} ε × {cfg.seeds} seeds + baselines + size control "
        f"{list(cfg.size_fractions)} = {n} models, {cfg.canaries} canaries, attacks {','.join(cfg.attacks)}"
    )
    walls = []
    for i in range(max(1, args.repeat)):
        load0 = os.getloadavg()
        c0, t0 = _self_cpu_s(), time.time()
        res = sweep_runs.run_sweep_parallel(cfg, workers=args.workers, owner=OWNER)
        t1 = time.time()
        where = _where_time_went(t0, t1)
        mine = _self_cpu_s() - c0
        workers.shutdown_workers()
        walls.append(t1 - t0)
        print(
            f"run {i + 1}: wall {t1 - t0:6.1f} s with {args.workers} cold worker processes (start-up and imports "
            f"included; target <= 25 s on the quiet 2-core machine); load average before "
            f"{load0[0]:.1f}, after {os.getloadavg()[0]:.1f}"
        )
        print(
            f"  first job started after {where['to_first']:.1f} s, jobs ran for {where['span']:.1f} s (each: median "
            f"{where['job_median']:.2f} s, longest {where['job_max']:.2f} s), {where['after_last']:.1f} s after the "
            f"last; CPU: workers {sum(where['workers_cpu']):.1f} s {[round(c, 1) for c in where['workers_cpu']]}, "
            f"this process (waiting on the store) {mine:.1f} s"
        )
    if len(walls) > 1:
        print(f"median wall over {len(walls)} runs: {statistics.median(walls):.1f} s (min {min(walls):.1f} s)")
    if args.sequential:
        t0 = time.perf_counter()
        sweep_runs.run_sweep_inline(cfg, store=False, owner=OWNER)
        t_seq = time.perf_counter() - t0
        t_par = statistics.median(walls)
        print(f"one after another in this process: {t_seq:6.1f} s; ratio sequential / parallel {t_seq / t_par:.2f}x")
    if args.profile:
        _profile(cfg, args.profile)

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
