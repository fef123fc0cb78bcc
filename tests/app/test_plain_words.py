"""The words a visitor reads on each page: no developer jargon without its plain meaning, no field names.

Privacy engineers, data-protection officers and clinicians on ethics boards read these pages: library
internals (dtype, vectorised, a source notebook), snake_case field names and maths typed as plain text
("e^ε") have no place in captions, texts, labels or help. A technical word an ML engineer needs may stay when
the page also says what it is ("numpy" with "ordinary random numbers", "PLD" with "privacy-loss distribution").
"""

import re

import pytest

from .pages import open_page, registered_pages

TEXT_KINDS = ("title", "subheader", "markdown", "caption", "info", "warning", "error", "success")
WIDGETS = (
    "number_input",
    "selectbox",
    "radio",
    "text_input",
    "slider",
    "select_slider",
    "multiselect",
    "toggle",
    "checkbox",
    "button",
)
#: Never shown: internals, maths as typed text.
NEVER = ("float64", "dtype", "vectoris", "notebook", "plain numpy", "e^ε", "Opacus-compatible mode")
#: Shown only where the page also gives their plain meaning.
GLOSSED = {
    "numpy": "ordinary",
    "GaussianNB": "naive Bayes",
    "PLD": "privacy-loss distribution",
    "zCDP": "zero-concentrated",
    "RDP": "Rényi",
}
SNAKE = re.compile(r"(?<![\\\w`])[a-z]+(?:_[a-z0-9]+)+\b")  # a field name; `code` and escaped data are exempt


def _texts(at):
    out = [(kind, e.value) for kind in TEXT_KINDS for e in getattr(at, kind)]
    for kind in WIDGETS:
        for w in at.get(kind):
            out.append(("label", w.proto.label))
            if getattr(w.proto, "help", ""):
                out.append(("help", w.proto.help))
    return out


@pytest.mark.parametrize(
    "page, params",
    [(p, {}) for p in registered_pages()]
    + [("pages/noise.py", {"noise_tab": "Why private", "noise_mech": "gaussian"})],
    ids=lambda v: v if isinstance(v, str) else "&".join(f"{k}={x}" for k, x in v.items()),
)
def test_page_words_have_no_unexplained_jargon(chdir_root, page, params):
    at = open_page(page) if not params else _with_params(page, params)
    assert not at.exception
    problems, texts = [], _texts(at)
    page_text = " ".join(t for _, t in texts)  # a term is explained once on its page (in a text or a help)
    problems += [
        f"{tok!r} without {gloss!r} anywhere on the page"
        for tok, gloss in GLOSSED.items()
        if re.search(rf"\b{tok}\b", page_text) and gloss not in page_text
    ]
    for kind, text in texts:
        problems += [f"{kind}: {tok!r} in {text[:90]!r}" for tok in NEVER if tok in text]
        if kind != "help":  # a help may show the data's own column names as syntax: "e.g. has_rare_disease=true"
            problems += [f"{kind}: field name {m!r} in {text[:90]!r}" for m in SNAKE.findall(text)]
    assert not problems, "\n".join(problems)


def _with_params(page, params):
    from streamlit.testing.v1 import AppTest

    from .pages import ROOT

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(page)
    return at.run()
