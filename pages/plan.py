"""Plan a release: several statistics on one budget — choose them, split ε, preview their error, release once.

The page reads its widgets, builds a :class:`dpcore.plan.model.Plan` and asks dpcore for everything else: the
design and preview (:mod:`dpcore.plan.design`), the release through the dataset's budget (:mod:`dpcore.plan.run`),
NIST SP 800-226's checks (:mod:`dpcore.nist`), the registry beside the ε (:mod:`dpcore.plan.registry`), the files
(:func:`dpcore.export.plan_files`) and, on an upload, its DP synthetic twin (:mod:`dpcore.plan.compare`). Its first
screen is the headline and the preview chart; the widgets below fill them (containers drawn first)."""

import hashlib

import pandas as pd
import streamlit as st

from dpcore import claims, export, limits, nist, textsafe
from dpcore.budgets import quotas, registry
from dpcore.data import datasets
from dpcore.figures import plan as figs
from dpcore.plan import compare, design, forms, model, run
from dpcore.plan import registry as deployments
from dpcore.textsafe import md
from pages.ui import first_screen
from pages.ui import identity as _identity
from pages.ui.common import chart, guarded, headline_md, required, state

VISITS = "Built-in visits (1–10 rows per patient)"
PATIENTS = "Built-in patients (one row each)"
UPLOAD = "Upload a CSV"
SPLITS = {
    "equal": "Same relative error for every statistic",
    "hand": "By hand (weights)",
    "accuracy": "From target accuracies (ε out)",
}
EDITOR = {
    "kind": st.column_config.SelectboxColumn("Statistic", options=list(model.KINDS), required=True),
    "column": st.column_config.TextColumn("Column"),
    "bounds": st.column_config.TextColumn("Bounds lo:hi", help="Public bounds: values outside are clamped to them."),
    "categories": st.column_config.TextColumn("Categories", help="A histogram's public categories, comma-separated."),
    "bins": st.column_config.NumberColumn("Bins", min_value=1, max_value=limits.QUERY_MAX_BINS, step=1),
    "alpha": st.column_config.NumberColumn("Quantile α", min_value=0.01, max_value=0.99, help="0.5: the median."),
    "by": st.column_config.TextColumn("Grouped by", help="Key columns (declared below), comma-separated."),
    "weight": st.column_config.NumberColumn("Weight", min_value=0.001, help="Its share of ε when split by hand."),
    "target": st.column_config.NumberColumn("Target ±", min_value=0.0, help="Its 95% error wanted (ε out)."),
}


@st.cache_data(show_spinner=False, max_entries=8)
def _builtin(kind: str, n: int, seed: int) -> pd.DataFrame:
    return run.builtin(kind, n, seed)[0]


@st.cache_data(show_spinner=False, max_entries=4)
def _upload(data: bytes) -> pd.DataFrame:
    return datasets.read_csv(data)


@st.cache_data(show_spinner=False, max_entries=limits.CACHE_MAX_ENTRIES)
def _registered(fp: str) -> pd.DataFrame:
    """A registered dataset's rows (the server's copy): only reached after the quota check."""
    return registry.load(registry.info(fp))


def _reset(example: str) -> None:
    plan = model.Plan.from_dict(forms.EXAMPLES[example])
    st.session_state["pl_rows"] = pd.DataFrame(forms.to_rows(plan), columns=list(forms.ROW_FIELDS))
    st.session_state["pl_keys"] = pd.DataFrame(
        [{"column": k.column, "categories": ",".join(k.categories)} for k in plan.keys],
        columns=["column", "categories"],
    )
    st.session_state["pl_editor_v"] = st.session_state.get("pl_editor_v", 0) + 1
    st.session_state.update(
        pl_eps=float(plan.epsilon or 1.0),
        pl_split=plan.split,
        pl_person=plan.unit.person_level,
        pl_k=plan.unit.max_rows,
        pl_expected=plan.expected_rows,
        pl_title=plan.title,
    )
    st.session_state.pop("pl_outcome", None)


def _on_source() -> None:
    src = st.session_state["pl_source"]
    _reset("visits" if src == VISITS else "patients" if src == PATIENTS else "upload")


def _load_plan() -> None:
    f = st.session_state.get("pl_plan_file")
    if f is None:
        return
    plan = guarded(model.loads, f.getvalue(), f.name)
    if plan is None:
        return
    st.session_state["pl_rows"] = pd.DataFrame(forms.to_rows(plan), columns=list(forms.ROW_FIELDS))
    st.session_state["pl_keys"] = pd.DataFrame(
        [{"column": k.column, "categories": ",".join(k.categories)} for k in plan.keys],
        columns=["column", "categories"],
    )
    st.session_state["pl_editor_v"] = st.session_state.get("pl_editor_v", 0) + 1
    st.session_state.update(
        pl_eps=float(plan.epsilon or 1.0),
        pl_split=plan.split,
        pl_person=plan.unit.person_level,
        pl_k=plan.unit.max_rows,
        pl_person_col=plan.unit.person or st.session_state.get("pl_person_col"),
        pl_expected=plan.expected_rows,
        pl_title=plan.title,
    )


