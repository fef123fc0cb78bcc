"""Sweeps: config validation, a tiny sweep end to end (real training), stored records, summaries, CLI."""

import json

import numpy as np
import pytest

from dpcore import sweep
from dpcore.errors import DPError

TINY = dict(dataset="breast_cancer", model="logreg", epsilons=(1.0, 4.0), seeds=1, epochs=2, batch_size=32,
            lr=0.5, train_size=160, hidden=None, attacks=("threshold", "loss"), canaries=40, size_fractions=())


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
    assert r["baseline"]["epsilon"] is None and r["baseline"]["empirical_epsilon"]["claimed"] is None
    assert [p["epsilon"] for p in r["points"]] == [1.0, 4.0]
    for p in [r["baseline"]] + r["points"]:
        assert 0 <= p["test_accuracy"] <= 1
        assert set(p["mia"]) == {"threshold", "loss", "canary"}
        for a in ("threshold", "loss"):
            assert p["mia"][a]["n_members"] == p["mia"][a]["n_nonmembers"] == 114  # ordinary records only
        assert p["mia"]["canary"]["n_members"] + p["mia"]["canary"]["n_nonmembers"] == 40
        assert p["canaries"]["n"] == 40 and p["reproducible_noise"] is False and p["dp_release"] is (
            p["epsilon"] is not None)
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
            p["noise_multiplier"], p["sample_rate"], p["steps"], p["delta"])
        assert len(t["fpr"]) == len(t["tpr"]) and t["fpr"][0] == pytest.approx(1e-6)
        assert p["epsilon_pld"] <= p["epsilon_spent"] + 2 * 0.01
    assert sweep.violations(r) == []


def test_cli_json_has_the_documented_shape(tiny_result):
    out = json.loads(json.dumps(sweep.cli_json(tiny_result)))
    assert set(out) >= {"baseline", "points", "reproducible_noise"}
    assert out["baseline"]["epsilon"] is None and "lower_bound" in out["baseline"]["empirical_epsilon"]
    for p in [out["baseline"]] + out["points"]:
        assert {"epsilon", "seed", "test_accuracy", "mia", "empirical_epsilon"} <= set(p)
        for a in ("threshold", "loss", "canary"):
            assert {"auc", "advantage", "tpr_at_1pct_fpr"} <= set(p["mia"][a])
    p = out["points"][0]
    assert p["target_epsilon"] == 1.0 and p["epsilon"] == tiny_result["points"][0]["epsilon_spent"] <= 1.0
    assert set(p["empirical_epsilon"]) >= {"lower_bound", "max_certifiable", "confidence"}


def test_default_config_has_the_demo_shape():
    """The default run (CLI without arguments, the page's Start): full digits, >= 3 seeds per ε incl. 1 and 8,
    canaries, the size control with its own baselines; baselines first. (Its figures: bench/sweep.py.)"""
    cfg = sweep.SweepConfig().validate()
    assert cfg.dataset == "digits" and cfg.train_size is None and cfg.seeds >= 3
    assert {1.0, 8.0} <= set(cfg.epsilons) and 200 <= cfg.canaries <= 500
    assert cfg.size_fractions == (0.25, 0.5) and cfg.reproducible_noise is False
    params = cfg.point_params()
    n = cfg.n_rows()
    assert n > 1400
    assert [p["train"]["epsilon"] for p in params[:cfg.seeds]] == [None] * cfg.seeds
    main = [p for p in params if p["train_fraction"] == 1.0]
    assert len(main) == cfg.seeds * (1 + len(cfg.epsilons)) and all(p["canaries"] == cfg.canaries for p in main)
    control = [p for p in params if p["train_fraction"] < 1.0]
    assert len(control) == 2 * 2 * cfg.seeds and all(p["canaries"] == 0 for p in control)
    assert sorted({p["train"]["train_size"] for p in control}) == [int(n * 0.25), int(n * 0.5)]
    assert {p["train"]["epsilon"] for p in control} == {None, cfg.size_epsilon}


def test_canaries_are_mislabelled_and_included_by_a_secret_coin():
    from dpcore.training.config import TrainConfig
    from dpcore.training.data import load_split

    split = load_split(TrainConfig(dataset="digits", model="mlp", epsilon=None))
    a, b = sweep.make_canaries(split, 300, 0), sweep.make_canaries(split, 300, 0)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)  # which records: public
    assert not np.array_equal(a.included, b.included)  # in or out: a fresh secret coin per run
    assert 0.35 < a.included.mean() < 0.65
    idx = [int(np.flatnonzero((split.X_train == x).all(1))[0]) for x in a.X[:50]]
    assert np.all(split.y_train[idx] != a.y[:50])  # never the true label
    r1 = sweep.make_canaries(split, 300, 0, reproducible=True)
    assert np.array_equal(r1.included, sweep.make_canaries(split, 300, 0, reproducible=True).included)
    grown = a.add_to(split)
    assert grown.n_train == split.n_train + int(a.included.sum())


