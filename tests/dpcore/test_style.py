"""The shared chart style: palette contrast in both themes, readable log ticks, legends below titles."""

import math
import re

import numpy as np
import plotly.graph_objects as go
import pytest

from dpcore.figures import style


def test_contrast_known_answers():
    assert style.contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert style.contrast("#ffffff", "#ffffff") == pytest.approx(1.0)
    assert style.contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # WCAG's classic example


@pytest.mark.parametrize("colour", sorted(set(style.PALETTE)))
@pytest.mark.parametrize("background", [style.LIGHT_BG, style.DARK_BG])
def test_every_palette_colour_reads_on_both_themes(colour, background):
    assert style.contrast(colour, background) >= style.MIN_CONTRAST, (colour, background)


def test_the_old_navy_accent_would_fail_in_dark_mode():
    assert style.contrast("#264653", style.DARK_BG) < style.MIN_CONTRAST  # why it left the palette


def _hex_colours(fig: go.Figure) -> set[str]:
    """Colours the figure itself names (Plotly's default template aside: Streamlit's theme replaces it)."""
    d = fig.to_plotly_json()
    d["layout"].pop("template", None)
    return {c.lower() for c in re.findall(r"#[0-9a-fA-F]{6}\b", str(d))}


def test_noise_figures_use_only_palette_colours():
    from dpcore.figures import noise
    from dpcore.noise import view as mech

    palette = {c.lower() for c in style.PALETTE}
    for mechanism, delta in (("laplace", None), ("gaussian", 1e-5)):
        view = mech.noise_view(mechanism, 1.0, delta, 1.0, 100.0, draws=2000, seed=0)
        for name, fig in noise.figures(view).items():
            assert _hex_colours(fig) <= palette, name
            assert fig.layout.paper_bgcolor == style.TRANSPARENT
            lg = fig.layout.legend  # along the chart's bottom edge, not on the title
            assert (lg.yref, lg.yanchor, lg.y) == ("container", "bottom", 0), name


@pytest.mark.parametrize(
    "lo,hi,expected",
    [
        (0.01, 20, [0.01, 0.1, 1, 10]),
        (0.05, 300, [0.1, 1, 10, 100]),
        (0.5, 3, [0.5, 1, 2]),
        (1e-6, 1, [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1]),
    ],
)
def test_log_ticks_are_decades_or_a_few_chosen_values(lo, hi, expected):
    assert style.log_ticks(lo, hi) == pytest.approx(expected)


def test_log_ticks_thin_many_decades():
    ticks = style.log_ticks(1e-12, 1)
    assert 3 <= len(ticks) <= 7
    assert all(abs(np.log10(t) - round(np.log10(t))) < 1e-9 for t in ticks)


def test_epsilon_axis_labels_only_chosen_ticks():
    fig = style.epsilon_axis(go.Figure(), range=[np.log10(0.05), np.log10(300)])
    ax = fig.layout.xaxis
    assert ax.type == "log"
    assert list(ax.ticktext) == ["0.1", "1", "10", "100"]
    assert ax.minor.ticks == ""


def test_roc_axes_label_decades_only():
    fig = style.roc_axes(go.Figure(), 1e-3)
    for ax in (fig.layout.xaxis, fig.layout.yaxis):
        assert ax.type == "log"
    assert list(fig.layout.xaxis.ticktext) == ["0.001", "0.01", "0.1", "1"]
    assert list(fig.layout.yaxis.ticktext) == ["0.01", "0.1", "1"]  # the floor once: both met at the corner


def test_base_layout_is_transparent_with_legend_below():
    fig = style.base_layout(go.Figure(), "t", "x", "y")
    assert fig.layout.plot_bgcolor == style.TRANSPARENT and fig.layout.paper_bgcolor == style.TRANSPARENT
    # anchored to the chart's bottom edge: Plotly makes room for it under the axis title
    assert (fig.layout.legend.yref, fig.layout.legend.yanchor, fig.layout.legend.y) == ("container", "bottom", 0)


