"""Private query console: noisy answers charged to a persistent (analyst, registered dataset) privacy budget."""

import pandas as pd
import streamlit as st

from dpcore import claims, limits, textsafe
from dpcore.data import datasets, filters
from dpcore.errors import sentence
from dpcore.figures import query_console as figs
from dpcore.noise import composition, mechanisms
from dpcore.noise.charge import Charge
from dpcore.queries import answering, fingerprint, ledger, model
from dpcore.textsafe import md
from pages._ui import chart, guarded, required, share_in_url, table_downloads, widget_state

SOURCES = ("Synthetic medical (seeded)", "Upload a CSV")
KINDS = {"COUNT": "count", "SUM": "sum", "MEAN": "mean", "HISTOGRAM": "histogram"}
DELTA_PRIMES = [1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9]
DELTA_CHOICES = [1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-12]  # a query's δ: only those that fit are offered
# what people read ("Laplace", "Gaussian"): the mechanisms' own labels, details cut; the stored values stay
MECH_NAMES = {m: mechanisms.MECHANISM_LABELS[m].split(" (")[0] for m in mechanisms.QUERY_MECHANISMS}
DEFAULTS = {"qc_analyst": "analyst-1", "qc_source": SOURCES[0], "qc_n": 10_000, "qc_seed": 0, "qc_budget": 1.0,
            "qc_kind": "COUNT", "qc_condition": "has_rare_disease=true", "qc_column": "age", "qc_lo": 18.0,
            "qc_hi": 90.0, "qc_bins": 8, "qc_categories": "", "qc_where": "",
            "qc_mech": "laplace", "qc_eps": 0.1, "qc_delta": 1e-7, "qc_dprime": 1e-6, "qc_kmax": 100,
            "qc_admin": "", "qc_token": "", "qc_reset_total": 1.0, "qc_reset_reason": "", "qc_reset_confirm": False,
            "qc_reg_name": "", "qc_reg_similar": False}
SHARED = ("qc_n", "qc_seed", "qc_kind", "qc_eps", "qc_mech", "qc_delta", "qc_lo", "qc_hi")  # never the analyst
OPTIONS = {"qc_kind": list(KINDS), "qc_mech": list(mechanisms.QUERY_MECHANISMS), "qc_delta": DELTA_CHOICES}
RANGES = {"qc_n": (limits.QUERY_CONSOLE_MIN_ROWS, limits.QUERY_CONSOLE_MAX_ROWS),
          "qc_seed": (0, limits.QUERY_CONSOLE_SEED_MAX), "qc_eps": (0.0, limits.QUERY_EPSILON_MAX),
          "qc_lo": (-limits.RELEASE_MAGNITUDE_MAX, limits.RELEASE_MAGNITUDE_MAX),
          "qc_hi": (-limits.RELEASE_MAGNITUDE_MAX, limits.RELEASE_MAGNITUDE_MAX)}
# Held in session state, not value=: callbacks set some, and a run waiting for an upload draws none of them.
widget_state(DEFAULTS, shared=SHARED, options=OPTIONS, ranges=RANGES)
if st.session_state["qc_kind"] not in KINDS:
    st.session_state["qc_kind"] = DEFAULTS["qc_kind"]
_reset_note = st.session_state.pop("qc_reset_done", None)
if _reset_note:  # after a reset: untick the confirmation before the checkbox is drawn again
    st.session_state.qc_reset_confirm = False


@st.cache_data(show_spinner=False, max_entries=8)
def _medical(n: int, seed: int):
    df = datasets.medical(n, seed)
    return df, fingerprint.dataset_identity(df)


@st.cache_data(show_spinner=False, max_entries=8)
def _uploaded(data: bytes):
    df = datasets.read_csv(data)
    return df, fingerprint.dataset_identity(df)


@st.cache_data(show_spinner=False, max_entries=64)
def _curves(eps: float, kmax: int, dprime: float, mechanism: str, delta: float):
    rho = Charge.gaussian(eps, delta).rho if mechanism == "gaussian" else None
    return composition.curves(eps, kmax, dprime, delta=delta if mechanism == "gaussian" else 0.0, rho=rho)


def _on_column():
    bounds = datasets.PUBLIC_BOUNDS.get(st.session_state.qc_column)
    if bounds:
        st.session_state.qc_lo, st.session_state.qc_hi = bounds


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:,.4g}"


