"""Private query console: noisy answers on a registered dataset, charged to its cap and the asker's quota.

Past 500 formatted lines, one idea: the console's widgets (dataset, question, answer, history) in the order a
visitor meets them; the answers, charges and words come from dpcore."""

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

import pandas as pd
import streamlit as st

from dpcore import claims, limits
from dpcore.budgets import amounts, quotas, registry, visitors
from dpcore.data import datasets, filters
from dpcore.errors import DPError, sentence
from dpcore.figures import query_console as figs
from dpcore.noise import composition, interpret, mechanisms
from dpcore.noise.charge import Charge
from dpcore.queries import answering, caution, fingerprint, model
from dpcore.textsafe import md, md_message
from pages.ui import console_admin as _console_admin
from pages.ui import first_screen
from pages.ui import identity as _identity
from pages.ui.common import chart, guarded, headline_md, required, share_in_url, table_downloads, unbroken, widget_state

BUILTIN = "Built-in synthetic medical data"
KINDS = {"COUNT": "count", "SUM": "sum", "MEAN": "mean", "HISTOGRAM": "histogram"}
DELTA_PRIMES = [1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9]
DELTA_CHOICES = [1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-12]  # a query's δ: only those that fit are offered
# what people read ("Laplace", "Gaussian"): the mechanisms' own labels, details cut; the stored values stay
MECH_NAMES = {m: mechanisms.MECHANISM_LABELS[m].split(" (")[0] for m in mechanisms.QUERY_MECHANISMS}
DEFAULTS = {
    "qc_dataset": BUILTIN,
    "qc_n": 10_000,
    "qc_seed": 0,
    "qc_kind": "COUNT",
    "qc_condition": "has_rare_disease=true",
    "qc_column": "age",
    "qc_lo": 18.0,
    "qc_hi": 90.0,
    "qc_bins": 8,
    "qc_categories": "",
    "qc_where": "",
    "qc_mech": "laplace",
    "qc_eps": 0.1,
    "qc_delta": 1e-7,
    "qc_dprime": 1e-6,
    "qc_kmax": 100,
}
SHARED = ("qc_n", "qc_seed", "qc_kind", "qc_eps", "qc_mech", "qc_delta", "qc_lo", "qc_hi")  # never who asks
OPTIONS = {"qc_kind": list(KINDS), "qc_mech": list(mechanisms.QUERY_MECHANISMS), "qc_delta": DELTA_CHOICES}
RANGES = {
    "qc_n": (limits.QUERY_CONSOLE_MIN_ROWS, limits.QUERY_CONSOLE_MAX_ROWS),
    "qc_seed": (0, limits.QUERY_CONSOLE_SEED_MAX),
    "qc_eps": (0.0, limits.QUERY_EPSILON_MAX),
    "qc_lo": (-limits.RELEASE_MAGNITUDE_MAX, limits.RELEASE_MAGNITUDE_MAX),
    "qc_hi": (-limits.RELEASE_MAGNITUDE_MAX, limits.RELEASE_MAGNITUDE_MAX),
}
# Held in session state, not value=: callbacks set some, and a run may not draw all of them.
widget_state(DEFAULTS, shared=SHARED, options=OPTIONS, ranges=RANGES)
if st.session_state["qc_kind"] not in KINDS:
    st.session_state["qc_kind"] = DEFAULTS["qc_kind"]


@st.cache_data(show_spinner=False, max_entries=8)
def _medical(n: int, seed: int):
    df = datasets.medical(n, seed)
    return df, fingerprint.dataset_identity(df)


@st.cache_data(show_spinner=False, max_entries=limits.CACHE_MAX_ENTRIES)
def _registered(fp: str):
    """A registered dataset's rows (the server's copy). Only reached after the quota check below."""
    return registry.load(registry.info(fp))


@st.cache_data(show_spinner=False, max_entries=64)
def _curves(eps: float, kmax: int, dprime: float, mechanism: str, delta: float):
    rho = Charge.gaussian(eps, delta).rho if mechanism == "gaussian" else None
    return composition.curves(eps, kmax, dprime, delta=delta if mechanism == "gaussian" else 0.0, rho=rho)


