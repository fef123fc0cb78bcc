"""An uploaded table on the training and the privacy–utility pages: the one way they store it for background jobs
(:func:`store`, :func:`release`) and the public-bounds editor (:func:`editor`): one row per column with its range
(numbers) or categories (text; the label's classes), pre-filled only from what is public, and the one labelled
choice of learning the empty ones from the rows. The checks and words live in dpcore.training.bounds."""

import hashlib
import json

import streamlit as st

from dpcore.textsafe import md
from dpcore.training import bounds
from dpcore.training.data import release_uploads, save_upload
from pages.ui.common import guarded


def store(data: bytes) -> str | None:
    """Store validated upload bytes for the background jobs about to be queued (only now, never on upload) and return
    the stored path; None after an error shown on the page. The file is deleted once no queued or running job reads
    it (:func:`release`). Whoever owns the jobs owns the file: ownership attaches here, for both pages."""
    return guarded(save_upload, data)


def release() -> None:
    """Delete the uploads no queued or running job needs (finished, cancelled or deleted jobs keep none)."""
    try:
        release_uploads()
    except Exception:
        pass


HELP = (
    "Bounds you know without looking at the rows — a form's allowed range, a code list — keep the scaling "
    "inside ε. Values outside a range are clipped to it; values outside the categories count as 'other'."
)


def _apply_file(raw: bytes, name: str, cols, key: str, tag: str) -> None:
    """Fill the editor's fields from a bounds file (the CLI's ``--bounds-file`` format), once per file: a range into
    the two number boxes, categories into the text box (a number column then shown as codes); "from-data" leaves
    the field empty for the labelled choice below. A column the file names that the table lacks is said."""
    spec = guarded(bounds.read_bytes, raw, name)
    if spec is None:
        return
    index = {c.name: i for i, c in enumerate(cols)}
    for col, b in spec.items():
        if col not in index:
            continue
        base = f"{key}_{tag}_{index[col]}"
        if "lower" in b:
            st.session_state[f"{base}_lower"], st.session_state[f"{base}_upper"] = b["lower"], b["upper"]
            st.session_state[f"{base}_codes"] = False
        elif "categories" in b:
            st.session_state[f"{base}_cats"] = ", ".join(map(str, b["categories"]))
            st.session_state[f"{base}_codes"] = True
    unknown = [c for c in spec if c not in index]
    if unknown:
        st.warning(
            f"The bounds file names {len(unknown)} column{'s' if len(unknown) > 1 else ''} this table does not have: "
            + ", ".join(f"'{md(c)}'" for c in unknown[:10])
            + ("…" if len(unknown) > 10 else "")
        )


@st.cache_data(max_entries=8, show_spinner=False)
def _schema(tag: str, _data: bytes, target: str | None) -> list:
    """:func:`dpcore.training.bounds.schema`, once per file and target (by their digest ``tag``)."""
    return bounds.schema(_data, target)


@st.cache_data(max_entries=8, show_spinner=False)
def _outside(tag: str, _data: bytes, declared: str) -> dict:
    """:func:`dpcore.training.bounds.outside`, once per file (by its digest ``tag``) and declaration."""
    return bounds.outside(_data, json.loads(declared))


