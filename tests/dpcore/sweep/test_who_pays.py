"""Who pays for privacy: each class's accuracy across ε beside the baseline's, the median seed's with its own
95% interval and test rows, and a difference claimed only when the intervals support it."""

from dpcore.sweep.who_pays import most_paid, reading, who_pays
from dpcore.sweep.who_pays import shown as shown_rows
from dpcore.training.results import per_class_accuracy


def _point(eps, seed, right_per_class, n=(200, 20)):
    """A point whose model gets ``right_per_class[c]`` of class c's ``n[c]`` test rows right."""
    y, pred = [], []
    for c, (k, m) in enumerate(zip(right_per_class, n)):
        y += [c] * m
        pred += [c] * k + [1 - c] * (m - k)
    return {"epsilon": eps, "seed": seed, "per_class": per_class_accuracy(y, pred, ["common", "rare"], 2)}


def test_the_rare_class_pays_and_the_claim_waits_for_the_intervals():
    baselines = [_point(None, 0, (196, 19)), _point(None, 1, (194, 18))]  # stored apart from the DP points
    points = [
        _point(1.0, 0, (190, 4)),  # the rare class falls far below the baseline's interval
        _point(1.0, 1, (188, 6)),
        _point(1.0, 2, (192, 5)),
        _point(8.0, 0, (194, 16)),  # a small drop on 20 rows: the intervals overlap, no claim
    ]
    t = who_pays({"points": points, "baselines": baselines, "baseline": baselines[0]})
    rows = {(r["epsilon"], r["name"]): r for r in t["rows"]}
    rare1 = rows[(1.0, "rare")]
    assert rare1["accuracy"] == 0.25 and rare1["seeds"] == 3 and rare1["n_test"] == 20  # the median seed: 5 of 20
    assert rare1["interval"][0] < 0.25 < rare1["interval"][1]
    assert rare1["baseline_accuracy"] == 0.9 and rare1["cost"] == 0.65 and rare1["pays_more"]
    assert rows[(1.0, "common")]["pays_more"] is False  # 95% vs 97.5%: within the intervals
    assert rows[(8.0, "rare")]["cost"] == 0.1 and rows[(8.0, "rare")]["pays_more"] is False
    assert [r["name"] for r in most_paid(t)] == ["rare"] and most_paid(t)[0]["epsilon"] == 1.0
    assert "not covered by ε" in t["not_covered_by_epsilon"]
    shown = {(r["ε"], r["class"]): r for r in shown_rows(t)}
    assert shown[(1.0, "rare")]["accuracy (median seed)"] == "25.0%" and shown[(1.0, "rare")]["test rows"] == 20
    assert shown[(1.0, "rare")]["pays more"] == "yes" and shown[(8.0, "rare")]["pays more"] == "not shown"
    words = reading(t)
    assert "at ε = 1, rare (25.0% of 20 test rows, against 90.0% without DP)" in words and "ε = 8" not in words


def test_a_sweep_without_per_class_accuracy_says_nothing():
    assert who_pays({"points": [{"epsilon": 1.0}]}) is None and most_paid(None) == [] and reading(None) == ""


def with_per_class(res):
    """A stored-sweep fixture whose models each get 90% of a common class right and, by ε, less of a rare one."""
    rare = {None: 18, 1.0: 4, 8.0: 16}
    for p in [*res["baselines"], *res["points"]]:
        p["per_class"] = _point(p["epsilon"], p["seed"], (180, rare[p["epsilon"]]))["per_class"]
    res["baseline"] = res["baselines"][0]
    return res


def save_done_sweep(sweep_id, res, owner="cli"):
    """Store ``res`` as the result of a finished sweep ``sweep_id`` of ``owner`` (the page and report tests')."""
    from dpcore.sweep import runs as sweep_runs

    sweep_runs.save(
        {"id": sweep_id, "name": "who pays", "created": 1.0, "status": "done", "config": res["config"]}
        | {"jobs": [], "failed": [], "result": res, "owner": owner}
    )


def _report_section(sweep_id, res):
    from dpcore.jobs.owners import CLI
    from dpcore.report import document as report

    save_done_sweep(sweep_id, res)
    sec = report.sweep_section(sweep_id, caller=CLI)
    return sec, " ".join(str(p) for p in sec.paragraphs)