def _short(answer) -> str:
    if not isinstance(answer, dict):
        return ""
    a = answer.get("answer")
    if isinstance(a, list):
        return ", ".join(f"{lab}: {v:,.0f}" for lab, v in zip(answer.get("labels", []), a))
    return _num(a) if isinstance(a, (int, float)) else str(a)


st.title("Private query console")
st.markdown(
    "Ask questions of a dataset and get **noisy answers**. Every new answer costs ε from a budget that belongs to "
    "the **analyst and the dataset's content** — it is kept in a ledger on disk, so a new tab or an app restart "
    "does not refill it. Asking *exactly* the same question again returns the stored answer for free; once the "
    "budget is spent, new questions are refused before any noise is drawn."
)

# --- who and what --------------------------------------------------------------------------------------
c1, c2, c3 = st.columns([1, 1, 1])
analyst = c1.text_input("Analyst name", key="qc_analyst",
                        help="The budget belongs to this name and the dataset. Names that read the same (case, "
                             "spaces, look-alike letters) share one budget. Links to this page never carry it.")
source = c2.radio("Dataset", SOURCES, key="qc_source", horizontal=True)
if source == SOURCES[0]:
    s1, s2 = c3.columns(2)
    n = s1.number_input("Rows", min_value=limits.QUERY_CONSOLE_MIN_ROWS, max_value=limits.QUERY_CONSOLE_MAX_ROWS,
                        step=1000, key="qc_n")
    seed = s2.number_input("Seed", min_value=0, max_value=limits.QUERY_CONSOLE_SEED_MAX, step=1, key="qc_seed")
    df, identity = required(_medical, int(n), int(seed))
    # the built-in data is registered by the app itself (its content is fixed by code)
    required(ledger.register_builtin, f"synthetic medical (n={int(n):,}, seed={int(seed)})", identity)
else:
    up = c3.file_uploader("CSV with a header row", type=["csv"], key="qc_upload",
                          help=f"At most {limits.upload_size()} and {limits.UPLOAD_MAX_ROWS:,} rows.")
    if up is None:
        st.info("Upload a CSV to query it, or switch back to the synthetic medical data.")
        st.stop()
    df, identity = required(_uploaded, up.getvalue())


def _admin_token() -> str | None:
    """The admin token box (disabled, with how to enable it, when the server has no token)."""
    if not ledger.admin_enabled():
        st.caption(f"Admin actions are disabled: start the app with the environment variable "
                   f"`{ledger.ADMIN_ENV}` set to a secret token to enable them.")
        return None
    return st.text_input("Admin token", key="qc_token", type="password",
                         help=f"The token set on the server in {ledger.ADMIN_ENV}.")


def _register_upload(identity: dict) -> None:
    """Admin form: register an uploaded table so that it gets budgets."""
    with st.expander("Admin: register this upload", expanded=True):
        st.caption("Registering gives this table budgets. Data that nearly equals a registered dataset (a column "
                   "added or dropped, a few rows changed) is refused unless you confirm it is different data.")
        token = _admin_token()
        name = st.text_input("Dataset name", key="qc_reg_name")
        similar = st.checkbox("I confirm this is different data, even if it looks like a registered dataset",
                              key="qc_reg_similar")
        if st.button("Register dataset", key="qc_register", disabled=token is None):
            done = guarded(ledger.register_dataset, name, identity, token=token, allow_similar=similar)
            if done is not None:
                st.session_state.qc_registered = True
                st.rerun()


key = identity["fingerprint"]
info = required(ledger.dataset_info, key)
if info is None:
    st.warning("This upload is not a registered dataset, so it has no budget and cannot be queried. The data "
               "owner (admin) registers it once under a name; the same data uploaded again later (rows or columns "
               "in another order, numbers written differently) is recognised.")
    _register_upload(identity)
    st.stop()
if st.session_state.pop("qc_registered", None):
    st.success(f"Registered as '{md(info['name'])}'.")
st.caption(f"Dataset '{md(info['name'])}': {len(df):,} rows × {df.shape[1]} columns · content fingerprint "
           f"`{key[:12]}…` · columns: {', '.join(map(md, df.columns))}")

