"""Noise mechanisms: Laplace and Gaussian noise under an ε slider, why they are private, a safe release path."""

import pandas as pd
import streamlit as st

from dpcore import datasets
from dpcore.figures import noise as figs
from dpcore.noise import mechanisms as mech
from dpcore.noise import teaching
from dpcore.noise import view as noise_page
from dpcore.noise.composition import basic_composition
from dpcore.noise.interpret import privacy_level
from dpcore.noise.release import release_answer
from pages._ui import from_url, guarded, not_private, share_in_url, table_downloads

SIM_DRAWS = 100_000
SIM_SEED = 0  # the simulation is a picture: seeded so the cache never freezes a real release
TABLE_SEED = 7

QUERIES = {
    "count": "Count: patients with the rare disease (Δ = 1)",
    "mean": "Bounded mean of a column (Δ = (U − L)/n)",
    "sum": "Bounded sum of a column (Δ = U − L)",
    "custom": "Custom: type a true value and its sensitivity Δ",
}
COLUMNS = {"age": "years", "salary": "$"}


@st.cache_data(show_spinner=False, max_entries=8)
def _data(n: int) -> pd.DataFrame:
    return datasets.medical(n, seed=0)


@st.cache_data(show_spinner=False, max_entries=64)
def _query(n: int, kind: str, column: str, lower: float, upper: float):
    return teaching.query(_data(n), kind, column, lower, upper)


@st.cache_data(show_spinner=False, max_entries=256)
def _view(mechanism: str, epsilon: float, delta, sensitivity: float, value: float, draws: int, seed: int):
    return noise_page.noise_view(mechanism, epsilon, delta, sensitivity, value, draws=draws, seed=seed)


@st.cache_resource(show_spinner=False, max_entries=64)
def _figures(mechanism: str, epsilon: float, delta, sensitivity: float, value: float, draws: int, seed: int,
             x_title: str, unit: str):
    # Figures are read-only once built: shared, not copied on every rerun.
    return figs.figures(_view(mechanism, epsilon, delta, sensitivity, value, draws, seed), x_title, unit)


@st.cache_data(show_spinner=False, max_entries=64)
def _table(mechanism: str, delta, sensitivity: float, value: float, integer: bool, seed: int):
    return noise_page.epsilon_table(mechanism, delta, sensitivity, value, integer=integer, seed=seed)


def _reset_bounds():
    lo, hi = datasets.PUBLIC_BOUNDS[st.session_state.noise_column]
    st.session_state.noise_lower, st.session_state.noise_upper = lo, hi


st.title("Noise mechanisms")
st.markdown(
    "A DP answer is the true answer plus random noise scaled to the query's **sensitivity Δ** — how much one "
    "person can change the answer — divided by the budget **ε**. Move ε and watch the spread of released "
    "answers, the error you pay, and why an observer still cannot tell whether any one person is in the data."
)

# --- the query ------------------------------------------------------------------------------------------
st.session_state.setdefault("noise_column", "age")
if "noise_lower" not in st.session_state:
    _reset_bounds()

st.subheader("1 · Choose a query and a mechanism")
q1, q2, q3 = st.columns([2, 1, 1])
kind = q1.selectbox("Query on the synthetic medical data", list(QUERIES), format_func=QUERIES.get,
                    index=list(QUERIES).index(from_url("noise_query", list(QUERIES)[0], list(QUERIES))),
                    key="noise_query")
if kind == "custom":
    value_in = q2.number_input("true value", value=100.0, key="noise_value")
    sens_in = q3.number_input("sensitivity Δ", value=1.0, key="noise_sens")
    n_in, column, lower, upper = None, "", None, None
else:
    n_in = q2.number_input("rows n (public)", value=10_000, step=1_000, key="noise_n")
    column = "has_rare_disease"
    lower = upper = None
    if kind in ("mean", "sum"):
        column = q3.selectbox("column", list(COLUMNS), key="noise_column", on_change=_reset_bounds)
        b1, b2, b3 = st.columns([1, 1, 2])
        lower = b1.number_input("public lower bound L", key="noise_lower")
        upper = b2.number_input("public upper bound U", key="noise_upper")
        b3.caption("Values are clamped to [L, U]. The bounds must be **public** (domain knowledge: ages 18–90), "
                   "never read off the data: the private minimum and maximum are themselves statistics one person "
                   "can move, so a sensitivity computed from them would be wrong and would leak.")

