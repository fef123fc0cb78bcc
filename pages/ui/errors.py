"""How a page shows a failure: one message, never a traceback (dpcore errors and storage faults alike)."""

from __future__ import annotations

import sqlite3

import streamlit as st

from dpcore import storage, textsafe
from dpcore.errors import DPError, sentence


def guarded(fn, *args, **kwargs):
    """Call a dpcore function; show a DPError or a storage fault as st.error and return None, never a traceback."""
    try:
        return fn(*args, **kwargs)
    except DPError as err:  # messages quote user text (column names...): no links or images from it
        st.error(textsafe.md_message(sentence(str(err))))  # "Prior belief must be ...": a box starts a sentence
        return None
    except (sqlite3.Error, OSError) as exc:  # full disk, read-only or corrupted store not named further down
        st.error(textsafe.md_message(sentence(storage.fault_message(exc))))
        return None
