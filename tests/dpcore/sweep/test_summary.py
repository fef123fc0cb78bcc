"""Sweep summaries: the CLI JSON, per-ε rows over seeds, the size control, the reading, violations, figures."""

import json

import numpy as np
import pytest

from dpcore import claims
from dpcore.sweep import summary as sweep_summary
from tests.dpcore.sweep.helpers import headline_result, multi_seed_result


def test_cli_json_has_the_documented_shape(tiny_result):
    out = json.loads(json.dumps(sweep_summary.cli_json(tiny_result)))
    assert set(out) >= {"baseline", "points", "reproducible_noise"}
    assert out["baseline"]["epsilon"] is None and "lower_bound" in out["baseline"]["empirical_epsilon"]
    for p in [out["baseline"]] + out["points"]:
        assert {"epsilon", "seed", "test_accuracy", "mia", "empirical_epsilon"} <= set(p)
        for a in ("threshold", "loss", "canary"):
            assert {"auc", "advantage", "tpr_at_1pct_fpr"} <= set(p["mia"][a])
    p = out["points"][0]
    assert p["target_epsilon"] == 1.0 and p["epsilon"] == tiny_result["points"][0]["epsilon_spent"] <= 1.0
    assert set(p["empirical_epsilon"]) >= {"lower_bound", "max_certifiable", "confidence"}


def test_size_control_summary():
    pts = [
        {"epsilon": e, "seed": 0, "test_accuracy": acc, "train_fraction": f, "n_train": n, "mia": {}}
        for e, acc, f, n in [
            (None, 0.9, 0.25, 100),
            (1.0, 0.5, 0.25, 100),
            (None, 0.95, 0.5, 200),
            (1.0, 0.8, 0.5, 200),
        ]
    ]
    res = {
        "config": {"size_epsilon": 1.0},
        "size_control": pts,
        "baseline": {"epsilon": None, "seed": 0, "test_accuracy": 0.97, "n_train": 400, "mia": {}},
        "points": [{"epsilon": 1.0, "seed": 0, "test_accuracy": 0.9, "n_train": 400, "mia": {}}],
    }
    rows = sweep_summary.size_control(res)
    assert [r["fraction"] for r in rows] == [0.25, 0.5, 1.0]
    assert [round(r["cost"], 3) for r in rows] == [0.4, 0.15, 0.07]


def test_summaries_and_reading(tiny_result):
    rows = sweep_summary.by_epsilon(tiny_result)
    assert [r["epsilon"] for r in rows] == [1.0, 4.0]
    assert rows[0]["accuracy_sd"] == 0.0
    text = sweep_summary.reading(tiny_result, 1.0)
    assert "ε = 1" in text and "baseline" in text and "advantage" in text
    assert "No finished model" in sweep_summary.reading(tiny_result, 2.0)


def test_figures_build(tiny_result):
    from dpcore.figures import privacy_utility as figs

    for fig in (
        figs.accuracy_chart(tiny_result),
        figs.attack_chart(tiny_result, "auc"),
        figs.attack_chart(tiny_result, "tpr_at_1pct_fpr"),
        figs.empirical_epsilon_chart(tiny_result),
        figs.roc_chart(tiny_result["points"][0]),
        figs.roc_chart(tiny_result["baseline"]),
        figs.compare_chart({"a": tiny_result, "b": tiny_result}),
    ):
        assert fig.layout.title.text
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    assert figs.accuracy_chart(tiny_result).layout.xaxis.type == "log"
    assert figs.roc_chart(tiny_result["points"][0]).layout.yaxis.type == "log"


def test_proved_epsilon_holds_over_all_seeds_not_per_seed():
    """Issue 11.8: by_epsilon used to report max over seeds of per-seed 95% bounds as "95%"; with k seeds that
    overclaims (see test_audit's coverage tests). Now the row's proved ε is combine_bounds over the seeds."""
    from dpcore.attacks import audit

    res = multi_seed_result()
    per_seed = [p["empirical_epsilon"]["lower_bound"] for p in res["points"]]
    (row,) = sweep_summary.by_epsilon(res)
    c = audit.combine_bounds([p["empirical_epsilon"] for p in res["points"]])
    assert row["empirical_epsilon"] == pytest.approx(c["lower_bound"]) and row["empirical_epsilon_k"] == 4
    assert 0 < row["empirical_epsilon"] < min(per_seed)  # each seed's own 95% bound is above it
    assert row["empirical_epsilon_median"] == pytest.approx(c["median_lower_bound"])
    assert row["empirical_epsilon_mean"] == pytest.approx(np.mean(per_seed))  # descriptive only
    assert row["max_certifiable"] == pytest.approx(c["max_certifiable"])
    assert "empirical_epsilon_max" not in row
    text = sweep_summary.reading(res, 8.0)
    # lower bounds are written rounded down (dpcore.claims): never more than was proved
    assert f"ε ≥ {claims.down(row['empirical_epsilon'])} empirically (over 4 seeds, at 95% confidence overall)" in text
    assert f"median seed's bound, a separate 95% statement: ε ≥ {claims.down(row['empirical_epsilon_median'])}" in text
    assert f"ε ≥ {claims.down(max(per_seed))}" not in text
    base = sweep_summary.baseline_summary(res)
    base_seeds = [p["empirical_epsilon"]["lower_bound"] for p in res["baselines"]]
    assert 0 < base["empirical_epsilon"] < min(base_seeds)
    assert (
        f"Without DP the audit *proves* a leak: ε ≥ {claims.down(base['empirical_epsilon'])} for the baseline (over 4 "
        "seeds, at 95% confidence overall)" in text
    )
    # the CLI JSON keeps what the combination needs
    out = json.loads(json.dumps(sweep_summary.cli_json(res)))
    again = audit.combine_bounds([p["empirical_epsilon"] for p in out["points"]])
    assert again["lower_bound"] == pytest.approx(row["empirical_epsilon"])


