"""AppTest for the differencing attack page: steps by button, groups, ε, bad inputs shown as st.error."""

import re

import pytest

from .pages import open_page

PAGE = "pages/differencing.py"


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


@pytest.fixture
def at(chdir_root):
    at = open_page(PAGE)
    assert not at.exception, [e.value for e in at.exception]
    return at


def steps(at):
    return [e for e in at.expander if e.label[:1].isdigit()]


def test_step_by_step_to_the_exact_age(at):
    assert at.title[0].value == "Differencing attack"
    # the page opens with the "so what": a short bold claim with the number, the detail in plain weight (one
    # bold sentence took four lines on a phone, "years." alone on the last)
    assert at.markdown[0].value == (
        "#### One patient's exact age leaks: 54\u00a0years\n\nTwo pairs of answers give "
        "it away, each over a group of 50 or more people."
    )
    assert len(steps(at)) == 1 and at.warning[0].value.startswith("Refused: WHERE")
    # the group in words for people; its SQL is in the code box above
    assert any("the **96 people with first name Peter**, well over N = 50." in m.value for m in at.markdown)
    at.button(key="dif_next").click().run()
    assert len(steps(at)) == 2 and metrics(at)["Answer (c₁)"] == "97 people"
    at.button(key="dif_all").click().run()
    assert not at.exception
    assert len(steps(at)) == 6
    # the SQL wraps instead of scrolling sideways: a phone shows the whole WHERE name = 'Jan Kees'
    assert len(at.code) == 5 and all(c.proto.wrap_lines for c in at.code)
    m = metrics(at)
    assert m["Recovered age of Jan Kees"] == "54 years" == m["True age (hidden data)"]
    assert m["Answer (c₂)"] == "96 people"
    queries = next(d.value for d in at.dataframe if "query" in d.value.columns)
    assert list(queries.columns) == ["step", "answer", "refused", "query"]  # answers first, on a phone too
    assert queries["refused"].tolist() == [True, False, False, False, False]
    assert queries["answer"].iloc[0] == "— (refused)" and queries["answer"].iloc[1] == "97"  # never "None"
    at.button(key="dif_reset").click().run()
    assert len(steps(at)) == 1


def test_size_rule_is_quoted_as_set(at):
    """The headline and the lesson of step 6 name the N the user chose (the lesson once said "50+" for any N)."""
    at.number_input(key="dif_min_group").set_value(20).run()
    at.button(key="dif_all").click().run()
    assert not at.exception and not at.error
    assert "each over a group of 20 or more people" in at.markdown[0].value
    assert any(i.value.startswith("Every answered query was over a group of 20 or more people") for i in at.info)


def test_privacy_cost_states_the_neighbour_relation(at):
    text = " ".join(m.value for m in at.markdown)
    assert "Pure ε-DP (δ = 0) for datasets that differ by adding or removing one person" in text


def test_other_group_and_target_still_exact(at):
    at.button(key="dif_all").click().run()
    at.radio(key="dif_group_kind").set_value("Zip code and sex").run()
    at.selectbox(key="dif_group_zip").set_value(10004).run()
    at.text_input(key="dif_target").set_value("Aisha Ali").run()
    assert not at.exception and not at.error
    m = metrics(at)
    rec = m["Recovered age of Aisha Ali"]
    assert rec == m["True age (hidden data)"] and rec != "54 years"
    assert "zip_code = 10004 AND sex = 'F'" in " ".join(c.value for c in at.code)
    assert any("people with zip code 10004 and sex F**" in m.value for m in at.markdown)


def test_epsilon_moves_the_success_rate(at):
    low = metrics(at)["Chance within ±5 years"]
    assert metrics(at)["Attack's total ε"] == "4"
    at.select_slider(key="dif_eps").set_value(1000.0).run()
    m = metrics(at)
    assert not at.exception
    assert float(low.rstrip("%")) < 10 and float(m["Chance within ±5 years"].rstrip("%")) > 99
    assert m["Attack's total ε"] == "4000"
    before = m["Attacker's estimate"]
    at.select_slider(key="dif_eps").set_value(1.0).run()
    at.button(key="dif_release").click().run()
    assert metrics(at)["Attacker's estimate"] != before
    assert len(at.get("plotly_chart")) >= 2


def release_table(at):
    return next(d.value for d in at.dataframe if "noisy count" in d.value.columns)


def test_one_release_leads_with_the_noisy_answers(at):
    """A phone shows a table's first columns: the noisy answers come before the long WHERE text, and the
    average has the decimals its noise leaves meaningful (the same frame goes to the downloads)."""
    t = release_table(at)
    assert list(t.columns) == ["group", "noisy count", "noisy average age", "WHERE clause"]
    assert t["group"].tolist() == ["target OR group", "group"]
    assert t["WHERE clause"].tolist() == ["name = 'Jan Kees' OR first_name = 'Peter'", "first_name = 'Peter'"]
    avg = t["noisy average age"]
    assert (avg == avg.round(1)).all()  # ε = 1: about ±1 year of noise on each average
    at.select_slider(key="dif_eps").set_value(1000.0).run()
    t = release_table(at)
    avg, cnt = t["noisy average age"], t["noisy count"]
    assert (avg == avg.round(3)).all() and not (avg == avg.round(1)).all()
    # ...enough for a reader to redo the attacker's subtraction from the table
    by_hand = 18 + (avg[0] - 18) * cnt[0] - (avg[1] - 18) * cnt[1]
    assert abs(by_hand - float(metrics(at)["Attacker's estimate"].split()[0])) < 0.5