status = required(ledger.status, analyst, key)
n_rows = info["n_rows"]
if status["exists"]:
    budget = None
    delta_left = status["delta_remaining"]
    st.markdown(f"**You have ε = {status['remaining']:g} of {status['total']:g} and δ = {claims.down(delta_left, 2)} of "
                f"{claims.down(status['delta_total'], 2)} left** on this dataset — each answer protects anyone against what "
                f"could be learned by {model.NEIGHBOUR}.",
                help="ε (epsilon) bounds how much any one answer can change when one record is added or removed; "
                     "smaller is more private. δ is the small chance that bound fails. Both add up over answers.")
    st.caption("The totals were fixed when first used; only an admin changes them (below).")
else:
    delta_left = info["default_delta_total"]
    budget = st.columns([1, 2])[0].number_input(
        "Total budget ε", min_value=0.0, max_value=limits.BUDGET_EPSILON_MAX, step=0.5, key="qc_budget",
        format="%.3f", help="For this analyst on this dataset. Set once: the first question opens it, and only an "
                            "admin changes it afterwards.")
    st.markdown(f"**A new budget: ε = {budget:g} and δ = {claims.down(delta_left, 2)} (1/(10·n) for n = {n_rows:,}) to "
                f"spend** on this dataset, protecting anyone against {model.NEIGHBOUR}.",
                help="ε bounds what one answer reveals about one person; δ is the small chance that bound fails.")

# --- query builder -------------------------------------------------------------------------------------
st.subheader("Ask a question")
b1, b2, b3 = st.columns([1, 2, 2])
kind_label = b1.selectbox("Query", list(KINDS), key="qc_kind")
share_in_url(*SHARED)
kind = KINDS[kind_label]
columns = [str(c) for c in df.columns]
if st.session_state.qc_column not in columns:
    st.session_state.qc_column = columns[0]
kw = {}
if kind == "count":
    kw["condition"] = b2.text_input("Count rows where…", key="qc_condition", placeholder="empty: every row",
                                    help="One condition, COLUMN=VALUE (also !=, <, <=, >, >=), e.g. "
                                         "has_rare_disease=true. Text ignores case; a missing value never matches. "
                                         "The filter below, if any, applies too.")
else:
    column = b2.selectbox("Column", columns, key="qc_column", on_change=_on_column)
    kw["column"] = column
    ckind = filters.column_kind(df, column)
    needs_bounds = kind in ("sum", "mean") or (kind == "histogram" and ckind == "numeric")
    if kind == "histogram" and ckind == "text":
        kw["categories"] = b3.text_input("Public categories (comma-separated)", key="qc_categories",
                                         help="The values seen in the data are private: list the possible ones.")
    elif kind == "histogram" and ckind in ("categorical", "bool"):
        b3.caption("Categories come from the column's declared type (public).")
    if needs_bounds:
        l1, l2 = b3.columns(2)
        big = limits.RELEASE_MAGNITUDE_MAX  # what a release can represent (dpcore.noise.grid.check_release)
        kw["bounds"] = (l1.number_input("Public lower bound", -big, big, key="qc_lo"),
                        l2.number_input("Public upper bound", -big, big, key="qc_hi"))
        if kind == "histogram":
            kw["bins"] = b3.number_input("Bins", min_value=1, max_value=limits.QUERY_MAX_BINS, key="qc_bins")
    if kind == "mean":
        b3.caption("MEAN = noisy sum / noisy count (ε split in two). A mean with a public n protects only against "
                   "replacing a record, so the ledger does not offer it (see the noise page's teaching view).")
kw["where"] = st.text_input("Only among rows where…", key="qc_where", placeholder="optional, e.g. age>=65, sex=F",
                            help="A filter for any kind of question: the question is asked of these rows only. "
                                 "Conditions separated by commas, all must hold (same syntax as a COUNT "
                                 "condition). Empty: all rows.")
m1, m2, m3 = st.columns(3)
mechanism = m1.radio("Mechanism", mechanisms.QUERY_MECHANISMS, key="qc_mech", horizontal=True,
                     format_func=MECH_NAMES.get,
                     help="Laplace: pure ε-DP, δ = 0 (counts: geometric noise, whole numbers). Gaussian: the "
                          "analytic Gaussian (Balle & Wang 2018), which also spends δ.")
eps = m2.number_input("ε for this query", min_value=0.0, max_value=limits.QUERY_EPSILON_MAX, step=0.05, key="qc_eps",
                      format="%.3f", help="What this answer costs from the ε budget. Smaller: more noise, more privacy.")
