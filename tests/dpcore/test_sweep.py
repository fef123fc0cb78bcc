"""Sweeps: config validation, a tiny sweep end to end (real training), stored records, summaries, CLI."""

import json

import pytest

from dpcore import sweep
from dpcore.errors import DPError

TINY = dict(dataset="breast_cancer", model="logreg", epsilons=(1.0, 4.0), seeds=1, epochs=2, batch_size=32,
            lr=0.5, train_size=60, hidden=None, attacks=("threshold", "loss"))


@pytest.fixture(scope="module")
def tiny_result():
    import os
    import tempfile

    old = os.environ.get("DP_EXPLORER_HOME")
    os.environ["DP_EXPLORER_HOME"] = tempfile.mkdtemp()
    try:
        return sweep.run_sweep_inline(sweep.SweepConfig(**TINY))
    finally:
        if old is None:
            os.environ.pop("DP_EXPLORER_HOME", None)
        else:
            os.environ["DP_EXPLORER_HOME"] = old


def test_tiny_sweep_end_to_end(tiny_result):
    r = tiny_result
    assert r["baseline"]["epsilon"] is None and "empirical_epsilon" not in r["baseline"]
    assert [p["epsilon"] for p in r["points"]] == [1.0, 4.0]
    for p in r["points"]:
        assert 0 <= p["test_accuracy"] <= 1
        assert set(p["mia"]) == {"threshold", "loss"}
        for m in p["mia"].values():
            assert 0 <= m["auc"] <= 1 and 0 <= m["advantage"] <= 1
            assert m["n_members"] == m["n_nonmembers"] == 60
        e = p["empirical_epsilon"]
        # truth target: never above the claimed epsilon
        assert 0 <= e["lower_bound"] <= p["epsilon_spent"] <= p["epsilon"] + 1e-9
        assert e["max_certifiable"] > 0
        assert p["gdp_mu"] > 0
        # the audit's counts and confidence, and the exact ROC from the accountant's PLD (issue 11.8/11.9)
        assert e["confidence"] == 0.95 and e["members"] + e["selection_members"] == 60
        t = p["tradeoff"]
        assert (t["noise_multiplier"], t["sample_rate"], t["steps"], t["delta"]) == (
            p["noise_multiplier"], p["sample_rate"], p["steps"], p["delta"])
        assert len(t["fpr"]) == len(t["tpr"]) and t["fpr"][0] == pytest.approx(1e-6)
        assert p["epsilon_pld"] <= p["epsilon_spent"] + 2 * 0.01
    assert sweep.violations(r) == []


def test_cli_json_has_the_documented_shape(tiny_result):
    out = json.loads(json.dumps(sweep.cli_json(tiny_result)))
    assert set(out) >= {"baseline", "points"}
    assert out["baseline"]["epsilon"] is None
    p = out["points"][0]
    assert {"epsilon", "seed", "test_accuracy", "mia", "empirical_epsilon"} <= set(p)
    assert set(p["mia"]["loss"]) == {"auc", "advantage", "tpr_at_1pct_fpr", "tpr_at_0.1pct_fpr"}
    assert set(p["empirical_epsilon"]) >= {"lower_bound", "max_certifiable"}


def test_summaries_and_reading(tiny_result):
    rows = sweep.by_epsilon(tiny_result)
    assert [r["epsilon"] for r in rows] == [1.0, 4.0]
    assert rows[0]["accuracy_sd"] == 0.0
    text = sweep.reading(tiny_result, 1.0)
    assert "ε = 1" in text and "baseline" in text and "advantage" in text
    assert "No finished model" in sweep.reading(tiny_result, 2.0)


def test_figures_build(tiny_result):
    from dpcore.figures import privacy_utility as figs

    for fig in (figs.accuracy_chart(tiny_result), figs.attack_chart(tiny_result, "auc"),
                figs.attack_chart(tiny_result, "tpr_at_1pct_fpr"), figs.empirical_epsilon_chart(tiny_result),
                figs.roc_chart(tiny_result["points"][0]), figs.roc_chart(tiny_result["baseline"]),
                figs.compare_chart({"a": tiny_result, "b": tiny_result})):
        assert fig.layout.title.text
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    assert figs.accuracy_chart(tiny_result).layout.xaxis.type == "log"
    assert figs.roc_chart(tiny_result["points"][0]).layout.yaxis.type == "log"


