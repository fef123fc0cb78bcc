"""Re-identification: removing names is not anonymisation. Neighbour filter, linkage, uniqueness,
generalisation, DP, and the same analysis on an uploaded CSV (kept in this session's memory only)."""

import streamlit as st

from dpcore import datasets, linkage, uniqueness
from dpcore.figures import reidentification as figs
from pages._ui import from_url, guarded, not_private, share_in_url, table_downloads

st.title("Re-identification: removing names is not anonymisation")
st.markdown(
    "A hospital releases its patient table **without names**. But age, sex, zip code and salary "
    "(*quasi-identifiers*) single most people out, and a public register puts the names back. "
    "This page runs the attacks and then two defences: generalisation and differential privacy."
)


@st.cache_data(max_entries=4, show_spinner="Generating the synthetic population…")
def population(n: int, seed: int):
    return datasets.medical_population(n, seed)


@st.cache_data(max_entries=4)
def release(n: int, seed: int):
    return population(n, seed).drop(columns=["person_id", "name"])


@st.cache_data(max_entries=8, show_spinner="Building the public register…")
def register(n: int, seed: int, coverage: float, outsiders: float, reg_seed: int):
    return linkage.public_register(population(n, seed), coverage=coverage, outsiders=outsiders, seed=reg_seed)


@st.cache_data(max_entries=16)
def link(n, seed, coverage, outsiders, reg_seed, on, gen):
    pop = population(n, seed).drop(columns=["name"])
    reg = register(n, seed, coverage, outsiders, reg_seed)
    if gen is not None:
        pop = linkage.generalise_medical(pop, **dict(gen))
        reg = linkage.generalise_medical(reg, **dict(gen))
    return linkage.link(pop, reg, list(on))


@st.cache_data(max_entries=16)
def uniq(n, seed, qis, sensitive, gen):
    df = release(n, seed)
    if gen is not None:
        df = linkage.generalise_medical(df, **dict(gen))
    return uniqueness.uniqueness(df, list(qis), sensitive), uniqueness.incremental(df, list(qis), sensitive)


@st.cache_data(max_entries=8, show_spinner="Simulating releases…")
def dp_sim(n, seed, qis, sensitive, releases, sim_seed):
    eps = [0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0]
    return linkage.dp_attack_simulation(release(n, seed), list(qis), sensitive, eps, n_releases=releases,
                                        n_targets=200, seed=sim_seed)


def risk_measures(rep, link_result=None) -> dict:
    out = {"unique records": rep.unique_fraction, "average risk (1/class size)": rep.prosecutor_risk_avg,
           "highest risk (1/k)": rep.prosecutor_risk_max}
    if link_result is not None:
        out["register entries re-identified"] = link_result.success_rate
    return out


def show_report(rep, key: str) -> None:
    c = st.columns(5)
    c[0].metric("Unique records", f"{rep.unique_fraction:.1%}", help=f"{rep.unique_records:,} of {rep.n:,}")
    c[1].metric("k-anonymity", f"{rep.k_anonymity:,}", help="size of the smallest equivalence class")
    c[2].metric("ℓ-diversity", "—" if rep.l_diversity is None else f"{rep.l_diversity}",
                help="fewest distinct sensitive values in any class (distinct ℓ-diversity)")
    c[3].metric("Highest risk", f"{rep.prosecutor_risk_max:.0%}", help="prosecutor risk 1/k")
    c[4].metric("Average risk", f"{rep.prosecutor_risk_avg:.1%}", help="mean over records of 1/class size")
    st.plotly_chart(figs.class_size_chart(rep), key=f"{key}_classes")


# --- 1. the release ---------------------------------------------------------------------------------
st.header("1. The release: no names, but quasi-identifiers")
c1, c2 = st.columns(2)
n = int(c1.number_input("Rows (patients)", min_value=1_000, max_value=1_000_000,
                        value=min(max(from_url("re_n", 10_000), 1_000), 1_000_000), step=1_000,
                        key="re_n", help="Up to 1,000,000; every analysis below stays vectorised."))
seed = int(c2.number_input("Seed", min_value=0, max_value=2**31 - 1,
                               value=min(max(from_url("re_seed", 0), 0), 2**31 - 1), step=1, key="re_seed"))
