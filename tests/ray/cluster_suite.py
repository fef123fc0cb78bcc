"""Checks against one local Ray head (127.0.0.1, 2 CPUs). Run ONLY through test_ray_executor.py, which puts
this module in a private network namespace with loopback alone (not collected on its own: no test_ prefix).
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

if os.environ.get("DP_EXPLORER_RAY_SUITE") != "1":
    pytest.skip("run through tests/ray/test_ray_executor.py (private network namespace)", allow_module_level=True)

from dpcore.jobs import executors, records, registry, store, workers
from dpcore.jobs.owners import CLI_OWNER as OWNER
from dpcore.jobs.owners import SYSTEM
from dpcore.sweep import runs as sweep_runs
from dpcore.sweep import summary as sweep_summary
from dpcore.sweep.config import SweepConfig

RAY = str(Path(sys.executable).with_name("ray"))
PORT = 6391
FAST = dict(
    dataset="digits",
    model="mlp",
    hidden=32,
    epsilons=(4.0,),
    epochs=2,
    train_size=60,
    batch_size=20,
    attacks=("threshold", "loss", "lira"),
    shadows=2,
)
# idle Ray workers (torch already imported) stay for the next check instead of being reaped after 1 s
SYSTEM_CONFIG = {"idle_worker_killing_time_threshold_ms": 600_000, "num_workers_soft_limit": 4}
TIMING_KEYS = {"seconds", "train_seconds", "ran_on"}


@pytest.fixture(autouse=True)
def dp_home():
    """One store for the whole module (the outer test made it fresh), not one per test: the one local
    dispatcher keeps serving it, and with it the Ray workers that already imported torch."""
    return Path(os.environ["DP_EXPLORER_HOME"])


@pytest.fixture(scope="module")
def head():
    """One Ray head for the whole module. Its processes end with the namespace (this pytest is its PID 1)."""
    tmp = tempfile.mkdtemp(prefix="dpxray", dir="/tmp")  # short: Ray's socket paths must stay < 108 chars
    # The head node's side, as README documents it: a token made in the head's own (empty) home, then a head
    # with token authentication on. Ray 2.60's plain `ray start --head` with no token starts with it *off*.
    head_env = {**os.environ, "HOME": os.path.join(tmp, "head-home"), "RAY_AUTH_MODE": "token"}
    os.makedirs(head_env["HOME"])
    made = subprocess.run(
        [RAY, "get-auth-token", "--generate"], env=head_env, capture_output=True, text=True, timeout=60
    )
    assert made.returncode == 0, made.stderr[-2000:]
    token_file = Path(head_env["HOME"], ".ray", "auth_token")
    token = token_file.read_text().strip()
    assert token and made.stdout.strip() == token
    cmd = [
        RAY,
        "start",
        "--head",
        "--node-ip-address",
        "127.0.0.1",
        "--port",
        str(PORT),
        "--num-cpus",
        "2",
        "--num-gpus",
        "0",
        "--object-store-memory",
        str(80 * 2**20),
        "--include-dashboard",
        "false",
        "--disable-usage-stats",
        f"--temp-dir={tmp}",
        "--system-config",
        json.dumps(SYSTEM_CONFIG),
    ]
    starting = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=head_env)
    # meanwhile (most of `ray start` is waiting): this process imports what the inline comparison run needs
    from dpcore.training import job, loop  # noqa: F401

    out, _ = starting.communicate(timeout=90)
    assert starting.returncode == 0, out[-3000:]
    address = f"127.0.0.1:{PORT}"
    # The app's machine, as README documents it: the token in RAY_AUTH_TOKEN (its own home has none)
    assert not Path.home().joinpath(".ray", "auth_token").exists()
    os.environ.update({executors.RAY_ADDRESS_ENV: address, "RAY_AUTH_TOKEN": token, "RAY_AUTH_MODE": "token"})
    try:
        yield address
    finally:
        workers.shutdown_workers(timeout=2)
        import ray

        ray.shutdown()  # this process's driver, while the cluster is still up (quick)
        # No `ray stop` (it waits up to 15 s under load): when this pytest, the namespace's PID 1, exits, the
        # kernel ends every Ray process it started.


@pytest.fixture
def ray_driver(head):
    """This test process as a Ray driver too (to look at free resources)."""
    ray = executors.connect(head)
    yield ray


def _ex(head, **kw):
    """One local dispatcher for the whole module: one Ray job, so its Ray workers (torch imported) are reused
    from test to test instead of each new dispatcher paying for fresh ones."""
    return executors.RayExecutor(head, dispatchers=1, **kw)


def test_the_cluster_refuses_a_driver_without_its_token(head):
    """Token authentication is really on: a driver with no token (empty home, no RAY_AUTH_TOKEN) is refused."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH_TOKEN")}
    env["HOME"] = tempfile.mkdtemp(prefix="dpxnotok", dir="/tmp")
    code = f"import ray; ray.init(address={head!r}, logging_level='ERROR'); print('CONNECTED')"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=90)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "CONNECTED" not in proc.stdout, out[-2000:]
    assert "no authentication token was found" in out, out[-2000:]


