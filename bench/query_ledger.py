"""Ledger cost: one private answer with the ledger (the dataset's cap and the quota checked, the noise drawn and the
answer stored in one SQLite transaction) vs the bare noisy release, and spends per second with several processes
contending for the same cap.

    .venv/bin/python bench/query_ledger.py [--quick]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import tempfile
import time
from pathlib import Path

N = 200


def _worker(args):
    home, fp, i, n = args
    os.environ["DP_EXPLORER_HOME"] = home
    from dpcore.budgets import identities, spend

    t = time.perf_counter()
    for j in range(n):
        spend.spend(identities.VISITOR, fp, f"p{i}-{j}", 0.001, lambda j=j: {"answer": j})
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20 asks, 10 spends per process: a smoke test")
    quick = ap.parse_args().quick
    n = 20 if quick else N
    home = tempfile.mkdtemp(prefix="dp-bench-")
    os.environ["DP_EXPLORER_HOME"] = home
    from dpcore.budgets import identities, visitors
    from dpcore.data import datasets
    from dpcore.queries import answering, fingerprint, model

    df = datasets.medical(10_000, 0)
    t = time.perf_counter()
    identity = fingerprint.dataset_identity(df)
    print(
        f"dataset identity (order/format-insensitive fingerprint + near-duplicate sketches), 10,000 rows: "
        f"{(time.perf_counter() - t) * 1e3:.0f} ms"
    )
    key = visitors.open_builtin(10_000, 0, identity)["fingerprint"]  # the visitors' quota: ε 10
    q = model.make_query("count", epsilon=0.001, condition="sex=F", where="age>=65")
    prepared = answering.prepare(df, q)

    t = time.perf_counter()
    for _ in range(n):
        prepared.release(None)
    bare = (time.perf_counter() - t) / n

    t = time.perf_counter()
    for i in range(n):
        qi = model.make_query("count", epsilon=0.001 + i * 1e-6, condition="sex=F", where="age>=65")
        answering.ask(df, identities.VISITOR, qi, dataset=key)
    with_ledger = (time.perf_counter() - t) / n

    t = time.perf_counter()
    last = 0.001 + (n - 1) * 1e-6  # the question the previous loop asked last: every ask is a free repeat
    for _ in range(n):
        answering.ask(
            df,
            identities.VISITOR,
            model.make_query("count", epsilon=last, condition="sex=F", where="age>=65"),
            dataset=key,
        )
    repeat = (time.perf_counter() - t) / n

    print(f"bare release (prepared query): {bare * 1e3:.2f} ms")
    print(
        f"ask with ledger (validate + where mask + spend, fsync'd WAL commit): {with_ledger * 1e3:.2f} ms  "
        f"ratio vs bare release: {with_ledger / bare:.1f}x"
    )
    print(
        f"identical repeat (stored answer, free): {repeat * 1e3:.2f} ms  ratio vs paid ask: {repeat / with_ledger:.2f}x"
    )

    ctx = mp.get_context("spawn")
    for procs in (1, 4):
        h = tempfile.mkdtemp(prefix="dp-bench-mp-")
        os.environ["DP_EXPLORER_HOME"] = h
        fp = visitors.open_builtin(10_000, 0, identity, path=Path(h) / "ledger.sqlite")["fingerprint"]
        per = 10 if quick else 100
        with ctx.Pool(procs) as pool:
            t = time.perf_counter()
            pool.map(_worker, [(h, fp, i, per) for i in range(procs)])
            wall = time.perf_counter() - t
        print(
            f"{procs} process(es) x {per} spends on one quota and cap: {procs * per / wall:.0f} spends/s "
            "(incl. start-up)"
        )


if __name__ == "__main__":
    main()