def test_stored_sweep_state_and_reopen(monkeypatch):
    """A sweep's record points at jobs; once they are done the record stores the points for good."""
    from dpcore import jobs

    fake_point = {"epsilon": None, "seed": 0, "test_accuracy": 0.9, "mia": {}}
    submitted = []
    monkeypatch.setattr(jobs, "submit", lambda target, params, group=None, label="": submitted.append(params)
                        or f"job{len(submitted)}")
    monkeypatch.setattr(jobs, "ensure_workers", lambda n=2: n)
    sid = sweep.start_sweep(dict(TINY, epsilons=(1.0,)), workers=2)
    assert len(submitted) == 2 and submitted[0]["train"]["epsilon"] is None  # baseline first
    status = {"job1": "running", "job2": "queued"}

    def get(jid, history=True):
        done = status[jid] == "done"
        res = dict(fake_point, epsilon=None if jid == "job1" else 1.0)
        return {"id": jid, "status": status[jid], "progress": {"step": 5, "total_steps": 10},
                "result": res if done else None, "error": None, "history": [], "created": 0, "started": 0,
                "ended": None}

    monkeypatch.setattr(jobs, "get", get)
    s = sweep.state(sid)
    assert s["status"] == "running" and s["done"] == 0 and 0.4 < s["fraction"] < 0.5
    status.update(job1="done", job2="done")
    s = sweep.state(sid)
    assert s["status"] == "done" and s["done"] == 2 and s["fraction"] == 1.0
    monkeypatch.setattr(jobs, "get", lambda *a, **k: (_ for _ in ()).throw(AssertionError("job store read")))
    again = sweep.state(sid)  # finished sweeps are read from their own record
    assert again["result"]["baseline"]["test_accuracy"] == 0.9
    assert [s["id"] for s in sweep.list_sweeps()] == [sid]
    assert sweep.load(sid)["status"] == "done"


@pytest.mark.parametrize("bad", [
    dict(epsilons=()), dict(epsilons=(0.0,)), dict(epsilons=(-1,)), dict(seeds=0), dict(seeds=11),
    dict(attacks=("magic",)), dict(attacks=("lira",), shadows=1), dict(delta=1.0), dict(epochs=0),
    dict(test_size=2.0), dict(shadow_trainer="gpu"), dict(dataset="foo"), dict(model="cnn"),
])
def test_bad_config(bad):
    with pytest.raises(DPError):
        sweep.SweepConfig(**{**TINY, **bad}).validate()


def test_unknown_setting_and_sweep_id():
    with pytest.raises(DPError):
        sweep.SweepConfig.from_dict({"colour": "red"})
    with pytest.raises(DPError):
        sweep.load("../etc/passwd")
    with pytest.raises(DPError):
        sweep.load("nope")


def test_cli_bad_epsilons_is_one_line(capsys):
    from dpcore.cli import main

    assert main(["sweep", "--epsilons", "a,b"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--epsilons" in err


def test_cli_inline_tiny(tmp_path, capsys):
    from dpcore.cli import main

    out = tmp_path / "s.json"
    rc = main(["sweep", "--dataset", "breast_cancer", "--model", "logreg", "--epsilons", "2", "--epochs", "1",
               "--train-size", "40", "--workers", "0", "--json", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["baseline"]["epsilon"] is None and data["points"][0]["epsilon"] == 2.0


def test_lira_point_with_shadows_trained_like_the_target():
    cfg = sweep.SweepConfig(**{**TINY, "epsilons": (2.0,), "attacks": ("loss", "lira"), "shadows": 2}).validate()
    p = sweep.run_point(cfg.point_params()[1])
    assert set(p["mia"]) == {"loss", "lira_offline", "lira_online"}
    assert p["mia"]["lira_online"]["shadows"] == 2
    assert 0 <= p["empirical_epsilon"]["lower_bound"] <= p["epsilon_spent"]


def test_default_demo_baseline_leaks():
    """The page's demo must show a leak: the non-private baseline's loss-attack AUC >= 0.6 (seed 0)."""
    import torch

    torch.set_num_threads(1)
    cfg = sweep.SweepConfig().validate()
    base = sweep.run_point(cfg.point_params()[0])
    assert base["epsilon"] is None
    assert base["mia"]["loss"]["auc"] >= 0.6
    assert base["test_accuracy"] >= 0.8
