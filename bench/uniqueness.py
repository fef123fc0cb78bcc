"""Benchmark: vectorised uniqueness / k / ℓ / risk vs a straightforward per-row Python loop.

    .venv/bin/python bench/uniqueness.py [--rows 1000000] [--loop-rows 200000] [--repeats 3] [--quick]

The loop (dict of tuples, one Python iteration per row) is timed on a subsample of ``--loop-rows``
rows and extrapolated linearly to ``--rows`` (its cost is linear in rows); the output says so.
"""

from __future__ import annotations

import argparse
import time

from dpcore.attacks import linkage, uniqueness
from dpcore.data import datasets


def best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--loop-rows", type=int, default=200_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="20,000 rows once: a smoke test")
    a = p.parse_args()
    if a.quick:
        a.rows, a.loop_rows, a.repeats = 20_000, 5_000, 1
    qis = ["age", "sex", "zip_code", "salary"]
    df = datasets.medical(a.rows, seed=0)
    per_m = 1e6 / a.rows

    t_vec = best_of(lambda: uniqueness.uniqueness(df, qis, "diagnosis"), a.repeats)
    t_inc = best_of(lambda: uniqueness.incremental(df, qis, "diagnosis"), a.repeats)
    conds = [linkage.parse_field(c, t) for c, t in linkage.DEFAULT_SCENARIO.items()]
    t_find = best_of(lambda: linkage.find_matches(df, conds), a.repeats)
    pop = datasets.medical_population(a.rows, seed=0)
    reg = linkage.public_register(pop, coverage=0.5, outsiders=0.25, seed=1)
    rel = pop.drop(columns="name")
    t_link = best_of(lambda: linkage.link(rel, reg, linkage.LINKABLE_COLUMNS), a.repeats)

    sub = df.iloc[: min(a.loop_rows, a.rows)]
    t_loop_sub = best_of(lambda: uniqueness.uniqueness_loop(sub, qis, "diagnosis"), 1)
    t_loop = t_loop_sub * a.rows / len(sub)

    fast = uniqueness.uniqueness(sub, qis, "diagnosis")
    slow = uniqueness.uniqueness_loop(sub, qis, "diagnosis")
    assert fast.n_classes == slow["n_classes"] and fast.l_diversity == slow["l_diversity"]

    print(f"rows: {a.rows:,}; quasi-identifiers: {', '.join(qis)}; sensitive: diagnosis; best of {a.repeats}")
    print(f"uniqueness (k, l, risk, class sizes), vectorised: {t_vec:.3f} s  = {t_vec * per_m:.3f} s per million rows")
    print(
        f"incremental ({len(qis)} QIs one by one), vectorised: {t_inc:.3f} s  = {t_inc * per_m:.3f} s per million rows"
    )
    print(f"find-your-neighbour filter (3 facts):            {t_find:.3f} s  = {t_find * per_m:.3f} s per million rows")
    print(f"register linkage ({len(reg):,} register entries):  {t_link:.3f} s")
    print(
        f"per-row Python loop: {t_loop_sub:.3f} s on a subsample of {len(sub):,} rows, "
        f"extrapolated linearly to {a.rows:,} rows: {t_loop:.2f} s (= {t_loop * per_m:.2f} s per million)"
    )
    print(f"ratio loop / vectorised uniqueness: {t_loop / t_vec:.1f}x")


if __name__ == "__main__":
    main()