delta = 0.0
if mechanism == "gaussian":
    cap = min(delta_left or 0.0, ledger.max_query_delta(n_rows))
    fits = [d for d in DELTA_CHOICES if d <= cap]
    if not fits:
        m3.caption(f"No δ left for a Gaussian answer (δ left: {claims.down(delta_left or 0, 2)}); use Laplace (δ = 0).")
        delta = None
    else:
        if st.session_state.qc_delta not in fits:
            st.session_state.qc_delta = fits[0]
        delta = m3.selectbox("δ for this query", fits, key="qc_delta",
                             format_func=claims.delta,
                             help="The chance the ε bound fails, charged to the δ budget. Only values within the "
                                  "δ left and below 1/n are offered.")

if st.button("Ask (spends ε)", key="qc_ask", type="primary", disabled=delta is None):
    st.session_state.pop("qc_last", None)  # a refused question must not leave the previous answer looking current
    q = guarded(model.make_query, kind, epsilon=eps, mechanism=mechanism, delta=delta, **kw)
    if q is not None:
        r = guarded(answering.ask, df, analyst, q, budget=budget, dataset=key)
        if r is not None:
            st.session_state.qc_last = {"analyst": ledger.canonical_analyst(analyst), "key": key, "result": r,
                                        "column": kw.get("column", "")}
            st.rerun()  # draw the page again from the top: the budget sentence above must show the new balance
        status = guarded(ledger.status, analyst, key) or status  # spent, refused or created: show it

last = st.session_state.get("qc_last")
if last and last["key"] == key and last["analyst"] == ledger.canonical_analyst(analyst):
    r, a = last["result"], last["result"]["answer"]
    mech = MECH_NAMES.get(a["mechanism"], a["mechanism"])
    st.markdown(f"**{md(a['query'])}** · {mech} · ε = {a['epsilon']:g}, δ = {claims.delta(a['delta'])} · neighbours: "
                f"{model.NEIGHBOUR}")
    if r["reused"]:
        st.success(f"Same question as before: the stored answer is returned and costs nothing "
                   f"(it cost ε = {r['epsilon_charged']:g} when first drawn).")
    if isinstance(a["answer"], list):
        h1, h2 = st.columns([4, 1])
        chart(figs.histogram_answer(a, last["column"]), key="qc_hist_chart", where=h1)
        h2.metric("ε spent now", f"{r['epsilon_spent']:g}")
        h2.metric("ε remaining", f"{r['remaining']:g}")
        h2.metric("δ remaining", claims.down(r["delta_remaining"], 2))
    else:
        r1, r2, r3, r4 = st.columns(4)
        r1.metric("Noisy answer (DP)", _num(a["answer"]))
        r2.metric("95% interval", f"[{_num(a['interval'][0])}, {_num(a['interval'][1])}]")
        r3.metric("ε spent now", f"{r['epsilon_spent']:g}")
        r4.metric("ε remaining", f"{r['remaining']:g}", help=f"δ remaining: {claims.down(r['delta_remaining'], 2)}")
    spent_how = (f"When first drawn: {a['cost_note']}; this time it is the stored answer, free" if r["reused"]
                 else f"How ε is spent: {a['cost_note']}")  # "ε spent now 0" sat above "ε = 0.1 on one count"
    note = a["interval_note"]  # "Interval: 95% noise interval: …" said it twice
    grid = f" Rounding: {md(a['grid']['note'])}." if a.get("grid") else ""  # a SUM or MEAN states its grid
    st.caption(f"{spent_how}. {note if note.startswith('95%') else 'Interval: ' + note}.{grid} "
               + "Whole-number noise drawn by OpenDP's exact samplers from a cryptographically secure random source; "
                 "never stored or shown.")

# --- budget and history --------------------------------------------------------------------------------
st.subheader("Budget and ledger")
g1, g2 = st.columns([1, 2])
if status["exists"]:
    chart(figs.budget_gauge(status["remaining"], status["total"]), key="qc_gauge", where=g1)
    g1.caption(f"Spent ε = {status['spent']:g} of {status['total']:g} and δ = {claims.delta(status['delta_spent'])} of "
               f"{claims.down(status['delta_total'], 2)} (basic composition, neighbours: {model.NEIGHBOUR}).")
else:  # the budget the first question opens, full: an empty grey gauge read as a budget already spent
    chart(figs.budget_gauge(None, budget, opens=True), key="qc_gauge", where=g1)
