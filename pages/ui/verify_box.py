"""The advisor page's "Verify a statement" box: upload (or paste) a statement, see each check pass or fail.

The file is untrusted: at most :data:`dpcore.limits.STATEMENT_MAX_BYTES`, parsed strictly by
:func:`dpcore.statements.verify.verify_bytes`, and every text from it shown as text (a table, or escaped markdown).
"""

from __future__ import annotations

import streamlit as st

from dpcore import limits, textsafe
from dpcore.statements import keys
from dpcore.statements import verify as verification
from pages.ui.common import guarded

AGAINST = {
    "server": "this server's public key",
    "embedded": "the key inside the statement",
}


def verify_box() -> None:
    st.subheader("Verify a statement")
    pub = guarded(keys.published)
    fp = pub["fingerprint"] if pub else None
    st.markdown(
        "Upload a privacy statement (the JSON a run, a sweep, a query history, a synthetic release or the advisor "
        "hands out): its **signature** is checked and **every figure recomputed** from the settings it records. "
        "Anyone can do the same without this server: `python -m dpcore statement --verify FILE --public-key "
        "OWNER.pem`."
    )
    c1, c2 = st.columns([2, 1])
    up = c1.file_uploader(
        "Statement (JSON)",
        type=["json"],
        key="adv_verify_file",
        max_upload_size=max(1, limits.STATEMENT_MAX_BYTES // 2**20),
    )
    against = c2.radio(
        "Check the signature against",
        list(AGAINST),
        format_func=AGAINST.get,
        key="adv_verify_against",
        help="This server's key proves the statement was signed here. The key inside a statement proves only "
        "that it is unchanged since whoever holds that key signed it: compare its fingerprint with the one "
        "the data owner publishes.",
    )
    if fp:
        c2.caption(f"This server's key fingerprint: `{fp}`")
    pasted = st.text_area("…or paste its JSON", key="adv_verify_text", height=100, max_chars=limits.STATEMENT_MAX_BYTES)
    raw = up.getvalue() if up is not None else pasted.encode("utf-8") if pasted.strip() else None
    if raw is None:
        return
    name = "the uploaded file" if up is not None else "the pasted text"
    own = guarded(keys.home_public) if against == "server" else None
    if against == "server" and own is None:
        return  # this server's key could not be read: guarded said why
    res = guarded(verification.verify_bytes, raw, name, public_key=own, home=False)
    if res is None:
        return
    failed = [c for c in res["checks"] if not c["ok"]]
    kind = textsafe.md(str(res.get("kind") or "unknown kind")[:60])
    if res["verified"]:
        st.success(f"**Verified**: all {res['checked']} checks pass ({kind}).", icon=":material/verified_user:")
    else:
        st.error(
            f"**Does not check out**: {len(failed)} of {res['checked']} checks fail ({kind}). First: "
            + textsafe.md_message(failed[0]["detail"]),
            icon=":material/gpp_bad:",
        )
    st.caption(textsafe.md_message(res["signature"].get("note") or ""))
    table = {
        "Check": [c["check"] for c in res["checks"]],
        "Result": ["pass" if c["ok"] else "FAIL" for c in res["checks"]],
        "Detail": [c["detail"] for c in res["checks"]],
    }  # a table shows each text as text: nothing from the file is read as markdown or HTML
    st.dataframe(table, hide_index=True, key="adv_verify_checks")
