"""Issue 28's presenter items on the privacy–utility charts, and the page's answer in words (issue 26): the size
control's cost sits in the axis labels in short lines (as bar text it was crossed by the error bars and ~3 px tall on
a phone), the audit caption names only the marks drawn (it spoke of diamonds that were not there), and the answer's
heading is short with δ and the relation beside it."""

import re

from dpcore.figures import privacy_utility as figs
from dpcore.sweep import exposure as sweep_exposure

from .sweep.helpers import headline_result, multi_seed_result


def _size_result():
    res = headline_result()
    res["config"]["size_epsilon"] = 1.0
    res["size_control"] = [
        dict(p, train_fraction=f, n_train=n, test_accuracy=a)
        for f, n in ((0.25, 100), (0.5, 200))
        for p, a in ((res["baselines"][0], 0.9), (res["points"][0], 0.6))
    ]
    return res


def test_the_size_controls_cost_is_in_short_axis_lines_not_on_the_bars():
    fig = figs.size_chart(_size_result())
    assert all(not t.text for t in fig.data)  # nothing drawn over the bars and their error bars
    ticks = list(fig.data[0].x)
    assert [re.search(r"DP: −([\d.]+) pts", t).group(1) for t in ticks] == [
        "30.0",
        "30.0",
        "20.3",
    ]  # means: 97.3% − 77.0%
    lines = [re.sub("<[^>]+>", "", ln) for t in ticks for ln in t.split("<br>")]
    assert max(map(len, lines)) <= 16, lines  # a third of a 390 px phone


def test_the_audit_caption_names_only_the_marks_drawn():
    drawn = multi_seed_result()
    assert "diamond" in figs.empirical_epsilon_note(drawn)
    nothing = multi_seed_result()
    for p in nothing["points"]:
        p["empirical_epsilon"] = dict(p["empirical_epsilon"], lower_bound=0.0, tried=[[10, 5]], correct=5, guesses=10)
    note = figs.empirical_epsilon_note(nothing)
    assert "diamond" not in note and "dot" not in note and "4 of 4 models proved nothing" in note
    assert not any(
        "diamond" in (t.marker.symbol or "")
        for t in figs.empirical_epsilon_chart(nothing).data
        if getattr(t, "marker", None) is not None
    )


def test_the_answer_is_a_short_claim_with_delta_and_the_relation_beside_it():
    s = sweep_exposure.story(headline_result())
    claim, detail = sweep_exposure.story_words(s)
    assert claim == "At ε = 1, the model loses 17.0 points" and len(claim) <= 48  # two lines on a phone
    assert detail.startswith("**No attack proves more than ε ≥ ") or detail.startswith("**No attack proves any leak")
    assert "at δ = 1e-5 (add/remove one record)" in detail and "80.0% with DP vs 97.0% without" in detail
    assert sweep_exposure.story_words({**s, "upload": True})[0].startswith("At ε = 1, your model loses")


def test_the_answer_claims_a_cost_only_where_the_intervals_show_one():
    """17 points lost on 2,000 test rows is a cost; the same medians on 20 rows are not one these rows can show
    (the headline said "loses" whatever the test size)."""
    res = headline_result()
    for p in res["points"] + res["baselines"]:
        p["per_class"] = [{"class": 0, "n_test": 1000}, {"class": 1, "n_test": 1000}]
    s = sweep_exposure.story(res)
    assert s["n_test"] == s["baseline_n_test"] == 2000
    claim, detail = sweep_exposure.story_words(s)
    assert claim == "At ε = 1, the model loses 17.0 points" and "2,000 test rows each)." in detail
    claim, detail = sweep_exposure.story_words({**s, "n_test": 20, "baseline_n_test": 20})
    assert claim == "At ε = 1, no cost shown on 20 test rows", claim
    assert "one model's 95% interval on that many test rows, put around each median, overlap, so no cost" in detail


def test_no_leak_words_say_which_audits_proved_nothing():
    """ "No attack proves any leak (every audit's bound is ε ≥ 0)" sat above an audit chart with a run at ε = 8
    proving ε ≥ 0.05: the sentence is about the audits at its own ε, taken together, and now says so."""
    s = {**sweep_exposure.story(headline_result()), "proved": 0.0}
    detail = sweep_exposure.story_words(s)[1]
    assert detail.startswith(
        "**No attack proves any leak** (the audits at ε = 1, its models together, prove only ε ≥ 0)"
    ), detail
    assert "every audit" not in detail
