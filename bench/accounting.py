"""Noise calibration for a target ε: time and tightness, vs one evaluation of the accountant.

For each (accountant, target ε, sample rate, steps) prints the seconds one ``calibrate_noise`` takes (caches
cleared, imports warm), that time as a multiple of one evaluation of the same accountant at the calibrated σ
(the calibration's cost in accountant calls), and ε/target (how tight it is: 1.0 is exact, the guarantee
is ≤ 1 and ≥ 1 − CALIBRATION_TOLERANCE). Target: about 1 s per calibration on an idle core up to ε 8,
a few seconds at ε 50 (small σ makes each PRV evaluation slower).

    .venv/bin/python bench/accounting.py [--targets 1,8,50] [--accountants prv,rdp] [--quick]
"""

from __future__ import annotations

import argparse
import time

from dpcore.training import accounting

RUNS = [(1 / 8, 80), (0.01, 1000)]  # (sample rate, steps): a small dataset's 10 epochs; 10 epochs at q = 1%


def _clear():
    accounting._prv_epsilon.cache_clear()
    accounting._rdp_epsilon.cache_clear()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", default="1,8,50")
    ap.add_argument("--accountants", default="prv,rdp")
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--quick", action="store_true", help="one target, RDP, one run: a smoke test (seconds)")
    args = ap.parse_args(argv)
    runs = RUNS[:1] if args.quick else RUNS
    if args.quick:
        args.targets, args.accountants = "1", "rdp"
    accounting.calibrate_noise(1.0, args.delta, 1 / 7, 70)  # warm imports (a one-off ~1 s)
    print(
        f"{'acc':4} {'target':>7} {'q':>7} {'steps':>6} {'sigma':>8} {'s/calib':>8} {'x one eval':>10} {'eps/target':>10}"
    )
    for acc in args.accountants.split(","):
        for target in (float(t) for t in args.targets.split(",")):
            for q, steps in runs:
                _clear()
                t0 = time.perf_counter()
                sigma, eps = accounting.calibrate_noise(target, args.delta, q, steps, acc)
                t_cal = time.perf_counter() - t0
                _clear()
                t0 = time.perf_counter()
                accounting.epsilon(sigma, q, steps, args.delta, acc)
                t_one = time.perf_counter() - t0
                print(
                    f"{acc:4} {target:7g} {q:7.4f} {steps:6d} {sigma:8.4f} {t_cal:8.2f} {t_cal / t_one:10.1f} "
                    f"{eps / target:10.3f}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
