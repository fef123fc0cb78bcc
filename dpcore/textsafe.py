"""The one home for making untrusted text safe to show or export.

Untrusted text is anything a user or a file chose: column names, cell values, category labels, analyst
and dataset names, uploaded file names. Use one of these wherever such text is shown:

- :func:`md` — inside Streamlit markdown (``st.markdown``, ``st.caption``, ``st.info``, widget labels,
  ``st.metric`` labels...). Every ASCII punctuation character is backslash-escaped (CommonMark allows
  that for all of them), so ``[x](http://evil/)``, ``![i](http://evil/i.png)``, ``<http://evil>``,
  ``:red[...]``/``:material/...:`` directives and ``$latex$`` all show as plain text and nothing is
  fetched from another host; bare ``http://``, ``www.`` and e-mail autolinks are broken by an invisible
  word joiner (:func:`unlinked`: Streamlit autolinks them even when backslash-escaped). Line breaks
  become spaces.
- :func:`md_message` — a whole message that *quotes* untrusted text (a DPError naming an uploaded
  column): keeps ordinary punctuation readable (``must be > 0``, ``(0, 1)``, ``'age'``) but escapes what
  makes links, images, HTML and directives (``[ ]``, ``\\``, a ``<`` that opens a tag) and breaks bare
  ``http://`` / ``www.`` / e-mail autolinks (:func:`unlinked`).
  Prefer :func:`md` on the untrusted part where you build the text yourself.
- :func:`html` — inside HTML (the report): ``& < > " '`` become entities.
- :func:`plotly` — inside Plotly titles, axis titles, tick labels, legend names and hover text. Plotly
  renders a subset of HTML in these (``<a href>``, ``<b>``, ``<br>``, ``<img>`` is ignored); ``& < >``
  become entities, which Plotly shows as the characters.
- :func:`csv_cell` / :func:`csv_safe` / :func:`csv_bytes` — CSV exports: a text cell (or header) that
  starts with ``= + - @``, a tab or a carriage return is prefixed with ``'`` so that a spreadsheet shows
  it as text instead of running it as a formula (OWASP "CSV injection"), and so is each line inside a cell;
  records end in CRLF, so a cell holding a line break is always quoted. Numbers are left alone.

dpcore never imports streamlit; pages import these from here.
"""

from __future__ import annotations

import html as _html
import math
import re
import string
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas only where a DataFrame is exported: Home's first render never loads it (~0.5 s)
    import pandas as pd

__all__ = ["md", "md_message", "unlinked", "html", "plotly", "csv_cell", "csv_safe", "csv_bytes", "FORMULA_PREFIXES"]

#: First characters that make a spreadsheet treat a cell as a formula (or a command, via DDE).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")

_MD_SPECIAL = frozenset(string.punctuation)  # CommonMark: any ASCII punctuation may be backslash-escaped


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return str(value)


#: U+2060 WORD JOINER: invisible, not punctuation, and not part of a URL or an e-mail address.
JOINER = "\u2060"
_LINKABLE = re.compile(r"(?i)(?<=:)(?=//)|(?<=\bwww)(?=\.)|(?<=@)|(?<=\bmailto:)|(?<=\bxmpp:)")


def unlinked(value: Any) -> str:
    """``value`` with an invisible word joiner where a bare URL or e-mail address would start a link:
    between ``:`` and ``//``, between ``www`` and ``.``, after ``@`` and after ``mailto:``/``xmpp:``.

    Streamlit's markdown (GitHub's autolink-literal extension) turns ``http://…``, ``www.…`` and
    ``a@b.com`` into live links *after* backslash escapes are read, so ``http\\:\\/\\/evil`` still became
    ``<a href="http://evil">`` (checked in the browser's DOM); with the joiner nothing matches and the reader
    sees the same characters."""
    return _LINKABLE.sub(JOINER, _text(value))


def md(value: Any) -> str:
    """``value`` as literal text inside Streamlit markdown: no links, images, HTML, directives or maths."""
    out = []
    for ch in unlinked(value):
        if ch in ("\r", "\n", "\t", "\f", "\v"):
            out.append(" ")
        elif ch in _MD_SPECIAL:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def md_message(value: Any) -> str:
    """A message for ``st.error``/``st.warning`` that quotes untrusted text: no links, images or HTML."""
    text = unlinked(" ".join(_text(value).split()))  # one line; no bare URL or address becomes a link
    text = text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    return re.sub(r"<(?=[A-Za-z/!?])", r"\\<", text)  # a tag or autolink starts so; "<= 5" stays readable


def html(value: Any) -> str:
    """``value`` as literal text inside HTML (element content or a quoted attribute)."""
    return _html.escape(_text(value), quote=True)


def plotly(value: Any) -> str:
    """``value`` as literal text in a Plotly label (title, axis, tick, legend, hover): no live tags."""
    return _text(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_LINE_THEN_FORMULA = re.compile(r"(\r\n|\r|\n)(?=[=+\-@\t\r])")


def csv_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet will not run: text starting with a formula character gets a ``'``, and so does
    every line inside it that does (a reader that splits a record at a bare carriage return would otherwise
    start a new row with the formula: ``"grp\r=1+1"``)."""
    if isinstance(value, str):
        if value.startswith(FORMULA_PREFIXES):
            value = "'" + value
        if "\r" in value or "\n" in value:
            value = _LINE_THEN_FORMULA.sub(lambda m: m.group(1) + "'", value)
    return value


def csv_safe(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` whose text cells and column names cannot run as spreadsheet formulas."""
    # lazy: pandas takes ~0.5 s to import
    import pandas as pd

    out = df.copy()
    out.columns = [csv_cell(c) if isinstance(c, str) else c for c in out.columns]
    for i in range(out.shape[1]):
        col = out.iloc[:, i]
        if col.dtype == object or isinstance(col.dtype, (pd.StringDtype, pd.CategoricalDtype)):
            out.isetitem(i, col.astype(object).map(csv_cell))
    return out


def csv_bytes(df: pd.DataFrame, **to_csv_kwargs) -> bytes:
    """``df`` as UTF-8 CSV bytes (no index), formula cells neutralised: use for every CSV export.

    Records end in CRLF (RFC 4180): Python's CSV writer quotes a field holding any character of the line
    terminator, so with CRLF a cell holding a bare CR or LF is always quoted (with "\n" alone, a bare CR
    went out unquoted and a spreadsheet started a new record at it)."""
    to_csv_kwargs.setdefault("index", False)
    to_csv_kwargs.setdefault("lineterminator", "\r\n")
    return csv_safe(df).to_csv(**to_csv_kwargs).encode()
