"""The free audit's cost: a DP-SGD run that audits itself (its canaries planted, trained and scored; the one-run,
f-DP and Gaussian-DP bounds; the heuristic; the accounting check) against the same run without canaries or audit.

For each (dataset, model) prints the median wall time of both runs over ``--reps`` seeds, their ratio (target: at
most 1.10, issue 37 §1), and the median of the audit's own seconds (``audit_seconds``: scoring and bounds after
training). Interleaved, the order alternating from seed to seed, so that a busy machine slows both alike; the CPU
time of this process beside the wall time (steadier on a shared machine); the load average beside the figures.

    .venv/bin/python bench/self_audit.py [--reps 5] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from dpcore.training.config import TrainConfig
from dpcore.training.loop import train

CASES = [("breast_cancer", "logreg", 10), ("digits", "mlp", 5), ("digits", "cnn", 3)]


def _timed(cfg: TrainConfig, audit: bool) -> tuple[float, float, float | None]:
    """(wall seconds, this process's CPU seconds, the audit's own seconds) of one run."""
    w0, c0 = time.perf_counter(), time.process_time()
    m = train(cfg if audit else TrainConfig.from_dict({**cfg.to_dict(), "canaries": 0}), audit=audit).metrics
    return time.perf_counter() - w0, time.process_time() - c0, m.audit_seconds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="breast cancer only, one rep: a smoke test (seconds)")
    args = ap.parse_args(argv)
    cases = [("breast_cancer", "logreg", 2)] if args.quick else CASES
    reps = 1 if args.quick else args.reps
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")
    print(
        f"{'data/model':22} {'audited s':>10} {'plain s':>9} {'wall x':>7} {'cpu x':>7} {'audit s':>8} {'canaries':>9}"
    )
    for dataset, model, epochs in cases:
        base = TrainConfig(dataset=dataset, model=model, epsilon=1.0, epochs=epochs)
        n = train(base).metrics.canaries  # warm: imports, the calibration of this (ε, q, T), the audit's caches
        wall: dict[bool, list[float]] = {True: [], False: []}
        cpu: dict[bool, list[float]] = {True: [], False: []}
        own = []
        for r in range(reps):
            cfg = TrainConfig.from_dict({**base.to_dict(), "seed": r})
            for audit in (True, False) if r % 2 == 0 else (False, True):
                w, c, a = _timed(cfg, audit)
                wall[audit].append(w)
                cpu[audit].append(c)
                if audit:
                    own.append(a or 0.0)
        wall_x = statistics.median(a / p for a, p in zip(wall[True], wall[False]))
        cpu_x = statistics.median(a / p for a, p in zip(cpu[True], cpu[False]))
        print(
            f"{dataset + '/' + model:22} {statistics.median(wall[True]):10.2f} {statistics.median(wall[False]):9.2f} "
            f"{wall_x:7.3f} {cpu_x:7.3f} {statistics.median(own):8.2f} {(n or {}).get('n', 0):9d}"
        )
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) after")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
