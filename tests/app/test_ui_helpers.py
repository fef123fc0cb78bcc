"""pages/_ui.py helpers: downloads are formula-safe; shared links obey the widgets' limits."""

import io

import pandas as pd

from pages import _ui

EVIL_COL = '[x](http://evil/)![i](http://evil/i.png)<a href="http://evil">a</a>'


class _Col:
    def __init__(self, sink):
        self.sink = sink

    def download_button(self, label, data, file_name, mime, **kw):
        self.sink[label] = (data, file_name)


def test_table_downloads_neutralise_formula_cells(monkeypatch):
    got = {}
    monkeypatch.setattr(_ui.st, "columns", lambda spec: [_Col(got) for _ in spec])
    df = pd.DataFrame({EVIL_COL: ['=HYPERLINK("http://evil","click")', "@SUM(1)", "fine"], "n": [-1, 0, 1]})
    _ui.table_downloads(df, "ledger_=evil/../x", key="k")
    data, fname = got["CSV"]
    back = pd.read_csv(io.BytesIO(data))
    assert back.iloc[:, 0].tolist() == ['\'=HYPERLINK("http://evil","click")', "'@SUM(1)", "fine"]
    assert back["n"].tolist() == [-1, 0, 1]
    assert "/" not in fname
