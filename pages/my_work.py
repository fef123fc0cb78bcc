"""My work: this browser's (or signed-in user's) training runs, sweeps, synthetic-data studies and releases, newest
first (:func:`dpcore.jobs.work.list_work`), each opening its page; a release, whose upload stayed in the session
that made it, opens here. Who "you" are: :mod:`pages.ui.identity` (``docs/identity.md``)."""

import streamlit as st

from dpcore import textsafe
from dpcore.jobs import display, store, work
from pages.ui import identity as _identity
from pages.ui import reid_synth
from pages.ui import training_form as form
from pages.ui.common import guarded, job_caller

SYNTH_TAB = "6 · DP synthetic data"  # the re-identification page's tab that shows a study
STATUS = {
    "queued": ":grey-badge[queued]",
    "running": ":blue-badge[running]",
    "done": ":green-badge[done]",
    "failed": ":red-badge[failed]",
    "cancelled": ":orange-badge[cancelled]",
}

st.title("My work")
who = _identity.current()
caller = job_caller()
if not who.is_visitor:
    st.markdown(
        f"Signed in as {textsafe.md(who.describe())}: your training runs, sweeps, synthetic-data studies and "
        "releases, newest first, in every browser you sign in from. Work started before signing in stays with "
        "the browser that started it."
    )
elif _identity.remembered():
    st.markdown(
        "Your training runs, sweeps, synthetic-data studies and releases, newest first. They belong to **this "
        "browser**: a reload, a new tab or a restart of the browser finds them here, another browser or device "
        "does not (nor does anyone else). The browser keeps a random id in a cookie for 30 days after your last "
        "visit; clearing this site's cookies leaves your work behind for good (sign in to keep it anywhere)."
    )
else:
    st.warning(_identity.NOT_REMEMBERED, icon=":material/cookie_off:")

items = guarded(work.list_work, caller) or []
if not items:
    st.info(
        "Nothing yet. Start a training run on **DP training**, a sweep on **Privacy–utility curve**, or a "
        "synthetic-data study or release on **Re-identification** (tabs 6 and 7): it appears here.",
        icon=":material/work_history:",
    )
    st.stop()


def _open(item: work.WorkItem) -> None:
    """Point the item's page at it, then go there (the page reads this session's state, never a link)."""
    if item.kind == "sweep":
        st.session_state["pu_sweep"] = item.id
        st.switch_page("pages/privacy_utility.py")
    job = guarded(store.get, item.id, caller=caller, history=False)
    if job is None:
        return
    if item.kind == "run":
        form.take(job.params)
        st.session_state["tr_pick"] = item.id
        st.switch_page("pages/training.py")
    if item.kind == "study":
        reid_synth.open_study(job, SYNTH_TAB)
        st.switch_page("pages/reidentification.py")
    st.session_state["mw_release"] = item.id  # a release opens here


opening = st.session_state.pop("mw_open", None)  # the Open button of the list below (a fragment: no page switch)
if opening is not None:
    _open(next((w for w in items if (w.kind, w.id) == opening), work.WorkItem(*opening, "", "", 0.0)))
active = any(w.active for w in items)


@st.fragment(run_every=3.0 if active else None)
def _list() -> None:
    shown = guarded(work.list_work, caller) or items
    for kind, heading in work.PLURALS.items():
        mine = [w for w in shown if w.kind == kind]
        if not mine:
            continue
        st.subheader(f"{heading} ({len(mine)})")
        for w in mine:
            name, status, when, go = st.columns([5, 1, 2, 1], vertical_alignment="center")
            name.markdown(textsafe.md(w.name))
            status.markdown(STATUS.get(w.status, textsafe.md(w.status)))
            when.caption(display.ran_at({"created": w.created}, "created"))
            if go.button("Open", key=f"mw_open_{w.kind}_{w.id}", icon=":material/open_in_new:"):
                st.session_state["mw_open"] = (w.kind, w.id)
                st.rerun(scope="app")


_list()

release = st.session_state.get("mw_release")
if release:
    job = guarded(store.get, release, caller=caller, history=False)
    if job is not None:
        st.subheader(textsafe.md(job.label or job.id))
        if job.status == "done":
            reid_synth.release_result(job, caller, key="mw_release")
        elif job.status == "failed":
            st.error(f"The release failed: {textsafe.md_message(job.error or '')}")
        else:
            st.info(f"The release is {job.status}.")
