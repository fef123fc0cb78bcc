"""Small Streamlit helpers shared by the pages (UI only: no maths here)."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dpcore.errors import DPError


def _route_deep_links_through_app() -> None:
    """Make a deep link (e.g. /noise) opened before app.py ever ran use app.py's navigation.

    Streamlit guesses a legacy "pages/ folder" app when the first session of a server opens a page URL
    directly, runs that page file alone and lists raw file names in the sidebar. Clearing the
    guess and rerunning sends the run through app.py (st.navigation), which resolves the same URL.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


_route_deep_links_through_app()


def guarded(fn, *args, **kwargs):
    """Call a dpcore function; show a DPError as st.error and return None instead of a traceback."""
    try:
        return fn(*args, **kwargs)
    except DPError as err:
        st.error(str(err))
        return None


def table_downloads(df: pd.DataFrame, name: str, key: str) -> None:
    """CSV and JSON download buttons for a table."""
    c1, c2, _ = st.columns([1, 1, 4])
    c1.download_button("CSV", df.to_csv(index=False).encode(), f"{name}.csv", "text/csv",
                       key=f"{key}_csv", icon=":material/download:")
    c2.download_button("JSON", json.dumps(json.loads(df.to_json(orient="records")), indent=2).encode(),
                       f"{name}.json", "application/json", key=f"{key}_json", icon=":material/download:")


def not_private(label: str = "Not private") -> None:
    """A visible label for anything shown from private data without DP."""
    st.caption(f":orange-badge[{label}] computed on the raw data, for teaching: a real release would not show it.")