def test_noisy_figures_are_named_in_words_and_explained(at):
    m = metrics(at)
    assert {
        "Attacker's estimate",
        "Step 6's subtraction, unchanged",
        "Chance within ±5 years",
        "Exact chance, no clipping",
    } <= set(m)
    assert not any(s in label for label in m for s in ("x·c", "P(", "unclipped"))  # no undefined symbols
    helps = {x.label: x.help for x in at.metric}
    assert all(
        helps[x]
        for x in (
            "Attacker's estimate",
            "Step 6's subtraction, unchanged",
            "Chance within ±5 years",
            "Exact chance, no clipping",
        )
    )
    # the exact chance is the formula the help names, and clipping only helps the attacker
    from dpcore.attacks import differencing_dp as dif_dp

    assert m["Exact chance, no clipping"] == f"{float(dif_dp.analytic_success(1.0, 5)):.1%}"
    assert float(m["Chance within ±5 years"].rstrip("%")) >= float(m["Exact chance, no clipping"].rstrip("%")) - 1
    # k is a whole number of years by default: shown as 5, not 5.00; a fraction still reads as typed
    assert at.number_input(key="dif_k").format == "%g" and f"{at.number_input(key='dif_k').value:g}" == "5"
    at.number_input(key="dif_k").set_value(2.5).run()
    assert "Chance within ±2.5 years" in metrics(at)


@pytest.mark.parametrize(
    "key, value, msg",
    [
        ("dif_target", "Nobody Here", "Unknown target"),
        ("dif_min_group", 500, "pick a larger group"),
    ],
)
def test_bad_input_is_an_error_not_a_traceback(at, key, value, msg):
    widget = at.text_input(key=key) if key == "dif_target" else at.number_input(key=key)
    widget.set_value(value).run()
    assert not at.exception
    assert any(msg in e.value for e in at.error), [e.value for e in at.error]


def test_custom_group_bad_spec(at):
    at.radio(key="dif_group_kind").set_value("Custom (COLUMN=VALUE,...)").run()
    at.text_input(key="dif_group_custom").set_value("salary=5").run()
    assert not at.exception and any("Unknown group column" in e.value for e in at.error)


def test_widgets_carry_the_shared_limits(at):
    """min 0 / k < 0 / 0 trials can no longer be typed: the widgets take their ranges from dpcore.limits."""
    from dpcore import limits as L

    ranges = {
        k: (at.number_input(key=k).min, at.number_input(key=k).max)
        for k in ("dif_n", "dif_seed", "dif_min_group", "dif_k", "dif_trials", "dif_sim_seed")
    }
    assert ranges == {
        "dif_n": (L.DIFFERENCING_MIN_N, L.DIFFERENCING_MAX_N),
        "dif_seed": (0, L.SEED_MAX),
        "dif_min_group": (1, L.DIFFERENCING_MAX_MIN_GROUP),
        "dif_k": (0.0, L.DIFFERENCING_MAX_K_YEARS),
        "dif_trials": (1, L.DIFFERENCING_PAGE_MAX_TRIALS),
        "dif_sim_seed": (0, L.SEED_MAX),
    }


EVIL = '[x](http://evil/)![i](http://evil/i.png)<a href="http://evil">a</a>'


def test_custom_group_with_markdown_is_shown_as_text(at):
    at.radio(key="dif_group_kind").set_value("Custom (COLUMN=VALUE,...)").run()
    at.text_input(key="dif_group_custom").set_value(f"zip_code={EVIL}").run()
    assert not at.exception
    shown = [v for v in [e.value for e in at.error] + [m.value for m in at.markdown] if "evil" in v]
    assert shown  # the text is shown (as text): every [ and < that came from the user is escaped
    assert not any(re.search(r"(?<!\\)[\[<]|(?<!\\)://", v) for v in shown), shown


def test_the_dp_half_has_a_headline_and_says_why_estimates_pile_up():
    """Issue 28: the DP half had no headline (now the same pattern as the others: a short bold claim with its
    number, the detail below), and the estimates piled up at 18 and 90 without a word why (clipping)."""
    at = open_page("pages/differencing.py")
    heads = [m.value for m in at.markdown if m.value.startswith("#### ")]
    assert len(heads) == 2 and heads[1].startswith("#### With noise: within ±5\u00a0years in ")
    assert "ε\u00a0=\u00a01 per query" in heads[1] and "cost ε\u00a0=\u00a04 in total" in heads[1]
    assert any("pile up at 18 and 90" in c.value and "clips every estimate" in c.value for c in at.caption)
    assert any("not a DP release" in m.value for m in at.markdown)  # the seeded example says what it is


def test_the_dp_headline_quotes_the_metrics_it_sits_above():
    """The headline said "in 4% of releases" and "off by 31 years" above the metrics' 3.7% and 31.4 years: two
    numbers for one thing. It quotes them as the metrics show them."""
    at = open_page("pages/differencing.py")
    head = [m.value for m in at.markdown if m.value.startswith("#### With noise")][0].replace("\u00a0", " ")
    chance = next(m.value for m in at.metric if m.label.startswith("Chance within"))
    error = next(m.value for m in at.metric if m.label == "Mean absolute error")
    assert f"in {chance} of releases" in head and f"off by {error} on average" in head, (head, chance, error)