def _strip(point):
    return {k: v for k, v in point.items() if k not in TIMING_KEYS}


def _reproducible_cfg(**kw):
    """The same small sweep; with reproducible noise where the sweep supports it (DP points then match too)."""
    cfg = dict(FAST, **kw)
    if "reproducible_noise" in SweepConfig.__dataclass_fields__:
        cfg["reproducible_noise"] = True
    return SweepConfig(**cfg).validate()


def test_sweep_with_lira_on_ray_matches_local_run(head, dp_home):
    cfg = _reproducible_cfg()
    ex = _ex(head)
    # the inline run to compare with goes alongside (the Ray run is mostly waiting for processes to start)
    with ThreadPoolExecutor(1) as pool:
        t1 = time.monotonic()
        inline = pool.submit(
            lambda: (sweep_runs.run_sweep_inline(cfg, store=False, owner=OWNER), time.monotonic() - t1)
        )
        t0 = time.monotonic()
        res = sweep_runs.run_sweep_parallel(cfg, executor=ex, timeout=150, owner=OWNER)
        t_ray = time.monotonic() - t0
        local, t_local = inline.result(timeout=150)
    rec = sweep_runs.load(res["id"], caller=SYSTEM)
    assert rec["executor"]["name"] == "ray" and rec["executor"]["address"] == head
    assert rec["status"] == "done" and not rec["failed"]
    assert sweep_summary.cli_json(res)["executor"]["name"] == "ray"
    job = store.get(rec["jobs"][0]["job_id"], caller=SYSTEM)
    assert job["target"] == registry.RAY and any(h.get("ray_pid") for h in job["history"])
    points = [res["baseline"], *res["points"]]
    assert all(p["ran_on"]["executor"] == "ray" for p in points)
    assert "lira_online" in res["baseline"]["mia"]
    # each point's LiRA shadows ran as nested Ray tasks of their own, one per shadow, named after the point
    for j in rec["jobs"]:
        hist = store.get(j["job_id"], caller=SYSTEM)["history"]
        names = next((h["shadow_tasks"] for h in reversed(hist) if h.get("shadow_tasks")), None)
        assert names is not None, hist[-3:]
        assert len(set(names)) == cfg.shadows, names
        assert all(n.startswith(f"dpcore:lira-shadow:{j['job_id']}:") for n in names), names

    base_ray, base_local = _strip(res["baseline"]), _strip(local["baseline"])
    assert base_ray == base_local  # non-private baseline, its attacks and LiRA shadows: identical numbers
    for pr, pl in zip(res["points"], local["points"]):
        for k in ("epsilon", "sample_rate", "steps", "device", "delta"):
            assert pr[k] == pl[k], k
        assert pr["epsilon_spent"] <= pr["epsilon"] and pl["epsilon_spent"] <= pl["epsilon"]
        # accounting.calibrate_noise stops tightening σ after a wall-clock budget, so σ can differ between
        # two machines (or loads); with the same σ, reproducible noise gives the same numbers everywhere.
        if cfg.to_dict().get("reproducible_noise") and pr["noise_multiplier"] == pl["noise_multiplier"]:
            assert _strip(pr) == _strip(pl)
    print(f"[ray suite] sweep on Ray {t_ray:.1f} s, the same sweep inline alongside {t_local:.1f} s")


