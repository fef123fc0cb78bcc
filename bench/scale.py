"""Scale-out bench: one LiRA audit sweep on 2 local workers vs a local Ray instance with the same 2 CPUs.

Prints the wall time of each, Ray's overhead as a ratio, and how many tasks a cluster of N nodes would run
at once. Default: a scaled-down audit (16 LiRA shadows x 3 ε + baseline on a small MLP) that runs in a few
minutes on 2 cores; ``--full`` is the real size (64 shadows x 6 ε), ``--quick`` one small point and its
baseline (a smoke test). Ray runs inside a private network
namespace with loopback only (``unshare -n``, root), so nothing binds to or talks over a real interface:

    python bench/scale.py            # re-executes itself under unshare -n -p -f --mount-proc
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dpcore.jobs.owners import CLI_OWNER as OWNER

ROOT = Path(__file__).resolve().parents[1]
PORT = 6393


def config(size: str):
    from dpcore.sweep.config import SweepConfig

    if size == "quick":
        return SweepConfig(
            epsilons=(1.0,),
            seeds=1,
            attacks=("threshold", "loss"),
            hidden=8,
            epochs=1,
            train_size=60,
            batch_size=30,
            canaries=0,
            size_fractions=(),
        ).validate()
    if size == "full":
        return SweepConfig(
            epsilons=(0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
            attacks=("threshold", "loss", "lira"),
            shadows=64,
            hidden=64,
            epochs=20,
        ).validate()
    return SweepConfig(
        epsilons=(1.0, 4.0, 8.0),
        attacks=("threshold", "loss", "lira"),
        shadows=16,
        hidden=32,
        epochs=5,
        train_size=60,
        batch_size=30,  # at most the 60 training rows
    ).validate()


def inner(size: str) -> None:
    from dpcore import storage
    from dpcore.jobs import executors, workers
    from dpcore.sweep import runs as sweep_runs

    os.environ.setdefault(storage.ENV_VAR, tempfile.mkdtemp(prefix="dpx-bench-"))
    cfg = config(size)
    units = len(cfg.point_params())
    shadows = units * cfg.shadows if "lira" in cfg.attacks else 0
    print(
        f"audit: {len(cfg.epsilons)} ε + baseline = {units} points, {cfg.shadows} LiRA shadows each "
        f"({units + shadows} trainings)",
        flush=True,
    )

    t = time.perf_counter()
    sweep_runs.run_sweep_parallel(cfg, workers=2, timeout=3600, owner=OWNER)
    t_local = time.perf_counter() - t
    workers.shutdown_workers()
    print(f"2 local workers:             {t_local:7.1f} s", flush=True)

    tmp = tempfile.mkdtemp(prefix="dpxb", dir="/tmp")
    ray_bin = str(Path(sys.executable).with_name("ray"))
    # As README documents it, inside this namespace only: a token made in the head's own empty home, a head
    # with token authentication on, and this process (the app's side) holding the token in RAY_AUTH_TOKEN.
    head_env = {**os.environ, "HOME": os.path.join(tmp, "head-home"), "RAY_AUTH_MODE": "token"}
    os.makedirs(head_env["HOME"])
    token = subprocess.run(
        [ray_bin, "get-auth-token", "--generate"], env=head_env, check=True, timeout=60, capture_output=True, text=True
    ).stdout.strip()
    os.environ.update(RAY_AUTH_TOKEN=token, RAY_AUTH_MODE="token")
    subprocess.run(
        [
            ray_bin,
            "start",
            "--head",
            "--node-ip-address",
            "127.0.0.1",
            "--port",
            str(PORT),
            "--num-cpus",
            "2",
            "--include-dashboard",
            "false",
            "--disable-usage-stats",
            f"--temp-dir={tmp}",
        ],
        check=True,
        timeout=120,
        capture_output=True,
        env=head_env,
    )
    try:
        ex = executors.RayExecutor(f"127.0.0.1:{PORT}")
        t = time.perf_counter()
        res = sweep_runs.run_sweep_parallel(cfg, timeout=3600, executor=ex, owner=OWNER)
        t_ray = time.perf_counter() - t
        print(f"local Ray, 2 CPUs:           {t_ray:7.1f} s", flush=True)
        print(f"Ray overhead:                {t_ray / t_local:7.2f}x the local time (same 2 CPUs)")
        assert all(p["ran_on"]["executor"] == "ray" for p in res["points"])
    finally:
        workers.shutdown_workers()
        subprocess.run([ray_bin, "stop", "--force"], timeout=60, capture_output=True, env=head_env)
        shutil.rmtree(tmp, ignore_errors=True)
    # One Ray task per point (num_cpus=1): a cluster runs min(points, total CPUs) at once. Shadows train
    # inside their point's task, so a point's time bounds the audit's time once CPUs >= points.
    print("parallel tasks on a cluster of N nodes x C CPUs = min(points, N*C, dispatchers):")
    disp = ex.dispatchers
    for n_nodes in (1, 2, 4, 8, 16):
        for cpus in (2, 16):
            print(f"  N={n_nodes:2d} x {cpus:2d} CPUs: {min(units, n_nodes * cpus, disp):3d} of {units} points at once")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="64 shadows x 6 ε (long on 2 cores)")
    ap.add_argument("--quick", action="store_true", help="one small point and its baseline: a smoke test")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    size = "full" if args.full else "quick" if args.quick else "default"
    try:
        import ray  # noqa: F401
    except ImportError:
        print("Ray is not installed: pip install -r requirements-ray.txt")
        return 0
    if args.inner:
        inner(size)
        return 0
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        print("skipped: the Ray bench needs root for `unshare -n` (a private, loopback-only network)")
        return 0
    cmd = f"ip link set lo up && exec {sys.executable} {Path(__file__).resolve()} --inner" + (
        " --full" if args.full else " --quick" if args.quick else ""
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(RAY_DISABLE_USAGE_STATS="1", HOME=tempfile.mkdtemp(prefix="dpx-bench-home-"))  # nothing from ~
    return subprocess.run(
        ["unshare", "-n", "-p", "-f", "--mount-proc", "--kill-child", "sh", "-c", cmd], cwd=ROOT, env=env
    ).returncode


if __name__ == "__main__":
    sys.exit(main())
