"""My work, a section of Home: this browser's (or signed-in user's) training runs, sweeps, synthetic-data studies and
releases, newest first (:func:`dpcore.jobs.work.list_work`), each opening its page; a release, whose upload stayed
in the session that made it, opens here. Shown only when there is work. Who "you" are: :mod:`pages.ui.identity`
(``docs/identity.md``)."""

from __future__ import annotations

import streamlit as st

from dpcore import textsafe
from dpcore.jobs import display, store, work
from pages.ui import identity as _identity
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


def _whose() -> str:
    who = _identity.current()
    if not who.is_visitor:
        return (
            f"Signed in as {textsafe.md(who.describe())}: yours in every browser you sign in from (work started "
            "before signing in stays with the browser that started it)."
        )
    if _identity.remembered():
        return (
            "They belong to **this browser**: a reload, a new tab or a browser restart finds them here; another "
            "browser or device does not, nor does anyone else. The browser keeps a random id in a cookie for 30 "
            "days after your last visit; clearing this site's cookies leaves them behind for good (sign in to keep "
            "them anywhere)."
        )
    return _identity.NOT_REMEMBERED


def _open(item: work.WorkItem, caller) -> None:
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
        from pages.ui import reid_synth  # lazy: it imports pandas (~0.5 s), and Home draws this section

        reid_synth.open_study(job, SYNTH_TAB)
        st.switch_page("pages/reidentification.py")
    st.session_state["mw_release"] = item.id  # a release opens here


def section() -> None:
    """Draw My work (nothing when there is none)."""
    caller = job_caller()
    items = guarded(work.list_work, caller) or []
    if not items:
        return
    opening = st.session_state.pop("mw_open", None)  # an Open button of the list (a fragment: no page switch)
    if opening is not None:
        _open(next((w for w in items if (w.kind, w.id) == opening), work.WorkItem(*opening, "", "", 0.0)), caller)

    with st.container(border=True, key="mw"):
        st.markdown(
            "**My work**: your training runs, sweeps, synthetic-data studies and releases, newest first. " + _whose()
        )
        active = any(w.active for w in items)
        st.fragment(run_every=3.0 if active else None)(_list)(caller, items, active)
        release = st.session_state.get("mw_release")
        job = guarded(store.get, release, caller=caller, history=False) if release else None
        if job is not None:
            st.markdown(f"**{textsafe.md(job.label or job.id)}**")
            if job.status == "done":
                from pages.ui import reid_synth  # lazy: as in _open

                reid_synth.release_result(job, caller, key="mw_release")
            elif job.status == "failed":
                st.error(f"The release failed: {textsafe.md_message(job.error or '')}")
            else:
                st.info(f"The release is {job.status}.")


def _list(caller, items: list[work.WorkItem], active: bool) -> None:
    """The list, a fragment refreshed every few seconds while something in it runs (the statuses change in place)."""
    if active:
        items = guarded(work.list_work, caller) or items
    for kind, heading in work.PLURALS.items():
        mine = [w for w in items if w.kind == kind]
        if not mine:
            continue
        st.markdown(f"*{heading}* ({len(mine)})")
        for w in mine:
            name, status, when, go = st.columns([5, 1, 2, 1], vertical_alignment="center")
            name.markdown(textsafe.md(w.name))
            status.markdown(STATUS.get(w.status, textsafe.md(w.status)))
            when.caption(display.ran_at({"created": w.created}, "created"))
            if go.button("Open", key=f"mw_open_{w.kind}_{w.id}", icon=":material/open_in_new:"):
                st.session_state["mw_open"] = (w.kind, w.id)
                st.rerun(scope="app")