hist = pd.DataFrame([{"time": e["time"], "event": e["kind"], "query": e["query"] or "", "ε": e["epsilon"],
                      "δ": e["delta"], "ε charged": e["cost"], "answer": _short(e["answer"]),
                      "note": sentence(e["note"] or "")}  # a cell on its own, like an error box
                     for e in status["history"]],
                    # what was asked, answered and charged first: a phone shows three columns before it scrolls
                    columns=["query", "answer", "ε charged", "event", "ε", "δ", "note", "time"])
with g2:
    st.dataframe(hist, hide_index=True, key="qc_history",  # a long query must not push the answer off a phone
                 column_config={"query": st.column_config.TextColumn(width="medium")})
    if len(hist):
        table_downloads(hist, "ledger_history", key="qc_hist")
    else:
        st.caption("No history yet: ask a question.")

# --- composition ---------------------------------------------------------------------------------------
st.subheader("Composition: what many answers cost together")
st.markdown(
    "The ledger charges by **basic composition** (ε adds up) — always valid. Tighter accounting exists: "
    "**advanced composition** (Dwork–Rothblum–Vadhan) trades a small extra δ′ for ε growing like √k, and "
    "**zCDP/RDP** (zero-concentrated / Rényi DP; natural for Gaussian noise; pure ε-DP counts as ρ = ε²/2) adds "
    "ρ = Δ²/(2σ²) per query."
)
k1, k2, k3 = st.columns(3)
dprime = k1.select_slider("δ′ for advanced composition and zCDP", DELTA_PRIMES, key="qc_dprime",
                          format_func=claims.delta)
kmax = k2.number_input("Show up to k queries", min_value=2, max_value=limits.COMPOSITION_PAGE_K_MAX, step=50,
                       key="qc_kmax")
k3.caption(f"Per query: the builder's ε = {eps:g} with {MECH_NAMES[mechanism]}"
           + (f", δ = {claims.delta(delta)}" if mechanism == "gaussian" else "") + ".")
curves = guarded(_curves, eps, int(kmax), dprime, mechanism, float(delta))
if curves is not None:
    chart(figs.composition_chart(curves, epsilon=eps, delta_prime=dprime, mechanism=mechanism,
                                           budget=status["total"] if status["exists"] else budget),
          key="qc_comp_chart")
spends = guarded(ledger.spends_since_reset, analyst, key) if status["exists"] else []
entries = answering.composition_entries(spends or [])
costs = guarded(composition.ledger_costs, entries, dprime)
if costs is not None:
    st.markdown(f"**This analyst's ledger under each rule** ({len(entries)} paid "
                f"answer{'' if len(entries) == 1 else 's'} since the last reset)")
    st.dataframe(pd.DataFrame([{"rule": c["rule"], "total ε": round(c["epsilon"], 6), "total δ": c["delta"],
                                "how": sentence(c["note"])} for c in costs]), hide_index=True, key="qc_costs")
    st.caption("Every row is a valid upper bound; the smallest ε (at its δ) is the tightest. The budget itself is "
               "enforced with the basic rule.")

# --- admin ---------------------------------------------------------------------------------------------
with st.expander("Admin: reset this budget or change its totals"):
    st.caption("Resetting gives the analyst their ε and δ back. It is recorded in the history; nothing is deleted, "
               "and answers already released stay free to repeat.")
    token = _admin_token()
    a1, a2 = st.columns(2)
    admin = a1.text_input("Admin name (recorded)", key="qc_admin")
    new_total = a2.number_input("New total ε", min_value=0.0, max_value=limits.BUDGET_EPSILON_MAX, step=0.5,
                                key="qc_reset_total", format="%.3f")
    reason = st.text_input("Reason (recorded)", key="qc_reset_reason")
    confirm = st.checkbox(f"I confirm: reset the budget of {md(status['analyst']) or '—'} on this dataset",
                          key="qc_reset_confirm")
    if st.button("Reset budget", key="qc_reset", disabled=not confirm or token is None):
        done = guarded(ledger.reset, analyst, key, admin=admin, token=token, reason=reason, total=new_total,
                       confirm=confirm)
        if done is not None:
            st.session_state.pop("qc_last", None)
            st.session_state.qc_reset_done = done["note"]
            st.rerun()
    if _reset_note:
        st.success(textsafe.md_message(sentence(_reset_note)))  # quotes the admin's name and reason