def _on_column():
    bounds = datasets.PUBLIC_BOUNDS.get(st.session_state.qc_column)
    if bounds:
        st.session_state.qc_lo, st.session_state.qc_hi = bounds


def _decimals(half: float) -> int:
    """Decimals that show an interval's half-width to two significant digits; none for a whole one (a count's)."""
    if not math.isfinite(half) or float(half).is_integer():
        return 0
    return max(0, -Decimal(f"{half:.1e}").as_tuple().exponent)


def _shown(answer: dict) -> tuple[str, str, str]:
    """A single number's answer and its 95% interval's ends, all three with the decimals its half-width calls for
    ("65" beside "[64.62, 65]" read as two precisions); the ends rounded outwards, so the interval shown still
    holds the one computed."""
    lo, hi = answer["interval"]
    d = _decimals((hi - lo) / 2)
    step = Decimal(1).scaleb(-d)

    def out(x: float, rounding: str) -> str:
        return f"{Decimal(repr(float(x))).quantize(step, rounding=rounding):,.{d}f}" if math.isfinite(x) else f"{x}"

    return f"{answer['answer']:,.{d}f}", out(lo, ROUND_FLOOR), out(hi, ROUND_CEILING)


EVENT_WORDS = {
    "grant": "quota granted",
    "reset": "quota reset",
    "close": "quota closed",
    "create": "dataset created",
    "register": "dataset registered",
    "cap": "cap set",
    "copy": "copied",
    "key": "key issued",
    "revoke": "key revoked",
    "migrate": "ledger migrated",
    "refund": "refunded",
}
RELEASE_WORDS = {"training": "training run", "sweep": "sweep", "synthetic": "synthetic table", "planned": "planned"}


def _short(answer) -> str:
    if not isinstance(answer, dict):
        return ""
    a = answer.get("answer")
    if isinstance(a, list):
        return ", ".join(f"{lab}: {v:,.0f}" for lab, v in zip(answer.get("labels", []), a))
    return _shown(answer)[0] if isinstance(a, (int, float)) else str(a)


st.title("Private query console")
# The first screen: what is left to ask with (headline) and its gauge, beside who is asking; both filled once the
# dataset below is chosen and the ledger read.
head = first_screen.headline()
top_chart, top_side = st.columns([2, 3])
gauge = first_screen.main_chart(top_chart)
with top_side:
    with st.expander("How answers are charged", icon=":material/help:"):
        st.markdown(
            "Ask questions of a dataset and get **noisy answers**. The data owner gives each dataset one **cap**: "
            "the ε and δ that every answer on it, by anyone, spends together — the guarantee to each person in the "
            "data. Inside it, each analyst spends their own **quota**. Both are kept in a ledger on the server, so "
            "a new tab or a restart refills nothing; asking *exactly* the same question again returns the stored "
            "answer for free, and a question that does not fit is refused before any noise is drawn."
        )
    who = _identity.panel()
names = [d["name"] for d in (guarded(registry.visible, who) or []) if not d["builtin"]]
if st.session_state.qc_dataset not in [BUILTIN, *names]:
    st.session_state.qc_dataset = BUILTIN
if st.session_state.get("qc_landed_for") != who.name:  # just signed in (or out): land on their own data
    st.session_state["qc_landed_for"] = who.name
    if not who.is_visitor and names and st.session_state.qc_dataset == BUILTIN:
        st.session_state.qc_dataset = names[0]
