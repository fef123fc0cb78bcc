"""The words, the side-by-side table, the statement and the advisor's answer, from study results with known
numbers (no release runs)."""

import json

import pytest

from dpcore import limits
from dpcore.attacks import reidentification as reid
from dpcore.errors import DPError
from dpcore.figures import synth as figs
from dpcore.synth import advise, story
from dpcore.synth import study as ST
from dpcore.synth.statement import release_statement

from .helpers import fake_release, fake_result, run


def test_statement_names_generator_budget_unit_and_what_was_declared():
    st = release_statement(fake_release(1.0), "synthetic medical, 1,000 patients (seed 31)")
    assert st["kind"] == "synthetic_release" and st["generator"]["name"] == "MST"
    assert st["epsilon"] <= 1.0 and st["delta"] == 0.0
    assert st["unit_of_privacy"] == "one patient's record (one row of the data)"
    assert st["neighbour_relation"] == "add/remove one record"
    cols = {c["name"]: c for c in st["declared_public"]["columns"]}
    assert cols["salary"]["bounds"] == [0.0, 250_000.0] and cols["salary"]["width"] == 5_000
    assert cols["sex"]["categories"] == ["F", "M"]
    assert st["declared_public"]["rows"].startswith("the generator's DP estimate")
    assert "secure" in st["randomness"]["measurement"] and st["randomness"]["sample_seed"] == 7
    assert "post-processing" not in st["randomness"]["measurement"]
    assert "seeded with 7" in st["randomness"]["post_processing"]
    assert st["opendp_features"] == ["contrib"] and st["dp_release"] and not st["reproducible_noise"]
    assert st["summary"].startswith("ε = 1, δ = 0 (MST); add/remove one record")
    json.dumps(st)  # JSON as it is written beside the CSV
    aim = release_statement(fake_release(1.0, delta=1e-6), "x")
    assert aim["generator"]["name"] == "AIM" and "ρ = 0.02" in aim["privacy_map"]
    assert "δ = 1e-6" in aim["summary"]


def test_headline_when_the_neighbour_is_gone_and_guesses_are_blind():
    res = fake_result({1.0: [run(neighbour_matches=0), run(neighbour_matches=2), run(neighbour_matches=1)]})
    claim, detail = story.headline(ST.Study(res), 1.0)
    assert claim == "At ε = 1 the neighbour is no longer found"
    assert "0–2 rows (1.0 on average) match what you know about her" in detail
    assert (
        "the attacker's guess of her diagnosis (read off those rows, or blind when none match) is right "
        "('hypertension') in 0 of 3 releases (0 of 3 releases for tables fitted without her)"
    ) in detail
    assert "a blind guess of the most common one ('none') 47%" in detail


def test_one_lucky_match_is_not_finding_her():
    """One release in three whose single matching row shows her diagnosis, none for the tables without her: a
    chance the baseline sees too (Fisher p = 0.5), not a finding."""
    res = fake_result({0.3: [run(neighbour_matches=1, neighbour_right=True), run(), run()]})
    assert story.headline(ST.Study(res), 0.3)[0] == "At ε = 0.3 the neighbour is no longer found"
    many = fake_result({1.0: [run(neighbour_matches=1, neighbour_right=k < 5) for k in range(10)]})
    assert story.her_named(story.neighbour_counts(ST.Study(many), 1.0))  # 5 of 10 against 0 of 10: p = 0.016
    assert not story.her_named({"judged": 10, "right": 2, "baseline_right": 0})  # p = 0.24


def test_headline_when_she_is_still_found():
    res = fake_result({30.0: [run(neighbour_matches=1, neighbour_right=True)] * 3})
    claim, _ = story.headline(ST.Study(res), 30.0)
    assert claim == "At ε = 30 the synthetic table still points at her"
    res = fake_result({30.0: [run(targets_right=0.8)] * 3})
    assert story.headline(ST.Study(res), 30.0)[0] == "At ε = 30 the synthetic table still reveals diagnoses"


def test_guarantee_words_read_the_statement():
    g = story.guarantee(ST.Study(fake_result({1.0: [run()]})), 1.0)
    assert "**ε = 1** (δ = 0) differentially private for adding or removing one patient" in g
    assert "replace-one) it is ε = 2" in g and "7.39×" in g  # e² = 7.389 rounded up
    assert "age, sex, zip code, salary, diagnosis" in g and "DP estimate" in g