df = guarded(release, n, seed)
if df is None:
    st.stop()
st.dataframe(df.head(200), hide_index=True, key="re_release_table")
table_downloads(df.head(200), "re_release", key="re_release_table_dl")
st.caption(f"{len(df):,} rows (first 200 shown). Quasi-identifiers: {', '.join(datasets.QUASI_IDENTIFIERS)}. "
           f"Sensitive: {', '.join(datasets.SENSITIVE_COLUMNS)}. Synthetic data: these people do not exist.")

# --- 2. find your neighbour --------------------------------------------------------------------------
st.header("2. Find your neighbour")
st.markdown("You know a few facts about your neighbour. Leave a field blank if unknown; write a range as "
            "`LO-HI` or `LO:HI` (inclusive).")
fields = ["age", "sex", "zip_code", "birth_year", "ethnicity", "salary"]
cols = st.columns(len(fields))
texts = {f: cols[i].text_input(f, value=linkage.DEFAULT_SCENARIO.get(f, ""), key=f"re_known_{f}")
         for i, f in enumerate(fields)}


def neighbour():
    conds = [linkage.parse_field(f, t) for f, t in texts.items()]
    return linkage.find_matches(df, conds)


res = guarded(neighbour)
if res is not None:
    st.metric("Matching records", f"{res.matches:,}")
    for line in res.learned:
        st.markdown(f"- {line}")
    if res.matches:
        st.dataframe(res.records, hide_index=True, key="re_matches_table")
        table_downloads(res.records, "neighbour_matches", "re_matches_dl")
    not_private("Exact rows, not private")

# --- 3. linkage at scale -----------------------------------------------------------------------------
st.header("3. Linkage at scale: a public register puts the names back")
c1, c2, c3 = st.columns(3)
coverage = c1.slider("Register covers this share of the patients", 0.05, 1.0, 0.5, 0.05, key="re_coverage")
outsiders = c2.slider("Outsiders per covered patient (people in the register, not in the release)", 0.0, 3.0,
                      0.25, 0.25, key="re_outsiders")
reg_seed = int(c3.number_input("Register seed", 0, 2**31 - 1, 1, key="re_reg_seed"))
on = st.multiselect("Join on", linkage.LINKABLE_COLUMNS, default=["birth_year", "age", "sex", "zip_code"],
                    key="re_link_on")
reg = guarded(register, n, seed, coverage, outsiders, reg_seed)
lr = guarded(link, n, seed, coverage, outsiders, reg_seed, tuple(on), None) if reg is not None else None
if reg is not None:
    with st.expander("The public register (voter-roll style, synthetic)"):
        st.dataframe(reg.drop(columns=["person_id"]).head(200), hide_index=True, key="re_register_table")
        table_downloads(reg.drop(columns=["person_id"]).head(200), "re_register", key="re_register_table_dl")
if lr is not None:
    c = st.columns(4)
    c[0].metric("Register entries", f"{lr.register_size:,}")
    c[1].metric("Match exactly one record", f"{lr.matched_one:,}")
    c[2].metric("…the right person", f"{lr.right_person:,}",
                help=f"precision {lr.precision:.0%}" if lr.matched_one else None)
    c[3].metric("Diagnoses disclosed", f"{lr.diagnoses_disclosed:,}",
                help=f"{lr.rare_disclosed} of them with the rare disease")
    st.markdown(
        f"Of **{lr.in_release:,}** register entries who really are patients, **{lr.right_person:,}** "
        f"({lr.success_rate:.1%}) get their diagnosis attached to their name; **{lr.wrong_person:,}** unique "
        f"matches pin someone else's diagnosis on an outsider. **{lr.attribute_disclosed:,}** patients in the "
        "register sit in a class where everyone has the same diagnosis: disclosed even without a unique match."
    )
    st.plotly_chart(figs.linkage_chart(lr), key="re_link_chart")
    st.dataframe(lr.examples, hide_index=True, key="re_link_examples")
    table_downloads(lr.examples, "re_link_examples", key="re_link_examples_dl")
    not_private("Ground truth, not private")