c1, c2 = st.columns([2, 1])
choice = c1.selectbox(
    "Dataset",
    [BUILTIN, *names],
    key="qc_dataset",
    help="Registered datasets are kept on the server; you choose them by name. Visitors see the "
    "built-in synthetic data only; analysts also the datasets they have a quota on.",
)
if choice == BUILTIN:
    s1, s2 = c2.columns(2)
    n = s1.number_input(
        "Rows", min_value=limits.QUERY_CONSOLE_MIN_ROWS, max_value=limits.QUERY_CONSOLE_MAX_ROWS, step=1000, key="qc_n"
    )
    seed = s2.number_input("Seed", min_value=0, max_value=limits.QUERY_CONSOLE_SEED_MAX, step=1, key="qc_seed")
    df, identity = required(_medical, int(n), int(seed))
    info = required(visitors.open_builtin, int(n), int(seed), identity)
    with st.expander("The built-in data", icon=":material/info:"):
        st.caption(
            f"Another size or seed is another synthetic population, with its own cap and visitors' quota: nobody "
            f"real is in any of them. Each has a cap of ε = {limits.BUILTIN_EPSILON_CAP:g} (at most "
            f"{limits.BUILTIN_MAX_QUERY_EPSILON:g} per answer), and visitors share ε = "
            f"{limits.VISITORS_EPSILON_QUOTA:g} of it."
        )
else:
    info = required(registry.info, choice)
    if info is None:
        st.stop()
key = info["fingerprint"]
status = required(quotas.status, who, key, latest=limits.HISTORY_ROWS_SHOWN)  # who may not read it: one message
if choice != BUILTIN:
    df = required(_registered, key)
n_rows = status.get("n_rows")  # the admin's, or public; otherwise not released (a DP count is charged like any answer)
st.caption(  # the names in the tooltip: on the first screen a column list was two lines of small print
    (f"{n_rows:,} rows × {df.shape[1]} columns" if n_rows is not None else f"{df.shape[1]} columns")
    + f" · {md(status['number_of_rows'])}",
    help=f"Dataset '{md(info['name'])}'; columns: {', '.join(map(md, df.columns))}",
)

cap, quota = status["cap"], status["quota"]


def _everyone(cap: dict) -> str:
    return (
        f"ε = {cap['remaining']:g} of {cap['epsilon']:g} and δ = {claims.down(cap['delta_remaining'], 2)} of "
        f"{claims.down(cap['delta'], 2)} left for everyone"
    )


delta_left = cap["delta_remaining"] if quota is None else min(quota["delta_remaining"], cap["delta_remaining"])
ids = status["person_identifiers"]
if ids:
    named = ", ".join("'" + md(c) + "'" for c in ids)
    st.warning(
        f"Column{'s' if len(ids) > 1 else ''} {named} look"
        f"{'' if len(ids) > 1 else 's'} like a person identifier: if one person has several rows here, ε "
        "protects each row and that person only at up to k·ε for k rows."
    )

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
    kw["condition"] = b2.text_input(
        "Count rows where…",
        key="qc_condition",
        placeholder="empty: every row",
        help="One condition, COLUMN=VALUE (also !=, <, <=, >, >=), e.g. "
        "has_rare_disease=true. Text ignores case; a missing value never matches. "
        "The filter below, if any, applies too.",
    )
else:
    column = b2.selectbox("Column", columns, key="qc_column", on_change=_on_column)
    kw["column"] = column
    ckind = filters.column_kind(df, column)
    needs_bounds = kind in ("sum", "mean") or (kind == "histogram" and ckind == "numeric")
    if kind == "histogram" and ckind == "text":
        kw["categories"] = b3.text_input(
            "Public categories (comma-separated)",
            key="qc_categories",
            help="The values seen in the data are private: list the possible ones.",
        )
    elif kind == "histogram" and ckind in ("categorical", "bool"):
        b3.caption("Categories come from the column's declared type (public).")
    if needs_bounds:
        l1, l2 = b3.columns(2)
        big = limits.RELEASE_MAGNITUDE_MAX  # what a release can represent (dpcore.noise.grid.check_release)
        kw["bounds"] = (
            l1.number_input("Public lower bound", -big, big, key="qc_lo"),
            l2.number_input("Public upper bound", -big, big, key="qc_hi"),
        )
        if kind == "histogram":
            kw["bins"] = b3.number_input("Bins", min_value=1, max_value=limits.QUERY_MAX_BINS, key="qc_bins")
    if kind == "mean":
        b3.caption(
            "MEAN = noisy sum / noisy count (ε split in two). A mean with a public n protects only against "
            "replacing a record, so the ledger does not offer it (see the noise page's teaching view)."
        )