def test_wrap_breaks_long_lines_at_spaces_and_leaves_markup_alone():
    assert style.wrap("short title", 40) == "short title"
    assert style.wrap("aaa bbb ccc ddd", 7) == "aaa bbb<br>ccc ddd"
    # a word longer than a line (an uploaded column name) is cut: after a - _ / . where it can be, else at width
    assert style.wrap("averyveryverylongword and more", 8) == "averyver<br>yverylon<br>gword<br>and more"
    assert style.wrap("sizes on zip_code_of_residence", 12) == "sizes on<br>zip_code_of_<br>residence"
    assert style.wrap("probability of re-identification", 16) == "probability of<br>re-<br>identification"
    assert style.wrap("x " + "&lt;" * 7, 3) == "x<br>" + "&lt;" * 3 + "<br>" + "&lt;" * 3 + "<br>&lt;"  # no entity cut
    name = "q" * 100  # the longest column name an upload may have: every line fits
    assert all(len(line) <= 40 for line in style.wrap(f"Equivalence-class sizes on {name} + age", 40).split("<br>"))
    assert style.wrap("first<br>aaa bbb ccc", 7) == "first<br>aaa bbb<br>ccc"  # given breaks stay
    sub = "<sup>a subtitle that is much longer than the width</sup>"
    assert style.wrap(f"title<br>{sub}", 10) == f"title<br>{sub}"  # markup is never cut in two
    # a "<" that starts no tag is text: "(Gaussian (classic, ε < 1 only))" ran off a phone unwrapped
    assert (
        style.wrap("Error vs ε (Gaussian (classic, ε < 1 only))", 20)
        == "Error vs ε (Gaussian<br>(classic, ε < 1<br>only))"
    )


def test_tick_labels_wrap_and_stop_after_a_few_lines():
    assert style.tick_label("age", 10) == "age"
    assert style.tick_label("+ zip_code_of_residence", 10) == "+<br>zip_code_<br>of_…"  # the hover has it all
    assert style.tick_label("&lt;" * 30, 4) == "&lt;" * 4 + "<br>" + "&lt;" * 4 + "<br>" + "&lt;" * 3 + "…"


def test_long_titles_wrap_and_the_margins_make_room():
    one = style.base_layout(go.Figure(), "t", "x", "y")
    title = "Equivalence-class sizes on age + sex + zip_code + salary (size 1 = unique)"
    fig = style.base_layout(
        go.Figure(),
        title,
        "equivalence-class size (records sharing the same quasi-identifiers)",
        "attacker guesses correctly (% of attempts), a long y title",
    )
    lines = fig.layout.title.text.split("<br>")
    assert len(lines) == 2 and all(len(x) <= style.TITLE_CHARS for x in lines)
    assert " ".join(lines) == title
    assert fig.layout.margin.t == one.layout.margin.t + style.TITLE_LINE_PX
    assert fig.layout.title.yanchor == "top" and fig.layout.title.yref == "container"  # grows down, not up
    assert all(len(x) <= style.X_TITLE_CHARS for x in fig.layout.xaxis.title.text.split("<br>"))
    assert "<br>" in fig.layout.yaxis.title.text  # a 380 px chart has ~265 px of height for it


def test_epsilon_zones_shade_the_levels_and_name_them_in_a_key():
    shapes, key = style.epsilon_zones(0.05, 300)
    assert len(shapes) == 4 and [s["fillcolor"] for s in shapes] == [z[3] for z in style.ZONES]
    for word in ("strong", "moderate", "weak", "very weak"):
        assert f"</span> {word}" in key
    shapes, key = style.epsilon_zones(0.05, 0.5)  # only the zones in range, and only their words
    assert len(shapes) == 1 and "strong" in key and "weak" not in key


def test_differencing_totals_get_their_own_panel():
    from dpcore.figures.differencing import totals_chart

    class A:
        avg_with, count_with, avg_group, count_group, recovered = 55.0, 101, 55.01, 100, 54.0

    fig = totals_chart(A())
    assert len(fig.data) == 2 and fig.data[1].x[0] == pytest.approx(54.0)
    assert fig.layout.xaxis2.range[1] < 100  # the 54 is not a sliver beside ~5,500


def test_your_epsilon_label_reads_leftwards_near_the_right_edge():
    def label(eps):
        fig = style.epsilon_axis(go.Figure(), range=[math.log10(0.05), math.log10(300)])
        style.mark_epsilon(fig, eps, f" your ε = {eps:g}", at="top")
        return fig.layout.annotations[-1]

    assert label(1.0).xanchor == "left" and label(1.0).y == 1 and label(1.0).yanchor == "bottom"
    right = label(50.0)  # 50 is in the last third of 0.05…300 (log): a label reading rightwards ran off
    assert right.xanchor == "right" and right.text == "your ε = 50 "


def test_budget_gauge_says_what_was_spent_in_its_title_not_under_the_number():
    from dpcore.figures.query_console import budget_gauge

    ind = budget_gauge(0.4, 1.0).data[0]
    assert ind.mode == "gauge+number"  # no delta line: it touched the number on a phone
    assert ind.title.text == "ε remaining of 1 (0.6 spent)" and ind.number.valueformat == ".4~g"
    assert budget_gauge(None, None).data[0].title.text == "ε remaining (no budget set yet)"


