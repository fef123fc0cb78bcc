"""pages/ui/common.py helpers: downloads are formula-safe; shared links obey the widgets' limits."""

import io
import json

import pandas as pd

from pages.ui import common as _ui

EVIL_COL = '[x](http://evil/)![i](http://evil/i.png)<a href="http://evil">a</a>'


class _Col:
    def __init__(self, sink):
        self.sink = sink

    def download_button(self, label, data, file_name, mime, **kw):
        self.sink[label] = (data, file_name)


def test_table_downloads_neutralise_formula_cells(monkeypatch):
    got = {}
    monkeypatch.setattr(_ui.st, "container", lambda **kw: _Col(got))  # the buttons share one row
    df = pd.DataFrame({EVIL_COL: ['=HYPERLINK("http://evil","click")', "@SUM(1)", "fine"], "n": [-1, 0, 1]})
    _ui.table_downloads(df, "ledger_=evil/../x", key="k")
    data, fname = got["Download CSV"]
    data = data() if callable(data) else data  # built when the button is pressed
    back = pd.read_csv(io.BytesIO(data))
    assert back.iloc[:, 0].tolist() == ['\'=HYPERLINK("http://evil","click")', "'@SUM(1)", "fine"]
    assert back["n"].tolist() == [-1, 0, 1]
    assert "/" not in fname


def _required_page():
    import streamlit as st

    from dpcore.errors import DPError
    from pages.ui.common import required, state

    def bad():
        raise DPError("epsilon must be > 0; try 0.1-10")

    st.session_state["runs"] = state("runs", 0) + 1
    st.write(f"value {required(lambda: 7)}")
    if st.session_state.get("fail"):
        required(bad)
    st.write("after")


def test_required_shows_one_message_and_stops_the_page_and_state_keeps_its_value():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_required_page).run()
    assert not at.exception and [m.value for m in at.markdown] == ["value 7", "after"] and not at.error
    at.session_state["fail"] = True
    at.run()
    assert not at.exception and [m.value for m in at.markdown] == ["value 7"]
    # dpcore's message starts lower-case (it also reads after the CLI's "error: "); the page's box starts a sentence
    assert [e.value for e in at.error] == ["Epsilon must be > 0; try 0.1-10"]
    assert at.session_state["runs"] == 2  # set to its default once, then kept


def _guarded_page():
    import sqlite3

    from dpcore.errors import DPError
    from pages.ui.common import guarded

    def raise_(exc):
        raise exc

    guarded(raise_, DPError("prior belief must be in (0, 1)"))
    guarded(raise_, DPError("ε must be > 0"))  # a symbol keeps its case: "Ε" would be another letter
    guarded(raise_, DPError("n (number of rows) must be a whole number"))
    guarded(raise_, sqlite3.OperationalError("database is locked"))


def test_guarded_shows_each_message_as_a_sentence_but_never_changes_a_symbol():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_guarded_page).run()
    assert not at.exception
    shown = [e.value for e in at.error]
    assert shown[:3] == ["Prior belief must be in (0, 1)", "ε must be > 0", "n (number of rows) must be a whole number"]
    assert shown[3].startswith("The store is busy (another process holds it)")


def _widget_state_page():
    import streamlit as st

    from pages.ui.common import widget_state

    widget_state({"n": 5, "word": "a"}, shared=("n",), ranges={"n": (1, 10)})
    if st.session_state.get("show", True):
        st.number_input("n", 1, 10, key="n")
        st.text_input("word", key="word")


def test_widget_state_keeps_values_through_runs_that_do_not_draw_the_widget_and_reads_links():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_widget_state_page)
    at.query_params["n"] = "99"  # a link asking for more than the widget allows is clamped
    at.run()
    assert not at.exception and at.number_input(key="n").value == 10 and at.text_input(key="word").value == "a"
    at.number_input(key="n").set_value(3).run()
    at.text_input(key="word").set_value("kept").run()
    at.session_state["show"] = False
    at.run()  # neither widget drawn: Streamlit would forget them
    at.session_state["show"] = True
    at.run()
    assert at.number_input(key="n").value == 3 and at.text_input(key="word").value == "kept"


def test_chart_sends_the_figure_unchanged_and_converts_a_shared_figure_once(monkeypatch):
    import gc

    import plotly.graph_objects as go
    import plotly.io
    import plotly.tools

    from dpcore.figures import noise as figs

    sent, titles = [], []

    class Box:  # the chart's container: its title as HTML, then the chart
        def html(self, body):
            titles.append(body)

        def plotly_chart(self, fig, **kw):  # what Streamlit's plotly_chart puts in the message
            sent.append(
                plotly.io.to_json(
                    plotly.tools.return_figure_from_figure_or_data(fig, validate_figure=True), validate=False
                )
            )

    monkeypatch.setattr(_ui.st, "container", lambda **kw: Box())
    fig = figs.page_view(
        "laplace", 1.0, None, 1.0, 130.0, draws=1000, seed=0, grid_points=41, x_title="released answer", unit="patients"
    )[1]["why"]
    calls = []
    real = go.Figure.to_dict
    monkeypatch.setattr(go.Figure, "to_dict", lambda self: calls.append(1) or real(self))
    for _ in range(3):
        _ui.chart(fig, key="k")
    plain = real(fig)
    title = plain["layout"]["title"]["text"]
    page = json.loads(sent[0])
    assert sent == sent[:1] * 3 and titles == titles[:1] * 3 and title.split("<br>")[0] in titles[0]
    # the same spec as the plain figure but for its title, drawn by the page above it, and the margin it held
    assert page["layout"].pop("meta") == {"title": title} and page["layout"].pop("title") == {"text": ""}
    assert page["layout"].pop("margin")["t"] < plain["layout"].pop("margin")["t"]
    del plain["layout"]["title"]
    assert page == json.loads(plotly.io.to_json(plain, validate=False))
    assert len(calls) == 1  # one deep copy per shared figure, not one per rerun
    other = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]))
    _ui.chart(other, key="k2")
    other_id = id(other)
    assert other_id in _ui._SENT
    del other
    gc.collect()  # (may also collect figures other tests left behind: look at this one's entry only)
    assert other_id not in _ui._SENT  # a figure's entry goes with it
