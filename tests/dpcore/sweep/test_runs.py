"""Running sweeps: a tiny sweep end to end (real training), stored records and state, ids, the CLI."""

import json

import pytest

from dpcore.errors import DPError
from dpcore.jobs.owners import CLI_OWNER as OWNER
from dpcore.jobs.owners import SYSTEM
from dpcore.sweep import runs as sweep_runs
from dpcore.sweep import summary as sweep_summary
from dpcore.sweep.config import SweepConfig
from tests.dpcore.sweep.helpers import TINY


def test_tiny_sweep_end_to_end(tiny_result):
    r = tiny_result
    assert r["baseline"]["epsilon"] is None and r["baseline"]["empirical_epsilon"]["claimed"] is None
    assert [p["epsilon"] for p in r["points"]] == [1.0, 4.0]
    for p in [r["baseline"]] + r["points"]:
        assert 0 <= p["test_accuracy"] <= 1
        assert set(p["mia"]) == {"threshold", "loss", "canary"}
        for a in ("threshold", "loss"):
            assert p["mia"][a]["n_members"] == p["mia"][a]["n_nonmembers"] == 114  # ordinary records only
        assert p["mia"]["canary"]["n_members"] + p["mia"]["canary"]["n_nonmembers"] == 40
        assert (
            p["canaries"]["n"] == 40
            and p["reproducible_noise"] is False
            and p["dp_release"] is (p["epsilon"] is not None)
        )
    for p in r["points"]:
        e = p["empirical_epsilon"]
        # truth target: never above the claimed epsilon
        assert 0 <= e["lower_bound"] <= p["epsilon_spent"] <= p["epsilon"] + 1e-9 and e["within_claim"]
        assert e["max_certifiable"] > 0 and e["attack"] == "canary" and "records" in e
        assert p["gdp_mu"] > 0
        # the audit's counts and confidence, and the exact ROC from the accountant's PLD (issue 11.8/11.9)
        assert e["confidence"] == 0.95 and e["n_canaries"] == 40  # the one-run audit on the canaries
        rec = e["records"]  # the split audit on ordinary records, beside it
        assert rec["confidence"] == 0.95 and rec["members"] + rec["selection_members"] == 114
        t = p["tradeoff"]
        assert (t["noise_multiplier"], t["sample_rate"], t["steps"], t["delta"]) == (
            p["noise_multiplier"],
            p["sample_rate"],
            p["steps"],
            p["delta"],
        )
        assert len(t["fpr"]) == len(t["tpr"]) and t["fpr"][0] == pytest.approx(1e-6)
        assert p["epsilon_pld"] <= p["epsilon_spent"] + 2 * 0.01
    assert sweep_summary.violations(r) == []


def test_reproducible_sweep_is_labelled_everywhere(dp_home):
    cfg = dict(TINY, epsilons=(2.0,), reproducible_noise=True)
    a = sweep_runs.run_sweep_inline(SweepConfig(**cfg), owner=OWNER)
    b = sweep_runs.run_sweep_inline(SweepConfig(**cfg), store=False, owner=OWNER)
    assert a["points"][0]["test_accuracy"] == b["points"][0]["test_accuracy"]  # replayable: not a DP release
    label = "reproducible noise: not a DP release"
    assert a["release_label"] == label and all(p["release_label"] == label for p in a["points"])
    out = sweep_summary.cli_json(a)
    assert out["reproducible_noise"] is True and out["points"][0]["release_label"] == label
    rec = sweep_runs.load(a["id"], caller=SYSTEM)
    assert rec["reproducible_noise"] is True and label in rec["name"]
    assert label in sweep_summary.reading(a, 2.0)


def test_stored_sweep_state_and_reopen(monkeypatch):
    """A sweep is a group of jobs in the job store: its state follows its points, and once they are done the
    sweep's own row keeps the points for good (its finished state reads no job)."""
    from dpcore.jobs import db, store

    fake_point = {"epsilon": None, "seed": 0, "test_accuracy": 0.9, "mia": {}}
    sid = sweep_runs.start_sweep(dict(TINY, epsilons=(1.0,)), workers=0, owner=OWNER)  # nobody runs them
    rec = sweep_runs.load(sid, caller=SYSTEM)
    points = [e["job_id"] for e in rec["jobs"]]
    queued = [store.get(j, caller=SYSTEM) for j in points]
    assert len(points) == 2 and queued[0].params["train"]["epsilon"] is None  # baseline first
    assert {j.group for j in queued} == {rec["group"]} == {f"sweep-{sid}"} and {j.status for j in queued} == {"queued"}

    def point(job_id, status, result=None):
        with db.connection() as conn, db.transaction(conn):
            conn.execute(
                "UPDATE jobs SET status = ?, progress = ?, result = ? WHERE id = ?",
                (status, json.dumps({"step": 5, "total_steps": 10}), json.dumps(result) if result else None, job_id),
            )

    point(points[0], "running")
    point(points[1], "queued")
    s = sweep_runs.state(sid, caller=SYSTEM)
    assert s["status"] == "running" and s["done"] == 0 and 0.4 < s["fraction"] < 0.5
    for job_id, eps in zip(points, (None, 1.0)):
        point(job_id, "done", dict(fake_point, epsilon=eps))
    s = sweep_runs.state(sid, caller=SYSTEM)
    assert s["status"] == "done" and s["done"] == 2 and s["fraction"] == 1.0
    monkeypatch.setattr(store, "get_many", lambda *a, **k: (_ for _ in ()).throw(AssertionError("job store read")))
    again = sweep_runs.state(sid, caller=SYSTEM)  # finished sweeps are read from their own row
    assert again["result"]["baseline"]["test_accuracy"] == 0.9
    assert [s["id"] for s in sweep_runs.list_sweeps(caller=SYSTEM)] == [sid]
    assert sweep_runs.load(sid, caller=SYSTEM)["status"] == "done"
    assert store.get(sid, caller=SYSTEM).target == "sweep"  # one store: the sweep is a job row of its own


def test_unknown_sweep_id():
    with pytest.raises(DPError):
        sweep_runs.load("../etc/passwd", caller=SYSTEM)
    with pytest.raises(DPError):
        sweep_runs.load("nope", caller=SYSTEM)


def test_cli_bad_epsilons_is_one_line(capsys):
    from dpcore.cli import main

    assert main(["sweep", "--epsilons", "a,b"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--epsilons" in err


def test_cli_inline_tiny(tmp_path, capsys):
    from dpcore.cli import main

    out = tmp_path / "s.json"
    rc = main(
        [
            "sweep",
            "--dataset",
            "breast_cancer",
            "--model",
            "logreg",
            "--epsilons",
            "2",
            "--epochs",
            "1",
            "--train-size",
            "80",
            "--canaries",
            "30",
            "--size-fractions",
            "",
            "--batch-size",
            "32",
            "--workers",
            "0",
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["baseline"]["epsilon"] is None and data["points"][0]["target_epsilon"] == 2.0
    assert 0 < data["points"][0]["epsilon"] <= 2.0


def test_cli_refuses_json_folder_before_the_sweep(tmp_path, capsys, monkeypatch):
    from dpcore.cli import main

    monkeypatch.setattr(sweep_runs, "run_sweep_parallel", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran")))
    assert main(["sweep", "--json", str(tmp_path)]) == 2
    assert "got a folder" in capsys.readouterr().err