m1, m2 = st.columns([2, 3])
mechanism = m1.radio("Mechanism", list(mech.MECHANISMS), format_func=mech.MECHANISM_LABELS.get,
                     index=list(mech.MECHANISMS).index(from_url("noise_mech", mech.MECHANISMS[0],
                                                                list(mech.MECHANISMS))),
                     key="noise_mech")
with m2:
    exact = st.toggle("Type ε and δ exactly", key="noise_exact")
    if exact:
        e1, e2 = st.columns(2)
        epsilon = e1.number_input("ε", value=1.0, format="%g", key="noise_eps_typed")
        delta = (e2.number_input("δ", value=1e-5, format="%.1e", key="noise_delta_typed")
                 if mechanism != "laplace" else None)
    else:
        epsilon = st.select_slider("privacy budget ε (log scale)", options=list(noise_page.EPSILON_GRID),
                                   value=from_url("noise_eps", 1.0, list(noise_page.EPSILON_GRID)), key="noise_eps")
        delta = (st.select_slider("δ (Gaussian only; keep it well below 1/n)", options=list(noise_page.DELTA_GRID),
                                  value=from_url("noise_delta", 1e-5, list(noise_page.DELTA_GRID)),
                                  format_func=lambda d: f"{d:.0e}", key="noise_delta")
                 if mechanism != "laplace" else None)
    if mechanism == "laplace":
        st.caption("Laplace: scale b = Δ/ε, pure ε-DP (δ = 0).")
    elif mechanism == "gaussian":
        st.caption("Analytic Gaussian (Balle & Wang 2018): the smallest σ that is (ε, δ)-DP, valid for every ε.")
    else:
        st.caption("Classic Gaussian: σ = Δ·√(2 ln(1.25/δ))/ε — the textbook bound, **valid only for ε < 1**, and "
                   "it adds more noise than the analytic calibration.")

# --- compute (cached per setting; the simulation is seeded) -----------------------------------------------------
if kind == "custom":
    value, sensitivity, integer, unit = value_in, sens_in, False, "units of the answer"
    what = "custom value"
else:
    if guarded(_data, n_in) is None:
        st.stop()
    answer = guarded(_query, int(n_in), kind, column, lower, upper)
    if answer is None:
        st.stop()
    value, sensitivity, integer = answer.true_value, answer.sensitivity, answer.integer
    unit = "patients" if kind == "count" else COLUMNS[column]
    what = answer.description

view = guarded(_view, mechanism, epsilon, delta, sensitivity, value, SIM_DRAWS, SIM_SEED)
if view is None:
    st.stop()
spec = view.spec
x_title = f"released answer ({unit})"
charts = _figures(mechanism, epsilon, delta, sensitivity, value, SIM_DRAWS, SIM_SEED, x_title, unit)

c = st.columns(5)
c[0].metric("true value (not private)", f"{view.value:,.4g}")
c[1].metric("sensitivity Δ", f"{spec.sensitivity:,.4g}")
c[2].metric(f"noise scale {spec.scale_name}", f"{spec.scale:,.4g}")
c[3].metric("expected |error|", f"{view.expected_abs_error:,.4g}")
c[4].metric("95% of answers within", f"±{view.ci95[1] - view.value:,.4g}")
not_private(f"True value of the {what}")
if kind != "custom" and answer.clamped:
    st.caption(f"{answer.clamped:,} of {answer.n:,} rows lay outside [{answer.lower:g}, {answer.upper:g}] and "
               "were clamped (a count shown for teaching, not private).")
st.markdown(f"At **ε = {spec.epsilon:g}**" + (f", **δ = {spec.delta:g}**" if mechanism != "laplace" else "")
            + f", privacy level **{privacy_level(spec.epsilon)}**: a released answer is typically off by "
            f"**{view.expected_abs_error:,.4g} {unit}**, and 95% of releases fall in "
            f"**[{view.ci95[0]:,.4g}, {view.ci95[1]:,.4g}]**.")

# --- charts ---------------------------------------------------------------------------------------------------
share_in_url("noise_query", "noise_mech", "noise_eps", "noise_delta")

