"""DP Explorer: entry point. Registers every page; nothing heavy happens here."""

import streamlit as st

from pages.ui import common as _ui

st.set_page_config(page_title="DP Explorer", page_icon="assets/favicon.png", layout="wide")

PAGES = {
    "Learn": [
        st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
        st.Page("pages/noise.py", title="Noise mechanisms", icon=":material/graphic_eq:"),
        st.Page("pages/advisor.py", title="Choose ε from risk", icon=":material/tune:"),
    ],
    "Attack": [
        st.Page("pages/reidentification.py", title="Re-identification", icon=":material/person_search:"),
        st.Page("pages/differencing.py", title="Differencing attack", icon=":material/calculate:"),
    ],
    "Protect": [
        st.Page("pages/query_console.py", title="Private query console", icon=":material/lock:"),
    ],
    "Train & measure": [
        st.Page("pages/training.py", title="DP training", icon=":material/model_training:"),
        st.Page("pages/privacy_utility.py", title="Privacy–utility curve", icon=":material/query_stats:"),
        st.Page("pages/audit.py", title="Audit your model", icon=":material/fact_check:"),
    ],
}

st.logo("assets/logo.png")
_ui.style()
st.navigation(PAGES).run()
