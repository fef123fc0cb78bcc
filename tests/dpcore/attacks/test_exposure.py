"""Who is most exposed (issue 26.4): each audited record's proved ε (the test that flags it, every threshold
corrected together) — a known answer, coverage under DP (no record above a true claim in ≥ 95% of audits), power
without it — and a sweep point's exposure with its most exposed records."""

import numpy as np

from dpcore.attacks import audit, exposure


def test_known_answer_each_record_is_the_test_that_flags_it():
    pos, neg = np.array([5.0, 3.0, 1.0]), np.array([4.0, 2.0, 0.0, -1.0])
    proved, fpr = exposure.per_record_bounds(pos, neg, 1e-5, 0.9)
    assert fpr.tolist() == [0.0, 0.25, 0.5]  # 5 flags no non-member, 3 flags one of four, 1 flags two
    each = audit._one_test_bound(np.array([1, 2, 3]), np.array([0, 1, 2]), 3, 4, 1e-5, 0.1 / 3)[0]
    # the record scored 5 is flagged by all three tests, the one scored 1 by the last only: the strongest of them
    assert np.allclose(proved, [each.max(), each[1:].max(), each[2]])


def test_under_dp_no_record_exceeds_the_true_epsilon_in_95_percent_of_audits():
    rng = np.random.default_rng(11)
    eps, over = 1.0, 0
    for _ in range(200):
        pos, neg = rng.laplace(0, 1, 300) + eps, rng.laplace(0, 1, 300)  # each score an ε-DP test of membership
        ex = exposure.summarise(np.arange(300), pos, neg, attack="loss", delta=0.0, claimed=eps)
        over += ex["share_above_claim"] > 0
    assert over <= 10, over  # seen: 0 of 200


def test_a_leak_is_found_on_the_most_exposed_records():
    rng = np.random.default_rng(12)
    pos = np.r_[rng.laplace(0, 1, 150), rng.laplace(0, 1, 150) + 12]  # half the members memorised
    neg = rng.laplace(0, 1, 300)
    ex = exposure.summarise(np.arange(1000, 1300), pos, neg, attack="lira_online", delta=1e-5, claimed=0.5)
    assert ex["share_above_claim"] > 0
    top = ex["vulnerable"]
    assert len(top) == exposure.TOP and all(v["index"] >= 1150 for v in top)  # the memorised ones, by row number
    assert [v["score"] for v in top] == sorted((v["score"] for v in top), reverse=True)
    assert top[-1]["proved_epsilon"] > 0.5 and top[0]["fpr"] == 0.0
    assert [v["proved_epsilon"] for v in top] == sorted((v["proved_epsilon"] for v in top), reverse=True)
    assert exposure.share_above(ex, 0.5) == ex["share_above_claim"]
    assert exposure.ranking_attack({"loss": 1, "rmia": 2}) == "rmia" and exposure.ranking_attack({}) is None


def test_a_sweep_point_ranks_its_records_and_the_json_keeps_only_their_numbers(tmp_path):
    import pandas as pd

    from dpcore.sweep import exposure as sweep_exposure
    from dpcore.sweep import summary
    from dpcore.sweep.config import for_upload
    from dpcore.sweep.point import run_point

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"age": rng.integers(18, 90, 300), "city": rng.choice(["a", "b"], 300)})
    df["label"] = np.where(df.age + rng.normal(0, 10, 300) > 55, "yes", "no")
    df.to_csv(tmp_path / "t.csv", index=False)
    b = {"age": {"lower": 0, "upper": 120}, "city": {"categories": ["a", "b"]}, "label": {"categories": ["no", "yes"]}}
    cfg = for_upload(
        str(tmp_path / "t.csv"),
        "label",
        bounds=b,
        upload_name="t.csv",
        epsilons=(2.0,),
        seeds=1,
        epochs=3,
        shadows=2,
        canaries=20,
        reproducible_noise=True,
    )
    base, dp = (run_point(p) for p in cfg.point_params())
    for p in (base, dp):
        ex = p["exposure"]
        assert ex["attack"] == "lira_online" and len(ex["rows"]) == len(ex["proved"]) == len(ex["scores"])
        assert set(ex["rows"]) <= set(range(300))
        v = p["vulnerable"][0]
        assert set(v["record"]) == {"age", "city", "label"} and 0 <= v["record"]["age"] <= 120
        assert df.city[v["index"]] == v["record"]["city"] and df.label[v["index"]] == v["record"]["label"]
    assert dp["exposure"]["share_above_claim"] == 0.0 and base["exposure"]["share_above_claim"] is None
    assert dp["preprocessing"]["declared_public"]
    slim = summary.cli_json({"config": cfg.to_dict(), "baseline": base, "points": [dp]})
    assert "record" not in slim["points"][0]["vulnerable"][0] and slim["points"][0]["exposure"]["attack"]
    paths = sweep_exposure.paths({"config": cfg.to_dict(), "baseline": base, "points": [dp]}, top=3)
    assert len(paths) == 3 and [s["epsilon"] for s in paths[0]["points"]] == [2.0, None]
    rows = sweep_exposure.shares({"config": cfg.to_dict(), "baseline": base, "points": [dp]})
    assert rows[0]["epsilon"] == 2.0 and rows[0]["dp_share"] == 0.0 and rows[0]["baseline_share"] is not None