def test_violations_flag_a_planted_one_and_hold_their_confidence():
    res = multi_seed_result(seeds=2)
    assert sweep_summary.violations(res) == []
    bad = dict(res["points"][0], seed=9, epsilon_spent=0.05)  # a claim the canary audit refutes
    out = sweep_summary.violations({**res, "points": res["points"] + [bad]})
    assert [(v["seed"], v["audit"]) for v in out] == [(9, "canary")]
    assert out[0]["lower_bound"] > 0.05 and out[0]["confidence"] == pytest.approx(1 - 0.05 / 3)


def test_tiny_sweep_bounds_and_rocs_stay_under_their_ceilings(tiny_result):
    """The truth target on a real (tiny) sweep: every proved ε below the claimed ε, and every attack's ROC under
    the worst-case ROC of its DP point (the exact PLD trade-off), allowing for sampling: at each ROC point the
    Clopper–Pearson lower TPR is under the ceiling at the upper FPR (Bonferroni over every point checked)."""
    from dpcore.attacks import audit

    for row in sweep_summary.by_epsilon(tiny_result):
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


def test_headline_gives_medians_the_leak_and_the_violations():
    res = headline_result()
    h = sweep_summary.headline(res)
    assert h["baseline"] == {"accuracy": 0.97, "n": 3}  # medians (the means are 0.973, 0.77 and 0.937)
    assert [(p["epsilon"], p["accuracy"], p["n"]) for p in h["points"]] == [(1.0, 0.80, 3), (8.0, 0.92, 3)]
    assert h["attack"] == "canary" and h["tpr"] == pytest.approx(0.4)
    assert h["proved"] == sweep_summary.baseline_summary(res)["empirical_epsilon"] > 1
    assert (h["audited"], h["violations"]) == (6, 0)
    res["points"][0]["epsilon_spent"] = 1e-3  # a claim the audit disproves: counted
    assert sweep_summary.headline(res)["violations"] == 1
    res["points"] = [p for p in res["points"] if p["epsilon"] == 8.0]  # ε = 1 still running: shown as None
    assert [(p["epsilon"], p["accuracy"]) for p in sweep_summary.headline(res)["points"]] == [(1.0, None), (8.0, 0.92)]
    assert sweep_summary.headline({"config": {}, "points": []}) is None


def test_column_labels_are_words_for_every_field(tiny_result):
    fields = [k for row in sweep_summary.by_epsilon(tiny_result) for k in row]
    labels = [sweep_summary.column_label(f) for f in dict.fromkeys(fields)]
    assert len(set(labels)) == len(labels)  # one header per field
    assert not [x for x in labels if "_" in x], labels
    assert (
        sweep_summary.column_label("loss.tpr_at_1pct_fpr") == "loss threshold (Yeom): TPR at 1% FPR, not covered by ε"
    )
    assert sweep_summary.column_label("accuracy_sd") == "test accuracy, SD, not covered by ε"
    assert sweep_summary.column_label("not_a_field") == "not_a_field"


def test_every_column_computed_on_private_rows_says_it_is_not_covered_by_epsilon(tiny_result):
    """The per-ε table's headers (page, download, report): test accuracy, every attack's results and every audit's
    bound are computed on the private rows; the target ε, the model count and the accountant's ε are not."""
    fields = list(dict.fromkeys(k for row in sweep_summary.by_epsilon(tiny_result) for k in row))
    public = {"epsilon", "n", "epsilon_spent", "empirical_epsilon_k", "empirical_epsilon_confidence"}
    for f in fields:
        label = sweep_summary.column_label(f)
        assert label.endswith(", not covered by ε") == (f not in public), (f, label)
    assert sweep_summary.column_label("accuracy") == "test accuracy (mean), not covered by ε"
    assert sweep_summary.column_label("epsilon_spent") == "ε spent (accountant)"


def test_audit_chart_when_no_attack_could_prove_anything(tiny_result):
    """With too few audit rows even a perfect attack certifies ε = 0 (max_certifiable 0, which a random half of
    a tiny sweep's rows can give): the chart says so instead of failing on log10(0) ("math domain error")."""
    import copy

    from dpcore.figures import privacy_utility as figs

    res = copy.deepcopy(tiny_result)
    pts = [p for p in res["points"] if p.get("empirical_epsilon")]
    assert pts
    for p in pts:
        p["empirical_epsilon"]["max_certifiable"] = 0.0
    fig = figs.empirical_epsilon_chart(res)
    assert any("not even a perfect one" in a.text for a in fig.layout.annotations)
    assert not any("most any attack could prove" in (a.text or "") for a in fig.layout.annotations)


def test_table_rows_write_bounds_on_their_side(tiny_result):
    """The page's per-ε table showed raw floats (0.9946543016479602); rounded, the accountant's ε must not read
    below itself nor a proved ε above itself."""
    raw = sweep_summary.by_epsilon(tiny_result)[0]
    row = sweep_summary.shown_row(
        {**raw, "epsilon_spent": 1.00041, "empirical_epsilon": 0.017958890077, "accuracy": 0.87654321}
    )
    assert row["epsilon_spent"] == "1.01" and row["empirical_epsilon"] == "0.0179" and row["accuracy"] == "87.7%"
    assert row["epsilon"] == f"{raw['epsilon']:g}" and row["n"] == raw["n"]
    assert sweep_summary.shown_row({"empirical_epsilon": None})["empirical_epsilon"] == "—"
