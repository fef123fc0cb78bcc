"""A page's first screen: its headline (one sentence, one number) and its main chart, marked for the browser.

A new visitor reads a page from its first screen (1280×800 on a laptop, 390×844 on a phone): the headline and the
main chart go there, explanations go one click away (an expander, a popover, a tab). The two containers below are
keyed so that tests/e2e/test_first_screen.py finds them (Streamlit gives a keyed container the class
``st-key-<key>``) and measures that both sit inside the first viewport.
"""

from __future__ import annotations

import streamlit as st

HEADLINE_KEY = "headline"
MAIN_CHART_KEY = "main_chart"


def headline(where=st):
    """The container for the page's "so what" (fill it with :func:`pages.ui.common.headline_md`)."""
    return where.container(key=HEADLINE_KEY)


def main_chart(where=st):
    """The container for the page's main chart (the one the headline's number is read from)."""
    return where.container(key=MAIN_CHART_KEY)
