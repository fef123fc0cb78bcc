"""Noise-mechanism figures: released-answer distribution, several ε, why it is private, error vs ε.

The figures are built in one go from plain dicts (shapes and annotations included) rather than through
``add_vline`` / ``update_layout`` calls: that is several times faster, which keeps one slider move on the
page well under 100 ms. They carry no template (Streamlit's theme styles them in the app; a static report
can add ``fig.update_layout(template="plotly_white")``). Colours come from :mod:`.style`; ε axes are log scale.
"""

from __future__ import annotations

import functools
import math

import plotly.graph_objects as go

from .. import claims
from ..noise.view import NoiseView, noise_view
from . import style

BAND = style.rgba(style.PRIVATE, 0.10)


def _fmt(x: float) -> str:
    return f"{x:,.4g}"


def _layout(title: str, x_title: str, y_title: str, *, height: int = 380, **extra) -> dict:
    """The look of :func:`style.base_layout`, as a dict (without the template, see module docstring)."""
    layout = dict(
        **style.text_layout(title, x_title, y_title, height=height),
        paper_bgcolor=style.TRANSPARENT,
        plot_bgcolor=style.TRANSPARENT,
        template=style.NO_TEMPLATE,
        shapes=[],
        annotations=[],
    )
    layout.update(extra)
    return layout


def _vline(
    x: float, colour: str, *, dash: str = "solid", width: float = 2, xref: str = "x", yref: str = "paper"
) -> dict:
    return dict(
        type="line", x0=x, x1=x, y0=0, y1=1, xref=xref, yref=yref, line=dict(color=colour, dash=dash, width=width)
    )


def _note(
    x: float, text: str, colour: str, *, xref: str = "x", y: float = 1.0, xanchor: str = "left", yanchor: str = "top"
) -> dict:
    return dict(
        x=x,
        y=y,
        xref=xref,
        yref="paper",
        text=text,
        showarrow=False,
        xanchor=xanchor,
        yanchor=yanchor,
        xshift=3 if xanchor == "left" else -3 if xanchor == "right" else 0,
        font=dict(color=colour, size=11),
    )


# Three hues apart, none orange like the true value's line (teal and steel blue read as one; amber as the line)
COMPARE_COLOURS = (style.PRIVATE, style.SEQUENCE[3], style.BOUND)
NOTE_ROOM = 16  # px over the plot for a note above it: no line drawn in the plot can cross it


def distribution_chart(view: NoiseView, x_title: str = "released answer") -> go.Figure:
    """Exact density + histogram of simulated releases, the true value and the 95% interval."""
    spec = view.spec
    edges = view.hist_edges
    centers = (edges[:-1] + edges[1:]) / 2
    lo, hi = view.ci95
    title = (
        f"Released answers at ε = {spec.epsilon:g}"  # short: Plotly titles do not wrap on a phone
        + (f", δ = {claims.delta(spec.delta)}" if spec.mechanism != "laplace" else "")
    )
    layout = _layout(title, x_title, "probability density<br>(per unit of the answer)", height=400)
    layout["shapes"] = [
        dict(
            type="rect", x0=lo, x1=hi, y0=0, y1=1, xref="x", yref="paper", fillcolor=BAND, line_width=0, layer="below"
        ),
        _vline(view.value, style.NON_PRIVATE, width=2.5),
    ]
    # above the plot: inside it the 95% lines crossed the number on a phone
    layout["annotations"] = [
        _note(view.value, f"true value {_fmt(view.value)} (not private)", style.NON_PRIVATE, yanchor="bottom"),
    ]
    layout["margin"]["t"] += NOTE_ROOM
    top = 1.08 * max(float(view.pdf.max()), float(view.hist_density.max()))
    layout["yaxis"]["range"] = [0, top]
    data = [
        # the histogram as one filled step outline, not 120 bars: a third less to redraw on each slider move
        dict(
            type="scatter",
            x=centers,
            y=view.hist_density,
            mode="lines",
            line=dict(shape="hvh", width=0),
            fill="tozeroy",
            fillcolor=style.rgba(style.PRIVATE, 0.35),
            name=f"simulation: {view.draws:,} draws (numpy, seed {view.seed})",
            hovertemplate="%{x:.4g}: %{y:.3g}<extra>simulation</extra>",
        ),
        dict(
            type="scatter",
            x=view.x,
            y=view.pdf,
            mode="lines",
            name=f"exact density ({spec.label})",
            line=dict(color=style.ACCENT, width=2.5),
        ),
        dict(
            type="scatter",
            x=[lo, lo, None, hi, hi],
            y=[0, top, None, 0, top],
            mode="lines",
            hoverinfo="skip",
            name=f"95% of releases in [{claims.down(lo, 4)}, {claims.up(hi, 4)}]",  # widened, never narrowed
            line=dict(color=style.PRIVATE, dash="dash", width=1.5),
        ),
    ]
    return go.Figure(dict(data=data, layout=layout))