st.subheader("2 · What released answers look like")
st.plotly_chart(charts["distribution"], key="noise_chart_distribution")
st.caption(f"The bars are a **simulation**: {view.draws:,} draws with plain numpy (seed {view.seed}) to show the "
           f"shape — not releases. Simulated mean |error| {view.sim_mean_abs_error:,.4g} (exact "
           f"{view.expected_abs_error:,.4g}); {view.sim_coverage:.1%} of simulated draws fall in the 95% interval.")
if integer and mechanism == "laplace":
    st.caption("Counts are released with the discrete Laplace (geometric) mechanism: whole numbers with the same "
               "ε guarantee and almost the same spread as the continuous Laplace curves shown here.")
st.plotly_chart(charts["compare"], key="noise_chart_compare")

st.subheader("3 · Why it is private")
st.plotly_chart(charts["why"], key="noise_chart_why")
if mechanism == "laplace":
    st.markdown("For **Laplace** the privacy loss ln p_D(z)/p_D′(z) is flat at ±ε beyond the two true answers and "
                "never leaves the band: every output is at most e^ε times more likely under D than under D′.")
else:
    st.markdown(f"For the **Gaussian** the loss is a straight line: far enough in the tail it leaves the ±ε band. "
                f"The outputs there have probability {view.loss_exceeds_mass:.2e} under D; the guarantee only "
                f"fails by δ = ∫ max(0, p_D − e^ε p_D′) = {view.actual_delta:.2e} (≤ δ = {spec.delta:g}).")

if spec.scale > 0:  # the worst-case membership ROC of one release (engineer G, dpcore/figures/advisor.py)
    from dpcore.figures import advisor as _adv_figs

    st.plotly_chart(_adv_figs.noise_tradeoff_chart(mechanism, spec.epsilon, spec.delta, spec.sensitivity, spec.scale),
                    key="noise_chart_tradeoff")

st.subheader("4 · The price: error vs ε")
st.plotly_chart(charts["error"], key="noise_chart_error")
table = guarded(_table, mechanism, delta, sensitivity, value, integer, TABLE_SEED)
if table is not None:
    st.dataframe(table, hide_index=True, key="noise_table")
    st.caption("Typical error at each ε, exact (no random draw): the expected |error| and the range that "
               "holds 95% of releases.")
    table_downloads(table, "noise_epsilon_table", key="noise_table_dl")

# --- the safe release path -------------------------------------------------------------------------------------------
st.subheader("5 · Release one answer")
st.markdown("Each press draws **one** answer through the safe release path (diffprivlib's floating-point-safe "
            "samplers with a secure random source, no seed"
            + ("; a count with Laplace uses the integer geometric mechanism" if integer and mechanism == "laplace"
               else "") + "). "
            "Every release spends ε again: releasing the same answer k times costs k·ε.")
releases = st.session_state.setdefault("noise_releases", [])
r1, r2 = st.columns([1, 1])
if r1.button("Release one answer", key="noise_release", type="primary", icon=":material/lock:"):
    out = guarded(release_answer, value, mechanism=mechanism, epsilon=spec.epsilon, delta=spec.delta,
                  sensitivity=spec.sensitivity, integer=integer)
    if out is not None:
        releases.append({"k": len(releases) + 1, "query": what, "mechanism": mechanism, "epsilon": spec.epsilon,
                         "delta": spec.delta, "released": out})
if r2.button("Forget my releases", key="noise_reset", disabled=not releases):
    releases.clear()
if releases:
    eps_total, delta_total = basic_composition(releases)
    last = releases[-1]
    s = st.columns(3)
    s[0].metric("latest released answer", f"{last['released']:,.6g}")
    s[1].metric("releases k", len(releases))
    s[2].metric("total ε spent (sum)", f"{eps_total:g}",
                help="Basic composition: the ε of every release add up (δ too).")
    st.markdown(f"**{len(releases)}** release(s) so far cost **ε = {eps_total:g}**"
                + (f", **δ = {delta_total:.2g}**" if delta_total > 0 else "")
                + " in total (basic composition: the sum of each release's ε and δ — a true upper bound).")
    st.dataframe(pd.DataFrame(releases), hide_index=True, key="noise_releases_table")
    table_downloads(pd.DataFrame(releases), "noise_releases", key="noise_releases_table_dl")
st.caption("Your releases are tracked per browser session (this tab): reloading the page starts a new count. "
           "Averaging many releases gets close to the true value — that is exactly why they must all be paid for.")
