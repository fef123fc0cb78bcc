"""Benchmark: time and peak memory of a default DP synthetic release (MST, ε = 1, the story's five columns) on
1,000 and 100,000 rows of the medical data.

    .venv/bin/python bench/synth.py [--rows 1000,100000] [--repeats 3] [--quick]

Each size runs in a fresh process with an empty ``$DP_EXPLORER_HOME`` (so jax's compile cache starts empty):
its first release is "cold" (OpenDP builds the measurement, jax compiles the model fits), the next ones "warm"
(the measurement is kept, some kernels reused). Peak memory is the process's maximum resident set. Prints the
medians and the ratios 100,000 / 1,000 rows.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(rows: int, repeats: int, columns: int | None = None) -> None:
    from dpcore.data import datasets
    from dpcore.synth import release, schema

    t0 = time.perf_counter()
    df = datasets.medical(rows, datasets.REID_SEED)
    sch = schema.medical(schema.STORY_COLUMNS[:columns] if columns else schema.STORY_COLUMNS)
    data_s = time.perf_counter() - t0
    times, out_rows = [], []
    for _ in range(repeats):
        rel = release.release(df, sch, release.SynthConfig(1.0))
        times.append(rel.seconds)
        out_rows.append(len(rel.table))
    print(
        json.dumps(
            {
                "rows": rows,
                "seconds": times,
                "synthetic_rows": out_rows,
                "data_seconds": data_s,
                "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", default="1000,100000")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="one release of 500 rows, two columns: a smoke test")
    p.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--columns", type=int, default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.quick:  # two columns: OpenDP and jax still run end to end, on a model that compiles in seconds
        a.rows, a.repeats, a.columns = "500", 1, 2
    if a.child is not None:
        child(a.child, a.repeats, a.columns)
        return
    results = {}
    for rows in (int(r) for r in a.rows.split(",")):
        with tempfile.TemporaryDirectory(prefix="dpx-bench-synth-") as home:
            env = dict(os.environ, DP_EXPLORER_HOME=home)
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(rows), "--repeats", str(a.repeats)]
                + (["--columns", str(a.columns)] if a.columns else []),
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        results[rows] = r
        warm = r["seconds"][1:] or r["seconds"]
        print(
            f"{rows:>9,} rows: cold release {r['seconds'][0]:6.1f} s, warm median {statistics.median(warm):6.1f} s "
            f"(of {len(warm)}), peak memory {r['peak_mib']:,.0f} MiB, synthetic rows {r['synthetic_rows']}"
        )
    sizes = sorted(results)
    if len(sizes) >= 2:
        lo, hi = results[sizes[0]], results[sizes[-1]]
        wl = statistics.median(lo["seconds"][1:] or lo["seconds"])
        wh = statistics.median(hi["seconds"][1:] or hi["seconds"])
        print(
            f"ratio {sizes[-1]:,} / {sizes[0]:,} rows: warm time {wh / wl:.2f}x, cold time "
            f"{hi['seconds'][0] / lo['seconds'][0]:.2f}x, peak memory {hi['peak_mib'] / lo['peak_mib']:.2f}x"
        )
    cols = ("age", "sex", "zip code", "salary", "diagnosis")[: a.columns or None]
    print(f"MST at ε = 1 (δ = 0) on {', '.join(cols)}; the machine's load shares every figure.")


if __name__ == "__main__":
    main()