# --- 4. how unique are people --------------------------------------------------------------------------
st.header("4. How unique are people?")
c1, c2 = st.columns([3, 1])
qis = c1.multiselect("Quasi-identifiers (added in this order)", datasets.QUASI_IDENTIFIERS,
                     default=["age", "sex", "zip_code", "salary"], key="re_qis")
sensitive = c2.selectbox("Sensitive column", datasets.SENSITIVE_COLUMNS, index=1, key="re_sensitive")
out = guarded(uniq, n, seed, tuple(qis), sensitive, None)
if out is not None:
    rep, steps = out
    show_report(rep, "re_uniq")
    st.plotly_chart(figs.incremental_chart(steps), key="re_incremental")
    st.dataframe(steps, hide_index=True, key="re_steps_table")
    table_downloads(steps, "uniqueness_steps", "re_steps_dl")

# --- 5. generalisation --------------------------------------------------------------------------------
st.header("5. Defence by generalisation")
c1, c2, c3 = st.columns(3)
age_band = c1.select_slider("Age band (years; birth year banded alike)", [1, 2, 5, 10, 20], value=10,
                            key="re_age_band")
zip_digits = c2.select_slider("Zip digits kept", [5, 4, 3, 2], value=3, key="re_zip_digits")
salary_band = c3.select_slider("Salary band ($)", [1, 1_000, 5_000, 10_000, 25_000, 50_000], value=10_000,
                               key="re_salary_band")
gen = (("age_band", age_band), ("zip_digits", zip_digits), ("salary_band", salary_band))
if out is not None:
    after = guarded(uniq, n, seed, tuple(qis), sensitive, gen)
    lr_after = guarded(link, n, seed, coverage, outsiders, reg_seed, tuple(on), gen) if lr is not None else None
    if after is not None:
        rep_after, _ = after
        b, a = st.columns(2)
        with b:
            st.subheader("Exact values")
            st.metric("k-anonymity", f"{rep.k_anonymity:,}")
            st.metric("Unique records", f"{rep.unique_fraction:.1%}")
            if lr is not None:
                st.metric("Re-identified by linkage", f"{lr.right_person:,}")
        with a:
            st.subheader("Generalised")
            st.metric("k-anonymity", f"{rep_after.k_anonymity:,}", delta=rep_after.k_anonymity - rep.k_anonymity)
            st.metric("Unique records", f"{rep_after.unique_fraction:.1%}",
                      delta=f"{(rep_after.unique_fraction - rep.unique_fraction) * 100:+.1f} pp", delta_color="inverse")
            if lr_after is not None:
                st.metric("Re-identified by linkage", f"{lr_after.right_person:,}",
                          delta=lr_after.right_person - lr.right_person, delta_color="inverse")
        st.plotly_chart(figs.generalisation_chart(risk_measures(rep, lr), risk_measures(rep_after, lr_after)),
                        key="re_gen_chart")
        st.caption(f"{rep_after.unique_records:,} records are still unique after banding (outliers keep k at "
                   f"{rep_after.k_anonymity}; only suppressing them would raise it). Generalisation is not DP: k "
                   "and ℓ say nothing about an attacker with other data, and ℓ-diversity after banding is "
                   f"{rep_after.l_diversity} (classes where everyone shares a diagnosis still disclose it).")

# --- 6. defence by DP ---------------------------------------------------------------------------------
st.header("6. Defence by differential privacy")
st.markdown(
    "Now the attacker cannot see rows: they ask, for the target's quasi-identifiers, *how many records "
    "have each diagnosis?* and get noisy counts (Laplace noise of scale 1/ε; the cells are disjoint, so the "
    "set of answers is ε-DP). They guess the value with the largest noisy count."
)
c1, c2, c3 = st.columns(3)
RE_EPS = [0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0]
eps = c1.select_slider("Your ε", RE_EPS, value=from_url("re_eps", 1.0, RE_EPS), key="re_eps")
share_in_url("re_n", "re_seed", "re_eps")
releases = c2.select_slider("Simulated releases", [50, 100, 200, 500], value=100, key="re_releases")
sim_seed = int(c3.number_input("Simulation seed", 0, 2**31 - 1, 0, key="re_sim_seed"))
if qis:
    sim = guarded(dp_sim, n, seed, tuple(qis), sensitive, releases, sim_seed)
    if sim is not None:
        curve = sim["curve"]
        at = curve.iloc[(curve["epsilon"] - eps).abs().argmin()]
        c = st.columns(3)
        c[0].metric("Without DP (exact counts)", f"{sim['no_noise']:.0%}")
        c[1].metric(f"With DP at ε = {eps:g}", f"{at['success_rate']:.0%}")
        c[2].metric("Blind guess (most common value)", f"{sim['prior_guess']:.0%}")
        st.plotly_chart(figs.dp_success_chart(sim, eps), key="re_dp_chart")
        st.caption(":blue-badge[Simulation] numpy noise over many simulated releases, to visualise the attacker's "
                   "success; a real release draws its counts through the secure release path.")

