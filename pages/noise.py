"""Noise mechanisms: Laplace and Gaussian noise under an ε slider, why they are private, a safe release path.

Past 500 formatted lines, one idea: the page's widgets in the order a visitor meets them; every number and
chart comes from dpcore (noise.view, figures.noise)."""

import pandas as pd
import streamlit as st

from dpcore import claims
from dpcore import limits as L
from dpcore.data import datasets
from dpcore.figures import advisor as adv_figs
from dpcore.figures import noise as figs
from dpcore.noise import mechanisms as mech
from dpcore.noise import teaching
from dpcore.noise import view as noise_page
from dpcore.noise.charge import Neighbour, compose_by_relation
from dpcore.noise.interpret import patients, privacy_level
from pages.ui import first_screen
from pages.ui.common import (
    chart,
    from_url,
    guarded,
    headline_md,
    not_private,
    required,
    share_in_url,
    state,
    table_downloads,
    unbroken,
    widget_state,
)

SIM_DRAWS = 100_000  # simulated on the server; only a 120-bin histogram goes to the browser
SIM_SEED = 0  # the simulation is a picture: seeded so the cache never freezes a real release
GRID_POINTS = 241  # exact curves: smooth at chart width, light to send and to redraw on every slider move
TABLE_SEED = 7

NEIGHBOURS = {  # the relation each query's Δ is for: add/remove as on every other page; the MEAN is the exception
    "count": "Neighbouring datasets here, as on every other page: **one patient's record added or removed**. Δ is "
    "how far that one record can move the answer.",
    "sum": "Neighbouring datasets here, as on every other page: **one patient's record added or removed**. Δ is how "
    "far that one record can move the answer: at most max(|L|, |U|).",
    "mean": "The exception on this page: the mean keeps the number of rows n **public** and its neighbours have "
    "**one patient's record replaced** (Δ = (U − L)/n). Under add or remove one record its ε is worth up to "
    "2ε; the query console's mean (noisy sum / noisy count) has no such exception.",
    "custom": "Use the Δ of the neighbour relation you claim (add/remove or replace one person): the guarantee holds "
    "for that relation only.",
}
QUERIES = {
    "count": "Count: patients with the rare disease (Δ = 1)",
    "mean": "Bounded mean of a column (n public; Δ = (U − L)/n)",
    "sum": "Bounded sum of a column (Δ = max(|L|, |U|))",
    "custom": "Custom: type a true value and its sensitivity Δ",
}
COLUMNS = {"age": "years", "salary": "$"}
TABS = ("Compare ε", "Why private", "Best attack", "Error vs ε")  # short: four fit a phone's width
TABLE_SHOWN = ("epsilon", "expected |error|", "95% within ±", "privacy level")  # what fits 390 px; all in CSV
LINK_KEYS = ("noise_query", "noise_mech", "noise_eps", "noise_delta", "noise_tab")  # the view a link opens


# Read-only once built and shared by every session (cache_resource: no pickled copy per rerun).
@st.cache_resource(show_spinner=False, max_entries=8)
def _data(n: int) -> pd.DataFrame:
    return datasets.medical(n, seed=0)


@st.cache_resource(show_spinner=False, max_entries=64)
def _query(n: int, kind: str, column: str, lower: float, upper: float):
    return teaching.query(_data(n), kind, column, lower, upper)


@st.cache_resource(show_spinner=False, max_entries=256)
def _tradeoff(mechanism: str, epsilon: float, delta, sensitivity: float, scale: float, count: bool):
    # exact curve, no randomness: built once per setting and shared (it cost ~15 ms on every rerun)

    return adv_figs.noise_tradeoff_chart(mechanism, epsilon, delta, sensitivity, scale, count=count)


@st.cache_resource(show_spinner=False, max_entries=64)
def _table(mechanism: str, delta, sensitivity: float, value: float, integer: bool, seed: int):
    return noise_page.epsilon_table(mechanism, delta, sensitivity, value, integer=integer, seed=seed)


def _reset_bounds():
    lo, hi = datasets.PUBLIC_BOUNDS[st.session_state.noise_column]
    st.session_state.noise_lower, st.session_state.noise_upper = lo, hi


st.title("Noise mechanisms")
headline = first_screen.headline()  # the "so what": one sentence and one number, filled in once ε is known
# The first screen: the released-answer chart beside the controls that move it (on a phone the chart comes first,
# right under the headline, and the controls follow it).
plot, controls = st.columns([3, 2])

