"""Background-job overhead: ctx.progress() cost, submit->done latency, cancel latency (default timings), and the
cost of choosing the next job fairly across owners on a store with many rows (vs first-come-first-served).

Run: .venv/bin/python bench/jobs_overhead.py [--quick]   (uses a temporary DP_EXPLORER_HOME; prints figures, asserts nothing)
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ["DP_EXPLORER_HOME"] = tempfile.mkdtemp(prefix="dp-jobs-bench-")
os.environ.setdefault("DP_EXPLORER_JOBS_IDLE_EXIT", "15")

from dpcore.jobs import db, runner, store, workers
from dpcore.jobs.owners import CLI_OWNER as OWNER
from dpcore.jobs.owners import SYSTEM

FIFO_NEXT = "SELECT * FROM jobs WHERE status = 'queued' ORDER BY created, rowid LIMIT 1"  # before owners


def fair_claim_cost(finished: int = 20_000, owners: int = 200, queued: int = 2_000, reps: int = 50) -> None:
    """Median time of the fair next-job query vs the FIFO one, on a store of ``finished`` done jobs of ``owners``
    owners and ``queued`` waiting ones (one owner's flood and one job each of the others)."""
    import statistics

    with db.connection() as conn, db.transaction(conn):
        rows = [
            (f"b-done-{i}", "demo.echo", "{}", "done", i, i + 0.5, f"session:{i % owners:032x}")
            for i in range(finished)
        ]
        rows += [
            (
                f"b-wait-{i}",
                "demo.echo",
                "{}",
                "queued",
                finished + i,
                None,
                f"session:{0 if i < queued // 2 else i % owners:032x}",
            )
            for i in range(queued)
        ]
        conn.executemany(
            "INSERT INTO jobs (id, target, params, status, created, started, owner) VALUES (?, ?, ?, ?, ?, ?, ?)", rows
        )
    times = {}
    with db.connection() as conn:
        for name, sql in (("fair", runner._FAIR_NEXT), ("fifo", FIFO_NEXT)):
            runs = []
            for _ in range(reps):
                t = time.perf_counter()
                conn.execute(sql).fetchone()
                runs.append(time.perf_counter() - t)
            times[name] = statistics.median(runs)
    print(
        f"next job on {finished + queued:,} rows ({owners} owners): fair {times['fair'] * 1e3:.2f} ms vs "
        f"FIFO {times['fifo'] * 1e3:.2f} ms median = {times['fair'] / times['fifo']:.1f}x (once per job started)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer calls and jobs, a small store: a smoke test")
    quick = ap.parse_args().quick
    ctx = runner.JobContext(job_id="bench", result_dir=Path(os.environ["DP_EXPLORER_HOME"]))
    n = 500 if quick else 20_000
    t = time.perf_counter()
    for i in range(n):
        ctx.progress(step=i, loss=0.5, accuracy=0.9, epsilon=1.0)
    per_call = (time.perf_counter() - t) / n
    t = time.perf_counter()
    for _ in range(n):
        ctx.cancelled()
    per_check = (time.perf_counter() - t) / n
    print(f"ctx.progress(): {per_call * 1e6:.1f} µs/call; ctx.cancelled(): {per_check * 1e9:.0f} ns/call")

    t = time.perf_counter()
    workers.ensure_workers(2)
    first = store.submit("demo.echo", {}, owner=OWNER)
    store.wait(first, timeout=60, caller=SYSTEM)
    print(f"cold start (spawn 2 workers + first trivial job): {time.perf_counter() - t:.2f} s")
    lat = []
    for _ in range(3 if quick else 10):
        t = time.perf_counter()
        store.wait(store.submit("demo.echo", {}, owner=OWNER), timeout=60, caller=SYSTEM)
        lat.append(time.perf_counter() - t)
    lat.sort()
    print(
        f"warm submit->done latency, trivial job: median {lat[len(lat) // 2]:.2f} s, max {lat[-1]:.2f} s (poll 0.5 s)"
    )
    job = store.submit("demo.sleep", {"steps": 100_000, "seconds": 0.01}, owner=OWNER)
    while not store.get(job, history=False, caller=SYSTEM)["progress"]:
        time.sleep(0.05)
    t = time.perf_counter()
    store.cancel(job, caller=SYSTEM)
    store.wait(job, timeout=30, caller=SYSTEM)
    print(f"cancel latency (heartbeat 1 s): {time.perf_counter() - t:.2f} s")
    workers.shutdown_workers(timeout=5)
    fair_claim_cost(500, 10, 50, 5) if quick else fair_claim_cost()


if __name__ == "__main__":
    main()