def compare_chart(view: NoiseView, x_title: str = "released answer") -> go.Figure:
    """Densities of released answers for several ε on one chart: the spread grows as ε shrinks."""
    data = []
    for i, (eps, xs, pdf, _lo, hi) in enumerate(view.compare):
        data.append(
            dict(
                type="scatter",
                x=xs[::2],
                y=pdf[::2],
                mode="lines",  # 201 points draw smoothly
                line=dict(color=COMPARE_COLOURS[i % len(COMPARE_COLOURS)], width=2.5),
                name=f"ε = {eps:g}: 95% within ±{claims.up(hi - view.value)}",
            )
        )
    layout = _layout(
        f"Smaller ε, wider spread ({view.spec.label})",
        x_title,
        "probability density<br>(per unit of the answer)",
        height=380,
    )
    layout["shapes"] = [{**_vline(view.value, style.NON_PRIVATE), "layer": "below"}]  # under ε = 5's spike
    layout["annotations"] = [_note(view.value, "true value (not private)", style.NON_PRIVATE, yanchor="bottom")]
    layout["margin"]["t"] += NOTE_ROOM
    if not data:
        layout["annotations"].append(
            dict(
                text="no comparison ε is valid for this calibration",
                showarrow=False,
                xref="paper",
                yref="paper",
                x=0.5,
                y=0.5,
            )
        )
    return go.Figure(dict(data=data, layout=layout))


def why_private_chart(view: NoiseView, x_title: str = "released answer z") -> go.Figure:
    """Left: output densities on neighbouring datasets D and D'. Right: the privacy loss with the ±ε band."""
    spec = view.spec
    eps = spec.epsilon
    d = spec.sensitivity
    z = view.loss_z
    loss = view.loss
    data = [
        dict(
            type="scatter",
            x=z,
            y=view.pdf_d,
            mode="lines",
            name="p<sub>D</sub>(z): dataset D",
            line=dict(color=style.PRIVATE, width=2.5),
            xaxis="x",
            yaxis="y",
        ),
        dict(
            type="scatter",
            x=z,
            y=view.pdf_d2,
            mode="lines",
            name="p<sub>D′</sub>(z): neighbour D′ (one person changed)",
            line=dict(color=style.ACCENT, width=2.5, dash="dash"),
            xaxis="x",
            yaxis="y",
        ),
        dict(
            type="scatter",
            x=z,
            y=loss,
            mode="lines",
            name="privacy loss ln p<sub>D</sub>(z) / p<sub>D′</sub>(z)",
            line=dict(color=style.ACCENT, width=2.5),
            xaxis="x2",
            yaxis="y2",
        ),
    ]
    if spec.mechanism == "laplace":
        y2_range = [-2 * eps, 2 * eps]
        verdict = f"Laplace: the loss stays in the shaded band<br>±ε (ε = {eps:g}), so δ = 0"  # two lines: a phone
    else:
        lim = max(3 * eps, 2.0)
        y2_range = [-lim, lim]
        out = loss > eps
        if out.any():
            data.append(
                dict(
                    type="scatter",
                    x=z[out],
                    y=loss[out],
                    mode="lines",
                    line=dict(color=style.NON_PRIVATE, width=4),
                    xaxis="x2",
                    yaxis="y2",
                    name="loss above ε (the bad region)",
                )
            )
        verdict = f"Gaussian: leaves ±ε (ε = {eps:g}) in the tails;<br>δ = {view.actual_delta:.1e}"
    title = "Why it is private: D vs its neighbour D′"
    # Two panels stacked (one per row reads on a phone): densities on top, the privacy loss below.
    layout = _layout(
        title,
        x_title,
        "probability density",
        height=640,
        xaxis=dict(anchor="y", title=dict(text=x_title), automargin=True),
        yaxis=dict(domain=[0.6, 0.93], title=dict(text="probability density"), automargin=True),
        xaxis2=dict(anchor="y2", matches="x", title=dict(text=x_title), automargin=True),
        yaxis2=dict(
            domain=[0.0, 0.4], anchor="x2", range=y2_range, automargin=True, title=dict(text="privacy loss (nats)")
        ),
        legend=style.legend_below(),
        margin=dict(l=60, r=20, t=60, b=60),
    )
    layout["annotations"] = [
        dict(
            text=f"D (true {_fmt(view.value)}) and D′ (true {_fmt(view.value + d)}): Δ = {_fmt(d)} apart",
            x=0.0,
            y=0.94,
            xref="paper",
            yref="paper",
            showarrow=False,
            xanchor="left",
            yanchor="bottom",
            font=dict(size=12),
        ),
        dict(
            text=verdict,
            x=0.0,
            y=0.41,
            xref="paper",
            yref="paper",
            showarrow=False,
            xanchor="left",
            yanchor="bottom",
            font=dict(size=11, color=style.NEUTRAL),
        ),
    ]
    layout["shapes"] = [
        _vline(view.value, style.PRIVATE, dash="dot", width=1.5, yref="y domain"),
        _vline(view.value + d, style.ACCENT, dash="dot", width=1.5, yref="y domain"),
        # the allowed band ±ε: a shape, not a filled trace (a third of the redraw time)
        dict(
            type="rect",
            xref="x2 domain",
            yref="y2",
            x0=0,
            x1=1,
            y0=-eps,
            y1=eps,
            fillcolor=style.rgba(style.PRIVATE, 0.15),
            line_width=0,
            layer="below",
        ),
    ]
    return go.Figure(dict(data=data, layout=layout))