# --- 7. your own data --------------------------------------------------------------------------------
st.header("7. Use your own data")
st.markdown(f"Upload a CSV (at most {datasets.MAX_UPLOAD_BYTES // (1024 * 1024)} MB and "
            f"{datasets.MAX_UPLOAD_ROWS:,} rows). It is checked on the server and kept only in this browser "
            "session's memory: nothing is written to disk or sent anywhere.")
upload = st.file_uploader("CSV file", type=["csv"], key="re_upload",
                          max_upload_size=datasets.MAX_UPLOAD_BYTES // (1024 * 1024))
if upload is None:
    st.session_state.pop("re_upload_df", None)
else:
    cached = st.session_state.get("re_upload_df")
    if cached is None or cached[0] != upload.file_id:
        st.session_state["re_upload_df"] = (upload.file_id, guarded(datasets.read_csv, upload.getvalue()))
    udf = st.session_state["re_upload_df"][1]
    if udf is not None:
        st.caption(f"{len(udf):,} rows × {udf.shape[1]} columns")
        st.dataframe(udf.head(100), hide_index=True, key="re_upload_table")
        columns = [str(c) for c in udf.columns]
        uqis = st.multiselect("Quasi-identifiers (in order)", columns, default=columns[: min(2, len(columns))],
                              key="re_up_qis")
        rest = [c for c in columns if c not in uqis]
        usens = st.selectbox("Sensitive column", ["(none)"] + rest, index=1 if rest else 0, key="re_up_sensitive")
        usens = None if usens == "(none)" else usens
        urep = guarded(uniqueness.uniqueness, udf, uqis, usens)
        if urep is not None:
            show_report(urep, "re_up")
            usteps = uniqueness.incremental(udf, uqis, usens)
            st.plotly_chart(figs.incremental_chart(usteps), key="re_up_incremental")
            st.subheader("Generalise your quasi-identifiers")
            st.caption("Numbers: band width (0 = keep exact). Text: keep the first characters (0 = keep all).")
            bands, prefixes = {}, {}
            gcols = st.columns(max(1, len(uqis)))
            for i, q in enumerate(uqis):
                if linkage.is_numeric_column(udf[q]):
                    w = gcols[i].number_input(f"{q}: band width", min_value=0.0, value=0.0, key=f"re_up_band_{q}")
                    if w > 0:
                        bands[q] = w
                else:
                    d = gcols[i].number_input(f"{q}: characters kept", min_value=0, value=0, step=1,
                                              key=f"re_up_prefix_{q}")
                    if d > 0:
                        prefixes[q] = d
            gdf = guarded(linkage.generalise, udf, bands=bands, prefixes=prefixes)
            urep_after = guarded(uniqueness.uniqueness, gdf, uqis, usens) if gdf is not None else None
            if urep_after is not None:
                st.plotly_chart(figs.generalisation_chart(risk_measures(urep), risk_measures(urep_after)),
                                key="re_up_gen_chart")
                st.markdown(f"k-anonymity **{urep.k_anonymity} → {urep_after.k_anonymity}**, unique records "
                            f"**{urep.unique_fraction:.1%} → {urep_after.unique_fraction:.1%}**"
                            + (f", ℓ-diversity **{urep.l_diversity} → {urep_after.l_diversity}**" if usens else ""))