kw["where"] = st.text_input(
    "Only among rows where…",
    key="qc_where",
    placeholder="optional, e.g. age>=65, sex=F",
    help="A filter for any kind of question: the question is asked of these rows only. "
    "Conditions separated by commas, all must hold (same syntax as a COUNT "
    "condition). Empty: all rows.",
)
m1, m2, m3 = st.columns(3)
mechanism = m1.radio(
    "Mechanism",
    mechanisms.QUERY_MECHANISMS,
    key="qc_mech",
    horizontal=True,
    format_func=MECH_NAMES.get,
    help="Laplace: pure ε-DP, δ = 0 (counts: geometric noise, whole numbers). Gaussian: the "
    "discrete Gaussian (whole numbers; its σ raised until its own δ at ε holds), which also "
    "spends δ.",
)
eps = m2.number_input(
    "ε for this query",
    min_value=0.0,
    max_value=limits.QUERY_EPSILON_MAX,
    step=0.05,
    key="qc_eps",
    format="%.3f",
    help="What this answer costs, from the dataset's cap and your quota. Smaller: more noise, more privacy.",
)
delta = 0.0
if mechanism == "gaussian":
    top = min(delta_left or 0.0, amounts.max_query_delta(n_rows)) if n_rows else (delta_left or 0.0)
    fits = [d for d in DELTA_CHOICES if d <= top]
    if not fits:
        m3.caption(f"No δ left for a Gaussian answer (δ left: {claims.down(delta_left or 0, 2)}); use Laplace (δ = 0).")
        delta = None
    else:
        if st.session_state.qc_delta not in fits:
            st.session_state.qc_delta = fits[0]
        delta = m3.selectbox(
            "δ for this query",
            fits,
            key="qc_delta",
            format_func=claims.delta,
            help="Charged to the δ cap and quota. δ is not the chance that the ε bound fails "
            "(the answer states that chance). Only values within the δ left and below 1/n are "
            "offered.",
        )


def _query():
    """The builder's question, or None while it is not valid (its error shows when Ask is pressed)."""
    try:
        return model.make_query(kind, epsilon=eps, mechanism=mechanism, delta=delta, **kw)
    except DPError:
        return None


def _ask(q) -> None:
    """Ask; on success draw the page again from the top (the budget sentence above must show the new balance);
    a refusal or an error is shown here and the history below is read again (it records the refusal)."""
    global status
    st.session_state.pop("qc_last", None)  # a refused question must not leave the previous answer looking current
    st.session_state.pop("qc_pending", None)
    r = guarded(answering.ask, df, who, q, dataset=key)
    if r is not None:
        st.session_state.qc_last = {"who": who.name, "key": key, "result": r, "column": kw.get("column", "")}
        st.rerun()
    status = guarded(quotas.status, who, key, latest=limits.HISTORY_ROWS_SHOWN) or status


if st.button("Ask (spends ε)", key="qc_ask", type="primary", disabled=delta is None):
    q = guarded(model.make_query, kind, epsilon=eps, mechanism=mechanism, delta=delta, **kw)
    if q is not None:
        if caution.cautions(q):  # near-exact or above "weak": say so and ask first
            st.session_state.pop("qc_last", None)
            st.session_state.qc_pending = [key, q.canonical(), q.epsilon]
        else:
            _ask(q)
pending, q_now = st.session_state.get("qc_pending"), _query()
if pending and q_now is not None and pending == [key, q_now.canonical(), q_now.epsilon]:
    with st.container(border=True):
        st.warning(
            "**This answer would protect almost nobody.** "
            + " ".join(md_message(sentence(c)) + "." for c in caution.cautions(q_now))
            + " Ask anyway only if that is what you mean to release."
        )
        k1, k2 = st.columns([1, 1])
        if k1.button(f"Ask anyway (spends ε = {q_now.epsilon:g})", key="qc_confirm"):
            _ask(q_now)
        if k2.button("Cancel", key="qc_cancel"):
            st.session_state.pop("qc_pending", None)
            st.rerun()

