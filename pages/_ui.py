"""Small Streamlit helpers shared by the pages (UI only: no maths here)."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dpcore.errors import DPError


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
