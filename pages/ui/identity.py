"""Who uses this session (UI only): a visitor, an analyst (name and key, or the identity provider) or the admin.

The checked :class:`dpcore.budgets.identities.Identity` is kept in this session's state only — never in a link, and
a typed name alone is never one. When ``[auth]`` is configured in ``.streamlit/secrets.toml`` Streamlit's OpenID
Connect sign-in (``st.login``) replaces keys: the identity is the provider's verified e-mail (or subject), and the
admins are listed by identity under ``[dp_explorer] admins = [...]`` in the same file. The admin token box checks
the token against the hash the data owner stored (``python -m dpcore admin init``).

Who owns the work this session starts (:func:`owner`): a signed-in user by their identity, in every tab; a visitor
by the visitor cookie their browser keeps (:mod:`pages.ui.visitor_cookie`), so a reload, a second tab or a
restarted browser finds it again; a browser that keeps no cookie by a random id held in this session only (a
reload loses it: :func:`remembered` says so, and the pages tell the visitor). ``docs/identity.md`` is the model.
"""

from __future__ import annotations

import sqlite3

import streamlit as st

from dpcore import storage, textsafe
from dpcore.budgets import identities
from dpcore.errors import DPError, sentence
from dpcore.jobs import owners
from pages.ui.errors import guarded
from pages.ui.visitor_cookie import COOKIE

_KEY = "_dp_identity"


def _section(name: str) -> dict:
    try:
        if not st.secrets.load_if_toml_exists():
            return {}
        return dict(st.secrets.get(name) or {})
    except Exception:  # a malformed secrets file: Streamlit reports it; here it means "not configured"
        return {}


def oidc_configured() -> bool:
    """True when the server's secrets configure an OpenID Connect provider (``[auth]``)."""
    return bool(_section("auth"))


def current() -> identities.Identity:
    """This session's checked identity (:data:`~dpcore.budgets.identities.VISITOR` when nobody signed in)."""
    if oidc_configured() and st.user.get("is_logged_in"):
        who = guarded(
            identities.from_oidc,
            {k: st.user[k] for k in st.user if k != "tokens"},
            _section("dp_explorer").get("admins", []),
        )
        return who or identities.VISITOR
    return st.session_state.get(_KEY) or identities.VISITOR


def _visitor_token() -> str | None:
    try:
        token = st.context.cookies.get(COOKIE)
    except Exception:  # no browser request behind this run (a bare script, a test harness): no cookie
        return None
    return token if owners.is_visitor_token(token) else None


def owner() -> str:
    """Who this session is to the job store (:mod:`dpcore.jobs.owners`): the signed-in user, else the visitor
    whose browser keeps the visitor cookie (a hash of it: the token never leaves this function), else this
    session alone (a random id in its server-side state, never in a link)."""
    who = current()
    if not who.is_visitor:
        return owners.user_owner(who.name)
    token = _visitor_token()
    if token is not None:
        return owners.visitor_owner(token)
    if "_job_owner" not in st.session_state:
        st.session_state["_job_owner"] = owners.session_owner()
    return st.session_state["_job_owner"]


def remembered() -> bool:
    """Whether this session's work outlives a reload: signed in, or a browser that keeps the visitor cookie."""
    return not current().is_visitor or _visitor_token() is not None


#: What a visitor whose browser keeps no cookie is told wherever they start work.
NOT_REMEMBERED = (
    "Your browser keeps no cookie for this app, so your runs belong to this tab only: a reload or another tab "
    "starts afresh (they keep running, but only an admin can find them again). Allow cookies for this site, or "
    "sign in, to keep them."
)


def check_admin(token) -> identities.Identity | None:
    """The page side of "is this token the admin's" (:func:`dpcore.budgets.identities.check_admin_token`): the
    admin identity, or None with the one error message shown."""
    return guarded(identities.check_admin_token, token)


def _checked(fn, *args, secret: str) -> None:
    """A sign-in callback: the secret leaves its widget at once; only a checked identity stays (or the error, shown
    by :func:`panel`)."""
    st.session_state[secret] = ""
    try:
        st.session_state[_KEY] = fn(*args)
        st.session_state.pop("id_error", None)
    except (DPError, sqlite3.Error, OSError) as err:
        st.session_state["id_error"] = str(err) if isinstance(err, DPError) else storage.fault_message(err)


def _sign_in_key() -> None:
    _checked(
        identities.sign_in, st.session_state.get("id_name", ""), st.session_state.get("id_key", ""), secret="id_key"
    )


def _sign_in_admin() -> None:
    _checked(identities.check_admin_token, st.session_state.get("id_token", ""), secret="id_token")


def _sign_out() -> None:
    st.session_state.pop(_KEY, None)


def panel() -> identities.Identity:
    """Say who this session is and offer sign-in (or sign-out); returns the identity."""
    who = current()
    oidc = oidc_configured()
    if who.is_visitor:
        st.markdown("**Not signed in**: the built-in synthetic data only.")
    else:
        st.markdown(f"Signed in as {textsafe.md(who.describe())}.")
    error = st.session_state.pop("id_error", None)
    with st.expander("Sign in" if who.is_visitor else "Account", icon=":material/key:", expanded=bool(error)):
        if error:
            st.error(textsafe.md_message(sentence(error)))
        if who.is_visitor:
            st.caption("Analysts sign in here to use the quota the data owner gave them.")
        if not who.is_visitor:
            if oidc and who.via == "oidc":
                if st.button("Log out", key="id_logout"):
                    st.logout()
            else:
                st.button("Sign out", key="id_sign_out", on_click=_sign_out)
        elif oidc:
            st.caption(
                "Sign in with your organisation's identity provider; your quota is kept under your verified e-mail."
            )
            if st.button("Log in", key="id_login", type="primary"):
                st.login()
        else:
            c1, c2 = st.columns(2)
            c1.text_input("Analyst name", key="id_name")
            c2.text_input(
                "Key",
                key="id_key",
                type="password",
                help="The key the data owner gave you with your quota (shown to them once).",
            )
            st.button("Sign in", key="id_sign_in", on_click=_sign_in_key)
        if who.is_visitor:
            st.caption("The data owner: sign in with the admin token to register datasets and grant quotas.")
            st.text_input(
                "Admin token",
                key="id_token",
                type="password",
                help="The token whose hash `python -m dpcore admin init` stored on the server.",
            )
            st.button("Sign in as admin", key="id_admin", on_click=_sign_in_admin)
    return current()