# --- the query ------------------------------------------------------------------------------------------
# Column and bounds live in session state (a new column resets its bounds) and are kept while a count is shown.
widget_state(
    {
        "noise_column": "age",
        "noise_lower": datasets.PUBLIC_BOUNDS["age"][0],
        "noise_upper": datasets.PUBLIC_BOUNDS["age"][1],
    }
)

BIG = L.RELEASE_MAGNITUDE_MAX  # what a release can represent (dpcore.noise.grid.check_release): the widgets' range
with controls:
    kind = st.selectbox(
        "Query on the synthetic medical data",
        list(QUERIES),
        format_func=QUERIES.get,
        index=list(QUERIES).index(from_url("noise_query", list(QUERIES)[0], list(QUERIES))),
        key="noise_query",
    )
    q2, q3 = st.columns(2)
    if kind == "custom":
        value_in = q2.number_input("true value", -BIG, BIG, value=100.0, key="noise_value", format="%g")
        sens_in = q3.number_input("sensitivity Δ", 0.0, BIG, value=1.0, key="noise_sens", format="%g")
        n_in, column, lower, upper = None, "", None, None
    else:
        n_in = q2.number_input(
            "rows n (public)", L.NOISE_ROWS_MIN, L.NOISE_ROWS_MAX, value=10_000, step=1_000, key="noise_n"
        )
        column = "has_rare_disease"
        lower = upper = None
        if kind in ("mean", "sum"):
            column = q3.selectbox("column", list(COLUMNS), key="noise_column", on_change=_reset_bounds)
            b1, b2 = st.columns(2)
            lower = b1.number_input(
                "public lower bound L",
                -BIG,
                BIG,
                key="noise_lower",
                help="Values are clamped to [L, U]; see the note below the chart on why the bounds must be public.",
            )
            upper = b2.number_input("public upper bound U", -BIG, BIG, key="noise_upper")

    mechanism = st.radio(
        "Mechanism",
        list(mech.MECHANISMS),
        format_func=mech.MECHANISM_LABELS.get,
        index=list(mech.MECHANISMS).index(from_url("noise_mech", mech.MECHANISMS[0], list(mech.MECHANISMS))),
        key="noise_mech",
    )
    exact = st.toggle("Type ε and δ exactly", key="noise_exact")
    if exact:
        e1, e2 = st.columns(2)
        epsilon = e1.number_input("ε", L.EPSILON_MIN, L.EPSILON_MAX, value=1.0, format="%g", key="noise_eps_typed")
        delta = (
            e2.number_input("δ", 0.0, 1.0, value=1e-5, format="%.1e", key="noise_delta_typed")
            if mechanism != "laplace"
            else None
        )
    else:
        eps_grid = list(noise_page.EPSILON_GRID)
        if mechanism == "gaussian-classic":  # its calibration only holds for ε < 1: offer only those
            eps_grid = [e for e in eps_grid if e < 1]
            if st.session_state.get("noise_eps", 0) >= 1:
                st.session_state["noise_eps"] = eps_grid[-1]
                st.info(
                    f"The classic Gaussian calibration only holds for ε < 1, so ε is now {eps_grid[-1]:g}; "
                    "pick the analytic Gaussian for larger ε."
                )
        eps_kw = {} if "noise_eps" in st.session_state else {"value": from_url("noise_eps", 1.0, eps_grid)}
        epsilon = st.select_slider("privacy budget ε (log scale)", options=eps_grid, key="noise_eps", **eps_kw)
        delta = (
            st.select_slider(
                "δ (Gaussian only; keep it well below 1/n)",
                options=list(noise_page.DELTA_GRID),
                value=from_url("noise_delta", 1e-5, list(noise_page.DELTA_GRID)),
                format_func=claims.delta,
                key="noise_delta",
            )
            if mechanism != "laplace"
            else None
        )

# The link follows the widgets before anything below can stop the page on an error.
share_in_url(*LINK_KEYS)

# --- compute (cached per setting; the simulation is seeded) -----------------------------------------------------
if kind == "custom":
    answer = required(teaching.custom, value_in, sens_in)
    unit = "units of the answer"
else:
    answer = required(_query, int(n_in), kind, column, lower, upper)
    unit = "patients" if kind == "count" else COLUMNS[column]