if "pl_rows" not in st.session_state:
    st.session_state["pl_source"] = VISITS
    _reset("visits")

st.title("Plan a release")
head = first_screen.headline()  # the headline and the preview chart: filled once the settings below are read
head_chart = first_screen.main_chart()

# --- the data ------------------------------------------------------------------------------------------
st.subheader("1 · Data")
who = _identity.current()
names = [d["name"] for d in (guarded(registry.visible, who) or []) if not d["builtin"]]
sources = [VISITS, PATIENTS, *names, UPLOAD]
if st.session_state["pl_source"] not in sources:
    st.session_state["pl_source"] = VISITS
c1, c2, c3 = st.columns([2, 1, 1])
source = c1.selectbox("Data", sources, key="pl_source", on_change=_on_source)
n, seed, df, data_name, info = 2_000, 0, None, None, None
if source in (VISITS, PATIENTS):
    kind = "visits" if source == VISITS else "patients"
    n = int(
        c2.number_input(
            "Patients",
            min_value=limits.QUERY_CONSOLE_MIN_ROWS,
            max_value=limits.QUERY_CONSOLE_MAX_ROWS // datasets.VISITS_MAX,
            value=2_000,
            step=500,
            key="pl_n",
        )
    )
    seed = int(c3.number_input("Seed", min_value=0, max_value=limits.QUERY_CONSOLE_SEED_MAX, value=0, key="pl_seed"))
    df = required(_builtin, kind, n, seed)
    st.caption(
        f"Synthetic: nobody real. Charged to the built-in patients' cap (the visitors' quota: ε = "
        f"{limits.VISITORS_EPSILON_QUOTA:g} for everyone not signed in, at most {limits.BUILTIN_MAX_QUERY_EPSILON:g} "
        "per release); the visits are the same patients."
    )
elif source == UPLOAD:
    up = st.file_uploader("CSV file", type=["csv"], key="pl_file")
    if up is not None:
        df = required(_upload, up.getvalue())
        data_name = up.name
else:
    info = required(registry.info, source)
    required(quotas.status, who, info["fingerprint"], with_history=False)
    df = required(_registered, info["fingerprint"])
    data_name = f"{info['name']}.csv"
with st.expander("Sign in, or load a plan file", icon=":material/key:"):
    _identity.panel()
    st.file_uploader("A plan (JSON or YAML)", type=["json", "yaml", "yml"], key="pl_plan_file", on_change=_load_plan)
if df is not None:
    st.caption(f"{len(df.columns)} columns: {', '.join(md(str(c)) for c in df.columns)}")
columns = [str(c) for c in df.columns] if df is not None else []

# --- whose privacy ---------------------------------------------------------------------------------------
st.subheader("2 · Whose privacy")
u1, u2, u3 = st.columns([2, 2, 1])
person = u1.toggle("One person, not one row", key="pl_person", help="A person-id column marks the rows of one person.")
person_col, k = None, 1
if person:
    guess = "patient_id" if "patient_id" in columns else (columns[0] if columns else "")
    if st.session_state.get("pl_person_col") not in columns:
        st.session_state["pl_person_col"] = guess
    person_col = u2.selectbox("Person-id column", columns or [guess], key="pl_person_col")
    k = int(u3.number_input("Rows kept each", 1, limits.PLAN_MAX_ROWS_PER_PERSON, key="pl_k"))
public_max = datasets.VISITS_MAX if source == VISITS else 1 if source == PATIENTS else None

# --- the statistics --------------------------------------------------------------------------------------
st.subheader("3 · Statistics")
ver = st.session_state.get("pl_editor_v", 0)
rows = st.data_editor(
    st.session_state["pl_rows"],
    column_config=EDITOR,
    num_rows="dynamic",
    hide_index=True,
    key=f"pl_editor_{ver}",
    width="stretch",
    placeholder="",  # an empty cell (no bins, no α) is blank, not a grey "None"
)
with st.expander("Public keys to group by", icon=":material/category:"):
    keys = st.data_editor(
        st.session_state["pl_keys"],
        column_config={
            "column": st.column_config.TextColumn("Key column"),
            "categories": st.column_config.TextColumn("Public categories (comma-separated)"),
        },
        num_rows="dynamic",
        hide_index=True,
        key=f"pl_keys_{ver}",
        width="stretch",
        placeholder="",
    )

