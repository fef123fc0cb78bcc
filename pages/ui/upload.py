"""An uploaded table on the training and the privacy–utility pages: the one way they store it for background jobs
(:func:`store`, :func:`release`) and the public-bounds editor (:func:`editor`): one row per column with its range
(numbers) or categories (text; the label's classes), pre-filled only from what is public, and the one labelled
choice of learning the empty ones from the rows. The checks and words live in dpcore.training.bounds."""

import hashlib

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


def editor(data: bytes, target: str, key: str) -> tuple[list, dict | None]:
    """Draw the editor for an upload and return (its columns, the bounds as typed so far, or None on a bad entry).
    Widget keys carry a digest of the file and the target, so another file or target starts from its own pre-fill."""
    cols = guarded(bounds.schema, data, target)
    if not cols:
        return [], None
    tag = hashlib.sha256(data + b"\0" + str(target).encode()).hexdigest()[:10]
    values = {}
    with st.expander("Public bounds of each column", expanded=True):
        st.caption(HELP + " Pre-filled only where a public range or code list is known (e.g. age 18–90).")
        learn = st.checkbox(
            f"Learn the bounds I leave empty from the rows ({bounds.LEARNED_LABEL})",
            key=f"{key}_learn_{tag}",
            help="Reads the min/max (or the values seen) of those columns from your private rows. "
            "That leaks a little about the extreme rows; the run and its statement say so.",
        )
        for i, c in enumerate(cols):
            row = st.columns([2, 1.5, 1.5], vertical_alignment="center")
            what = "label classes" if c.target else ("number" if c.kind == "number" else "categories")
            row[0].markdown(f"**{md(c.name)}** · {what}")
            base = f"{key}_{tag}_{i}"
            start = bounds.prefill(c)
            if c.kind == "number" and not c.target:
                for j, side in enumerate(("lower", "upper")):
                    st.session_state.setdefault(f"{base}_{side}", start[j])
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
            else:
                st.session_state.setdefault(f"{base}_cats", start)
                values[c.name] = row[1].text_input(
                    f"{c.name}: categories",
                    key=f"{base}_cats",
                    label_visibility="collapsed",
                    placeholder="e.g. F, M" if not c.target else "classes, e.g. no, yes",
                )
    b = guarded(bounds.from_form, cols, values, learn)
    if b is not None:
        st.caption(bounds.status_words(cols, b))
    return cols, b