def editor(
    data: bytes, target: str | None, key: str, *, widths: dict | None = None, learn_rest: bool = True
) -> tuple[list, dict | None]:
    """Draw the editor for an upload and return (its columns, the bounds as typed so far, or None on a bad entry).
    Widget keys carry a digest of the file and the target, so another file or target starts from its own pre-fill.

    A pre-filled field says "check this" until it is changed; under each column, the owner sees how many of their
    rows fall outside what they declared (:func:`dpcore.training.bounds.outside`: their rows, not covered by ε).

    The one declaration editor of an upload: training and sweeps call it with the label as ``target``; a synthetic
    release with ``widths`` (a dict it fills with each number column's bin width, typed in a third box) and
    ``learn_rest=False`` (nothing is learned from the rows: a column left empty is not released)."""
    tag = hashlib.sha256(data + b"\0" + str(target).encode()).hexdigest()[:10]
    cols = guarded(_schema, tag, data, target)  # read once per file and target, not on every widget move
    if not cols:
        return [], None
    values, notes = {}, {}
    with st.expander("Public bounds of each column", expanded=True):
        st.caption(HELP + " Pre-filled only where a public range or code list is known: check it against your data.")
        bfile = st.file_uploader(
            "Bounds file (JSON, optional)",
            type=["json"],
            key=f"{key}_bfile_{tag}",
            help='The same file as the command line\'s --bounds-file: {"age": [0, 120], "sex": ["F", "M"], '
            '"smoker": ["0", "1"], "notes": "from-data"}. It fills the fields below; you can still edit them.',
        )
        if bfile is not None:
            raw = bfile.getvalue()
            seen = hashlib.sha256(raw).hexdigest()
            if st.session_state.get(f"{key}_bfile_applied_{tag}") != seen:
                st.session_state[f"{key}_bfile_applied_{tag}"] = seen
                _apply_file(raw, bfile.name, cols, key, tag)
        learn = learn_rest and st.checkbox(
            f"Learn the bounds I leave empty from the rows ({bounds.LEARNED_LABEL})",
            key=f"{key}_learn_{tag}",
            help="Reads the min/max (or the values seen) of those columns from your private rows. "
            "That leaks a little about the extreme rows; the run and its statement say so.",
        )
        if not learn_rest:
            st.caption("A column left empty is not released.")
        for i, c in enumerate(cols):
            base = f"{key}_{tag}_{i}"
            start = bounds.prefill(c)
            number = c.kind == "number" and not c.target
            binned = widths is not None
            row = st.columns([2, 1.2, 1.2, 1] if binned else [2, 1.5, 1.5], vertical_alignment="center")
            codes = False
            if number:
                st.session_state.setdefault(f"{base}_codes", c.codes)
                codes = bool(st.session_state[f"{base}_codes"])
            what = "label classes" if c.target else ("codes" if codes else "number" if number else "categories")
            if number and not codes:
                for j, side in enumerate(("lower", "upper")):
                    st.session_state.setdefault(f"{base}_{side}", start[j])
                now = (st.session_state[f"{base}_lower"], st.session_state[f"{base}_upper"])
                filled = start != (None, None) and now == start
            else:
                st.session_state.setdefault(f"{base}_cats", "" if codes and number else start)
                filled = bool(start) and not number and st.session_state[f"{base}_cats"] == start
            check = " :orange-badge[pre-filled: check this]" if filled else ""
            row[0].markdown(f"**{md(c.name)}** · {what}{check}")
            if number:
                row[0].checkbox(
                    "as codes (categories)",
                    key=f"{base}_codes",
                    help="A 0/1 flag or a code list: each value its own category, listed in the box, instead of "
                    "a numeric range.",
                )
            if number and not codes:
                lo = row[1].number_input(
                    f"{c.name}: lower",
                    value=None,
                    key=f"{base}_lower",
                    placeholder="lower",
                    label_visibility="collapsed",
                    format="%g",
                )
                hi = row[2].number_input(
                    f"{c.name}: upper",
                    value=None,
                    key=f"{base}_upper",
                    placeholder="upper",
                    label_visibility="collapsed",
                    format="%g",
                )
                values[c.name] = (lo, hi)
                if binned:
                    widths[c.name] = row[3].number_input(
                        f"{c.name}: bin width",
                        value=None,
                        min_value=0.0,
                        key=f"{base}_width",
                        placeholder="bin width (1)",
                        label_visibility="collapsed",
                        format="%g",
                        help="The synthetic table keeps counts per bin of this width (1 when empty); wider bins "
                        "keep more of each count through the noise.",
                    )
            else:
                values[c.name] = row[1].text_input(
                    f"{c.name}: categories",
                    key=f"{base}_cats",
                    label_visibility="collapsed",
                    placeholder="codes, e.g. 0, 1"
                    if number
                    else "e.g. F, M"
                    if not c.target
                    else "classes, e.g. no, yes",
                )
            notes[c.name] = st.empty()  # filled below: the owner's rows outside what they declared
    b = guarded(bounds.from_form, cols, values, learn)
    if b is not None:
        counts = guarded(_outside, tag, data, json.dumps(b, sort_keys=True)) or {}
        said = False
        for name, slot in notes.items():
            words = bounds.outside_words(b[name], counts.get(name)) if name in b else None
            if words:
                slot.caption(f":orange-badge[your rows only] {words}.")  # numbers only: no typed text
                said = True
        if said:
            st.caption(f"The counts under the columns are {bounds.OWNER_ONLY}: a release never shows them.")
        st.caption(bounds.status_words(cols, b))
    return cols, b
