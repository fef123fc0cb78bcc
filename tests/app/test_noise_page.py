"""AppTest for the noise mechanisms page: the slider moves the numbers, releases compose, bad input shows errors."""

import pytest

from dpcore import textsafe

from .pages import open_page, shown


def _metrics(at):
    # labels carry the unit, "expected |error| (patients)": key by the name alone
    return {m.label.split(" (")[0]: m.value for m in at.metric} | {m.label: m.value for m in at.metric}


def _errors(at):
    """Error texts as a reader sees them: ``.value`` is markdown source, escaped by textsafe.md_message."""
    return [shown(e.value) for e in at.error]


@pytest.fixture
def at(chdir_root):
    at = open_page("pages/noise.py")
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_headline_is_a_short_claim_and_a_plain_detail(at):
    """The page leads with a short bold claim and the detail in plain weight (as one bold sentence it took four
    lines on a phone, the last word alone); the number and its unit, and ε = 1, never break across lines."""
    claim, detail = at.markdown[0].value.split("\n\n")
    # the count's own mechanism (discrete Laplace): E|X| = 1/sinh(1) = 0.8509, as people read a count of patients
    assert claim == "#### Typical error at ε\u00a0=\u00a01: 0.9\u00a0patients"
    assert (
        detail
        == (
            "A released count is typically this far from the true value: the price of hiding whether any "
            "one patient is in the data."
        )
        and "#" not in detail
    )
    at.select_slider(key="noise_eps").set_value(0.1).run()
    assert at.markdown[0].value.startswith("#### Typical error at ε\u00a0=\u00a00.1: 10\u00a0patients\n\n")


def test_slider_changes_numbers_and_release_composes(at):
    before = _metrics(at)
    assert before["Noise scale b"] == "1" and before["Sensitivity Δ"] == "1"
    at.select_slider(key="noise_eps").set_value(0.1).run()
    assert not at.exception
    after = _metrics(at)
    assert after["Noise scale b"] == "10" and after["Expected |error|"] == "10"  # 1/sinh(0.1) = 9.98: discrete Laplace
    assert after != before
    assert any("simulation" in c.value for c in at.caption)
    true = next(m for m in at.metric if m.label == "True value")  # short label (fits at 1280 px): the
    assert "Not private" in true.proto.help and "In patients." in true.proto.help  # unit and warning in help
    assert not any("no random draw" in c.value for c in at.caption)  # the table's tab is closed: not built
    at.session_state["noise_tab"] = "Error vs ε"
    at.run()
    assert any("no random draw" in c.value for c in at.caption)  # the ε table shows typical errors (issue 13)
    grid = next(d for d in at.dataframe if "noise scale" in d.value.columns)  # the downloads keep every column;
    shown = list(grid.proto.column_order)  # a phone has room for four short ones (browser: tests/e2e/test_layout)
    assert shown == ["epsilon", "expected |error|", "95% within ±", "privacy level"], shown

    at.button(key="noise_release").click().run()
    at.select_slider(key="noise_eps").set_value(0.5).run()
    at.button(key="noise_release").click().run()
    m = _metrics(at)
    assert m["Releases k"] == "2" and m["Total ε spent (sum)"] == "0.6"
    assert float(m["Latest released answer"]).is_integer()  # count: integer (geometric) mechanism
    assert any("per browser session" in c.value for c in at.caption)
    rel = next(d.value for d in at.dataframe if "release #" in d.value.columns)
    assert list(rel.columns[:2]) == ["release #", "released answer"]  # what a phone shows before it scrolls
    assert set(rel["mechanism"]) == {"Laplace"}  # by name, not "laplace"
    # the total's claim carries its δ beside ε even when it is 0 (main's merge added the relation)
    total = next(m.value for m in at.markdown if "so far cost" in m.value)
    assert "**ε = 0.6**, δ = 0 in total for neighbours that " in total, total
    at.button(key="noise_reset").click().run()
    assert "Releases k" not in _metrics(at)


