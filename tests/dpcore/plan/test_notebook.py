"""The notebook and the script a planned release hands out run (nbclient; a subprocess) and state the same ε as its
statement, from OpenDP's own privacy maps."""

import json
import os
import subprocess
import sys

import pytest

from dpcore import export
from dpcore.data import datasets
from dpcore.plan import compute
from dpcore.statements import plan as plan_statement

from .helpers import five


def _released(plan, n=400, seed=5):
    df = datasets.medical_visits(n, seed)
    rel = compute.prepare(df, plan).release()
    return compute.Outcome(rel, None, {"charged_to": []}, False, "visits", "builtin:visits")


@pytest.mark.slow
def test_the_notebook_runs_and_states_the_statements_epsilon(tmp_path, monkeypatch):
    import nbclient
    import nbformat

    out = _released(five(1.3, k=4))
    st = plan_statement.for_plan(out)
    files = export.plan_files(out, n=400, seed=5)
    nb = nbformat.reads(files["plan.ipynb"].decode(), as_version=4)
    monkeypatch.delenv("PYTHONPATH", raising=False)  # the kernel imports the installed package
    nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    text = "".join(
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("name") == "stdout"
    )
    result = export.result_line(text)
    assert abs(result["result"]["epsilon"] - st["epsilon"]) < 1e-9
    assert result["result"]["epsilon_per_person"] == st["epsilon_per_person"]
    assert result["settings"] == st["plan"]
    assert result["result"]["cells"] == len(out.release.rows)


def test_the_script_runs_on_an_uploaded_file_from_the_owners_disk(tmp_path):
    plan = five(0.8, person=False)
    df = datasets.medical_visits(300, 2)
    (tmp_path / "my visits.csv").write_bytes(df.to_csv(index=False).encode())
    rel = compute.prepare(df, plan).release()
    out = compute.Outcome(rel, None, {"charged_to": []}, False, "upload my visits.csv", "upload")
    code = export.plan_files(out, data_name="my visits.csv")["plan.py"]
    assert b"/tmp" not in code and b"dp-home" not in code  # no server path
    (tmp_path / "again.py").write_bytes(code)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "again.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = export.result_line(done.stdout)
    assert abs(result["result"]["epsilon"] - 0.8) < 1e-9 and result["result"]["epsilon_per_person"] == 8.0


def test_the_files_of_a_release():
    out = _released(five(1.0), n=200)
    files = export.plan_files(out, n=200, seed=5)
    assert set(files) == {
        "release.csv",
        "release.statement.json",
        "plan.json",
        "plan.ipynb",
        "plan.py",
        "registry-draft.yaml",
    }
    st = json.loads(files["release.statement.json"])
    assert st["signature"]["scheme"] == "ed25519" or st["signature"]["scheme"]
    import yaml

    from dpcore.plan import registry

    assert registry.validate(yaml.safe_load(files["registry-draft.yaml"])) == []
