"""Reproduce it in code (issue 26.6): a training run, a sweep, an audit and an advice exported as a Python script and
a notebook re-run headless through dpcore's public functions and give the same settings and a result of the same
shape; no export holds a server path or a private row, and an upload's hostile name cannot become code."""

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpcore import export
from dpcore.errors import DPError
from dpcore.jobs import registry, runner, store
from dpcore.jobs.owners import CLI, CLI_OWNER

from .cli_helpers import run as cli

NAME = "my data.csv"
BOUNDS = {
    "age": {"lower": 0.0, "upper": 120.0},
    "city": {"categories": ["a", "b"]},
    "label": {"categories": ["no", "yes"]},
}


@pytest.fixture
def upload(tmp_path):
    """A finished training job on an uploaded CSV stored as the page stores it, and the owner's copy of the file."""
    from dpcore.training.config import TrainConfig
    from dpcore.training.data import save_upload

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"age": rng.integers(18, 90, 200), "city": rng.choice(["a", "b"], 200)})
    df["label"] = np.where(df.age > 50, "yes", "no")
    data = df.to_csv(index=False).encode()
    stored = save_upload(data)  # "upload:<ref>", as the page stores it
    params = TrainConfig(
        dataset=stored,
        target="label",
        model="logreg",
        epsilon=2.0,
        epochs=2,
        batch_size=32,
        bounds=BOUNDS,
        upload_name=NAME,
    ).to_dict()
    runner.run_inline(registry.TRAIN, params, owner=CLI_OWNER, group="train", label="upload")
    own = tmp_path / "owner"
    own.mkdir()
    (own / NAME).write_bytes(data)
    return store.list_jobs(caller=CLI, group="train")[0], stored, own


def _run_script(code: bytes, cwd) -> dict:
    (cwd / "again.py").write_bytes(code)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed package, from another folder
    out = subprocess.run([sys.executable, "again.py"], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return export.result_line(out.stdout)


def _run_notebook(code: bytes, cwd, monkeypatch) -> dict:
    import nbclient
    import nbformat

    monkeypatch.delenv("PYTHONPATH", raising=False)  # the kernel imports the installed package
    nb = nbformat.reads(code.decode(), as_version=4)
    nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    ).execute()
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    return export.result_line(text)


@pytest.mark.slow
def test_a_training_run_exported_as_script_and_notebook_runs_again(upload, monkeypatch, dp_home):
    job, stored, own = upload
    recipe = export.for_job(job["id"], caller=CLI)
    py, nb = export.render(recipe, "py"), export.render(recipe, "ipynb")
    for text in (py.decode(), nb.decode()):
        assert stored[7:] not in text and str(dp_home) not in text and "uploads" not in text  # no path, no ref
    want = {**job["params"], "dataset": f"csv:{NAME}"}
    for again in (_run_script(py, own), _run_notebook(nb, own, monkeypatch)):
        assert again["settings"] == json.loads(json.dumps(want))  # the same settings, the upload by its own name
        r = again["result"]
        assert set(r) == {"test_accuracy", "epsilon", "delta", "noise_multiplier", "steps", "baseline_accuracy"}
        assert 0 <= r["test_accuracy"] <= 1 and 0 < r["epsilon"] <= 2.0 and r["delta"] == 1e-5
        assert r["steps"] == job["result"]["steps"] and r["baseline_accuracy"] is not None


