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
    """A sweep's record points at jobs; once they are done the record stores the points for good."""
    from dpcore.jobs import store, workers

    fake_point = {"epsilon": None, "seed": 0, "test_accuracy": 0.9, "mia": {}}
    submitted = []

    def submit_many(units, *, owner, group=None, key=None, ref=None):
        submitted.extend(params for _, params, _ in units)
        return [f"job{i + 1}" for i in range(len(units))]

    monkeypatch.setattr(store, "submit_many", submit_many)
    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: n)
    sid = sweep_runs.start_sweep(dict(TINY, epsilons=(1.0,)), workers=2, owner=OWNER)
    assert len(submitted) == 2 and submitted[0]["train"]["epsilon"] is None  # baseline first
    status = {"job1": "running", "job2": "queued"}

    def get(jid, *, caller, history=True):
        done = status[jid] == "done"
        res = dict(fake_point, epsilon=None if jid == "job1" else 1.0)
        return {
            "id": jid,
            "status": status[jid],
            "progress": {"step": 5, "total_steps": 10},
            "result": res if done else None,
            "error": None,
            "history": [],
            "created": 0,
            "started": 0,
            "ended": None,
        }

    monkeypatch.setattr(store, "get", get)
    s = sweep_runs.state(sid, caller=SYSTEM)
    assert s["status"] == "running" and s["done"] == 0 and 0.4 < s["fraction"] < 0.5
    status.update(job1="done", job2="done")
    s = sweep_runs.state(sid, caller=SYSTEM)
    assert s["status"] == "done" and s["done"] == 2 and s["fraction"] == 1.0
    monkeypatch.setattr(store, "get", lambda *a, **k: (_ for _ in ()).throw(AssertionError("job store read")))
    again = sweep_runs.state(sid, caller=SYSTEM)  # finished sweeps are read from their own record
    assert again["result"]["baseline"]["test_accuracy"] == 0.9
    assert [s["id"] for s in sweep_runs.list_sweeps(caller=SYSTEM)] == [sid]
    assert sweep_runs.load(sid, caller=SYSTEM)["status"] == "done"


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