# --- ε ---------------------------------------------------------------------------------------------------
st.subheader("4 · Split ε")
e1, e2, e3 = st.columns([2, 1, 1])
split = e1.radio("How", list(SPLITS), format_func=SPLITS.get, key="pl_split", horizontal=True)
eps = e2.number_input(
    "Total ε",
    min_value=limits.EPSILON_MIN,
    max_value=limits.PLAN_EPSILON_MAX,
    step=0.1,
    format="%.3g",
    key="pl_eps",
    disabled=split == "accuracy",
)
expected = int(
    e3.number_input(
        "Rows (a public guess)",
        1,
        limits.UPLOAD_MAX_ROWS,
        key="pl_expected",
        help="Only for the preview and the equal split: never read from the data.",
    )
)
title = st.text_input("Title", key="pl_title", max_chars=200)

plan_dict = {
    "title": title or "Planned release",
    "epsilon": None if split == "accuracy" else float(eps),
    "split": split,
    "unit": {
        "person": person_col,
        "max_rows": k,
        **({"public_max_rows": public_max} if not person and public_max else {}),
    },
    "keys": forms.keys_from_rows(keys.to_dict("records")),
    "expected_rows": expected,
    "statistics": forms.from_rows(rows.to_dict("records")),
}
plan = guarded(model.Plan.from_dict, plan_dict)
laid = guarded(design.design, plan) if plan is not None else None
if laid is None:
    with head:
        st.markdown(headline_md("Fix the plan to see its preview", "The message above says what to change."))
    st.stop()

# --- the first screen: headline and preview --------------------------------------------------------------
unit_word = "person" if laid.person_level else "row"
worst = laid.worst()
with head:
    st.markdown(
        headline_md(
            f"{len(laid.designs)} statistics for ε = {claims.up(laid.epsilon)} per {unit_word}",
            f"Worst expected 95% error: ±{claims.up(100 * worst.relative, 2)}% ({md(worst.statistic.label())}). "
            "A preview from public numbers: nothing read, nothing spent.",
        )
    )
with head_chart:
    chart(
        figs.preview(
            [d.statistic.label() for d in laid.designs],
            [d.relative for d in laid.designs],
            [d.epsilon for d in laid.designs],
        ),
        key="pl_preview",
    )

st.subheader("5 · Preview (nothing spent)")
st.dataframe(
    pd.DataFrame(
        [
            {
                "statistic": d.statistic.label(),
                "ε": d.epsilon,
                "cells": d.cells,
                "95% error": d.error_text(),
                "relative": f"±{claims.up(100 * d.relative, 2)}%",
            }
            for d in laid.designs
        ]
    ),
    hide_index=True,
    width="stretch",
)
other = guarded(design.twin, plan, person="patient_id" if "patient_id" in columns else None, public_max_rows=public_max)
side = [
    {
        "release": f"this plan ({laid.level_words().split(':')[0]})",
        "ε per row": claims.up(laid.epsilon_per_row),
        "ε per person": "unknown (k·ε for k rows)"
        if laid.epsilon_per_person is None
        else claims.up(laid.epsilon_per_person),
    }
]
if other is not None:
    side.append(
        {
            "release": f"the same statistics, {other.level_words().split(':')[0]}",
            "ε per row": claims.up(other.epsilon_per_row),
            "ε per person": "unknown (k·ε for k rows)"
            if other.epsilon_per_person is None
            else claims.up(other.epsilon_per_person),
        }
    )
st.markdown("**ε per row and per person, side by side**")
st.dataframe(pd.DataFrame(side), hide_index=True, width="stretch")
with st.expander("What the preview and the split mean", icon=":material/help:"):
    st.markdown(
        f"Split: **{laid.split_words()}**. Each statistic's noise follows from its public bounds, categories and "
        f"the unit of privacy ({md(laid.level_words())}); its 95% error is the noise's own (a quantile's: rows of rank). "
        "Relative errors use your public guess of the number of rows. All statistics are pure ε-DP (δ = 0): their ε "
        "add up to the total. A row-level release protects one row; a person with m rows is covered for m·ε."
    )

# --- NIST SP 800-226 -------------------------------------------------------------------------------------
flags = nist.checks(laid.claim())
hazards = sum(f.kind == "hazard" for f in flags)
with st.expander(
    f"NIST SP 800-226 checks: {hazards} hazard{'' if hazards == 1 else 's'} flagged", icon=":material/checklist:"
):
    for f in flags:
        icon = ":material/warning:" if f.kind == "hazard" else ":material/info:"
        st.markdown(f"{icon} **{md(f.title)}** — {md(f.line)}")
    st.caption(md(nist.SOURCE))

