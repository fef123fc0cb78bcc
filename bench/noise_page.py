"""Server-side time of one slider move on the noise page, vs drawing the same answers through the release path.

One "slider move" (to an ε not seen before, i.e. a cache miss) recomputes everything the page shows:
calibration, 100,000 simulated draws + histogram, exact densities, the several-ε comparison, the
privacy-loss curve, the error-vs-ε curve (60 calibrations), the four Plotly figures and their JSON
serialisation (what Streamlit sends). The baseline draws the same number of answers through the release path
(dpcore.noise.release: OpenDP's exact discrete samplers, secure source, all draws in one vectorised call), as a
page that drew its picture from real releases would: the pictures stay numpy, the release path is only for
released answers.

    .venv/bin/python bench/noise_page.py [--draws 100000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import plotly.io as pio

from dpcore.figures import noise as figs
from dpcore.noise import release
from dpcore.noise import view as noise_page

SETTINGS = {"laplace": None, "gaussian": 1e-5, "gaussian-classic": 1e-5}


def slider_move(mechanism: str, epsilon: float, delta, draws: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one uncached slider move. CPU time is robust to a busy machine."""
    t, c = time.perf_counter(), time.process_time()
    view = noise_page.noise_view(mechanism, epsilon, delta, 1.0, 169.0, draws=draws, seed=0)
    for fig in figs.figures(view, "released answer (patients)", "patients").values():
        pio.to_json(fig, validate=False)
    return time.perf_counter() - t, time.process_time() - c


def release_path(mechanism: str, epsilon: float, delta, draws: int) -> tuple[float, float]:
    """The same number of answers through the release path (one OpenDP call for all of them)."""
    release.release_value(169.0, mechanism=mechanism, epsilon=epsilon, delta=delta or 0.0, sensitivity=1.0)  # warm
    t, c = time.perf_counter(), time.process_time()
    release.release_value(169.0, mechanism=mechanism, epsilon=epsilon, delta=delta or 0.0, sensitivity=1.0, draws=draws)
    return time.perf_counter() - t, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="1,000 draws, one ε: a smoke test")
    args = ap.parse_args()
    if args.quick:
        args.draws, args.repeats = 1000, 1
    slider_move("laplace", 0.33, None, 1000)  # warm imports
    eps_values = [0.07, 0.15, 0.3, 0.5, 0.7, 0.9, 0.2, 0.05, 0.03][: max(args.repeats, 1)]
    print(f"one slider move, {args.draws:,} simulated draws, uncached (median of {len(eps_values)} ε values)")
    print("times: wall (CPU of this process; wall inflates when other processes share the cores)")
    for mechanism, delta in SETTINGS.items():
        slider_move(mechanism, 0.41, delta, args.draws)  # first call per mechanism fills the ε-curve cache
        times = [slider_move(mechanism, e, delta, args.draws) for e in eps_values]
        wall = statistics.median(t[0] for t in times)
        cpu = statistics.median(t[1] for t in times)
        bwall, bcpu = release_path(mechanism, 0.5, delta, args.draws)
        print(
            f"{mechanism:17s} page {wall * 1e3:6.1f} ms ({cpu * 1e3:5.1f} CPU)   "
            f"release path (OpenDP) {bwall * 1e3:7.0f} ms ({bcpu * 1e3:5.0f} CPU)   "
            f"ratio {bwall / wall:5.0f}x wall, {bcpu / cpu:5.0f}x CPU"
        )


if __name__ == "__main__":
    main()
