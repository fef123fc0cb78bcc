"""One sweep point: the run's own canaries and audit, LiRA shadows trained like the target, the demo's leak
(the canaries themselves: tests/dpcore/training/test_canaries.py)."""

import numpy as np
import pytest

from dpcore.sweep import point as sweep_point
from dpcore.sweep.config import SweepConfig
from tests.dpcore.sweep.helpers import TINY


def test_lira_point_with_shadows_trained_like_the_target():
    cfg = SweepConfig(**{**TINY, "epsilons": (2.0,), "attacks": ("loss", "lira"), "shadows": 2}).validate()
    p = sweep_point.run_point(cfg.point_params()[1])
    assert set(p["mia"]) == {"loss", "lira_offline", "lira_online", "canary"}
    assert p["mia"]["lira_online"]["shadows"] == 2
    assert 0 <= p["empirical_epsilon"]["lower_bound"] <= p["epsilon_spent"]
    # the point's own audit: the run's canary bounds, the Gaussian-DP audit of its attacks' scores, the verdict
    a = p["audit"]
    assert a["one_run"]["lower_bound"] == p["empirical_epsilon"]["lower_bound"]  # one audit, reported twice
    assert a["one_run_fdp"]["n_canaries"] == cfg.canaries
    assert {f["kind"] for f in a["figures"]} == {"promise", "heuristic", "measurement"}
    assert a["gdp"]["attack"] in ("loss", "lira_offline", "lira_online") and a["verdict"] == "consistent"
    assert p["canaries"]["n"] == cfg.canaries and "public" in p["canaries"]["source"]
    # who pays: each class's accuracy on the test rows, with its count and 95% interval
    assert [c["class"] for c in p["per_class"]] == list(range(p["n_classes"]))
    assert sum(c["n_test"] for c in p["per_class"]) > 0
    assert all(c["interval"][0] <= c["accuracy"] <= c["interval"][1] for c in p["per_class"] if c["n_test"])
    ex = p["exposure"]["per_class"]
    assert sum(c["members"] for c in ex) == len(p["exposure"]["rows"]) and all(c["max_proved"] >= 0 for c in ex)


class _FanOutCtx:
    """A job context that says it runs on Ray and runs each 'nested task' here (what run_point hands out)."""

    executor = "ray"

    def __init__(self):
        self.calls, self.fields = [], {}

    def progress(self, **f):
        self.fields.update(f)

    def flush(self):
        pass

    def cancelled(self):
        return False

    def map_tasks(self, fn, items, *, shared=(), name="", num_cpus=1.0, on_done=None):
        assert fn is sweep_point._shadow_task and num_cpus == 1.0
        self.calls.extend(items)
        params, cfg, split, X_pool = shared
        return [
            {"proba": sweep_point._shadow_fit(params, cfg, split)(X, y, s)(X_pool), "task": f"{name}:{i}"}
            for i, (X, y, s) in enumerate(items)
        ]


def test_lira_shadows_fanned_out_as_tasks_give_the_local_result():
    cfg = SweepConfig(**{**TINY, "attacks": ("lira",), "shadows": 3, "reproducible_noise": True}).validate()
    params = cfg.point_params()[0]  # the non-private baseline: no calibration, the same model both times
    assert params["train"].get("epsilon") is None
    ctx = _FanOutCtx()
    fanned, local = sweep_point.run_point(params, ctx), sweep_point.run_point(params)
    assert len(ctx.calls) == 3 and len(ctx.fields["shadow_tasks"]) == 3  # one task per shadow, arrays back
    for name in ("lira_offline", "lira_online"):
        assert fanned["mia"][name] == local["mia"][name]
    assert sweep_point._shadow_fit_many(params, None, None, None) is None  # no Ray: the per-shadow loop


def test_default_demo_baseline_is_caught_by_the_canary_audit():
    """The page's demo must show the leak where it lives: the non-private baseline (seed 0, reproducible coins)
    is accurate and memorises its canaries: TPR at 1% FPR >= 0.10 and a proved ε >= 1."""
    import torch

    torch.set_num_threads(1)
    cfg = SweepConfig(reproducible_noise=True, size_fractions=()).validate()
    base = sweep_point.run_point(cfg.point_params()[0])
    assert base["epsilon"] is None
    assert base["test_accuracy"] >= 0.95
    assert base["mia"]["canary"]["tpr_at_1pct_fpr"] >= 0.10
    assert base["empirical_epsilon"]["lower_bound"] >= 1.0


# slow: eight trainings; the fast lane keeps seed 0's >= 0.95 in the canary-audit test above
@pytest.mark.slow
def test_default_demo_baseline_reaches_95_percent_on_every_seed():
    """The issue's target is "the non-private model reaches >= 0.95 test accuracy": on every seed, not only the
    median. The baselines' recipe (1.5x epochs, lr decaying linearly) settles higher than the DP points' constant
    lr did: seeds 0–7 here had a median of 96.7% with it (and single runs with secret coins fell to 92.8%);
    now 97.5%, the lowest 96.7%."""
    import torch

    from dpcore.training.config import TrainConfig
    from dpcore.training.data import load_split
    from dpcore.training.loop import train

    torch.set_num_threads(1)
    cfg = SweepConfig(reproducible_noise=True, size_fractions=()).validate()
    accs = []
    for seed in range(8):
        tc = TrainConfig.from_dict({**cfg.train_dict(None, seed), "canaries": cfg.canaries})
        accs.append(train(tc, split=load_split(tc)).metrics.test_accuracy)
    assert min(accs) >= 0.95 and float(np.median(accs)) >= 0.97, accs


def test_a_point_audits_at_most_its_limit_of_members_and_non_members(monkeypatch):
    """Large uploads: the attacked pool, the shadows' pool and the per-record exposure kept with the sweep are a
    sample of limits.SWEEP_AUDIT_MAX_PER_SIDE per side, not every row."""
    from dpcore import limits

    monkeypatch.setattr(limits, "SWEEP_AUDIT_MAX_PER_SIDE", 20)
    cfg = SweepConfig(**{**TINY, "attacks": ("loss",), "reproducible_noise": True}).validate()
    p = sweep_point.run_point(cfg.point_params()[0])
    assert p["mia"]["loss"]["n_members"] == p["mia"]["loss"]["n_nonmembers"] == 20
    assert len(p["exposure"]["rows"]) == 20