cap, quota = status["cap"], status["quota"]
last = st.session_state.get("qc_last")
if last and last["key"] == key and last["who"] == who.name:
    r, a = last["result"], last["result"]["answer"]
    mech = MECH_NAMES.get(a["mechanism"], a["mechanism"])
    st.markdown(
        f"**{md(a['query'])}** · {mech} · ε = {a['epsilon']:g}, δ = {claims.delta(a['delta'])} · neighbours: "
        f"{model.NEIGHBOUR}"
    )
    if a.get("loss_tail") is not None:
        st.caption(interpret.release_tail_reading(a["loss_tail"], a["epsilon"], a["delta"]))
    if r["reused"]:
        st.success(
            f"Same question as before: the stored answer is returned and costs nothing "
            f"(it cost ε = {r['epsilon_charged']:g} when first drawn)."
        )
    if isinstance(a["answer"], list):
        h1, h2 = st.columns([4, 1])
        chart(figs.histogram_answer(a, last["column"]), key="qc_hist_chart", where=h1)
        h2.metric("ε spent now", f"{r['epsilon_spent']:g}")
        h2.metric("ε remaining", f"{r['remaining']:g}")
        h2.metric("δ remaining", claims.down(r["delta_remaining"], 2))
    else:
        r1, r2, r3, r4 = st.columns(4)
        value, lo, hi = _shown(a)
        r1.metric("Noisy answer (DP)", value)
        r2.metric("95% interval", f"[{lo}, {hi}]")
        r3.metric("ε spent now", f"{r['epsilon_spent']:g}")
        r4.metric(
            "ε remaining",
            f"{r['remaining']:g}",
            help=f"In your quota (δ remaining: {claims.down(r['delta_remaining'], 2)}); the dataset has ε = "
            f"{r['dataset_remaining']:g} left for everyone.",
        )
    spent_how = (
        f"When first drawn: {a['cost_note']}; this time it is the stored answer, free"
        if r["reused"]
        else f"How ε is spent: {a['cost_note']}"
    )  # "ε spent now 0" sat above "ε = 0.1 on one count"
    note = a["interval_note"]  # "Interval: 95% noise interval: …" said it twice
    grid = f" Rounding: {md(a['grid']['note'])}." if a.get("grid") else ""  # a SUM or MEAN states its grid
    st.caption(
        f"{spent_how}. {note if note.startswith('95%') else 'Interval: ' + note}.{grid} "
        + "Whole-number noise drawn by OpenDP's exact samplers from a cryptographically secure random source; "
        "never stored or shown."
    )

# --- budget and history --------------------------------------------------------------------------------
st.subheader("Budget and ledger")
everyone = _everyone(cap)  # the ledger as read after any answer
if quota is None:  # an admin: the dataset as a whole
    st.markdown(f"**You administer this dataset: it has {everyone}.**")
    st.caption(
        "An admin's questions are charged to a quota of their own"
        + (
            " or, on the built-in data, to the visitors' quota."
            if info["builtin"]
            else ": sign in as an analyst with a quota (or grant yourself one) to ask."
        )
    )
elif quota["visitors"]:
    asking = (
        "You are asking as a visitor"
        if who.is_visitor
        else "Signed in, you still ask from the visitors' quota on the built-in data"  # no quota of theirs here
    )
    st.markdown(
        f"**{asking}: this dataset has {everyone}**; the visitors' shared quota (everyone "
        f"who has not signed in) has ε = {quota['remaining']:g} of {quota['total']:g} left."
    )
else:
    st.markdown(
        f"**Your quota: ε = {quota['remaining']:g} of {quota['total']:g} and δ = "
        f"{claims.down(quota['delta_remaining'], 2)} left** on this dataset, which has {everyone}."
    )
