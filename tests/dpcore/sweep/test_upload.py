"""A sweep on the user's own CSV (issue 26.2): `sweep --data FILE --target COL --bounds …` runs the table defaults
with the declared bounds and reports each point's most exposed rows by number; a finished sweep stays readable (page,
statement, report, export) after its stored upload is deleted."""

import json
import shutil

import numpy as np
import pandas as pd

from dpcore.cli import main
from dpcore.jobs.owners import CLI, CLI_OWNER
from dpcore.sweep import runs as sweep_runs
from dpcore.sweep.config import TABLE_DEFAULTS, for_upload

BOUNDS = ["--bounds", "age=0:120", "--bounds", "city=a,b", "--bounds", "label=no,yes"]


def _csv(path, n=240, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"age": rng.integers(18, 90, n), "city": rng.choice(["a", "b"], n)})
    df["label"] = np.where(df.age + rng.normal(0, 9, n) > 50, "yes", "no")
    df.to_csv(path, index=False)
    return df


def test_the_cli_sweeps_an_upload_with_its_bounds(tmp_path, capsys):
    _csv(tmp_path / "clinic.csv")
    out = tmp_path / "sweep.json"
    rc = main(
        [
            "sweep",
            "--data",
            str(tmp_path / "clinic.csv"),
            "--target",
            "label",
            *BOUNDS,
            "--epsilons",
            "2",
            "--seeds",
            "1",
            "--epochs",
            "2",
            "--shadows",
            "2",
            "--canaries",
            "20",
            "--workers",
            "0",
            "--json",
            str(out),
        ]
    )
    assert rc == 0, capsys.readouterr().err
    d = json.loads(out.read_text())
    cfg = d["config"]
    assert cfg["upload_name"] == "clinic.csv" and cfg["model"] == TABLE_DEFAULTS["model"]
    assert cfg["attacks"] == list(TABLE_DEFAULTS["attacks"]) and cfg["bounds"]["city"] == {"categories": ["a", "b"]}
    for p in [d["baseline"], *d["points"]]:
        assert p["vulnerable"] and all(set(v) == {"index", "score", "fpr", "proved_epsilon"} for v in p["vulnerable"])
        assert p["exposure"]["attack"] == "lira_online"
    assert d["points"][0]["exposure"]["share_above_claim"] == 0.0
    assert "rmia" in d["points"][0]["mia"]


def test_a_finished_upload_sweep_outlives_its_upload(tmp_path):
    from dpcore import export
    from dpcore.report import document as report
    from dpcore.statements import sweep as sweep_st

    src = tmp_path / "clinic.csv"
    _csv(src)
    stored = tmp_path / "stored.csv"
    shutil.copy(src, stored)
    b = {"age": {"lower": 0, "upper": 120}, "city": {"categories": ["a", "b"]}, "label": {"categories": ["no", "yes"]}}
    res = sweep_runs.run_sweep_inline(
        for_upload(
            str(stored),
            "label",
            bounds=b,
            upload_name="clinic.csv",
            epsilons=(2.0,),
            seeds=1,
            epochs=2,
            shadows=2,
            canaries=20,
        ),
        owner=CLI_OWNER,
    )
    stored.unlink()  # what release_uploads does once the sweep's jobs are done
    s = sweep_runs.state(res["id"], caller=CLI)
    assert s["status"] == "done" and s["result"]["points"]
    st = sweep_st.for_sweep(res["id"], caller=CLI)
    assert st["preprocessing"]["declared_public"] and st["points"][0]["preprocessing"]["leaks"] == []
    assert "clinic.csv" in report.sweep_section(res["id"], caller=CLI).title
    assert "clinic.csv" in export.script(export.for_sweep(res["id"], caller=CLI))
    assert sweep_runs.list_sweeps(caller=CLI)[0]["name"].startswith("clinic.csv")
