"""Time of the advisor's DP-SGD solve as the page does it (a cache miss: new q, T or limit), against the pass/fail
bisection it replaced (same start, same coarse PLD, same fine check), with the PLDs each builds.

The page then shows ε and the trade-off curve from the same fine PLD (~1.5 s of the total at q = 0.01, T = 1000:
dp_accounting builds its single-step PMF point by point in Python), so that part is a floor for the page. Each
case runs with the PLD cache cleared; the first call (imports) is not counted. Both answers are printed: they
agree to the solver's 0.2% tolerance.

    .venv/bin/python bench/advise.py [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import functools
import math
import statistics
import time

from dpcore.advisor import dpsgd, solve, targets
from dpcore.advisor.risk import gaussian_mu_max
from dpcore.training import accounting

R = targets.RiskLimit
CASES = [
    ("TPR ≤ 0.05 at FPR 0.01, q = 0.01, T = 1000 (the page's default)", R("tpr", 0.05, 0.01), 0.01, 1000),
    ("advantage ≤ 0.1, q = 0.01, T = 1000", R("advantage", 0.1), 0.01, 1000),
    ("posterior ≤ 0.2 from 0.05, q = 0.2, T = 10", R("posterior", 0.2, 0.05), 0.2, 10),
    ("TPR ≤ 0.1 at FPR 0.01, q = 0.2, T = 10 (the dp_accounting check test)", R("tpr", 0.1, 0.01), 0.2, 10),
]


def bisection(risk, q, t, delta):
    """The previous solver: pass/fail only, ×1.3 bracketing, bisection to NM_RTOL, then the fine check."""

    def ok(s):
        return dpsgd.dpsgd_risk(s, q, t, risk, delta, coarse=True) <= risk.value

    target = (gaussian_mu_max(risk, delta) / (q * math.sqrt(t))) ** 2
    guess = min(max(1 / math.sqrt(math.log1p(target)), dpsgd.NM_MIN * 1.01), dpsgd.NM_MAX / 1.01)
    lo, hi = dpsgd.NM_MIN, dpsgd.NM_MAX
    if ok(guess):
        hi, g = guess, guess / 1.05
        while g > lo and ok(g):
            hi, g = g, g / 1.3
        lo = max(lo, g)
    else:
        lo, g = guess, guess * 1.05
        while g < hi and not ok(g):
            lo, g = g, g * 1.3
        hi = min(hi, g)
    while hi / lo > 1 + dpsgd.NM_RTOL:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    while dpsgd.dpsgd_risk(hi, q, t, risk, delta) > risk.value:
        hi *= 1 + dpsgd.NM_RTOL
    return hi


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="the smallest case once: a smoke test (seconds)")
    args = ap.parse_args()
    cases = CASES[-1:] if args.quick else CASES
    if args.quick:
        args.repeats = 1
    solve.advise("dpsgd", R("tpr", 0.05, 0.01), None, sample_rate=0.05, steps=20)  # imports, not counted
    builds = []
    real = accounting._pld.__wrapped__

    def counting(*a):
        builds.append(a[-1])
        return real(*a)

    accounting._pld = functools.lru_cache(64)(counting)
    ratios = []
    for name, risk, q, t in cases:
        times: dict = {"bisection": [], "secant": []}
        res = {}
        for _ in range(args.repeats):  # alternate the two so that the machine's load hits both alike
            for label, solver in (("bisection", bisection), ("secant", dpsgd.solve_noise_multiplier)):
                accounting._pld.cache_clear()
                builds.clear()
                t0 = time.perf_counter()
                nm = solver(risk, q, t, 1e-5)
                times[label].append(time.perf_counter() - t0)
                res[label] = (nm, builds.count(accounting.PLD_COARSE))
        res = {k: (statistics.median(times[k]), *v) for k, v in res.items()}
        (tb, nb, cb), (ts, ns, cs) = res["bisection"], res["secant"]
        ratios.append(tb / ts)
        print(
            f"{name}: median {ts:.2f} s ({cs} coarse PLDs + 1 fine, σ = {ns:.4f}) vs bisection {tb:.2f} s "
            f"({cb} coarse, σ = {nb:.4f}): {tb / ts:.2f}x"
        )
    print(f"median speed-up over cases: {statistics.median(ratios):.2f}x (2 shared cores; ratios from one run)")


if __name__ == "__main__":
    main()