def test_the_report_says_who_pays(dp_home):
    from tests.dpcore.sweep.helpers import headline_result

    sec, text = _report_section("20250101-000000-a1a1", with_per_class(headline_result()))
    assert "Who pays for privacy" in text and "at ε = 1, rare (20.0% of 20 test rows" in text
    assert any("pays more" in t.columns for t in sec.tables)


def test_exposure_by_class_from_the_members_proved_epsilon():
    from dpcore.sweep.who_pays import class_exposure

    per = class_exposure([0, 0, 0, 1, 1], [0.0, 0.1, 0.2, 1.5, 2.5], 1.0, ["common", "rare"])
    assert per[0] == {
        "class": 0,
        "name": "common",
        "members": 3,
        "median_proved": 0.1,
        "max_proved": 0.2,
        "share_above_claim": 0.0,
    }
    assert per[1]["median_proved"] == 2.0 and per[1]["share_above_claim"] == 1.0
    assert class_exposure([1], [0.3], None, ["a", "b"])[0]["share_above_claim"] is None
    points = [dict(_point(1.0, s, (190, 5)), exposure={"per_class": per}) for s in range(2)]
    rows = {r["name"]: r for r in who_pays({"points": points})["rows"]}
    assert rows["rare"]["exposure_median_proved"] == 2.0 and rows["rare"]["exposure_members"] == 2
    assert {r["class"]: r["proved ε of its members (median)"] for r in shown_rows(who_pays({"points": points}))} == {
        "common": "0.1",
        "rare": "2",
    }


def _group_point(eps, seed, right, n=(200, 20)):
    """A point whose model gets ``right[i]`` of subgroup i's ``n[i]`` test rows right (sex = F, then sex = X)."""
    p = _point(eps, seed, right, n)
    groups = [
        {"column": "sex", "group": g, **{k: e[k] for k in ("n_test", "accuracy", "interval")}}
        for g, e in zip(("F", "X"), p.pop("per_class"))
    ]
    return {**p, "per_group": groups}


def test_subgroups_pay_with_the_same_rule_and_their_own_words():
    baselines = [_group_point(None, 0, (196, 19))]
    points = [_group_point(1.0, s, (190, k)) for s, k in enumerate((4, 6, 5))] + [_group_point(8.0, 0, (194, 16))]
    res = {"points": points, "baselines": baselines}
    assert who_pays(res) is None  # no per-class entries stored: nothing by class
    t = who_pays(res, by="subgroup")
    assert t["unit"] == "subgroup" and [b["name"] for b in t["baseline"]] == ["sex = F", "sex = X"]
    rows = {(r["epsilon"], r["name"]): r for r in t["rows"]}
    assert rows[(1.0, "sex = X")]["accuracy"] == 0.25 and rows[(1.0, "sex = X")]["pays_more"]
    assert rows[(1.0, "sex = F")]["pays_more"] is False and rows[(8.0, "sex = X")]["pays_more"] is False
    shown = shown_rows(t)
    assert "subgroup" in shown[0] and "class" not in shown[0] and "members audited" not in shown[0]
    words = reading(t)
    assert words.startswith("Who pays for privacy: the subgroup that loses most accuracy")
    assert "at ε = 1, sex = X (25.0% of 20 test rows, against 95.0% without DP)" in words
    assert "per-subgroup test accuracy, not covered by ε" in words


def with_per_group(res):
    """with_per_class's fixture with subgroups too: sex = X loses accuracy at ε = 1."""
    res = with_per_class(res)
    x = {None: 19, 1.0: 5, 8.0: 17}
    for p in [*res["baselines"], *res["points"]]:
        p["per_group"] = _group_point(p["epsilon"], p["seed"], (190, x[p["epsilon"]]))["per_group"]
    return res


def test_the_report_says_which_subgroup_pays(dp_home):
    from tests.dpcore.sweep.helpers import headline_result

    sec, text = _report_section("20250101-000000-c3c3", with_per_group(headline_result()))
    assert "the class that loses most" in text and "the subgroup that loses most" in text
    assert "at ε = 1, sex = X (25.0% of 20 test rows" in text
    assert any("subgroup" in t.columns for t in sec.tables) and any("class" in t.columns for t in sec.tables)