# --- the registry ----------------------------------------------------------------------------------------
charged = run.charged_epsilon(laid)
ctx = deployments.context(charged, "statistics", "Central")
with st.expander("Your ε among real deployments (OpenDP's registry)", icon=":material/public:"):
    chart(figs.registry_strip(ctx.epsilons, ctx.names, charged, label=f"yours: ε = {claims.up(charged)}"), key="pl_reg")
    st.caption(md(ctx.words()))

# --- release once ------------------------------------------------------------------------------------------
st.subheader("6 · Release once")
st.caption(
    f"One charge of ε = {claims.up(charged)} for the whole plan, then every statistic is drawn by OpenDP's exact "
    "samplers. The same plan again returns the stored release, free."
)
digest = hashlib.sha256(plan.canonical().encode() + str((source, n, seed, data_name)).encode()).hexdigest()
if st.button("Release", type="primary", icon=":material/send:", key="pl_release", disabled=df is None):

    def _go():
        if source in (VISITS, PATIENTS):
            return run.release_builtin(plan, "visits" if source == VISITS else "patients", n, seed, who)
        if source == UPLOAD:
            return run.release_upload(plan, df, who, name=data_name or "upload.csv")
        return run.release_on_dataset(
            plan, df, who, info["fingerprint"], subject=f"registered dataset {info['name']}", source="dataset"
        )

    with st.spinner("Releasing…"):
        outcome = guarded(_go)
        if outcome is not None:
            files = guarded(export.plan_files, outcome, n=n, seed=seed, data_name=data_name)
            if files is not None:
                st.session_state["pl_outcome"] = (digest, outcome, files)
done = state("pl_outcome", None)
if done is not None and done[0] == digest:
    _, outcome, files = done
    table = outcome.release.frame()
    spent = outcome.charge.get("epsilon_spent", 0.0) if outcome.charge else 0.0
    if outcome.reused:
        st.info("The same plan was released before: its stored release, free.", icon=":material/replay:")
    else:
        where = (
            md(", ".join(b["dataset"] for b in outcome.budget.get("charged_to", []))) or "no dataset (your own rows)"
        )
        st.success(f"Released once: ε = {claims.up(spent)} charged to {where}.", icon=":material/done:")
    st.dataframe(table, hide_index=True, width="stretch")
    for d in outcome.release.design.designs:
        cells = table[table["statistic"] == d.index + 1]
        if d.statistic.kind == "quantile" or len(cells) < 2:
            continue
        chart(
            figs.released(
                [f"{g} {b}".strip() for g, b in zip(cells["group"], cells["bin"])],
                cells["value"].tolist(),
                cells["low_95"].tolist(),
                cells["high_95"].tolist(),
                title=d.statistic.label(),
            ),
            key=f"pl_rel_{d.index}",
        )
    row = st.container(horizontal=True, gap="small")
    mime = {"csv": "text/csv", "json": "application/json", "ipynb": "application/x-ipynb+json", "py": "text/plain"}
    for name, data in files.items():
        row.download_button(
            name,
            data,
            name,
            mime.get(name.rsplit(".", 1)[-1], "application/octet-stream"),
            key=f"pl_dl_{name}",
            icon=":material/download:",
        )

# --- an upload beside its DP synthetic twin ---------------------------------------------------------------
if source == UPLOAD and df is not None:
    st.subheader("Your rows beside a DP synthetic table")
    s1, s2 = st.columns([1, 2])
    syn_eps = s1.number_input(
        "ε of the synthetic table", limits.SYNTH_EPSILON_MIN, limits.SYNTH_EPSILON_MAX, value=1.0, key="pl_syn_eps"
    )
    if s2.button("Make a DP synthetic table", key="pl_syn"):
        with st.spinner("Releasing a synthetic table…"):
            cmp = guarded(compare.compare, df, plan, float(syn_eps), who)
        if cmp is not None:
            st.session_state["pl_cmp"] = cmp
    cmp = st.session_state.get("pl_cmp")
    if cmp is not None:
        st.warning(
            f"The left bars and the first summary column are {compare.NOT_COVERED}.", icon=":material/visibility:"
        )
        for c in cmp.columns:
            chart(figs.side_by_side(c.labels, c.original, c.synthetic, title=c.name), key=f"pl_cmp_{c.name}")
            if c.original_mean is not None:
                st.caption(
                    f"{md(c.name)}: mean {c.original_mean:,.4g} (yours, {compare.NOT_COVERED}) vs "
                    f"{c.synthetic_mean or 0:,.4g} (DP synthetic); median {c.original_median:,.4g} vs "
                    f"{c.synthetic_median or 0:,.4g}"
                )
        st.download_button(
            "Download the synthetic table (CSV)",
            textsafe.csv_bytes(cmp.synthetic),
            "synthetic.csv",
            "text/csv",
            key="pl_syn_csv",
            icon=":material/download:",
        )
