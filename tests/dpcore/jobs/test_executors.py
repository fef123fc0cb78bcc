"""Executors and device selection without a Ray cluster (the cluster checks live in tests/ray)."""

import importlib.util
import sys
from pathlib import Path

import pytest

from dpcore.cli import main
from dpcore.errors import DPError
from dpcore.jobs import executors, registry
from dpcore.jobs.owners import CLI_OWNER as OWNER
from dpcore.jobs.owners import SYSTEM
from dpcore.sweep import runs as sweep_runs
from dpcore.sweep.config import SweepConfig
from dpcore.training.config import TrainConfig
from dpcore.training.loop import train

NO_CUDA = not executors.cuda_available()


def test_device_names_and_auto_on_this_machine():
    assert executors.resolve_device("cpu") == "cpu"
    assert executors.resolve_device("auto") == ("cpu" if NO_CUDA else "cuda")
    with pytest.raises(DPError, match="auto.*cpu.*cuda"):
        executors.resolve_device("gpu")
    with pytest.raises(DPError, match="unknown device"):
        TrainConfig(device="tpu")
    with pytest.raises(DPError, match="CPU only"):
        TrainConfig(model="diffprivlib_logreg", device="cuda")


@pytest.mark.skipif(not NO_CUDA, reason="this machine has a CUDA GPU")
def test_cuda_without_a_gpu_is_a_clear_error(capsys):
    with pytest.raises(DPError, match="no CUDA GPU"):
        executors.resolve_device("cuda")
    cfg = TrainConfig(dataset="breast_cancer", model="logreg", epochs=1, device="cuda")
    with pytest.raises(DPError, match="no CUDA GPU"):
        train(cfg)
    # CLI: one line, exit 2, before anything is queued
    assert main(["train", "--dataset", "breast_cancer", "--model", "logreg", "--epsilon", "1", "--device", "cuda"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no CUDA GPU" in err[0]


@pytest.mark.parametrize("model,epsilon", [("logreg", 2.0), ("mlp", None), ("diffprivlib_logreg", 2.0)])
def test_device_is_recorded(model, epsilon):
    cfg = TrainConfig(dataset="breast_cancer", model=model, epsilon=epsilon, epochs=1, device="auto")
    res = train(cfg)
    assert res.metrics.device == ("cpu" if NO_CUDA or model.startswith("diffprivlib") else "cuda")


@pytest.mark.skipif(NO_CUDA, reason="no CUDA GPU on this machine (torch sees none); CUDA paths skipped")
@pytest.mark.parametrize("model,mode", [("logreg", "fused"), ("mlp", "auto"), ("mlp", "hooks")])
def test_cuda_training_paths(model, mode):  # pragma: no cover - runs only where a GPU is present
    cfg = TrainConfig(dataset="breast_cancer", model=model, epsilon=2.0, epochs=2, device="cuda", grad_sample_mode=mode)
    res = train(cfg)
    assert res.metrics.device == "cuda"
    assert res.metrics.epsilon <= 2.0 + 1e-9
    proba = res.predict_proba(res.split.X_test[:5])
    assert proba.shape[0] == 5 and abs(proba.sum(axis=1) - 1).max() < 1e-5


def test_ray_address_and_choices(monkeypatch):
    monkeypatch.delenv(executors.RAY_ADDRESS_ENV, raising=False)
    assert executors.ray_address() is None
    assert executors.available_executors() == ("local",)
    monkeypatch.setenv(executors.RAY_ADDRESS_ENV, "10.0.0.5:6379")
    assert executors.ray_address() == "10.0.0.5:6379"
    assert executors.available_executors() == ("local", "ray")
    assert executors.ray_address("ray://head:10001") == "ray://head:10001"
    with pytest.raises(DPError, match="HOST:PORT"):
        executors.ray_address("http://x; rm -rf /")
    with pytest.raises(DPError, match="unknown executor"):
        executors.make_executor("slurm")


def test_without_ray_installed_one_message_and_exit_2(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(DPError, match="pip install -r requirements-ray.txt"):
        executors.RayExecutor("127.0.0.1:6379")
    code = main(["sweep", "--epsilons", "1", "--epochs", "1", "--executor", "ray", "--ray-address", "127.0.0.1:1"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install -r requirements-ray.txt" in err[0]


def test_ray_executor_needs_an_address(monkeypatch):
    pytest.importorskip("ray")
    monkeypatch.delenv(executors.RAY_ADDRESS_ENV, raising=False)
    with pytest.raises(DPError, match="ray start --head"):
        executors.RayExecutor()


def test_ray_executor_queues_dispatch_jobs_with_resources(monkeypatch):
    pytest.importorskip("ray")
    from dpcore.jobs import store

    ex = executors.RayExecutor("127.0.0.1:6379", max_retries=3)
    cfg = SweepConfig(epsilons=(1.0,), epochs=1, device="cuda").validate()
    sid = sweep_runs.start_sweep(cfg, workers=0, executor=ex, owner=OWNER)  # queued only: nothing connects
    rec = sweep_runs.load(sid, caller=SYSTEM)
    assert rec["executor"] == {"name": "ray", "address": "127.0.0.1:6379", "num_cpus_per_task": 1.0, "max_retries": 3}
    job = store.get(rec["jobs"][0]["job_id"], caller=SYSTEM)
    assert job["target"] == registry.RAY
    assert job["params"]["target"] == registry.SWEEP_POINT  # the name, not where the function lives
    assert job["params"]["ray"] == {"address": "127.0.0.1:6379", "num_cpus": 1.0, "num_gpus": 1, "max_retries": 3}
    assert job["params"]["params"]["train"]["device"] == "cuda"
    sweep_runs.cancel(sid, caller=SYSTEM)


def test_local_sweep_records_its_executor():
    cfg = SweepConfig(epsilons=(1.0,), epochs=1, device="cpu").validate()
    sid = sweep_runs.start_sweep(cfg, workers=0, owner=OWNER)
    assert sweep_runs.load(sid, caller=SYSTEM)["executor"] == {"name": "local", "workers": 1}
    sweep_runs.cancel(sid, caller=SYSTEM)
    if NO_CUDA:
        with pytest.raises(DPError, match="no CUDA GPU"):  # local + cuda: refused before queueing
            sweep_runs.start_sweep(SweepConfig(epsilons=(1.0,), epochs=1, device="cuda"), workers=0, owner=OWNER)


def test_ray_ships_the_whole_dpcore_package():
    """runtime_env.py_modules gets dpcore/ itself (not dpcore/jobs/, where this module now lives): a Ray worker
    must import dpcore.training, dpcore.sweep and dpcore.jobs.executors from what was shipped."""
    import dpcore

    shipped = executors._PACKAGE_DIR
    assert shipped == Path(dpcore.__file__).resolve().parent
    assert (shipped / "__init__.py").is_file() and (shipped / "jobs" / "executors.py").is_file()


def test_local_workers_start_the_moved_worker_module():
    from dpcore.jobs import workers

    assert workers.WORKER_MODULE == "dpcore.jobs"
    assert importlib.util.find_spec(workers.WORKER_MODULE) is not None