per_query = f" No answer may spend more than ε = {cap['max_query_epsilon']:g}." if cap["max_query_epsilon"] else ""
st.caption(
    f"ε bounds what an answer reveals about any one **row** ({model.NEIGHBOUR}); a person with k rows in "
    f"the data is protected at up to k·ε. Answers add up (basic composition).{per_query}"
)
g1, g2 = st.columns([1, 2])
rel = f"neighbours: {model.NEIGHBOUR}"
capped = (
    f"the dataset's cap, for everyone: ε = {cap['remaining']:g} of {cap['epsilon']:g}, "
    f"δ = {claims.down(cap['delta_remaining'], 2)} ({rel})"
)
if quota is not None:
    # what the next answers can really spend: the quota, and never more than the cap has left
    usable = min(float(quota["remaining"]), float(cap["remaining"]))
    whose = "The visitors' shared quota" if quota["visitors"] else "Your quota"
    head.markdown(
        headline_md(
            f"{unbroken(f'ε = {usable:g}')} left to ask with",
            f"{whose}: ε = {quota['remaining']:g} of {quota['total']:g}; {capped}.",
        )
    )
    chart(figs.budget_gauge(quota["remaining"], quota["total"]), key="qc_gauge", where=gauge)
    g1.caption(
        f"{'The visitors’ quota' if quota['visitors'] else 'Your quota'}: spent ε = {quota['spent']:g} of "
        f"{quota['total']:g} and δ = {claims.delta(quota['delta_spent'])} of "
        f"{claims.down(quota['delta_total'], 2)}. The dataset as a whole: ε = {cap['spent']:g} of "
        f"{cap['epsilon']:g} spent (basic composition, neighbours: {model.NEIGHBOUR})."
    )
else:
    left = f"ε = {cap['remaining']:g}"
    head.markdown(headline_md(f"{unbroken(left)} left on this dataset", f"As {capped}."))
    chart(figs.budget_gauge(cap["remaining"], cap["epsilon"]), key="qc_gauge", where=gauge)
    g1.caption(f"The dataset's cap: ε = {cap['spent']:g} of {cap['epsilon']:g} spent by everyone together.")
kinds = {k: v for k, v in (cap.get("by_release") or {}).items() if v["epsilon"] or v.get("held")}
if kinds:
    g1.caption(
        "Spent on this dataset by every kind of release (net of refunds): "
        + "; ".join(
            f"{RELEASE_WORDS.get(k, 'answers')}: ε = {v['epsilon']:.3g}"
            + (f" (ε = {v['held']:.3g} held by running jobs)" if v.get("held") else "")
            for k, v in kinds.items()
        )
        + "."
    )
numbers: dict[str, int] = {}
drawn: dict[str, object] = {}  # each question's answer as first drawn: a reuse returned it again, for free
for e in status["history"]:  # Q1, Q2, …: two long questions that differ at the end no longer look the same
    if e["canonical"]:
        numbers.setdefault(e["canonical"], len(numbers) + 1)
        if e["kind"] == "spend":
            drawn.setdefault(e["canonical"], e["answer"])
# A row without a question (a quota granted, reset or closed) says what happened where the question goes and leaves
# the amounts blank: "ε 0, δ 0" beside a grant of ε = 10 read as a grant of nothing.
rows = [
    {
        "query": f"Q{numbers[e['canonical']]} · {e['query']}"
        if e["canonical"]
        else (e["query"] or f"({EVENT_WORDS.get(e['kind'], e['kind'])})"),
        "answer": _short(e["answer"] or (drawn.get(e["canonical"]) if e["kind"] == "reuse" else None))
        if e["canonical"]
        else "",
        "ε charged": e["cost"] if e["canonical"] or e["release"] in RELEASE_WORDS else None,
        "event": e["kind"] + (f" · {RELEASE_WORDS[e['release']]}" if e["release"] in RELEASE_WORDS else ""),
        "ε": e["epsilon"] if e["canonical"] or e["release"] in RELEASE_WORDS else None,
        "δ": e["delta"] if e["canonical"] or e["release"] in RELEASE_WORDS else None,
        "note": sentence(e["note"] or ""),
        "time": e["time"],
    }  # a note is a cell on its own
    for e in status["history"]
]
cols = ["query", "answer", "ε charged", "event", "ε", "δ", "note", "time"]
if quota is None:  # an admin reads everyone's history: who asked
    for row, e in zip(rows, status["history"]):
        row["analyst"] = e["analyst"] or ""
    cols.insert(3, "analyst")
