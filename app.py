"""DP Explorer: entry point. Registers every page; nothing heavy happens here.

The file has two roles. ``streamlit run app.py`` finds ``app`` below (Streamlit's ``st.App``), imports this file
once under its own name and serves it through that app, whose additions to Streamlit's server are the visitor
cookie (:mod:`pages.ui.visitor_cookie`: the identity a browser keeps, so a reload finds its work again), Streamlit's
hashed assets answered from memory (:mod:`pages.ui.static_cache`) and, when it starts, the pages' imports in the
background (:mod:`pages.ui.warmup`). Every
session's script run then executes the file as ``__main__``: the page setup and the navigation.
"""

import streamlit as st

if __name__ != "__main__":  # the server's import: the ASGI app, nothing of the page
    from contextlib import asynccontextmanager

    from starlette.middleware import Middleware
    from streamlit import config

    from pages.ui import warmup
    from pages.ui.static_cache import StaticAssetCache
    from pages.ui.visitor_cookie import VisitorCookie

    @asynccontextmanager
    async def _lifespan(_app):
        warmup.start()  # the pages' imports, in the background: the first visitors do not wait on them
        yield

    app = st.App(
        __file__,
        middleware=[
            Middleware(StaticAssetCache, base_url=config.get_option("server.baseUrlPath")),
            Middleware(VisitorCookie, base_url=config.get_option("server.baseUrlPath")),
        ],
        lifespan=_lifespan,
    )

    import os

    if os.environ.get("DP_EXPLORER_DEMO_STUDY") == "1":  # a demo: the default synthetic study waits for its visitors
        from dpcore.synth import study as _study

        try:
            _study.prepare_default()
        except (ValueError, OSError) as exc:  # a read-only or full home: the server still starts, the tab says why
            print(f"DP_EXPLORER_DEMO_STUDY: the default study was not queued ({exc})", flush=True)
else:
    from pages.ui import warmup as _warmup

    _warmup.ensure()  # no page runs while the pages' libraries are half-imported (see pages/ui/warmup.py)

    from pages.ui import common as _ui
    from pages.ui import identity as _identity

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
            st.Page("pages/plan.py", title="Plan a release", icon=":material/checklist:"),
        ],
        "Train & measure": [
            st.Page("pages/training.py", title="DP training", icon=":material/model_training:"),
            st.Page("pages/privacy_utility.py", title="Privacy–utility curve", icon=":material/query_stats:"),
            st.Page("pages/audit.py", title="Audit your model", icon=":material/fact_check:"),
        ],
    }

    st.logo("assets/logo.png")
    _ui.style()
    if not _identity.remembered():  # no visitor cookie came back: work started here is this tab's only
        st.sidebar.caption(f":material/cookie: {_identity.NOT_REMEMBERED}")
    st.navigation(PAGES).run()