def test_size_control_summary():
    pts = [{"epsilon": e, "seed": 0, "test_accuracy": acc, "train_fraction": f, "n_train": n, "mia": {}}
           for e, acc, f, n in [(None, 0.9, 0.25, 100), (1.0, 0.5, 0.25, 100), (None, 0.95, 0.5, 200),
                                (1.0, 0.8, 0.5, 200)]]
    res = {"config": {"size_epsilon": 1.0}, "size_control": pts,
           "baseline": {"epsilon": None, "seed": 0, "test_accuracy": 0.97, "n_train": 400, "mia": {}},
           "points": [{"epsilon": 1.0, "seed": 0, "test_accuracy": 0.9, "n_train": 400, "mia": {}}]}
    rows = sweep.size_control(res)
    assert [r["fraction"] for r in rows] == [0.25, 0.5, 1.0]
    assert [round(r["cost"], 3) for r in rows] == [0.4, 0.15, 0.07]


def test_reproducible_sweep_is_labelled_everywhere(dp_home):
    cfg = dict(TINY, epsilons=(2.0,), reproducible_noise=True)
    a = sweep.run_sweep_inline(sweep.SweepConfig(**cfg))
    b = sweep.run_sweep_inline(sweep.SweepConfig(**cfg), store=False)
    assert a["points"][0]["test_accuracy"] == b["points"][0]["test_accuracy"]  # replayable: not a DP release
    label = "reproducible noise: not a DP release"
    assert a["release_label"] == label and all(p["release_label"] == label for p in a["points"])
    out = sweep.cli_json(a)
    assert out["reproducible_noise"] is True and out["points"][0]["release_label"] == label
    rec = sweep.load(a["id"])
    assert rec["reproducible_noise"] is True and label in rec["name"]
    assert label in sweep.reading(a, 2.0)


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
    from dpcore.jobs import store, workers

    fake_point = {"epsilon": None, "seed": 0, "test_accuracy": 0.9, "mia": {}}
    submitted = []
    monkeypatch.setattr(store, "submit", lambda target, params, group=None, label="": submitted.append(params)
                        or f"job{len(submitted)}")
    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: n)
    sid = sweep.start_sweep(dict(TINY, epsilons=(1.0,)), workers=2)
    assert len(submitted) == 2 and submitted[0]["train"]["epsilon"] is None  # baseline first
    status = {"job1": "running", "job2": "queued"}

    def get(jid, history=True):
        done = status[jid] == "done"
        res = dict(fake_point, epsilon=None if jid == "job1" else 1.0)
        return {"id": jid, "status": status[jid], "progress": {"step": 5, "total_steps": 10},
                "result": res if done else None, "error": None, "history": [], "created": 0, "started": 0,
                "ended": None}

    monkeypatch.setattr(store, "get", get)
    s = sweep.state(sid)
    assert s["status"] == "running" and s["done"] == 0 and 0.4 < s["fraction"] < 0.5
    status.update(job1="done", job2="done")
    s = sweep.state(sid)
    assert s["status"] == "done" and s["done"] == 2 and s["fraction"] == 1.0
    monkeypatch.setattr(store, "get", lambda *a, **k: (_ for _ in ()).throw(AssertionError("job store read")))
    again = sweep.state(sid)  # finished sweeps are read from their own record
    assert again["result"]["baseline"]["test_accuracy"] == 0.9
    assert [s["id"] for s in sweep.list_sweeps()] == [sid]
    assert sweep.load(sid)["status"] == "done"


