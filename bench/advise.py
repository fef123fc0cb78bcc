"""Time of the advisor's DP-SGD solve as the page does it (a cache miss: new q, T or limit), and how many PLDs it
builds. The page then shows ε and the trade-off curve from the same fine PLD, so the solve is the page's cost.

Each case runs with the PLD cache cleared; the first call (imports of dp_accounting/scipy) is not counted. The
answer is printed too: it must stay the same (to the solver's 0.2% tolerance) when the solver changes.

    .venv/bin/python bench/advise.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpcore import accounting  # noqa: E402
from dpcore import advise as adv  # noqa: E402

R = adv.RiskLimit
CASES = [("TPR ≤ 0.05 at FPR 0.01, q = 0.01, T = 1000 (the page's default)", R("tpr", 0.05, 0.01), 0.01, 1000),
         ("advantage ≤ 0.1, q = 0.01, T = 1000", R("advantage", 0.1), 0.01, 1000),
         ("posterior ≤ 0.2 from 0.05, q = 0.2, T = 10", R("posterior", 0.2, 0.05), 0.2, 10),
         ("TPR ≤ 0.1 at FPR 0.01, q = 0.2, T = 10 (the dp_accounting check test)", R("tpr", 0.1, 0.01), 0.2, 10)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    adv.advise("dpsgd", R("tpr", 0.05, 0.01), None, sample_rate=0.05, steps=20)  # imports, not counted
    builds = []
    real = accounting._pld.__wrapped__

    def counting(*a):
        builds.append(a[-1])
        return real(*a)

    accounting._pld = functools.lru_cache(64)(counting)
    medians = []
    for name, risk, q, t in CASES:
        times = []
        for _ in range(args.repeats):
            accounting._pld.cache_clear()
            builds.clear()
            t0 = time.perf_counter()
            out = adv.advise("dpsgd", risk, None, sample_rate=q, steps=t)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        medians.append(med)
        print(f"{name}: median {med:.2f} s over {args.repeats}; noise multiplier {out['noise_multiplier']:.4f}, "
              f"ε = {out['epsilon']:.3f}; PLDs built: {builds.count(accounting.PLD_COARSE)} coarse, "
              f"{builds.count(accounting.PLD_FINE)} fine")
    print(f"median over cases: {statistics.median(medians):.2f} s (2 shared cores; compare runs on one machine)")


if __name__ == "__main__":
    main()