def test_level_labels_sit_at_their_line_on_log_axes():
    """add_hline's label reads y as log10 units on a log axis; mark_level puts it at the line."""
    fig = style.mark_level(go.Figure(), 3.8, "ceiling", log_y=True)
    (note,) = fig.layout.annotations
    assert note.y == pytest.approx(math.log10(3.8)) and note.yref == "y" and note.yanchor == "bottom"
    assert style.mark_level(go.Figure(), 0.5, "chance").layout.annotations[0].y == 0.5  # linear: as it is


def _over(fill: str, background: str) -> str:
    """A translucent "rgba(r,g,b,a)" fill as the opaque colour it shows over ``background``."""
    r, g, b, a = (float(x) for x in re.findall(r"[\d.]+", fill))
    bg = [int(background[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{int(round(a * v + (1 - a) * w)):02x}" for v, w in zip((r, g, b), bg))


def test_dark_theme_zone_bands_keep_their_hues_and_the_series_their_contrast():
    """Issue 34.5: on the dark background the four bands read as one brown; their dark fills keep four hues apart
    (teal, yellow, orange, red: the largest channel differs band to band) while the DP and non-private series drawn
    over them keep a 3:1 contrast; the figure itself (the report's, the exports') keeps the light fills."""
    light = [_over(c, style.DARK_BG) for c in style.DARK_ZONE_FILLS]
    dark = [_over(c, style.DARK_BG) for c in style.DARK_ZONE_FILLS.values()]
    channels = lambda h: [int(h[i : i + 2], 16) for i in (1, 3, 5)]  # noqa: E731
    assert len({tuple(channels(h)) for h in dark}) == 4
    # yellow: red and green together above blue; red: red well above green — the hues a reader names
    y, o, r = (channels(h) for h in dark[1:])
    assert y[0] - y[2] > 25 and y[1] - y[2] > 25 and r[0] - r[1] > 35 and o[0] - o[1] > 20
    saturation = lambda h: (max(channels(h)) - min(channels(h))) / max(channels(h))  # noqa: E731
    assert all(saturation(d) > saturation(li) + 0.1 for d, li in zip(dark[1:], light[1:]))  # brown was greyish
    for series in (style.PRIVATE, style.NON_PRIVATE):
        assert min(style.contrast(series, h) for h in dark) >= style.MIN_CONTRAST
    fig = go.Figure()
    style.add_epsilon_zones(fig, 0.05, 300)
    spec = fig.to_dict()
    out = style.for_dark(spec)
    assert [s["fillcolor"] for s in out["layout"]["shapes"]] == list(style.DARK_ZONE_FILLS.values())
    assert [s["fillcolor"] for s in spec["layout"]["shapes"]] == [z[3] for z in style.ZONES]  # unchanged
    plain = go.Figure().to_dict()
    assert style.for_dark(plain) is plain  # nothing to change: the same dict


def test_a_title_as_page_lines_is_unwrapped_and_keeps_its_notes_apart():
    long = "Accuracy against ε for every model the sweep trained, with 95% intervals"
    wrapped = style.text_layout(long, "", "")["title"]["text"]
    assert "<br>" in wrapped  # broken for Plotly, at the phone's 40 characters
    assert style.title_lines(wrapped) == [("title", long)]  # one heading again: the page wraps it to its width
    _, key = style.epsilon_zones(0.01, 100)
    note = "on 1,500 rows, every one of them a patient of the study; not covered by ε"
    assert "<br>" in style.subtitle(note)
    lines = style.title_lines(f"{wrapped}<br>{style.subtitle(note)}<br>{key}")
    assert [k for k, _ in lines] == ["title", "note", "note"]
    assert lines[1][1] == note  # one note again  # the <sup> dropped: notes are set small by the page
    assert '<span style="color:rgba(42,157,143,0.75)">■</span>' in lines[2][1]  # the zone key keeps its swatches


def test_a_title_as_page_lines_shows_any_other_markup_as_text():
    from dpcore import textsafe

    name = '<img src=x onerror=alert(1)> & "$x$"'
    ((kind, html),) = style.title_lines(f"Uniqueness by {textsafe.plotly(name)}")
    assert kind == "title" and "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&amp; " in html and '"$x$"' in html  # a bare & is escaped; the rest of the name stays as it is
    # a raw tag a figure did not escape, a span that does more than colour, a bare "<": all text
    ((_, html),) = style.title_lines('ε < 1 <script>x</script> <span onclick="f()">a</span> <b>bold</b>')
    assert "<script" not in html and "<span onclick" not in html and "ε &lt; 1" in html and "<b>bold</b>" in html