def test_gaussian_and_mean_query(at):
    at.radio(key="noise_mech").set_value("gaussian").run()
    at.select_slider(key="noise_delta").set_value(1e-3).run()
    m1 = _metrics(at)
    assert "Noise scale σ" in m1
    at.select_slider(key="noise_eps").set_value(5.0).run()
    assert _metrics(at)["Noise scale σ"] != m1["Noise scale σ"]
    at.selectbox(key="noise_query").set_value("mean").run()
    assert not at.exception and not _errors(at)
    assert _metrics(at)["Sensitivity Δ"] == "0.0072"  # (90 - 18) / 10,000
    sections = len(at.subheader)
    # The classic calibration holds only for ε < 1: the slider then offers only those ε (was: the page went
    # blank below an error at the default ε = 1), and says so.
    at.radio(key="noise_mech").set_value("gaussian-classic").run()
    assert not at.exception and not _errors(at)
    assert at.select_slider(key="noise_eps").value < 1
    assert all(float(e) < 1 for e in at.select_slider(key="noise_eps").options)
    assert any("only holds for ε < 1" in i.value for i in at.info)
    assert len(at.subheader) == sections  # every section still drawn
    # A typed ε ≥ 1 still gets the clear message, and it reaches markdown escaped, so "<" can never open HTML
    at.toggle(key="noise_exact").set_value(True).run()
    at.number_input(key="noise_eps_typed").set_value(2.0).run()
    assert any("only valid for ε < 1" in e for e in _errors(at))
    assert any(textsafe.md_message("only valid for ε < 1") in e.value for e in at.error)


def test_classic_gaussian_from_a_link_at_epsilon_one_is_not_blank(chdir_root):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(chdir_root / "pages" / "noise.py"), default_timeout=90)
    at.query_params["noise_mech"], at.query_params["noise_eps"] = "gaussian-classic", "1.0"
    at.run()
    assert not at.exception and not _errors(at)
    assert at.select_slider(key="noise_eps").value == 0.7
    # the whole page drew: the released-answer chart and the two sections below it
    assert len(at.subheader) >= 2 and at.get("plotly_chart")


@pytest.mark.parametrize(
    "key,value,msg",
    [
        ("noise_delta_typed", 1.0, "Delta must be in (0, 1)"),
        ("noise_delta_typed", 0.0, "Delta must be in (0, 1)"),
    ],
)
def test_bad_epsilon_delta_in_ui(at, key, value, msg):
    at.radio(key="noise_mech").set_value("gaussian").run()
    at.toggle(key="noise_exact").set_value(True).run()
    at.number_input(key=key).set_value(value).run()
    assert not at.exception
    assert any(msg in e for e in _errors(at)), _errors(at)


def _number_proto(at, key):
    return at.number_input(key=key).proto


def test_typed_numbers_are_bounded_by_dpcore_limits(at):
    """Issue 28: every number field has its range from dpcore.limits (a browser refuses anything outside)."""
    from dpcore import limits

    at.radio(key="noise_mech").set_value("gaussian").run()
    at.toggle(key="noise_exact").set_value(True).run()
    eps = _number_proto(at, "noise_eps_typed")
    assert (eps.min, eps.max) == (limits.EPSILON_MIN, limits.EPSILON_MAX)
    n = _number_proto(at, "noise_n")
    assert (n.min, n.max) == (limits.NOISE_ROWS_MIN, limits.NOISE_ROWS_MAX)
    at.selectbox(key="noise_query").set_value("sum").run()
    for key in ("noise_lower", "noise_upper"):
        p = _number_proto(at, key)
        assert (p.min, p.max) == (-limits.RELEASE_MAGNITUDE_MAX, limits.RELEASE_MAGNITUDE_MAX)
    at.selectbox(key="noise_query").set_value("custom").run()
    assert (_number_proto(at, "noise_value").max, _number_proto(at, "noise_sens").max) == (
        limits.RELEASE_MAGNITUDE_MAX,
        limits.RELEASE_MAGNITUDE_MAX,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "query,settings",
    [
        ("custom", {"noise_value": 1e308}),
        ("custom", {"noise_value": -1e308}),
        ("custom", {"noise_value": 1e30}),
        ("custom", {"noise_sens": 1e308}),
        ("sum", {"noise_lower": -1e308, "noise_upper": 1e308}),
        # within the widgets' range: the largest numbers a release takes, or one clear message
        ("custom", {"noise_value": 1e15}),
        ("custom", {"noise_value": -1e15, "noise_sens": 1e15}),
        ("custom", {"noise_sens": 1e15}),
        ("custom", {"noise_value": 1e15, "noise_sens": 1e-12}),
        ("sum", {"noise_lower": -1e15, "noise_upper": 1e15}),
        ("mean", {"noise_lower": -1e15, "noise_upper": 1e15}),
        ("mean", {"noise_lower": 1e15 - 1, "noise_upper": 1e15}),
    ],
)
def test_extreme_numbers_never_raise(at, query, settings):
    """Issue 28: ±1e308, 1e30 as a custom value, Δ = 1e308 and SUM bounds ±1e308 raised page exceptions; now a
    browser cannot type them, and the largest numbers it can are released or get one message. Each case also
    presses "Release one answer"."""
    at.selectbox(key="noise_query").set_value(query).run()
    for key, value in settings.items():
        at.number_input(key=key).set_value(value).run()
        assert not at.exception, [e.value for e in at.exception]
    for tab in ("Why private", "Best attack", "Error vs ε"):
        at.session_state["noise_tab"] = tab
        at.run()
        assert not at.exception, (tab, [e.value for e in at.exception])
    if not _errors(at):  # a setting the page refused with its message stops before the release section
        at.button(key="noise_release").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert not _errors(at), _errors(at)