def test_comparison_table_puts_the_defences_side_by_side():
    s = reid.StorySettings()
    rel = reid.release_of(reid.population(s.n, s.seed))
    dp = reid.dp_part(rel, s.qis, s.sensitive, 1.0, 50, s.n_targets, s.sim_seed)
    res = fake_result({1.0: [run(neighbour_matches=2), run()]})
    t = story.comparison(
        ST.Study(res),
        1.0,
        release=rel,
        generalisation=s.generalisation,
        dp=dp,
        qis=s.qis,
        sensitive="diagnosis",
        facts=s.facts,
    )
    assert t["defence"].tolist() == [
        "names removed",
        "generalised",
        "noisy counts, ε = 1",
        "DP synthetic, ε = 1",
        "synthetic, without them",
        "blind guess",
    ]
    assert list(t.columns) == [
        "defence",
        "her diagnosis named",
        "diagnosis named (200 patients)",
        "rows matching her",
        "guarantee",
    ]
    first = t.iloc[0]
    assert (first["her diagnosis named"], first["rows matching her"]) == ("yes", "1")  # her row, her diagnosis
    assert int(t.iloc[1]["rows matching her"]) > 1  # her generalised class
    assert t.iloc[2][t.columns[2]] == f"{dp['at_epsilon']:.0%}"
    syn = t.iloc[3]
    assert syn["rows matching her"] == "1.0 (0–2)" and syn["her diagnosis named"] == "0 of 2 releases"
    assert t.iloc[4]["rows matching her"] == "0"  # the baselines: no row matched in either release
    assert syn["guarantee"] == "ε = 1 (δ = 0); 2 replace-one"
    assert t.iloc[-1]["her diagnosis named"] == "no"  # the blind guess names 'none', not hers
    note = story.comparison_note(ST.Study(res), 1.0, s.generalisation)
    assert "generalised: 10-year age bands, first 3 zip digits, $10,000 salary bands" in note


def test_findings_label_what_epsilon_does_not_cover():
    f = story.findings(ST.Study(fake_result({1.0: [run(two_way_max=3.0), run(two_way_max=5.0)]})), 1.0)
    values = dict(zip(f["finding"], f["value"]))
    assert values["not covered by ε"] == ST.NOT_COVERED
    assert values["2-way marginals that matter: largest cell error"] == (
        "4.0 points (3.0–5.0); two real samples differ by 2.5"
    )
    assert values["privacy statement"].startswith("ε = 1, δ = 0 (MST)")


def test_advisor_answers_from_the_worst_release():
    res = fake_result(
        {
            0.3: [run(two_way_max=9.0), run(two_way_max=12.0)],
            1.0: [run(two_way_max=4.0), run(two_way_max=6.0)],
            3.0: [run(two_way_max=3.0), run(two_way_max=3.5)],
        }
    )
    a = advise.epsilon_for_marginals(ST.Study(res, "job-1"), 5)
    assert a["epsilon"] == 3.0  # ε = 1 averages 5.0 but its worst release is 6.0 points off
    assert a["text"].startswith(
        "ε = 3 kept every cell of the 2-way marginals that matter within ±5 points in all "
        "2 releases measured (worst 3.5 points); at ε = 1 the worst release was 6.0"
    )
    assert advise.epsilon_for_marginals(ST.Study(res), 6)["epsilon"] == 1.0
    none = advise.epsilon_for_marginals(ST.Study(res), 3.2)
    assert none["epsilon"] is None and "at the largest, ε = 3, the worst release was 3.5 points off" in none["text"]
    floor = advise.epsilon_for_marginals(ST.Study(res), 1)
    assert floor["epsilon"] is None and "two real samples of 1,000 patients already differ by 2.5" in floor["text"]


@pytest.mark.parametrize("k", [0, -1, 1e9, float("nan"), "x"])
def test_advisor_refuses_a_bad_tolerance(k):
    with pytest.raises(DPError, match="percentage points"):
        advise.epsilon_for_marginals(ST.Study(fake_result({1.0: [run()]})), k)


def test_study_config_checks_before_anything_runs():
    with pytest.raises(DPError, match=f"1 to {limits.SYNTH_STUDY_MAX_EPSILONS} values"):
        ST.StudyConfig(epsilons=(0.1, 0.3, 1, 3, 10))
    with pytest.raises(DPError, match="repetitions must be from 1 to"):
        ST.StudyConfig(repetitions=11)
    with pytest.raises(DPError, match="release the column 'salary'"):
        ST.StudyConfig(columns=("age", "sex", "zip_code", "diagnosis"))
    with pytest.raises(DPError, match="AIM needs δ > 0"):
        ST.StudyConfig(generator="aim")
    with pytest.raises(DPError, match="epsilon of a synthetic release must be from 0.01 to 100"):
        ST.StudyConfig(epsilons=(1000,))
    cfg = ST.StudyConfig(epsilons=(3, 1))
    assert cfg.epsilons == (1.0, 3.0) and ST.StudyConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.releases == 2 * 2 * cfg.repetitions


def test_summaries_known_answer():
    s = ST.summarise([run(targets_right=0.4, neighbour_right=True), run(targets_right=0.6, neighbour_right=None)])
    assert s["targets_right"] == {"mean": 0.5, "min": 0.4, "max": 0.6, "count": 2}
    assert s["neighbour_right"]["count"] == 1  # a release where she could not be judged is left out


def test_figures_draw_every_series():
    study = ST.Study(fake_result({0.3: [run(), run()], 1.0: [run(), run()], 3.0: [run(), run()]}))
    att = figs.attack_chart(study, 1.0, label=reid.label)
    names = [t.name for t in att.data]
    assert "synthetic table of the patients" in names and "synthetic table without them" in names
    assert "blind guess: 47%" in names and "the table itself: 89%" in names
    assert all(len(n or "") <= 45 for n in names)  # legend entries fit a phone's width
    assert att.layout.xaxis.type == "log"
    util = figs.utility_chart(study, 1.0)
    assert any("two real samples: 2.5" == t.name for t in util.data)
    model = figs.model_chart(study)
    assert any(t.name == "trained on the real rows: 88.0%" for t in model.data)
