"""dpcore.textsafe: untrusted text shown as text (markdown, HTML, Plotly) and CSV exports without formulas."""

import io
import re

import pandas as pd
import pytest

from dpcore import textsafe

EVIL = '[x](http://evil/)![i](http://evil/i.png)<a href="http://evil">a</a>'


def _unescape_md(s: str) -> str:
    """What a reader sees: backslash escapes read, the invisible word joiners gone."""
    return re.sub(r"\\(.)", r"\1", s).replace(textsafe.JOINER, "")


def test_md_escapes_links_images_html_and_directives():
    out = textsafe.md(EVIL + " :red[x] :material/home: $x$ www.evil.com\nline")
    # every markdown/HTML special is escaped: no unescaped [ ( ! < : $ left
    assert not re.search(r"(?<!\\)[\[\]()!<>:$.]", out)
    assert "\n" not in out
    # and reading the escapes back gives the original text (what the user sees)
    assert _unescape_md(out) == EVIL + " :red[x] :material/home: $x$ www.evil.com line"


@pytest.mark.parametrize(
    "text",
    [
        "http://evil.example/phish",
        "HTTPS://evil.example",
        "www.evil.example",
        "WWW.evil.example",
        "someone@evil.example",
        "mailto:x@y.z",
        "ftp://evil/x",
    ],
)
def test_bare_urls_and_addresses_cannot_autolink(text):
    """GitHub's autolink-literal reads a URL after backslash escapes: only a character inside the pattern stops
    it (checked in the browser by tests/e2e/test_no_live_links.py)."""
    for out in (textsafe.md(text), textsafe.md_message(text)):
        plain = re.sub(r"\\(.)", r"\1", out)
        assert "://" not in plain and "www." not in plain.lower() and not re.search(r"@[a-z]", plain)
        assert _unescape_md(out) == text  # the reader sees the same characters


def test_md_plain_words_unchanged():
    assert textsafe.md("age") == "age"
    assert textsafe.md("Jan Kees") == "Jan Kees"
    assert textsafe.md(None) == ""
    assert textsafe.md(34) == "34"


def test_html_escapes_tags_and_quotes():
    out = textsafe.html(EVIL)
    assert "<" not in out and ">" not in out and '"' not in out
    assert "&lt;a href=&quot;http://evil&quot;&gt;" in out


def test_plotly_label_has_no_live_tags():
    out = textsafe.plotly(EVIL + " & <b>bold</b><br>")
    assert "<" not in out and ">" not in out
    assert "&lt;a href=" in out and "&amp;" in out


def test_csv_cells_neutralised_numbers_kept():
    df = pd.DataFrame(
        {
            "=cmd|' /C calc'!A0": ['=HYPERLINK("http://evil","x")', "+1", "-2", "@SUM(A1)", "\tx", "\rx", "ok"],
            "n": [-1, 2, 3, 4, 5, 6, 7],
        }
    )
    safe = textsafe.csv_safe(df)
    assert list(safe.columns) == ["'=cmd|' /C calc'!A0", "n"]
    col = safe.iloc[:, 0].tolist()
    assert all(v.startswith("'") for v in col[:6]), col
    assert col[6] == "ok"
    assert safe["n"].tolist() == [-1, 2, 3, 4, 5, 6, 7]  # numbers are not text: left alone
    # the bytes a download gets: the HYPERLINK cell starts with a quote, not with =
    text = textsafe.csv_bytes(df.iloc[[0]]).decode()
    row = pd.read_csv(io.StringIO(text)).iloc[0, 0]
    assert row == '\'=HYPERLINK("http://evil","x")'


def test_csv_cell_with_a_bare_carriage_return_stays_one_quoted_cell():
    """Issue 28: a histogram category "grp\r=1+1" was written unquoted, so the CR started a new record and
    "=1+1)" began a ledger-history row. Every record a spreadsheet (or a line-by-line reader) can see must
    start with something that is not a formula."""
    import csv

    df = pd.DataFrame({"query": ["HISTOGRAM grp\r=1+1)", "a\n+b", "x\r\n@SUM(A1)", "plain"], "eps": [1.0, 2, 3, 4]})
    data = textsafe.csv_bytes(df)
    rows = list(csv.reader(io.StringIO(data.decode(), newline="")))
    assert len(rows) == 5 and [len(r) for r in rows] == [2] * 5  # one record per row, the CR inside a cell
    for piece in data.decode().replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        assert not piece.lstrip('"').startswith(("=", "+", "-", "@")), piece  # no line starts a formula
    assert pd.read_csv(io.BytesIO(data))["eps"].tolist() == [1.0, 2.0, 3.0, 4.0]


def test_csv_categorical_and_string_dtypes():
    df = pd.DataFrame({"c": pd.Categorical(["=1", "a"]), "s": pd.array(["@x", "b"], dtype="string")})
    out = textsafe.csv_safe(df)
    assert out["c"].tolist() == ["'=1", "a"] and out["s"].tolist() == ["'@x", "b"]
    assert df["c"].tolist() == ["=1", "a"]  # the input is not changed


# --- where untrusted text is shown: figures and the report (issue 12, injection) --------------------------


def test_figures_escape_column_names_and_labels():
    from dpcore.figures import query_console, reidentification

    steps = pd.DataFrame({"added": ["age", EVIL], "unique_fraction": [0.1, 0.5], "prosecutor_risk_avg": [0.1, 0.4]})
    fig = reidentification.incremental_chart(steps)
    assert not any("<a" in str(x) for tr in fig.data for x in tr.customdata)  # the hover's full names
    assert not any("<a" in t for t in fig.layout.xaxis.ticktext)  # the ticks: the same, shortened
    hist = query_console.histogram_answer(
        {"answer": [3.0, 4.0], "interval": [[1.0, 2.0], [5.0, 6.0]], "labels": ["=1", EVIL], "epsilon": 1.0},
        column=EVIL,
    )
    assert "<a" not in str(hist.data[0].customdata) and "<a" not in str(hist.layout.xaxis.ticktext)
    assert "<a" not in hist.layout.title.text
    assert "<a" not in hist.layout.xaxis.title.text


def test_report_escapes_everything_it_is_given():
    from dpcore.report import document as report

    html_out = report.render(
        [report.Section(EVIL, [EVIL], tables=[pd.DataFrame({EVIL: [EVIL]})])], {EVIL: EVIL}, title=EVIL
    )
    assert "<a href" not in html_out and "http://evil" in html_out


def test_md_message_keeps_ordinary_punctuation_but_no_links():
    out = textsafe.md_message(f"unknown column {EVIL!r}; LO must be <= HI, (0, 1) > 0\nsee www.evil.com")
    assert "LO must be <= HI, (0, 1) > 0" in out and "\n" not in out
    assert not re.search(r"(?<!\\)\[|(?<!\\)<[a-z/]|(?<!\\)://|www\.", out), out