def error_chart(view: NoiseView, unit: str = "units of the answer") -> go.Figure:
    """Expected |error| and 95% half-width vs ε (log-log), privacy zones, the current ε marked."""
    c = view.curve
    eps = view.spec.epsilon
    x_min, x_max = 0.01, 20.0
    data = [
        dict(
            type="scatter",
            x=c["epsilon"].to_numpy(),
            y=c["ci95_halfwidth"].to_numpy(),
            mode="lines",
            name="95% of errors below",
            line=dict(color=style.ACCENT, width=2, dash="dash"),
        ),
        dict(
            type="scatter",
            x=c["epsilon"].to_numpy(),
            y=c["expected_abs_error"].to_numpy(),
            mode="lines",
            name="expected |error|",
            line=dict(color=style.PRIVATE, width=3),
        ),
        dict(
            type="scatter",
            x=[eps],
            y=[view.expected_abs_error],
            mode="markers",
            marker=dict(color=style.NON_PRIVATE, size=12, symbol="diamond"),
            name=f"your ε = {eps:g}: expected |error| {_fmt(view.expected_abs_error)}",
        ),
    ]
    zones, key = style.epsilon_zones(x_min, x_max)
    layout = _layout(
        f"Error vs ε ({view.spec.label})<br>{key}",
        "privacy budget ε (log scale)",
        f"absolute error ({unit}, log scale)",
        height=420,
    )
    ticks = style.log_ticks(x_min, x_max)
    layout["xaxis"].update(
        type="log",
        range=[math.log10(x_min), math.log10(x_max)],
        tickvals=ticks,
        ticktext=[f"{t:g}" for t in ticks],
        minor=dict(ticks="", showgrid=False),
    )
    layout["yaxis"].update(type="log", dtick=1, minor=dict(ticks="", showgrid=False))
    layout["shapes"] += zones
    layout["shapes"].append(_vline(eps, style.NON_PRIVATE, dash="dot", width=1.5))
    return go.Figure(dict(data=data, layout=layout))


def figures(view: NoiseView, x_title: str = "released answer", unit: str = "units of the answer") -> dict:
    """All four page figures for one view."""
    return {
        "distribution": distribution_chart(view, x_title),
        "compare": compare_chart(view, x_title),
        "why": why_private_chart(view, x_title.replace("released answer", "released answer z")),
        "error": error_chart(view, unit),
    }


@functools.lru_cache(maxsize=256)
def page_view(
    mechanism: str,
    epsilon: float,
    delta,
    sensitivity: float,
    value: float,
    *,
    draws: int,
    seed: int,
    grid_points: int,
    x_title: str,
    unit: str,
    integer: bool = False,
) -> tuple[NoiseView, dict]:
    """The noise page's view and figures for one setting, built once per process and shared read-only.

    A process-wide cache (not Streamlit's, which hashes arguments and source on every call): with twenty
    viewers moving sliders, a revisited setting costs nothing. The simulation is seeded — a picture, never a
    release. A DPError (bad setting) is raised every time, never cached.
    """
    view = noise_view(
        mechanism, epsilon, delta, sensitivity, value, draws=draws, seed=seed, grid_points=grid_points, integer=integer
    )
    return view, figures(view, x_title, unit)


__all__ = ["distribution_chart", "compare_chart", "why_private_chart", "error_chart", "figures", "page_view"]
