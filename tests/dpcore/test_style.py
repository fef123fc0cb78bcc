"""The shared chart style: palette contrast in both themes, readable log ticks, legends below titles."""

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
    from dpcore.noise import view as mech
    from dpcore.figures import noise

    palette = {c.lower() for c in style.PALETTE}
    for mechanism, delta in (("laplace", None), ("gaussian", 1e-5)):
        view = mech.noise_view(mechanism, 1.0, delta, 1.0, 100.0, draws=2000, seed=0)
        for name, fig in noise.figures(view).items():
            assert _hex_colours(fig) <= palette, name
            assert fig.layout.paper_bgcolor == style.TRANSPARENT
            assert fig.layout.legend.y is None or fig.layout.legend.y < 0, name  # below the plot, not on the title


@pytest.mark.parametrize("lo,hi,expected", [
    (0.01, 20, [0.01, 0.1, 1, 10]),
    (0.05, 300, [0.1, 1, 10, 100]),
    (0.5, 3, [0.5, 1, 2]),
    (1e-6, 1, [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1]),
])
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
        assert list(ax.ticktext) == ["0.001", "0.01", "0.1", "1"]


def test_base_layout_is_transparent_with_legend_below():
    fig = style.base_layout(go.Figure(), "t", "x", "y")
    assert fig.layout.plot_bgcolor == style.TRANSPARENT and fig.layout.paper_bgcolor == style.TRANSPARENT
    assert fig.layout.legend.yanchor == "top" and fig.layout.legend.y < 0


def test_differencing_totals_get_their_own_panel():
    from dpcore.figures.differencing import totals_chart

    class A:
        avg_with, count_with, avg_group, count_group, recovered = 55.0, 101, 55.01, 100, 54.0

    fig = totals_chart(A())
    assert len(fig.data) == 2 and fig.data[1].y[0] == pytest.approx(54.0)
    assert fig.layout.yaxis2.range[1] < 100  # the 54 is not a sliver beside ~5,500