value, sensitivity, integer, what = answer.true_value, answer.sensitivity, answer.integer, answer.description

x_title = f"released answer ({unit})"
# View and figures: one process-wide cache shared by every viewer (dpcore.figures.noise.page_view).
view, charts = required(
    figs.page_view,
    mechanism,
    float(epsilon),
    None if delta is None else float(delta),
    float(sensitivity),
    float(value),
    draws=SIM_DRAWS,
    seed=SIM_SEED,
    grid_points=GRID_POINTS,
    x_title=x_title,
    unit=unit,
    integer=integer,
)
spec = view.spec
released = view.released  # what really releases it: the figures a reader quotes (headline, metrics, table agree)


def _u(x: float, sign: str = "", *, bare: bool = False) -> str:
    """A number with its unit as people read it: patients as "0.9 patients", "1.4 patients", "10,000 patients"
    (never "1e+04" or "0.06667"), "$" in front of money. ``bare``: the number alone, written the same way."""
    if bare:
        return _u(x).removesuffix(" patients").removesuffix(" patient") if unit == "patients" else f"{x:,.4g}"
    if unit == "$":
        return f"{sign}${x:,.4g}" if abs(x) < 1e4 else f"{sign}${x:,.0f}"
    if unit == "patients":
        return f"{sign}{patients(x)}"  # the report writes them the same way
    return f"{sign}{x:,.4g} {unit}" if abs(x) < 1e4 else f"{sign}{x:,.0f} {unit}"


HIDES = {
    Neighbour.ADD_REMOVE: "whether any one patient is in the data",
    Neighbour.REPLACE_ONE: "what any one patient's record holds (one record replaced, n public)",
}
with headline:
    st.markdown(
        headline_md(
            f"Typical error at {unbroken(f'ε = {spec.epsilon:g}')}: {unbroken(_u(released.expected_abs_error()))}",
            f"A released {kind if kind != 'custom' else 'answer'} is typically this far from the true "
            + (
                f"value: the price of hiding {HIDES[answer.neighbour]}."
                if kind != "custom"
                else "value: the price of hiding any one person under the relation whose Δ you typed."
            ),
        )
    )
with plot, first_screen.main_chart():
    chart(charts["distribution"], key="noise_chart_distribution")
    # the picture's label stays in sight (house rule: plain numpy sampling is for visualising, labelled)
    st.caption(f":orange-badge[Not a release] shaded: a simulation of {view.draws:,} seeded numpy draws.")
with plot.expander("How the chart is drawn, and what ε does", icon=":material/help:"):
    st.markdown(
        "A DP answer is the true answer plus random noise, scaled to how much one person can move the answer and "
        "divided by the budget ε. Move ε and watch the spread of released answers, the error you pay, and why an "
        "observer still cannot tell whether any one person is in the data."
    )
    st.markdown(
        f"The shaded histogram is a **simulation**: {view.draws:,} draws of ordinary random numbers (numpy, "
        f"fixed by seed {view.seed}) to show the shape — not releases. Simulated mean |error| "
        f"{view.sim_mean_abs_error:,.4g} (exact for this curve {view.expected_abs_error:,.4g}); "
        f"{view.sim_coverage:.1%} of simulated draws fall in its 95% interval."
    )
    if integer and mechanism != "gaussian-classic":
        st.markdown(
            f"Counts are released with whole-number noise ({'the discrete Laplace, or geometric, mechanism' if mechanism == 'laplace' else 'the discrete Gaussian'}): the same "
            "guarantee and almost the same spread as the continuous curves shown here; the figures below and the "
            "table are the whole-number mechanism's own."
        )

st.caption(NEIGHBOURS[kind])
if kind in ("mean", "sum"):
    st.caption(
        "Values are clamped to [L, U]. The bounds must be **public** (domain knowledge: ages 18–90), "
        "never read off the data: the private minimum and maximum are themselves statistics one person "
        "can move, so a sensitivity computed from them would be wrong and would leak."
    )
if mechanism == "laplace":
    st.caption("Laplace: noise scale = sensitivity / ε; pure ε-DP (δ = 0).")
elif mechanism == "gaussian":
    st.caption("Analytic Gaussian (Balle & Wang 2018): the smallest σ that is (ε, δ)-DP, valid for every ε.")
