"""Ray executor against a real local Ray instance, run inside a private network namespace.

Ray binds to the machine's own address and all interfaces even when told 127.0.0.1, so the suite in
``cluster_suite.py`` runs under ``unshare -n -p -f --mount-proc`` with only loopback up: Ray uses 127.0.0.1
alone, no traffic leaves the machine, and when the suite's process (PID 1 there) ends, the kernel ends every
Ray process it started. ``--kill-child`` ends the namespace if this test times out.

Nothing comes from the developer's home: the suite gets an empty ``HOME`` of its own, and the head it starts
makes its token there with the commands README documents (``ray get-auth-token --generate``, then
``RAY_AUTH_MODE=token ray start --head``); the app's side gets the token in ``RAY_AUTH_TOKEN`` only.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = Path(__file__).with_name("cluster_suite.py")


def _namespace_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root for unshare -n (CI runs as root)"
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            return f"needs {tool} (util-linux / iproute2)"
    return None


@pytest.mark.slow
def test_ray_cluster_suite(tmp_path):
    pytest.importorskip("ray", reason="Ray is optional: pip install -r requirements-ray.txt")
    reason = _namespace_reason()
    if reason:
        pytest.skip(reason)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DP_EXPLORER_RAY", "RAY_"))}
    env["DP_EXPLORER_HOME"] = str(tmp_path / "home")
    env["HOME"] = str(tmp_path / "app-home")  # empty: no ~/.ray/auth_token left by earlier work
    (tmp_path / "app-home").mkdir()
    env["RAY_DISABLE_USAGE_STATS"] = "1"
    env["DP_EXPLORER_RAY_SUITE"] = "1"
    # the one local dispatcher stays up between checks (its Ray workers with it); progress and cancel relayed
    # every 0.5 s; a dispatcher starved of CPU on a loaded machine is not declared dead after 3 s
    env.update(DP_EXPLORER_JOBS_IDLE_EXIT="300", DP_EXPLORER_JOBS_HEARTBEAT="0.5", DP_EXPLORER_JOBS_LEASE="60")
    inner = f"ip link set lo up && exec {sys.executable} -m pytest -q -x -s --durations=0 -p no:cacheprovider {SUITE}"
    try:
        proc = subprocess.run(
            ["unshare", "-n", "-p", "-f", "--mount-proc", "--kill-child", "sh", "-c", inner],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"Ray suite did not finish in 240 s:\n{(exc.stdout or '')[-4000:]}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert " passed" in out and " skipped" not in out, out[-2000:]
    print(out[-3000:])