@pytest.mark.slow
def test_a_sweep_exported_runs_again_and_holds_no_private_row(tmp_path):
    from dpcore.sweep import runs as sweep_runs
    from dpcore.sweep.config import for_upload

    rng = np.random.default_rng(1)
    df = pd.DataFrame({"age": rng.integers(18, 90, 240), "city": rng.choice(["a", "b"], 240)})
    df["label"] = np.where(df.age + rng.normal(0, 9, 240) > 50, "yes", "no")
    data = df.to_csv(index=False).encode()
    stored = tmp_path / "server" / "5f3a9c.csv"  # inline (no job) the app would delete a stored upload after one model
    stored.parent.mkdir()
    stored.write_bytes(data)
    cfg = for_upload(
        str(stored),
        "label",
        bounds=BOUNDS,
        upload_name=NAME,
        epsilons=(2.0,),
        seeds=1,
        epochs=2,
        attacks=("loss",),
        canaries=20,
        reproducible_noise=True,
    )
    res = sweep_runs.run_sweep_inline(cfg, owner=CLI_OWNER)
    rec = sweep_runs.load(res["id"], caller=CLI)
    assert rec["result"]["points"][0]["vulnerable"][0]["record"]  # the stored sweep holds rows for its owner ...
    py = export.render(export.for_sweep(res["id"], caller=CLI), "py").decode()
    assert "vulnerable" not in py and "'record'" not in py and str(stored) not in py  # ... the export none of them
    assert not any(f"'{c}': {int(a)}" in py for a, c in zip(df.age, df.city))
    (tmp_path / NAME).write_bytes(data)
    again = _run_script(py.encode(), tmp_path)
    assert again["settings"] == json.loads(json.dumps({**cfg.to_dict(), "dataset": f"csv:{NAME}"}))
    assert again["result"]["epsilons"] == [2.0] and len(again["result"]["accuracy"]) == 1
    assert again["result"]["baseline_accuracy"] is not None


@pytest.mark.slow
def test_an_audit_and_an_advice_exported_run_again(tmp_path):
    rng = np.random.default_rng(2)
    member = np.r_[np.ones(200, int), np.zeros(200, int)]
    (tmp_path / "scores.csv").write_text(
        "member,score\n" + "".join(f"{m},{s}\n" for m, s in zip(member, rng.laplace(0, 1, 400) + 4 * member))
    )
    mech = {"kind": "epsilon", "epsilon": 1.0, "delta": 1e-5}
    again = _run_script(
        export.render(export.for_audit("scores.csv", delta=1e-5, confidence=0.95, mechanism=mech), "py"), tmp_path
    )
    assert again["settings"]["mechanism"] == mech and again["result"]["verdict"] is True
    risk, util = {"kind": "tpr", "value": 0.05, "at": 0.01}, {"kind": "count", "within": 10.0, "confidence": 0.95}
    again = _run_script(export.render(export.for_advice("gaussian", risk, util, delta=1e-5), "py"), tmp_path)
    from dpcore.advisor import solve, targets

    direct = solve.advise("gaussian", targets.RiskLimit(**risk), targets.UtilityTarget(**util), delta=1e-5)
    assert again["result"]["epsilon"] == pytest.approx(direct["epsilon"]) and again["settings"]["risk"] == risk


def test_a_hostile_upload_name_stays_text(upload):
    from dpcore.training.config import check_upload_name

    evil = check_upload_name('x"""\n__import__("os").system("echo pwned") #<img src=x>.csv')
    r = export.for_audit(evil, delta=1e-5, confidence=0.95)
    code = export.script(r)
    compile(code, "export.py", "exec")  # still valid Python: the name is a comment line or a string literal
    assert "\n" not in evil
    for line in code.splitlines():  # the name only in comments and string literals
        if "system(" in line:
            assert line.startswith("#") or repr(evil) in line, line
    nb = json.loads(export.notebook(r))
    assert "<img" not in nb["cells"][0]["source"]  # markdown shows it as text


def test_the_cli_exports_and_refuses_in_one_line(upload, capsys, tmp_path):
    job, stored, _ = upload
    rc, out, err = cli(capsys, "export", "--job", job["id"], "--format", "ipynb")
    assert rc == 0 and json.loads(out)["nbformat"] == 4 and stored[7:] not in out
    rc, out, err = cli(capsys, "export", "--job", job["id"], "--out", str(tmp_path / "run.py"))
    assert rc == 0 and json.loads(out)["written"].endswith("run.py") and (tmp_path / "run.py").read_text()
    for args in (
        ["export", "--job", "nope"],
        ["export", "--sweep", "nope"],
        ["export", "--job", job["id"], "--out", ""],
        ["export", "--job", job["id"], "--format", "pdf"],
        ["export"],
    ):
        rc, out, err = cli(capsys, *args)
        assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, (args, err)
    with pytest.raises(DPError):
        export.render(export.for_job(job["id"], caller=CLI), "docx")