else:
    st.caption(
        "Classic Gaussian: the textbook calibration, **valid only for ε < 1**, and it adds more noise "
        "than the analytic one.",
        help="σ = Δ·√(2 ln(1.25/δ))/ε, Δ the sensitivity.",
    )

c = st.columns(5)  # short labels fit five across at 1280 px; the unit is in each help and the sentence below
in_unit = f"In {unit}."
c[0].metric(
    "True value",
    f"{view.value:,.4g}",
    help=f"Not private: the {what}, computed on the raw data for teaching. {in_unit}",
)
c[1].metric(
    "Sensitivity Δ",
    f"{spec.sensitivity:,.4g}",
    help="Δ: the most one person's record can change the true answer (under the neighbour relation "
    f"stated above). {in_unit}",
)
c[2].metric(
    f"Noise scale {spec.scale_name}",
    f"{spec.scale:,.4g}",
    help=(
        f"{spec.scale_name} = Δ/ε, the Laplace scale. "
        if mechanism == "laplace"
        else f"{spec.scale_name}: the Gaussian's standard deviation, calibrated to ε and δ. "
    )
    + in_unit,
)
c[3].metric(
    "Expected |error|",
    _u(released.expected_abs_error(), bare=True),
    help=f"The average distance between a released answer and the true value. {in_unit}",
)
half95 = released.halfwidth(0.95)
c[4].metric(
    "95% within",
    f"±{claims.up(half95)}",  # rounded up: still 95% within
    help=f"95% of released answers fall within this distance of the true value. {in_unit}"
    + (
        " ±0: at this ε at least 95% of releases are the exact count — almost no protection, which is "
        "what the privacy level says."
        if half95 == 0
        else ""
    ),
)
not_private("True value")  # short: a badge does not wrap on a phone
if kind != "custom" and answer.clamped:
    st.caption(
        f"{answer.clamped:,} of {answer.n:,} rows lay outside [{answer.lower:g}, {answer.upper:g}] and "
        "were clamped (a count shown for teaching, not private)."
    )
st.markdown(
    f"At **ε = {spec.epsilon:g}**"
    + (f", **δ = {claims.delta(spec.delta)}**" if mechanism != "laplace" else "")
    + f", privacy level **{privacy_level(spec.epsilon)}**: a released answer is typically off by "
    f"**{_u(released.expected_abs_error())}**, and 95% of releases fall in "
    f"**[{claims.down(view.value - half95, 4)}, {claims.up(view.value + half95, 4)}]** ({unit})"  # widened
     + (": at least 95% of releases are the exact count." if half95 == 0 else ".")
)

# --- charts ---------------------------------------------------------------------------------------------------
# The released-answer chart is always drawn; the rest sit in tabs that run only when opened (Streamlit's lazy
# tabs). Every chart that depends on ε is re-created in the browser on each slider move (st.plotly_chart keys a
# chart by its figure): the default tab, several ε side by side, does not depend on ε, so a move redraws one
# chart, two with another tab open, instead of five (bench/browser.py).

st.subheader("Look closer")
compare_tab, why_tab, attack_tab, price_tab = st.tabs(
    list(TABS), key="noise_tab", on_change="rerun", default=from_url("noise_tab", TABS[0], list(TABS))
)

if compare_tab.open:
    with compare_tab:
        chart(charts["compare"], key="noise_chart_compare")
        st.caption(
            "The same query released at several ε: the smaller ε, the wider the spread (with Laplace, "
            "halving ε doubles the typical error). Move the slider to see where yours sits."
        )