def _slow_point(epochs=10_000):
    # 10,000 epochs: minutes, so it is caught while running (cancelled or killed within seconds)
    cfg = SweepConfig(
        dataset="digits",
        model="mlp",
        hidden=64,
        epochs=epochs,
        epsilons=(4.0,),
        train_size=80,
        batch_size=20,
        attacks=("threshold",),
        baseline=True,
    ).validate()
    return cfg.point_params()[0]


def _wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def _ray_pid(job_id):
    return (store.get(job_id, history=False, caller=SYSTEM)["progress"] or {}).get("ray_pid")


def _step(job_id):
    return (store.get(job_id, history=False, caller=SYSTEM)["progress"] or {}).get("step") or 0


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# Order matters for speed only: each check reuses the Ray worker the previous one left alive when it can.


def test_killed_ray_worker_is_retried_on_a_fresh_one(head, dp_home):
    ex = _ex(head, max_retries=1)
    # killed mid-training; a warm worker may finish a short point before the kill lands: then a longer one
    for epochs in (300, 1200, 4800):
        jid = ex.submit(registry.SWEEP_POINT, _slow_point(epochs=epochs), label="retried", owner=OWNER)
        ex.start(1)
        pid = _wait_for(lambda jid=jid: _ray_pid(jid), 60, "the Ray task to start")
        _wait_for(lambda jid=jid: _step(jid) > 0, 60, "training progress relayed from Ray")
        os.kill(pid, signal.SIGKILL)
        job = store.wait(jid, timeout=120, caller=SYSTEM)
        assert job["status"] == "done", job["error"]  # the point still finishes, on a fresh worker
        pids = {h.get("ray_pid") for h in job["history"] if h.get("ray_pid")}
        assert pid in pids
        if len(pids) == 2:  # ran twice, the second time elsewhere
            break
    else:
        pytest.fail("the kill never landed while the task ran")
    assert job["result"]["test_accuracy"] is not None


def test_cancel_reaches_the_running_ray_task(head, ray_driver, dp_home):
    ex = _ex(head)
    jid = ex.submit(registry.SWEEP_POINT, _slow_point(), label="cancel me", owner=OWNER)
    ex.start(1)
    pid = _wait_for(lambda: _ray_pid(jid), 60, "the Ray task to start")
    _wait_for(lambda: _step(jid) > 0, 60, "training progress relayed from Ray")
    store.cancel(jid, caller=SYSTEM)
    job = _wait_for(
        lambda: (j := store.get(jid, history=False, caller=SYSTEM))["status"] in records.FINISHED and j, 20, "cancel"
    )
    assert job["status"] == "cancelled"
    # the task's worker process was killed (force) and its CPU is free again
    _wait_for(lambda: not _alive(pid), 20, "the Ray worker to be stopped")
    _wait_for(lambda: ray_driver.available_resources().get("CPU", 0) >= 2, 20, "the CPUs to be free")


def test_killed_ray_worker_without_retries_fails_clearly(head, dp_home):
    # killed as soon as it starts (before any import): the point fails with the reason, never silently missing
    ex0 = _ex(head, max_retries=0)
    jid0 = ex0.submit(registry.SWEEP_POINT, _slow_point(), label="lost", owner=OWNER)
    ex0.start(1)
    pid0 = _wait_for(lambda: _ray_pid(jid0), 60, "the Ray task to start")
    os.kill(pid0, signal.SIGKILL)
    job0 = store.wait(jid0, timeout=60, caller=SYSTEM)
    assert job0["status"] == "failed"
    assert "lost" in job0["error"] and "submit it again" in job0["error"]