hist = pd.DataFrame(rows, columns=cols)  # what was asked, answered and charged first: a phone shows three columns
with g2:
    if quota is not None and quota["visitors"]:
        st.caption("The visitors' shared history: every question asked from this quota, by anyone not signed in.")
    if status["events"] > len(status["history"]):
        st.caption(f"The latest {len(status['history']):,} of {status['events']:,} events.")
    st.dataframe(
        hist,
        hide_index=True,
        key="qc_history",  # a long query must not push the answer off a phone
        column_config={"query": st.column_config.TextColumn(width="medium")},
        placeholder="—",  # a grant's blank amounts, as other tables show a missing cell (it read a grey "None")
    )
    if len(hist):
        table_downloads(hist, "ledger_history", key="qc_hist")
    if numbers:
        with st.expander(f"The {len(numbers)} question{'' if len(numbers) == 1 else 's'} in full"):
            st.markdown(
                "\n".join(
                    f"- **Q{i}** {md(next(e['query'] for e in status['history'] if e['canonical'] == c))}"
                    for c, i in numbers.items()
                )
            )
    else:
        st.caption("No questions asked from this quota yet: ask one above.")

# --- composition ---------------------------------------------------------------------------------------
st.subheader("Composition: what many answers cost together")
st.markdown(
    "The ledger charges by **basic composition** (ε adds up) — always valid. Tighter accounting exists: "
    "**advanced composition** (Dwork–Rothblum–Vadhan) trades a small extra δ′ for ε growing like √k, and "
    "**zCDP/RDP** (zero-concentrated / Rényi DP; natural for Gaussian noise; pure ε-DP counts as ρ = ε²/2) adds "
    "ρ = Δ²/(2σ²) per query."
)
k1, k2, k3 = st.columns(3)
dprime = k1.select_slider(
    "δ′ for advanced composition and zCDP", DELTA_PRIMES, key="qc_dprime", format_func=claims.delta
)
kmax = k2.number_input(
    "Show up to k queries", min_value=2, max_value=limits.COMPOSITION_PAGE_K_MAX, step=50, key="qc_kmax"
)
k3.caption(
    f"Per query: the ε = {eps:g} of the question above, with {MECH_NAMES[mechanism]}"
    + (f", δ = {claims.delta(delta)}" if mechanism == "gaussian" else "")
    + "."
)
curves = guarded(_curves, eps, int(kmax), dprime, mechanism, float(delta or 0.0))
if curves is not None:
    chart(
        figs.composition_chart(
            curves,
            epsilon=eps,
            delta_prime=dprime,
            mechanism=mechanism,
            budget=quota["total"] if quota else cap["epsilon"],
            budget_label=("the visitors' quota" if quota["visitors"] else "your quota")
            if quota
            else "the dataset's cap",
        ),
        key="qc_comp_chart",
    )
entries = answering.composition_entries(status["spends"])
costs = guarded(composition.ledger_costs, entries, dprime)
if costs is not None:
    whose = "The visitors' quota" if quota and quota["visitors"] else "Your quota" if quota else "The dataset"
    reset = quota is not None and any(e["kind"] == "reset" for e in status["history"])
    st.markdown(
        f"**{whose} under each rule** ({len(entries)} paid answer{'' if len(entries) == 1 else 's'}"
        f"{' since the last reset' if reset else ''})"
    )
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "rule": c["rule"],
                    "total ε": round(c["epsilon"], 6),
                    "total δ": c["delta"],
                    "how": sentence(c["note"]),
                }
                for c in costs
            ]
        ),
        hide_index=True,
        key="qc_costs",
    )
    st.caption(composition.tightest(costs))

# --- admin ---------------------------------------------------------------------------------------------
if who.is_admin:
    _console_admin.panel(who, info, status)