if why_tab.open:
    with why_tab:
        chart(charts["why"], key="noise_chart_why")
        if mechanism == "laplace":
            other = "with it replaced" if answer.neighbour is Neighbour.REPLACE_ONE else "without it"
            st.markdown(
                f"Whatever answer is released, it was at most **$e^{{\\varepsilon}}$ times more likely** "
                f"(ε = {spec.epsilon:g}) with one patient's record than {other}: the lower panel "
                "never leaves the band."
            )
        else:
            other = "with it replaced" if answer.neighbour is Neighbour.REPLACE_ONE else "without"
            st.markdown(
                f"Almost every answer is at most $e^{{\\varepsilon}}$ times more likely with one patient's "
                f"record than {other}; the rare exceptions (far in the tail, outside the band) add up to "
                f"**δ = {claims.up(view.actual_delta)}** (≤ the δ = {claims.delta(spec.delta)} you chose)"
                + (
                    " for the continuous curves drawn; the count's whole-number release is calibrated so its "
                    "own δ stays within the δ you chose too."
                    if integer
                    else "."
                )
            )
        with st.expander("The maths behind the lower panel"):
            st.markdown(
                r"The **privacy loss** of an output z is $\ln p_D(z)/p_{D'}(z)$, in nats (natural-log "
                "units): how much more likely z is under D than under its neighbour D′. ε-DP means it stays "
                "within ±ε. "
                + (
                    "For Laplace it is flat at ±ε beyond the two true answers and never leaves the band (δ = 0)."
                    if mechanism == "laplace"
                    else f"For the Gaussian it is a straight line, so far enough in the tail it leaves the band; "
                    f"those outputs have probability {claims.up(view.loss_exceeds_mass)} under D, and the guarantee "
                    rf"fails by $\delta = \int \max(0,\, p_D - e^{{\varepsilon}} p_{{D'}})$ = "
                    f"{claims.up(view.actual_delta)}."
                )
            )

if attack_tab.open:
    with attack_tab:
        if spec.scale > 0:  # the worst-case membership ROC of one release (dpcore/figures/advisor.py)
            chart(
                _tradeoff(mechanism, spec.epsilon, spec.delta, spec.sensitivity, spec.scale, bool(integer)),
                key="noise_chart_tradeoff",
            )
            question = (
                "which of two values a given patient's record holds (n public: one record replaced)"
                if answer.neighbour is Neighbour.REPLACE_ONE
                else "whether a given patient's record is in the data"
            )
            st.caption(
                f"An attacker who sees one released answer and must say {question} can do no better than "
                "this curve at any false-positive rate: the exact "
                "worst case of the mechanism you chose"
                + (", with the whole-number noise the count is released with." if integer else ".")
            )
        else:
            st.info(
                "Δ = 0: the answer does not depend on any one patient, so no noise is needed and no attack "
                "can do better than a blind guess."
            )

if price_tab.open:
    with price_tab:
        chart(charts["error"], key="noise_chart_error")
        table = guarded(_table, mechanism, delta, sensitivity, value, integer, TABLE_SEED)
        if table is not None:
            # A phone shows ~350 px of table: four short columns, the unit in the caption and each header's help;
            # the noise scale (a metric above) and the classic Gaussian's n/a rows are in the downloads only.
            num = st.column_config.NumberColumn
            rows = table[table["expected |error|"].notna()]
            if unit == "patients":  # written as the headline writes them ("0.9 patients"), not "0.8509"
                rows = rows.assign(
                    **{
                        "expected |error|": [_u(x) for x in rows["expected |error|"]],
                        "95% within ±": [f"±{x:,.0f}" for x in rows["95% within ±"]],
                    }
                )
            text = unit == "patients"
            st.dataframe(
                rows,
                hide_index=True,
                key="noise_table",
                column_order=TABLE_SHOWN,
                column_config={
                    "epsilon": num("ε", width=40),
                    "expected |error|": (st.column_config.TextColumn if text else num)(
                        "typical error",
                        help=f"Expected |error| of a released answer, in {unit}.",
                        **({} if text else {"format": "%.4g"}),
                    ),
                    "95% within ±": (st.column_config.TextColumn if text else num)(
                        "95% within ±",
                        help=f"95% of released answers fall this close, in {unit}.",
                        **({} if text else {"format": "%.4g"}),
                    ),
                    "privacy level": st.column_config.TextColumn("level"),
                },
            )
            exact_rows = [f"{e:g}" for e, h in zip(rows["epsilon"], table.loc[rows.index, "95% within ±"]) if h == 0]
            table = table.rename(
                columns={
                    "epsilon": "ε",
                    "noise scale": f"noise scale ({unit})",
                    "expected |error|": f"expected |error| ({unit})",
                    "95% within ±": f"95% within ± ({unit})",
                }
            )
            st.caption(
                "Typical error at each ε, exact (no random draw): the expected |error| and the range that "
                f"holds 95% of releases, in {unit} (the downloads add the noise scale)."
                + (
                    " The classic Gaussian is valid only for ε < 1: larger ε are left out."
                    if mechanism == "gaussian-classic"
                    else ""
                )
                + (
                    " For a count the table and the figures above are the whole-number mechanism's, which is what "
                    "the release path draws; the chart shows the continuous curve."
                    if integer and mechanism != "gaussian-classic"
                    else ""
                )
                + (
                    f" ±0 (ε = {', '.join(exact_rows)}): at least 95% of releases are the exact count — that "
                    "is why the level says how little it protects."
                    if exact_rows
                    else ""
                )
            )
            table_downloads(table, "noise_epsilon_table", key="noise_table_dl")

