"""Home: what DP promises, where real deployments put epsilon, epsilon in plain language, a tour."""

import streamlit as st

from pages._ui import from_url, guarded, share_in_url  # _ui also routes deep links through app.py

from dpcore.figures import home as figs
from dpcore import sweep
from dpcore.interpret import privacy_level, reading

st.title("DP Explorer")
st.markdown(
    "**Differential privacy (DP)** is a promise made by an algorithm, not by a dataset: whatever the output, "
    "it would have been almost as likely had any one person's data been left out or changed. "
    "So no one — however much else they know — can learn much about *you* from it. "
    "The budget **ε (epsilon)** says how much \"almost\" is; smaller ε means stronger privacy and more noise."
)
st.latex(r"\Pr[M(D) \in S] \;\le\; e^{\varepsilon}\,\Pr[M(D') \in S] + \delta"
         r"\quad\text{for all neighbouring } D, D' \text{ and all sets of outputs } S")
st.caption("D and D′ differ in one person's record; δ is a small probability (≪ 1/n) that the bound may fail.")

st.subheader("Where is your epsilon?")
HOME_EPS = [0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 12.2, 20.0, 50.0]
eps = st.select_slider("Your ε", options=HOME_EPS, value=from_url("home_eps", 1.0, HOME_EPS), key="home_eps")
share_in_url("home_eps")
st.plotly_chart(figs.deployments_chart(eps), key="home_deployments")
st.caption("Epsilons of published deployments are not directly comparable: the unit of privacy (a record, a "
           "user per day, a device) and the time window differ.")

st.subheader("Epsilon in plain language")
c1, c2 = st.columns([3, 2])
with c1:
    st.plotly_chart(figs.posterior_chart(eps), key="home_posterior")
with c2:
    st.metric("Privacy level", privacy_level(eps))
    st.markdown(reading(eps, 0.5))
    st.markdown(reading(eps, 0.01))
    st.caption("Bound: p′ ≤ e^ε·p / (1 − p + e^ε·p), from Bayes' rule with a likelihood ratio of at most e^ε.")

with st.sidebar:
    st.markdown("**Report**")
    finished = [s for s in sweep.list_sweeps(refresh=False) if s.get("status") == "done"]
    sweep_names = {s["id"]: s.get("name") or s["id"] for s in finished}
    sweep_id = st.selectbox("Include a privacy–utility sweep", [None, *sweep_names], key="home_report_sweep",
                            format_func=lambda i: "none" if i is None else sweep_names[i],
                            disabled=not finished, help="Finished sweeps from the Privacy–utility page")
    if st.button("Prepare report", key="home_report_prepare", icon=":material/description:",
                 help="A self-contained HTML file (opens offline) for the ε chosen on Home"):
        with st.spinner("Building the report (noise, re-identification and sweep findings) ..."):
            from dpcore import report  # only when asked: plotly.io's HTML export is slow to import

            st.session_state["home_report_html"] = guarded(report.build, eps, sweep_id=sweep_id)
    if st.session_state.get("home_report_html"):
        st.download_button("Download report", st.session_state["home_report_html"].encode(),
                           "dp-explorer-report.html", "text/html", key="home_report_download",
                           icon=":material/download:")

with st.expander("First time here? A five-minute guided tour", expanded=False, icon=":material/tour:"):
    st.markdown(
        "1. **Here, on Home** — move *Your ε* and read how much an attacker could learn (one minute).\n"
        "2. **Noise mechanisms** — move the ε slider: watch the noise spread and the error grow as ε shrinks; "
        "open *Why it is private* to see the e^ε band. Press *Release one answer* twice: you spent 2ε.\n"
        "3. **Re-identification** — the default neighbour (34, zip 10001, salary 50–60k) is found in the "
        "\"anonymised\" release; scroll to the generalisation and DP defences.\n"
        "4. **Differencing attack** — press *Show all steps*: two allowed averages give one person's exact age. "
        "Then see how noise spreads the attacker's estimate.\n"
        "5. **Private query console** — ask a few questions as an analyst until the budget runs out.\n"
        "6. **DP training** — train breast-cancer logistic regression at ε = 1 and its baseline (about a minute).\n"
        "7. **Privacy–utility curve** — run the demo sweep: accuracy and attack success against ε on one screen.\n"
        "8. Back here: **Prepare report** in the sidebar downloads an HTML report that opens offline. Every page's "
        "main settings are in the URL, so you can share a link to the exact view."
    )

st.subheader("Tour")
TOUR = [
    ("pages/noise.py", "Noise mechanisms", "Laplace and Gaussian noise under an ε slider: the error you pay and "
     "why the definition holds."),
    ("pages/reidentification.py", "Re-identification", "Removing names is not anonymisation: linkage on age, zip "
     "and salary, uniqueness and k-anonymity."),
    ("pages/differencing.py", "Differencing attack", "\"Only averages over 50+ people\" leaks one person's exact "
     "age; noise stops it."),
    ("pages/query_console.py", "Private query console", "Ask noisy questions of the data; every answer spends ε "
     "from a budget that runs out."),
    ("pages/training.py", "DP training", "Train models with DP-SGD (Opacus) in the background, next to a "
     "non-private baseline."),
    ("pages/privacy_utility.py", "Privacy–utility curve", "Accuracy vs ε beside membership-inference attacks and "
     "an empirical ε audit."),
]
cols = st.columns(3)
for i, (path, title, line) in enumerate(TOUR):
    with cols[i % 3].container(border=True):
        st.markdown(f"**{title}**")
        st.caption(line)
        st.page_link(path, label=f"Open {title}", icon=":material/arrow_forward:")
