"""Shared sweep test data: the tiny config, and a finished multi-seed sweep built without training."""

import numpy as np

from dpcore.sweep import runs as sweep_runs
from dpcore.sweep.config import SweepConfig

TINY = dict(
    dataset="breast_cancer",
    model="logreg",
    epsilons=(1.0, 4.0),
    seeds=1,
    epochs=2,
    batch_size=32,
    lr=0.5,
    train_size=160,
    hidden=None,
    attacks=("threshold", "loss"),
    canaries=40,
    size_fractions=(),
)


def _canary_audit(rng, shift, m=300):
    from dpcore.attacks import one_run

    inc = rng.random(m) < 0.5
    return {**one_run.one_run_lower_bound(inc * shift + rng.normal(0, 1, m), inc, delta=1e-5), "attack": "canary"}


def multi_seed_result(seeds=4, sweep_id=None, owner="cli"):
    """A finished sweep (no training) whose seeds' canary audits prove the same ε (same scores: seeds that agree):
    every seed's own 95% bound is above the bound that holds over all seeds at 95% — what the page, the report
    and the reading must show."""
    from dpcore.attacks import audit

    cfg = SweepConfig(**{**TINY, "epsilons": (8.0,), "seeds": seeds}).to_dict()
    roc = {"fpr": [0.0, 0.5, 1.0], "tpr": [0.0, 0.6, 1.0]}
    mia = {
        "loss": {
            "auc": 0.6,
            "advantage": 0.1,
            "tpr_at_1pct_fpr": 0.02,
            "tpr_at_0.1pct_fpr": 0.0,
            "n_members": 100,
            "n_nonmembers": 100,
            "roc": roc,
        }
    }

    def point(eps, seed, shift):
        e = _canary_audit(np.random.default_rng(31), shift)
        e.update(claimed=None if eps is None else 7.9, max_certifiable=audit.stored_bound(e, 0.95)[1])
        return {
            "epsilon": eps,
            "epsilon_spent": None if eps is None else 7.9,
            "delta": 1e-5,
            "seed": seed,
            "test_accuracy": 0.9,
            "chance_accuracy": 0.6,
            "mia": mia,
            "empirical_epsilon": e,
        }

    res = {
        "config": cfg,
        "baselines": [point(None, s, 4.0) for s in range(seeds)],
        "points": [point(8.0, s, 1.5) for s in range(seeds)],
    }
    res["baseline"] = res["baselines"][0]
    if sweep_id:
        sweep_runs.save(
            {
                "id": sweep_id,
                "name": "multi-seed",
                "created": 1.0,
                "status": "done",
                "config": cfg,
                "jobs": [],
                "failed": [],
                "result": res,
                "owner": owner,
            }
        )
    return res


def headline_result(sweep_id=None, owner="cli"):
    """A finished 3-seed sweep (no training) over ε = 1 and 8 whose medians differ from its means: baselines
    96/97/99%, ε = 1 70/80/81%, ε = 8 90/92/99%; the canary attack catches the baselines' members."""
    res = multi_seed_result(seeds=3, owner=owner)
    res["config"]["epsilons"] = [1.0, 8.0]
    accs = {None: (0.96, 0.97, 0.99), 1.0: (0.70, 0.80, 0.81), 8.0: (0.90, 0.92, 0.99)}
    canary = {"auc": 0.9, "advantage": 0.7, "tpr_at_1pct_fpr": 0.4, "tpr_at_0.1pct_fpr": 0.3}
    res["baselines"] = [
        dict(p, test_accuracy=a, mia={**p["mia"], "canary": canary}) for p, a in zip(res["baselines"], accs[None])
    ]
    res["baseline"] = res["baselines"][0]
    res["points"] = [
        dict(
            p,
            epsilon=e,
            epsilon_spent=e - 0.01,
            test_accuracy=a,
            empirical_epsilon=dict(p["empirical_epsilon"], claimed=e - 0.01),
        )
        for e in (1.0, 8.0)
        for p, a in zip(res["points"], accs[e])
    ]
    if sweep_id:
        sweep_runs.save(
            {
                "id": sweep_id,
                "name": "headline",
                "created": 1.0,
                "status": "done",
                "config": res["config"],
                "jobs": [],
                "failed": [],
                "result": res,
                "owner": owner,
            }
        )
    return res