share_in_url(*LINK_KEYS)  # again: on a session's first run the open tab is known only once the tabs are drawn

# --- the safe release path -------------------------------------------------------------------------------------------
st.subheader("Release one answer")
st.markdown(
    "Each press draws **one** answer through the safe release path: OpenDP's exact samplers with a secure "
    "random source, no seed. Only whole numbers get noise — a count as it is, "
    + (
        "a sum or mean after each value is rounded to a fine public grid, "
        if kind in ("sum", "mean")
        else "a typed value after it is rounded to a fine public grid, "
        if kind == "custom"
        else ""
    )
    + "with discrete "
    + ("Laplace" if mechanism == "laplace" else "Gaussian")
    + " noise in whole steps. Floating-point-safe: "
    "noise added naively to a computer's rounded numbers can give the true value away through its last "
    "digits; whole-number noise cannot. Every release spends ε again: releasing the same answer k times "
    "costs k·ε."
)
releases = state("noise_releases", [])
r1 = r2 = st.container(horizontal=True, gap="small")  # side by side (in two columns 'Forget' stood mid-page)
if r1.button("Release one answer", key="noise_release", type="primary", icon=":material/lock:"):
    out = guarded(teaching.release, answer, mechanism, spec.epsilon, spec.delta)
    if out is not None:
        releases.append(
            {
                "k": len(releases) + 1,
                "query": what,
                "mechanism": mechanism,
                "epsilon": spec.epsilon,
                "delta": spec.delta,
                "released": out,
                "charge": answer.charge(mechanism, spec.epsilon, spec.delta),
            }
        )
if r2.button("Forget my releases", key="noise_reset", disabled=not releases):
    releases.clear()
if releases:
    totals = compose_by_relation(r["charge"] for r in releases)
    last = releases[-1]
    s = st.columns(3)
    s[0].metric("Latest released answer", f"{last['released']:,.6g}")
    s[1].metric("Releases k", len(releases))
    s[2].metric(
        "Total ε spent (sum)",
        f"{totals[0].epsilon:g}" if len(totals) == 1 else "—",
        help="Basic composition: the ε of every release add up (δ too), under one neighbour relation.",
    )
    if len(totals) == 1:
        t = totals[0]
        st.markdown(
            f"**{len(releases)}** release{'' if len(releases) == 1 else 's'} so far cost **ε = {t.epsilon:g}**"
            + (f", **δ = {claims.delta(t.delta)}**" if t.delta > 0 else ", δ = 0")
            + f" in total for neighbours that {t.neighbour.label} (basic composition: the sum of each "
            "release's ε and δ — a true upper bound)."
        )
    else:
        st.markdown(
            "These releases protect against **different neighbour relations**, so their ε add up to no one "
            "guarantee: "
            + "; ".join(
                f"ε = {t.epsilon:g}" + (f", δ = {claims.delta(t.delta)}" if t.delta else "") + f" for neighbours that "
                f"{t.neighbour.label}"
                for t in totals
            )
            + ". Forget your releases to count under one relation again."
        )
    # the answer right after its number: a phone shows two columns before it scrolls
    shown = pd.DataFrame(releases)[["k", "released", "epsilon", "delta", "mechanism", "query"]].rename(
        columns={"k": "release #", "epsilon": "ε", "delta": "δ", "released": "released answer"}
    )
    shown["mechanism"] = [mech.MECHANISM_LABELS.get(v, v).split(" (")[0] for v in shown["mechanism"]]
    st.dataframe(
        shown,
        hide_index=True,
        key="noise_releases_table",  # "#": the mechanism fits a phone too
        column_config={"release #": st.column_config.NumberColumn("#", width=40)},
    )
    table_downloads(shown, "noise_releases", key="noise_releases_table_dl")
st.caption(
    "Your releases are tracked per browser session (this tab): reloading the page starts a new count. "
    "Averaging many releases gets close to the true value — that is exactly why they must all be paid for."
)