@pytest.mark.parametrize("bad", [
    dict(epsilons=()), dict(epsilons=(0.0,)), dict(epsilons=(-1,)), dict(seeds=0), dict(seeds=11),
    dict(attacks=("magic",)), dict(attacks=("lira",), shadows=1), dict(delta=1.0), dict(epochs=0),
    dict(test_size=2.0), dict(shadow_trainer="gpu"), dict(dataset="foo"), dict(model="cnn"),
    dict(canaries=-1), dict(canaries=5000), dict(size_fractions=(1.5,)), dict(size_fractions=(0.0,)),
    dict(reproducible_noise="yes"), dict(batch_size=500),
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
               "--train-size", "80", "--canaries", "30", "--size-fractions", "", "--batch-size", "32", "--workers", "0",
               "--json", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["baseline"]["epsilon"] is None and data["points"][0]["target_epsilon"] == 2.0
    assert 0 < data["points"][0]["epsilon"] <= 2.0


def test_lira_point_with_shadows_trained_like_the_target():
    cfg = sweep.SweepConfig(**{**TINY, "epsilons": (2.0,), "attacks": ("loss", "lira"), "shadows": 2}).validate()
    p = sweep.run_point(cfg.point_params()[1])
    assert set(p["mia"]) == {"loss", "lira_offline", "lira_online", "canary"}
    assert p["mia"]["lira_online"]["shadows"] == 2
    assert 0 <= p["empirical_epsilon"]["lower_bound"] <= p["epsilon_spent"]


def test_default_demo_baseline_is_caught_by_the_canary_audit():
    """The page's demo must show the leak where it lives: the non-private baseline (seed 0, reproducible coins)
    is accurate and memorises its canaries: TPR at 1% FPR >= 0.10 and a proved ε >= 1."""
    import torch

    torch.set_num_threads(1)
    cfg = sweep.SweepConfig(reproducible_noise=True, size_fractions=()).validate()
    base = sweep.run_point(cfg.point_params()[0])
    assert base["epsilon"] is None
    assert base["test_accuracy"] >= 0.95
    assert base["mia"]["canary"]["tpr_at_1pct_fpr"] >= 0.10
    assert base["empirical_epsilon"]["lower_bound"] >= 1.0


def test_cli_refuses_json_folder_before_the_sweep(tmp_path, capsys, monkeypatch):
    from dpcore.cli import main

    monkeypatch.setattr(sweep, "run_sweep_parallel", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran")))
    assert main(["sweep", "--json", str(tmp_path)]) == 2
    assert "got a folder" in capsys.readouterr().err


def test_small_data_sweep_adapts_its_audit_and_size_control():
    cfg = sweep.SweepConfig(**{**TINY, "canaries": 300, "size_fractions": (0.1, 0.5)}).validate()
    assert cfg.canaries == 40 and cfg.size_fractions == (0.5,)  # a quarter of 160 rows; 16 rows < one batch
    assert sweep.SweepConfig(**{**TINY, "train_size": 6, "batch_size": 2, "canaries": 300}).validate().canaries == 0


def _canary_audit(rng, shift, m=300):
    from dpcore import audit

    inc = rng.random(m) < 0.5
    return {**audit.one_run_lower_bound(inc * shift + rng.normal(0, 1, m), inc, delta=1e-5), "attack": "canary"}


def multi_seed_result(seeds=4, sweep_id=None):
    """A finished sweep (no training) whose seeds' canary audits prove the same ε (same scores: seeds that agree):
    every seed's own 95% bound is above the bound that holds over all seeds at 95% — what the page, the report
    and the reading must show."""
    from dpcore import audit

    cfg = sweep.SweepConfig(**{**TINY, "epsilons": (8.0,), "seeds": seeds}).to_dict()
    roc = {"fpr": [0.0, 0.5, 1.0], "tpr": [0.0, 0.6, 1.0]}
    mia = {"loss": {"auc": 0.6, "advantage": 0.1, "tpr_at_1pct_fpr": 0.02, "tpr_at_0.1pct_fpr": 0.0,
                    "n_members": 100, "n_nonmembers": 100, "roc": roc}}

    def point(eps, seed, shift):
        e = _canary_audit(np.random.default_rng(31), shift)
        e.update(claimed=None if eps is None else 7.9, max_certifiable=audit.stored_bound(e, 0.95)[1])
        return {"epsilon": eps, "epsilon_spent": None if eps is None else 7.9, "delta": 1e-5, "seed": seed,
                "test_accuracy": 0.9, "chance_accuracy": 0.6, "mia": mia, "empirical_epsilon": e}

    res = {"config": cfg, "baselines": [point(None, s, 4.0) for s in range(seeds)],
           "points": [point(8.0, s, 1.5) for s in range(seeds)]}
    res["baseline"] = res["baselines"][0]
    if sweep_id:
        sweep._write({"id": sweep_id, "name": "multi-seed", "created": 1.0, "status": "done", "config": cfg,
                      "jobs": [], "failed": [], "result": res})
    return res


def test_proved_epsilon_holds_over_all_seeds_not_per_seed():
    """Issue 11.8: by_epsilon used to report max over seeds of per-seed 95% bounds as "95%"; with k seeds that
    overclaims (see test_audit's coverage tests). Now the row's proved ε is combine_bounds over the seeds."""
    from dpcore import audit

    res = multi_seed_result()
    per_seed = [p["empirical_epsilon"]["lower_bound"] for p in res["points"]]
    (row,) = sweep.by_epsilon(res)
    c = audit.combine_bounds([p["empirical_epsilon"] for p in res["points"]])
    assert row["empirical_epsilon"] == pytest.approx(c["lower_bound"]) and row["empirical_epsilon_k"] == 4
    assert 0 < row["empirical_epsilon"] < min(per_seed)  # each seed's own 95% bound is above it
    assert row["empirical_epsilon_median"] == pytest.approx(c["median_lower_bound"])
    assert row["empirical_epsilon_mean"] == pytest.approx(np.mean(per_seed))  # descriptive only
    assert row["max_certifiable"] == pytest.approx(c["max_certifiable"])
    assert "empirical_epsilon_max" not in row
    text = sweep.reading(res, 8.0)
    assert f"ε ≥ {row['empirical_epsilon']:.2f} empirically (over 4 seeds, at 95% confidence overall)" in text
    assert f"median seed's bound, a separate 95% statement: ε ≥ {row['empirical_epsilon_median']:.2f}" in text
    assert f"{max(per_seed):.2f}" not in text
    base = sweep.baseline_summary(res)
    base_seeds = [p["empirical_epsilon"]["lower_bound"] for p in res["baselines"]]
    assert 0 < base["empirical_epsilon"] < min(base_seeds)
    assert f"Without DP the audit *proves* a leak: ε ≥ {base['empirical_epsilon']:.2f} for the baseline (over 4 " \
           "seeds, at 95% confidence overall)" in text
    # the CLI JSON keeps what the combination needs
    out = json.loads(json.dumps(sweep.cli_json(res)))
    again = audit.combine_bounds([p["empirical_epsilon"] for p in out["points"]])
    assert again["lower_bound"] == pytest.approx(row["empirical_epsilon"])


def test_violations_flag_a_planted_one_and_hold_their_confidence():
    res = multi_seed_result(seeds=2)
    assert sweep.violations(res) == []
    bad = dict(res["points"][0], seed=9, epsilon_spent=0.05)  # a claim the canary audit refutes
    out = sweep.violations({**res, "points": res["points"] + [bad]})
    assert [(v["seed"], v["audit"]) for v in out] == [(9, "canary")]
    assert out[0]["lower_bound"] > 0.05 and out[0]["confidence"] == pytest.approx(1 - 0.05 / 3)


def test_tiny_sweep_bounds_and_rocs_stay_under_their_ceilings(tiny_result):
    """The truth target on a real (tiny) sweep: every proved ε below the claimed ε, and every attack's ROC under
    the worst-case ROC of its DP point (the exact PLD trade-off), allowing for sampling: at each ROC point the
    Clopper–Pearson lower TPR is under the ceiling at the upper FPR (Bonferroni over every point checked)."""
    from dpcore import audit

    for row in sweep.by_epsilon(tiny_result):
        assert 0 <= row["empirical_epsilon"] <= row["epsilon_spent"] + 1e-9
        assert row["empirical_epsilon_median"] <= row["epsilon_spent"] + 1e-9
        assert row["records_epsilon"] <= row["epsilon_spent"] + 1e-9
    checks = [(p, v) for p in tiny_result["points"] for v in p["mia"].values()]
    n_checks = sum(len(v["roc"]["fpr"]) for _, v in checks)
    for p, v in checks:
        t_fpr, t_tpr = np.asarray(p["tradeoff"]["fpr"]), np.asarray(p["tradeoff"]["tpr"])
        fpr, tpr = np.asarray(v["roc"]["fpr"]), np.asarray(v["roc"]["tpr"])
        _, fpr_hi = audit.clopper_pearson(np.round(fpr * v["n_nonmembers"]), v["n_nonmembers"], 0.02 / n_checks)
        tpr_lo, _ = audit.clopper_pearson(np.round(tpr * v["n_members"]), v["n_members"], 0.02 / n_checks)
        # the ceiling is increasing: its value at the next grid FPR above fpr_hi is an upper bound
        i = np.minimum(np.searchsorted(t_fpr, fpr_hi), len(t_fpr) - 1)
        ceiling = np.where(fpr_hi >= t_fpr[-1], 1.0, t_tpr[i])
        assert np.all(tpr_lo <= ceiling + 1e-9), (p["epsilon"], tpr_lo, ceiling)
