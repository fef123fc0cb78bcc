"""The promise-and-proof charts: one run, a sweep across ε, the trade-off chart; their words name which figure is a
promise and which a measurement, and never call a lower bound a guarantee."""

import numpy as np
import pytest

from dpcore.attacks import audit, fdp, gdp, last_iterate, one_run
from dpcore.errors import DPError
from dpcore.figures import promise, proof
from dpcore.training import accounting

SIGMA, Q, STEPS, DELTA = 1.0, 0.05, 200, 1e-5


def _point(rng, eps, seed, shift=1.5):
    m = 300
    inc = rng.random(m) < 0.5
    canary = one_run.one_run_lower_bound(inc * shift + rng.normal(0, 1, m), inc, delta=DELTA)
    pos, neg = rng.normal(0.4, 1, 400), rng.normal(0, 1, 400)
    records = audit.audit_scores({"loss": (pos, neg)}, DELTA, split_seed=seed)
    spent = accounting.pld_epsilon(SIGMA, Q, STEPS, DELTA)
    return {
        "epsilon": eps,
        "epsilon_spent": spent,
        "delta": DELTA,
        "seed": seed,
        "test_accuracy": 0.9,
        "mia": {"loss": {"auc": 0.6, "advantage": 0.1, "tpr_at_1pct_fpr": 0.02, "tpr_at_0.1pct_fpr": 0.0}},
        "noise_multiplier": SIGMA,
        "sample_rate": Q,
        "steps": STEPS,
        "tradeoff": accounting.dpsgd_tradeoff(SIGMA, Q, STEPS),
        "empirical_epsilon": {**canary, "attack": "canary", "claimed": spent, "records": records},
    }


@pytest.fixture(scope="module")
def sweep():
    rng = np.random.default_rng(7)
    return {"config": {"epsilons": [1.0, 4.0], "delta": DELTA}, "points": [_point(rng, 1.0, s) for s in range(2)]}


def test_run_chart_draws_each_kind_with_its_side():
    bounds = [
        promise.Bound("accountant (PRV)", "promise", 2.0),
        promise.Bound("last-iterate heuristic", "heuristic", 1.1),
        promise.Bound("one-run audit", "measurement", 0.4, low=0.3, high=0.6, confidence=0.95),
        promise.Bound("scores audit", "measurement", 0.0, confidence=0.95),
    ]
    fig = promise.run_chart(bounds, DELTA)
    kinds = [t.meta for t in fig.data]
    assert kinds == ["promise", "heuristic", "measurement", "measurement"]
    texts = [t.text[0] for t in fig.data]
    assert texts[0] == "ε ≤ 2" and texts[2] == "ε ≥ 0.4" and texts[3] == "nothing proved"
    assert fig.data[2].error_x.arrayminus[0] == pytest.approx(0.1)
    assert fig.layout.xaxis.type == "log" and "δ = 1e-5" in fig.layout.title.text
    with pytest.raises(DPError, match="nothing to draw"):
        promise.run_chart([], DELTA)


def test_verdict_names_promise_and_measurement_and_never_calls_a_lower_bound_a_guarantee():
    bounds = [
        promise.Bound("the accountant", "promise", 2.0),
        promise.Bound("the last-iterate heuristic", "heuristic", 1.1),
        promise.Bound("the one-run audit", "measurement", 0.4, confidence=0.95),
        promise.Bound("the scores audit", "measurement", 0.0, confidence=0.95),
    ]
    words = promise.verdict(bounds, DELTA)
    assert words.startswith("Promise: the accountant ε ≤ 2 at δ = 1e-5 (add/remove one record), an upper bound")
    assert "Heuristic:" in words and "an estimate, not a bound" in words
    measured = [s for s in words.split("Measurement:")[1:]]
    assert len(measured) == 2
    assert "proves ε ≥ 0.4 at 95% — a lower bound for this attack, not a guarantee." in measured[0]
    assert "proved nothing" in measured[1]
    over = promise.verdict([bounds[0], promise.Bound("a buggy run", "measurement", 3.0, confidence=0.95)], DELTA)
    assert "above the promise" in over


def test_run_bounds_reads_a_runs_audits():
    rng = np.random.default_rng(3)
    inc = rng.random(400) < 0.5
    s = inc * 2.0 + rng.normal(0, 1, 400)
    metrics = {
        "epsilon": 3.0,
        "delta": DELTA,
        "accountant": "prv",
        "noise_multiplier": SIGMA,
        "sample_rate": Q,
        "steps": STEPS,
        "audit": {
            "one_run": one_run.one_run_lower_bound(s, inc, delta=DELTA),
            "one_run_fdp": fdp.one_run_fdp_audit(s, inc, delta=DELTA).to_dict(),
            "gdp": gdp.gdp_audit({"loss": (rng.normal(1, 1, 500), rng.normal(0, 1, 500))}, DELTA).to_dict(),
        },
    }
    bounds = promise.run_bounds(metrics)
    assert [b.kind for b in bounds] == ["promise", "heuristic", "measurement", "measurement", "measurement"]
    assert bounds[0].label == "accountant (PRV)" and bounds[0].epsilon == 3.0
    assert bounds[1].epsilon == pytest.approx(last_iterate.heuristic_epsilon(SIGMA, Q, STEPS, DELTA))
    assert all(b.confidence == 0.95 for b in bounds[2:])
    fig = promise.run_chart(bounds, DELTA)
    assert len(fig.data) == 5
    with pytest.raises(DPError, match="DP run"):
        promise.run_bounds({"epsilon": None})


def test_sweep_bounds_combine_seeds(sweep):
    runs = promise.sweep_bounds(sweep)
    assert len(runs) == 1
    r = runs[0]
    labels = [b.label for b in r.bounds]
    assert labels == [
        "accountant",
        "last-iterate heuristic",
        "one-run audit (Steinke et al.)",
        "f-DP one-run audit (Gaussian curve)",
        "scores audit (records)",
    ]
    steinke = r.bounds[2]
    own = [p["empirical_epsilon"]["lower_bound"] for p in sweep["points"]]
    assert steinke.low == min(own) and steinke.high == max(own)
    assert steinke.epsilon <= max(own)  # combined over seeds with a correction: not the largest 95% bound
    fig = promise.sweep_chart(runs, DELTA)
    metas = [t.meta for t in fig.data]
    assert "promise" in metas and "heuristic" in metas and metas.count("measurement") == 3
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"


def test_point_tradeoff_chart(sweep):
    fig = proof.point_tradeoff(sweep["points"][0])
    metas = [t.meta for t in fig.data]
    assert {"promise", "heuristic", "proved", "chance"} <= set(metas)
    prom = next(t for t in fig.data if t.meta == "promise")
    heur = next(t for t in fig.data if t.meta == "heuristic")
    assert np.all(np.asarray(heur.y) <= np.interp(heur.x, prom.x, prom.y) + 1e-6)  # the heuristic under the promise
    proved = next(t for t in fig.data if t.meta == "proved")
    assert np.all(np.asarray(proved.y) <= np.interp(proved.x, prom.x, prom.y) + 1e-6)
    assert proof.point_tradeoff({"epsilon": None}) is None