def test_bad_query_inputs_in_ui(at):
    at.selectbox(key="noise_query").set_value("mean").run()
    at.number_input(key="noise_lower").set_value(95.0).run()
    assert any("lower must be < upper" in e for e in _errors(at))
    at.selectbox(key="noise_query").set_value("custom").run()
    at.number_input(key="noise_value").set_value(1e15).run()
    assert any("too small beside the true value" in e for e in _errors(at)), _errors(at)
    assert not at.exception


def test_column_and_bounds_survive_a_count(at):
    """The mean's column and bounds are kept while a count (which does not draw them) is shown."""
    at.selectbox(key="noise_query").set_value("mean").run()
    at.selectbox(key="noise_column").set_value("salary").run()
    at.number_input(key="noise_upper").set_value(250_000.0).run()
    at.selectbox(key="noise_query").set_value("count").run()
    at.selectbox(key="noise_query").set_value("mean").run()
    assert not at.exception
    assert at.selectbox(key="noise_column").value == "salary"
    assert at.number_input(key="noise_upper").value == 250_000.0


def _chart_keys(at):
    return [c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")]


def test_only_the_open_tab_is_built_and_a_link_opens_a_tab(chdir_root):
    """The released-answer chart is always drawn; each "Look closer" tab runs only when open (every chart
    drawn is re-created in the browser on a slider move), and a shared link opens the tab it names."""
    from streamlit.testing.v1 import AppTest

    at = open_page("pages/noise.py")
    assert [t.label for t in at.tabs] == ["Compare ε", "Why private", "Best attack", "Error vs ε"]
    # by default: the distribution and several ε side by side (which does not change with ε)
    assert len(at.get("plotly_chart")) == 2
    assert any("the wider the spread" in c.value for c in at.caption)
    for tab, text in [
        ("Why private", "never leaves the band"),
        ("Best attack", "no better than this curve"),
        ("Compare ε", "the wider the spread"),
    ]:
        at.session_state["noise_tab"] = tab
        at.run()
        assert not at.exception
        assert len(at.get("plotly_chart")) == 2
        assert any(text in m.value for m in [*at.caption, *at.markdown]), tab
        others = {"Why private": "never leaves the band", "Compare ε": "the wider the spread"}
        assert not any(t in m.value for k, t in others.items() if k != tab for m in [*at.caption, *at.markdown])
        if tab == "Best attack":
            assert at.query_params["noise_tab"] == "Best attack"  # the open tab is in the link
    assert "noise_tab" not in at.query_params  # the default tab goes without saying (one history entry a visit)

    link = AppTest.from_file(str(chdir_root / "pages" / "noise.py"), default_timeout=90)
    link.query_params["noise_tab"] = "Error vs ε"
    link.run()
    assert not link.exception
    assert any("no random draw" in c.value for c in link.caption)


def test_counts_read_as_people_read_them_and_agree_with_the_table(at):
    """Issue 28: "1.429 patients", "0.06667 patients", "1e+04 patients"; the headline's typical error (1) beside
    the table's 0.8509. Both now give the count's own mechanism (discrete Laplace), written the same way."""
    for eps, claim in [
        (0.7, "1.3\u00a0patients"),
        (15.0, "under\u00a00.01\u00a0patients"),
        (0.01, "100\u00a0patients"),
    ]:
        at.select_slider(key="noise_eps").set_value(eps).run()
        assert at.markdown[0].value.split("\n\n")[0].endswith(claim), at.markdown[0].value
    at.number_input(key="noise_n").set_value(10_000).run()
    at.session_state["noise_tab"] = "Error vs ε"
    at.select_slider(key="noise_eps").set_value(1.0).run()
    table = next(d for d in at.dataframe if "noise scale" in d.value.columns).value
    row = table[table["epsilon"] == 1.0].iloc[0]
    assert row["expected |error|"] == "0.9 patients"  # the headline's "0.9 patients"
    assert at.markdown[0].value.split("\n\n")[0].endswith("0.9\u00a0patients")
    # ±0 beside "very weak": said why (at least 95% of releases are the exact count)
    assert row["95% within ±"] == "±3" and table[table["epsilon"] == 10.0].iloc[0]["95% within ±"] == "±0"
    assert any("±0 (ε = 5, 10)" in c.value and "exact count" in c.value for c in at.caption), [
        c.value for c in at.caption
    ]


def test_the_mean_is_the_labelled_replace_one_exception(at):
    """Issue 25 §4: the page now uses add/remove, as every other page; the bounded MEAN (n public) says, where ε is
    set and in the headline, that its neighbours replace one record."""
    assert any("added or removed" in c.value for c in at.caption)
    at.selectbox(key="noise_query").set_value("sum").run()
    assert _metrics(at)["Sensitivity Δ"] == "90"  # max(|18|, |90|): one record added or removed
    at.selectbox(key="noise_query").set_value("mean").run()
    assert any("one patient's record replaced" in c.value and "2ε" in c.value for c in at.caption)
    assert "one record replaced, n public" in at.markdown[0].value


def test_a_link_with_epsilon_outside_the_slider_says_so(chdir_root):
    """Issue 28: ?noise_eps=1e9 became ε = 20 without a word."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(chdir_root / "pages" / "noise.py"), default_timeout=90)
    at.query_params["noise_eps"] = "1e9"
    at.run()
    assert not at.exception and at.select_slider(key="noise_eps").value == 20.0
    assert any("outside what this page offers" in w.value and "using 20" in w.value for w in at.warning)


def test_release_one_answer_states_its_grid(at):
    at.selectbox(key="noise_query").set_value("mean").run()
    assert any("rounded to a fine public grid" in m.value and "OpenDP" in m.value for m in at.markdown)
    at.button(key="noise_release").click().run()
    assert not at.exception
    latest = float(_metrics(at)["Latest released answer"].replace(",", ""))
    assert 18 <= latest <= 90


@pytest.mark.parametrize("mech, eps", [("laplace", 1.0), ("gaussian", 5.0)])
def test_best_attack_curve_is_a_ceiling_of_the_count_the_page_releases(at, mech, eps):
    """Audit: 'An attacker who sees one released answer … can do no better than this curve'. The page releases the
    count with whole-number noise; the chart drew the continuous mechanism's curve. The discrete Laplace of a count
    reaches TPR 0.731 at FPR 0.269 (ε = 1: the test 'answer ≥ true count + 1'), where the Laplace curve read 0.658;
    the discrete Gaussian rises above Φ(Φ⁻¹(α) + μ) too. The exact ROC of the release, from its pmf, stays under
    the curve drawn."""
    import json
    import math

    import numpy as np

    from dpcore.noise import discrete, release

    at.radio(key="noise_mech").set_value(mech).run()
    at.select_slider(key="noise_eps").set_value(eps).run()
    at.session_state["noise_tab"] = "Best attack"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    (spec,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id.endswith("noise_chart_tradeoff")]

    def arr(v):  # plotly writes arrays as {"dtype", "bdata": base64}
        import base64

        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]) if isinstance(v, dict) else np.asarray(v)

    curve = next(t for t in spec["data"] if "guess" not in str(t.get("name")))
    fx, fy = arr(curve["x"]).astype(float), arr(curve["y"]).astype(float)
    noise = release.noise_for(mech, epsilon=eps, delta=1e-5 if mech == "gaussian" else 0.0, sensitivity=1)
    x = np.arange(-400, 401)
    p0 = noise.density(x) if mech == "laplace" else discrete.pmf(x, noise.scale)
    p1 = np.r_[0.0, p0[:-1]]  # the count one higher
    fpr, tpr = np.r_[0.0, np.cumsum(p0[::-1])], np.r_[0.0, np.cumsum(p1[::-1])]  # flag 'answer ≥ t', t from the top
    exact = np.interp(fx, fpr, tpr)  # the release's exact ROC (randomised between thresholds) at the drawn FPRs
    assert np.all(exact <= fy + 1e-6), float(np.max(exact - fy))
    if mech == "laplace":
        a = math.exp(-1) / (1 + math.exp(-1))
        assert np.interp(a, fpr, tpr) == pytest.approx(1 / (1 + math.exp(-1)))  # 0.731 at FPR 0.269
        assert np.interp(a, fx, fy) >= 0.70  # drawn there, up to the drawing's grid (the Laplace curve: 0.658)


@pytest.mark.parametrize("mech", ["laplace", "gaussian"])
def test_the_mean_reads_its_own_neighbour_relation_in_words(at, mech):
    """Audit: the mean on this page keeps n public and is calibrated for one record replaced, but under the Gaussian
    'Why private' read 'e^ε times more likely with one patient's record than without', and 'Best attack' asked
    'whether a given patient's record is in the data' — a question that calibration does not bound. Both now name
    the replace-one question."""
    at.selectbox(key="noise_query").set_value("mean").run()
    at.radio(key="noise_mech").set_value(mech).run()
    at.session_state["noise_tab"] = "Why private"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    why = [m.value for m in at.markdown if "times more likely" in m.value]
    assert why and all("record than with it replaced" in m for m in why), why
    at.session_state["noise_tab"] = "Best attack"
    at.run()
    said = " ".join(c.value for c in at.caption)
    assert "one record replaced" in said and "is in the data can do" not in said
    at.selectbox(key="noise_query").set_value("count").run()
    assert "whether a given patient's record is in the data" in " ".join(c.value for c in at.caption)


def test_releases_under_different_neighbour_relations_are_not_added_into_one_total(at):
    """Audit: a count (add/remove one record) at ε = 1 and the page's mean (n public, one record replaced) at ε = 1
    read '2 releases so far cost ε = 2 in total … a true upper bound'. Under add/remove the mean's ε is worth up to
    2ε (the page says so), and under replace-one the count's is 2ε: no relation makes 2 true. Each relation now keeps
    its own total (charge.compose_by_relation)."""
    at.select_slider(key="noise_eps").set_value(1.0).run()
    at.button(key="noise_release").click().run()
    m = _metrics(at)
    assert m["Total ε spent (sum)"] == "1"
    assert any(
        "ε = 1**, δ = 0 in total for neighbours that add or remove one patient's record" in x.value for x in at.markdown
    )
    at.selectbox(key="noise_query").set_value("mean").run()
    at.button(key="noise_release").click().run()
    assert not at.exception, [e.value for e in at.exception]
    m = _metrics(at)
    assert m["Releases k"] == "2" and m["Total ε spent (sum)"] == "—"
    said = " ".join(x.value for x in at.markdown)
    assert "cost **ε = 2" not in said and "different neighbour relations" in said
    assert "ε = 1 for neighbours that add or remove" in said and "ε = 1 for neighbours that replace one" in said


def test_why_private_says_its_delta_is_the_drawn_curves_when_the_count_is_released_whole(at):
    """Audit: 'Why private' under the Gaussian reads the δ of the continuous curves it draws, while the page
    releases a count with the discrete Gaussian (its own δ): the sentence says which mechanism its δ belongs to."""
    at.radio(key="noise_mech").set_value("gaussian").run()
    at.session_state["noise_tab"] = "Why private"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    (why,) = [m.value for m in at.markdown if "rare exceptions" in m.value]
    assert "for the continuous curves drawn" in why and "whole-number release" in why
    at.selectbox(key="noise_query").set_value("mean").run()
    (why,) = [m.value for m in at.markdown if "rare exceptions" in m.value]
    assert "whole-number" not in why  # the mean is released on its grid, not as a whole number


def test_chart_titles_are_page_text_above_their_charts(at):
    """Each chart's title is drawn by the page above it (the browser wraps it to the width there is; Plotly drew
    it on lines broken for a phone), and the figure sent carries no title of its own, only its text in
    ``layout.meta.title``."""
    import json

    heads = [h.proto.body for h in at.get("html") if "dpx-chart-head" in h.proto.body]
    specs = [json.loads(c.proto.spec)["layout"] for c in at.get("plotly_chart")]
    titled = [s for s in specs if (s.get("meta") or {}).get("title")]
    assert titled and len(heads) == len(titled)
    for layout in titled:
        assert not layout["title"].get("text")  # Plotly draws nothing there now
        assert layout["margin"]["t"] >= 28
    assert all("<br>" not in h for h in heads)  # the heading's lines joined again
