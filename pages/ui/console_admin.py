"""The query console's admin panel (UI only): register a dataset, change its cap, grant, reset and revoke quotas.

Shown only to a session signed in as the admin (:mod:`pages.ui.identity`); every action is checked again by dpcore
(:func:`dpcore.budgets.identities.require_admin`) and recorded in the history with who did it and why.
"""

from __future__ import annotations

import streamlit as st

from dpcore import limits, textsafe
from dpcore.budgets import identities, quotas, registry
from dpcore.data import datasets
from dpcore.errors import sentence
from pages.ui.common import guarded

ADMIN_DEFAULTS = {
    "adm_name": "",
    "adm_eps": 1.0,
    "adm_per_query": 0.0,
    "adm_similar": False,
    "adm_public_n": False,
    "adm_cap": 1.0,
    "adm_cap_reason": "",
    "adm_analyst": "",
    "adm_quota": 0.5,
    "adm_oidc": False,
    "adm_reset_who": "",
    "adm_reset_total": 0.5,
    "adm_reset_reason": "",
    "adm_reset_confirm": False,
}


@st.cache_data(show_spinner=False, max_entries=2)
def _upload(data: bytes):
    return datasets.read_csv(data)


def _done(note: str, *, untick: bool = False) -> None:
    st.session_state["adm_done"] = note
    st.session_state["adm_untick"] = untick  # a drawn checkbox can only be unticked before it is drawn again
    st.rerun()


def panel(who: identities.Identity, info: dict, status: dict) -> None:
    for k, v in ADMIN_DEFAULTS.items():
        st.session_state.setdefault(k, v)
    if st.session_state.pop("adm_untick", False):
        st.session_state.adm_reset_confirm = False
    st.subheader("Admin")
    done = st.session_state.pop("adm_done", None)
    if done:
        st.success(textsafe.md_message(sentence(done)))
    key = st.session_state.pop("adm_key", None)
    if key:
        st.info(f"The key for {textsafe.md(key['analyst'])}, shown once — give it to them now; only its hash is kept:")
        st.code(key["key"], language=None)

    with st.expander("Register a dataset (copied into the server's home; analysts choose it by name)"):
        up = st.file_uploader(
            "CSV with a header row",
            type=["csv"],
            key="adm_upload",
            help=f"At most {limits.upload_size()} and {limits.UPLOAD_MAX_ROWS:,} rows.",
        )
        st.text_input("Dataset name", key="adm_name")
        c1, c2 = st.columns(2)
        c1.number_input(
            "Cap: total ε for everyone",
            min_value=0.0,
            max_value=limits.BUDGET_EPSILON_MAX,
            step=0.5,
            key="adm_eps",
            format="%.3f",
        )
        c2.number_input(
            "Most ε per answer (0: no cap below the limit)",
            min_value=0.0,
            max_value=limits.QUERY_EPSILON_MAX,
            step=0.5,
            key="adm_per_query",
            format="%.3f",
        )
        st.checkbox(
            "I confirm this is different data, even if it holds the same people as a registered dataset",
            key="adm_similar",
        )
        st.checkbox(
            "The number of rows is public",
            key="adm_public_n",
            help="Analysts then read the dataset's exact number of rows, and DP training and sweeps may run on it "
            "(their sample rate reads n). Otherwise only you see n; analysts can ask a DP count.",
        )
        if st.button("Register dataset", key="adm_register", disabled=up is None):
            df = guarded(_upload, up.getvalue())
            if df is not None:
                per_query = st.session_state.adm_per_query or None
                r = guarded(
                    registry.register,
                    who,
                    st.session_state.adm_name,
                    df,
                    data=up.getvalue(),
                    epsilon=st.session_state.adm_eps,
                    max_query_epsilon=per_query,
                    allow_similar=st.session_state.adm_similar,
                    public_n=bool(st.session_state.get("adm_public_n")),
                )
                if r is not None:
                    _done(f"registered {r['name']!r} ({r['n_rows']:,} rows) with a cap of ε = {r['cap']:g}")

    st.markdown(f"**This dataset: {textsafe.md(info['name'])}**")
    with st.expander("Change its cap (recorded, with the reason)"):
        st.number_input(
            "New total ε cap",
            min_value=0.0,
            max_value=limits.BUDGET_EPSILON_MAX,
            step=0.5,
            key="adm_cap",
            format="%.3f",
        )
        st.text_input("Reason (recorded)", key="adm_cap_reason")
        if st.button("Change the cap", key="adm_set_cap"):
            r = guarded(
                registry.set_cap,
                who,
                info["fingerprint"],
                epsilon=st.session_state.adm_cap,
                reason=st.session_state.adm_cap_reason,
            )
            if r is not None:
                _done(r["note"])
    with st.expander("Grant an analyst a quota on it"):
        st.text_input(
            "Analyst name"
            + (" (their verified e-mail with the identity provider)" if st.session_state.adm_oidc else ""),
            key="adm_analyst",
        )
        st.number_input(
            "Quota ε", min_value=0.0, max_value=limits.BUDGET_EPSILON_MAX, step=0.5, key="adm_quota", format="%.3f"
        )
        st.checkbox("Signs in through the identity provider (no key)", key="adm_oidc")
        if st.button("Grant", key="adm_grant"):
            r = guarded(
                quotas.grant,
                who,
                st.session_state.adm_analyst,
                info["fingerprint"],
                epsilon=st.session_state.adm_quota,
                oidc=st.session_state.adm_oidc,
            )
            if r is not None:
                if r.get("key"):
                    st.session_state["adm_key"] = {"analyst": r["analyst"], "key": r["key"]}
                _done(
                    f"granted {r['analyst']!r} ε = {r['epsilon']:g} on {r['dataset']!r}"
                    + (f"; {r['note']}" if r.get("note") else "")
                )
    with st.expander("Reset an analyst's quota, or revoke it"):
        st.text_input("Analyst name", key="adm_reset_who")
        st.number_input(
            "New quota ε",
            min_value=0.0,
            max_value=limits.BUDGET_EPSILON_MAX,
            step=0.5,
            key="adm_reset_total",
            format="%.3f",
        )
        st.text_input("Reason (recorded)", key="adm_reset_reason")
        st.checkbox(
            "I confirm: give this analyst their quota back (the dataset's released total stays)",
            key="adm_reset_confirm",
        )
        b1, b2 = st.columns(2)
        if b1.button("Reset quota", key="adm_reset", disabled=not st.session_state.adm_reset_confirm):
            r = guarded(
                quotas.reset,
                who,
                st.session_state.adm_reset_who,
                info["fingerprint"],
                reason=st.session_state.adm_reset_reason,
                total=st.session_state.adm_reset_total,
                confirm=st.session_state.adm_reset_confirm,
            )
            if r is not None:
                _done(r["note"], untick=True)
        if b2.button("Close the quota on this dataset", key="adm_close"):
            r = guarded(quotas.close, who, st.session_state.adm_reset_who, info["fingerprint"])
            if r is not None:
                _done(f"closed the quota of analyst {r['analyst']!r} on dataset {r['dataset']!r}")
