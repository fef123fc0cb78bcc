"""Re-identification: removing names is not anonymisation. The neighbour, linkage, uniqueness,
generalisation, DP, and the same analysis on an uploaded CSV (kept in this session's memory only).

Every number comes from dpcore.attacks.reidentification, the same functions the HTML report runs, so the two agree.
One tab per step, so a presenter can go one at a time. Past 500 lines on purpose: the seven tabs are one story whose
later steps read the earlier ones' settings (the neighbour's facts, the quasi-identifiers, ε), and the widgets of
the synthetic-data tab and of an upload's release already live in pages/ui/reid_synth.py."""

import streamlit as st

from dpcore import limits as L
from dpcore.attacks import generalise, linkage, uniqueness
from dpcore.attacks import reidentification as story
from dpcore.data import datasets, filters
from dpcore.figures import reidentification as figs
from dpcore.textsafe import md
from pages.ui import first_screen
from pages.ui.common import chart, from_url, guarded, headline_md, not_private, required, share_in_url, table_downloads
from pages.ui.reid_synth import synthetic_tab, upload_release


@st.cache_data(max_entries=4, show_spinner="Generating the synthetic population…")
def population(n: int, seed: int):
    return story.population(n, seed)


@st.cache_data(max_entries=4)
def release(n: int, seed: int):
    return story.release_of(population(n, seed))


@st.cache_data(max_entries=16)
def neighbour(n: int, seed: int, facts: tuple):
    return story.neighbour(release(n, seed), facts)


@st.cache_data(max_entries=16)
def each_alone(n: int, seed: int, facts: tuple) -> list[int]:
    """Patients matching each known fact on its own (the chart shows them only added one after another)."""
    rel = release(n, seed)
    return [int(linkage.match_mask(rel, [c]).sum()) for c in story.conditions(facts)]


@st.cache_data(max_entries=8, show_spinner="Building the public register…")
def register(n: int, seed: int, coverage: float, outsiders: float, reg_seed: int):
    return story.register_part(population(n, seed), coverage, outsiders, reg_seed)


@st.cache_data(max_entries=16)
def link(n, seed, coverage, outsiders, reg_seed, on, gen):
    return story.linkage_part(population(n, seed), register(n, seed, coverage, outsiders, reg_seed), on, gen)


@st.cache_data(max_entries=16)
def uniq(n, seed, qis, sensitive, gen):
    return story.uniqueness_part(release(n, seed), qis, sensitive, gen)


@st.cache_data(max_entries=8, show_spinner="Simulating releases…")
def dp_sim(n, seed, qis, sensitive, eps, releases, n_targets, sim_seed):
    return story.dp_part(release(n, seed), qis, sensitive, eps, releases, n_targets, sim_seed)


patients = story.patients


def risk_measures(rep, link_result=None) -> dict:
    out = {
        "unique patients": rep.unique_fraction,
        "average risk (1/group size)": rep.prosecutor_risk_avg,
        "highest risk (1/k)": rep.prosecutor_risk_max,
    }
    if link_result is not None:
        out["register entries re-identified"] = link_result.success_rate
    return out


def show_report(rep, key: str, label=str) -> None:
    c = st.columns(5)
    c[0].metric("Unique patients", f"{rep.unique_fraction:.1%}", help=f"{patients(rep.unique_records)} of {rep.n:,}")
    c[1].metric(
        "k-anonymity",
        patients(rep.k_anonymity),
        help="k-anonymity: size of the smallest group of patients who share every quasi-identifier",
    )
    c[2].metric(
        "ℓ-diversity",
        "—" if rep.l_diversity is None else f"{rep.l_diversity} value{'' if rep.l_diversity == 1 else 's'}",
        help="ℓ-diversity: fewest different sensitive values in any such group (distinct ℓ-diversity)",
    )
    c[3].metric(
        "Highest risk",
        f"{rep.prosecutor_risk_max:.0%}",
        help="Prosecutor risk 1/k: chance of picking the right row for the most exposed patient",
    )
    c[4].metric("Average risk", f"{rep.prosecutor_risk_avg:.1%}", help="Mean over patients of 1/(size of their group)")
    chart(figs.class_size_chart(rep, label=label), key=f"{key}_classes")


D = story.StorySettings()  # the default story (the report's settings)
K_HELP = (
    "k-anonymity: the size of the smallest group of patients who share the same known facts. k = 1 means at "
    "least one patient is alone in their group, so anyone who knows those facts finds that patient's row."
)

st.title("Re-identification")  # the sidebar's name: one line on a phone (the claim, four lines, leads the text)
# The first screen: the strongest true figure (headline) and the chart it is read from, filled once the release
# below is known; the tabs go through the attack step by step.
headline_slot = first_screen.headline()
main_chart = first_screen.main_chart()
with st.expander("Removing names is not anonymisation: the story", icon=":material/help:"):
    st.markdown(
        "A hospital releases its patient table **without names**. Facts anyone can know — age, sex, zip code, "
        "salary — single most patients out, and a public register puts the names back. Go through the tabs one at "
        "a time: the attack on one neighbour, the attack at scale, why it works, and three defences — the last one "
        "releases a DP synthetic table instead of the real one."
    )

TABS = (
    "1 · Your neighbour",
    "2 · Linkage at scale",
    "3 · How unique",
    "4 · Generalisation",
    "5 · DP defence",
    "6 · DP synthetic data",
    "7 · Your own data",
)
# A link's settings are read here, above the tabs: a warning about one of them shows where it is seen, not inside
# the closed "release" expander or a tab the link does not open.
link_n = from_url("re_n", D.n, lo=L.REID_MIN_ROWS, hi=L.REID_MAX_ROWS)
link_seed = from_url("re_seed", D.seed, lo=L.SEED_MIN, hi=L.SEED_MAX)
link_eps = from_url("re_eps", D.epsilon, story.EPSILONS)
# The open tab is part of the link (on_change="rerun" tracks it); every tab still runs, the later ones read the
# earlier ones' settings.
tabs = st.tabs(list(TABS), key="re_tab", on_change="rerun", default=from_url("re_tab", TABS[0], list(TABS)))

# --- 1. find your neighbour --------------------------------------------------------------------------
with tabs[0]:
    with st.expander("The release: patients without names (synthetic data)"):
        c1, c2 = st.columns(2)
        n = int(
            c1.number_input(
                "Patients in the release",
                min_value=L.REID_MIN_ROWS,
                max_value=L.REID_MAX_ROWS,
                value=link_n,
                step=1_000,
                key="re_n",
                help=f"Up to {L.REID_MAX_ROWS:,} (every analysis stays quick at that size). The story uses 1,000.",
            )
        )
        seed = int(
            c2.number_input(
                "Data seed",
                min_value=L.SEED_MIN,
                max_value=L.SEED_MAX,
                value=link_seed,
                step=1,
                key="re_seed",
                help="Fixes the synthetic patients, so the picture is the same on every run.",
            )
        )
        df = required(release, n, seed)
        head = guarded(uniq, n, seed, D.qis, D.sensitive, None)
        if head is not None:
            headline_slot.markdown(headline_md(*story.headline(head[0])))  # short bold claim, plain detail
            with main_chart:
                chart(figs.incremental_chart(head[1], label=story.label), key="re_first_incremental")
                not_private("Uniqueness of the exact rows, not private")  # no ε covers it
        first_rows = story.shown_table(df.head(200))
        st.dataframe(first_rows, hide_index=True, key="re_release_table")
        table_downloads(first_rows, "re_release", key="re_release_table_dl")
        st.caption(
            f"{len(df):,} rows (first 200 shown). Quasi-identifiers (facts others can know): "
            f"{', '.join(map(story.label, datasets.QUASI_IDENTIFIERS))}. Sensitive: "
            f"{', '.join(map(story.label, datasets.SENSITIVE_COLUMNS))}. These people do not exist."
        )
    st.markdown(
        "You know a few facts about your neighbour: she is **34**, lives in zip code **10001** and earns "
        "**$50,000–60,000**. Leave a field blank if unknown; write a range as `30:39` or a comparison as "
        "`>=65`."
    )  # 30:39 holds together like a time; LO-HI and even 30-39 broke after the hyphen on a phone
    fields = ["age", "sex", "zip_code", "birth_year", "ethnicity", "salary"]
    cols = st.columns(3) + st.columns(3)  # two rows of three, so a phone stacks them in reading order
    facts = tuple(
        (f, cols[i].text_input(story.QI_LABELS[f], value=linkage.DEFAULT_SCENARIO.get(f, ""), key=f"re_known_{f}"))
        for i, f in enumerate(fields)
    )
    nb = guarded(neighbour, n, seed, facts)
    if nb is not None:
        c1, c2 = st.columns([1, 3])
        c1.metric("Matching records", patients(nb.matches))
        sentence = story.neighbour_sentence(nb, quote=md)  # the typed facts are shown as literal text
        (c2.success if nb.singled_out else c2.info)(sentence, icon=":material/person_search:")
        if nb.matches:
            matches = nb.table()  # diagnosis and rare disease first: on a phone they are what shows
            st.dataframe(matches, hide_index=True, key="re_matches_table")
            table_downloads(matches, "neighbour_matches", "re_matches_dl")
        chart(figs.narrowing_chart(nb.narrowing, len(df)), key="re_narrowing")
        alone = guarded(each_alone, n, seed, facts)
        if alone and len(alone) > 1:  # the chart adds the facts up; alone, each one fits many more patients
            each = [f"{md(f)} fits {patients(k)}" for f, k in zip(nb.narrowing["fact known"], alone)]
            st.caption(
                f"On its own, {', '.join(each[:-1])} and {each[-1]}; together they leave "
                f"{patients(nb.matches)}. Add sex, birth year or ethnicity, or widen a range, and watch the "
                "count move."
            )
        else:
            st.caption("Add sex, birth year or ethnicity, or widen a range, and watch the count move.")
        with st.expander("What else the attacker learns"):
            for line in nb.result.learned:
                st.markdown("- " + md(line))  # quotes column names and values
        not_private("Exact rows, not private")

# --- 2. linkage at scale -----------------------------------------------------------------------------
with tabs[1]:
    st.markdown(
        "A voter-roll style **public register** lists names with birth year, age, sex and zip code. "
        "Joining it to the release puts names on diagnoses, hundreds at a time."
    )
    c1, c2, c3 = st.columns(3)
    coverage = (
        c1.slider(
            "Share of the patients in the register",
            5,
            100,
            round(D.coverage * 100),
            5,
            format="%d%%",
            key="re_coverage",
        )
        / 100
    )  # a share reads as 50%, not 0.50
    outsiders = c2.slider(
        "Outsiders per covered patient",
        0.0,
        3.0,
        D.outsiders,
        0.25,
        key="re_outsiders",
        help="People in the register who are not in the release (a voter roll is larger than "
        "one hospital's patient list).",
    )
    reg_seed = int(
        c3.number_input(
            "Register seed",
            0,
            2**31 - 1,
            D.register_seed,
            key="re_reg_seed",
            help="Fixes who is in the register, so the picture is the same on every run.",
        )
    )
    on = st.multiselect(
        "Join on", linkage.LINKABLE_COLUMNS, default=list(D.link_on), key="re_link_on", format_func=story.label
    )
    reg = guarded(register, n, seed, coverage, outsiders, reg_seed)
    lr = guarded(link, n, seed, coverage, outsiders, reg_seed, tuple(on), None) if reg is not None else None
    if lr is not None:
        st.markdown(
            f"Of **{patients(lr.in_release)}** in the register, **{patients(lr.right_person)}** "
            f"({lr.success_rate:.1%}) get their diagnosis attached to their name; **{lr.wrong_person:,}** unique "
            "matches pin someone else's diagnosis on an outsider. Counting also the groups where everyone shares "
            f"one diagnosis, the diagnoses of **{patients(lr.attribute_disclosed)}** are disclosed — "
            f"{lr.attribute_disclosed - lr.right_person:,} of them without a unique match."
        )
        c = st.columns(4)
        c[0].metric("Register entries", f"{lr.register_size:,} people")
        c[1].metric("Match exactly one record", f"{lr.matched_one:,} people")
        c[2].metric(
            "…the right person",
            patients(lr.right_person),
            help=f"precision {lr.precision:.0%}" if lr.matched_one else None,
        )
        # the same number as the sentence above (it said 252 beside a metric of 197, the unique matches only)
        c[3].metric(
            "Diagnoses disclosed",
            patients(lr.attribute_disclosed),
            help=f"{lr.right_person:,} by a unique match to the right person ({lr.rare_disclosed} of them "
            f"with the rare disease) and {lr.attribute_disclosed - lr.right_person:,} in groups where "
            "everyone has the same diagnosis.",
        )
        chart(figs.linkage_chart(lr), key="re_link_chart")
        with st.expander("Examples of linked names, and the register itself"):
            linked = story.shown_table(lr.examples, first=("name", "linked diagnosis", "right person?"))
            st.dataframe(linked, hide_index=True, key="re_link_examples")
            table_downloads(linked, "re_link_examples", key="re_link_examples_dl")
            entries = story.shown_table(reg.drop(columns=["person_id"]).head(200))
            st.dataframe(entries, hide_index=True, key="re_register_table")
            table_downloads(entries, "re_register", key="re_register_table_dl")
        not_private("Ground truth, not private")

# --- 3. how unique are people --------------------------------------------------------------------------
with tabs[2]:
    c1, c2 = st.columns([3, 1])
    qis = c1.multiselect(
        "Quasi-identifiers (added in this order)",
        datasets.QUASI_IDENTIFIERS,
        default=list(D.qis),
        key="re_qis",
        format_func=story.label,
    )
    sensitive = c2.selectbox(
        "Sensitive column",
        datasets.SENSITIVE_COLUMNS,
        index=datasets.SENSITIVE_COLUMNS.index(D.sensitive),
        key="re_sensitive",
        format_func=story.label,
    )
    out = guarded(uniq, n, seed, tuple(qis), sensitive, None)
    if out is not None:
        rep, steps = out
        st.markdown(f"**{rep.unique_fraction:.1%}** of patients are unique on {', '.join(map(story.label, qis))}.")
        show_report(rep, "re_uniq", story.label)  # the synthetic data's names for people; an upload's as they are
        chart(figs.incremental_chart(steps, label=story.label), key="re_incremental")
        with st.expander("The numbers behind the chart"):
            shown = story.steps_table(steps)
            st.dataframe(shown, hide_index=True, key="re_steps_table")
            table_downloads(shown, "uniqueness_steps", "re_steps_dl")
        not_private("Uniqueness of the exact rows, not private")  # measured on every row: no ε covers it

# --- 4. generalisation --------------------------------------------------------------------------------
with tabs[3]:
    st.markdown("The classic defence: coarser values, so that more patients share them.")
    g = dict(D.generalisation)
    c1, c2, c3 = st.columns(3)
    age_band = c1.select_slider(
        "Age band (years; birth year banded alike)", [1, 2, 5, 10, 20], value=g["age_band"], key="re_age_band"
    )
    zip_digits = c2.select_slider("Zip digits kept", [5, 4, 3, 2], value=g["zip_digits"], key="re_zip_digits")
    salary_band = c3.select_slider(
        "Salary band ($)", [1, 1_000, 5_000, 10_000, 25_000, 50_000], value=g["salary_band"], key="re_salary_band"
    )
    gen = (("age_band", age_band), ("zip_digits", zip_digits), ("salary_band", salary_band))
    if out is not None:
        after = guarded(uniq, n, seed, tuple(qis), sensitive, gen)
        lr_after = guarded(link, n, seed, coverage, outsiders, reg_seed, tuple(on), gen) if lr is not None else None
        if after is not None:
            rep_after, _ = after
            b, a = st.columns(2)
            with b:
                st.subheader("Exact values")
                st.metric("k-anonymity", patients(rep.k_anonymity), help=K_HELP)
                st.metric("Unique patients", f"{rep.unique_fraction:.1%}")
                if lr is not None:
                    st.metric("Re-identified by linkage", patients(lr.right_person))
            with a:
                st.subheader("Generalised")
                # no change shows no delta (a grey "0" chip read as a number of patients)
                st.metric(
                    "k-anonymity",
                    patients(rep_after.k_anonymity),
                    help=K_HELP,
                    delta=(rep_after.k_anonymity - rep.k_anonymity) or None,
                )
                st.metric(
                    "Unique patients",
                    f"{rep_after.unique_fraction:.1%}",
                    delta=f"{(rep_after.unique_fraction - rep.unique_fraction) * 100:+.1f} percentage points",
                    delta_color="inverse",
                )
                if lr_after is not None:
                    st.metric(
                        "Re-identified by linkage",
                        patients(lr_after.right_person),
                        delta=(lr_after.right_person - lr.right_person) or None,
                        delta_color="inverse",
                    )
            chart(
                figs.generalisation_chart(risk_measures(rep, lr), risk_measures(rep_after, lr_after)),
                key="re_gen_chart",
            )
            st.caption(
                f"{patients(rep_after.unique_records)} are still unique after banding (outliers keep k at "
                f"{rep_after.k_anonymity}; only suppressing them would raise it). Generalisation is not DP: "
                "k and ℓ say nothing about an attacker with other data, and ℓ-diversity after banding is "
                f"{rep_after.l_diversity} (groups where everyone shares a diagnosis still disclose it)."
            )
            not_private("Before and after, from the exact rows, not private")

# --- 5. defence by DP ---------------------------------------------------------------------------------
with tabs[4]:
    st.markdown(
        "Now the attacker cannot see rows. For the target's quasi-identifiers they ask *how many patients have "
        "each diagnosis?* and get noisy counts. They guess the diagnosis with the largest noisy count."
    )
    c1, c2, c3 = st.columns(3)
    eps = c1.select_slider("Your ε", list(story.EPSILONS), value=link_eps, key="re_eps")
    releases = c2.select_slider("Simulated releases", [50, 100, 200, 500], value=D.releases, key="re_releases")
    sim_seed = int(
        c3.number_input(
            "Simulation seed",
            0,
            2**31 - 1,
            D.sim_seed,
            key="re_sim_seed",
            help="Fixes the simulated noise, so the picture is the same on every run; a real release is never seeded.",
        )
    )
    if qis:
        sim = guarded(dp_sim, n, seed, tuple(qis), sensitive, eps, releases, D.n_targets, sim_seed)
        if sim is not None:
            c = st.columns(3)
            c[0].metric("Without DP (exact counts)", f"{sim['no_noise']:.0%}", help="targets guessed right")
            c[1].metric(f"With DP at ε = {eps:g}", f"{sim['at_epsilon']:.0%}", help="targets guessed right")
            c[2].metric("Blind guess (most common value)", f"{sim['prior_guess']:.0%}", help="targets guessed right")
            st.markdown(story.dp_why(sim, label=story.label))
            st.info(story.dp_guarantee_text(sim, label=story.label), icon=":material/verified_user:")
            chart(figs.dp_success_chart(sim, eps, label=story.label), key="re_dp_chart")
            st.caption(
                ":blue-badge[Simulation] ordinary seeded random noise (numpy) over many simulated releases, "
                "to visualise the attacker's success; a real release draws its counts through the secure "
                "release path."
            )
    else:
        st.error("Choose at least one quasi-identifier on the *How unique* tab.")
share_in_url("re_n", "re_seed", "re_eps", "re_tab")

# --- 6. DP synthetic data -------------------------------------------------------------------------------
with tabs[5]:
    if qis:
        synthetic_tab(
            tabs[5],
            {
                "n": n,
                "seed": seed,
                "facts": facts,
                "qis": tuple(qis),
                "sensitive": sensitive,
                "release": df,
                "gen": gen,
                "dp_eps": eps,
                "dp": lambda e: dp_sim(n, seed, tuple(qis), sensitive, e, releases, D.n_targets, sim_seed),
            },
        )
    else:
        st.error("Choose at least one quasi-identifier on the *How unique* tab.")

# --- 7. your own data ---------------------------------------------------------------------------------
with tabs[6]:
    st.markdown(
        f"Upload a CSV of at most {L.upload_size()} and {datasets.MAX_UPLOAD_ROWS:,} rows. It is checked "
        "on the server and kept only in this browser session's memory: nothing is written to disk or sent "
        "anywhere — unless you release a DP synthetic table of it below: then the file is kept on the server "
        "while its background job runs, and deleted when it ends."
    )
    upload = st.file_uploader("CSV file", type=["csv"], key="re_upload", max_upload_size=L.UPLOAD_MAX_MIB)
    if upload is None:
        st.session_state.pop("re_upload_df", None)
    else:
        cached = st.session_state.get("re_upload_df")
        if cached is None or cached[0] != upload.file_id:
            st.session_state["re_upload_df"] = (upload.file_id, guarded(datasets.read_csv, upload.getvalue()))
        udf = st.session_state["re_upload_df"][1]
        if udf is not None:
            st.caption(f"{len(udf):,} rows × {udf.shape[1]} columns")
            st.dataframe(datasets.preview(udf, 100), hide_index=True, key="re_upload_table")
            columns = [str(c) for c in udf.columns]
            uqis = st.multiselect(  # suggested from the column names alone: the owner chooses
                "Quasi-identifiers (in order)",
                columns,
                default=uniqueness.suggested_qis(columns),
                key="re_up_qis",
                help="The columns an attacker could know about a person from elsewhere (age, sex, zip code, a date). "
                "Pre-selected: the columns whose names are such facts; check them.",
            )
            if not uqis:
                st.info(
                    "Choose the quasi-identifiers above: the columns an attacker could know about a person "
                    "from elsewhere (age, sex, zip code, a date of birth).",
                    icon=":material/person_search:",
                )
            rest = [c for c in columns if c not in uqis]
            usens = st.selectbox("Sensitive column", ["(none)"] + rest, index=1 if rest else 0, key="re_up_sensitive")
            usens = None if usens == "(none)" else usens
            urep = guarded(uniqueness.uniqueness, udf, uqis, usens) if uqis else None
            if urep is not None:
                show_report(urep, "re_up")
                usteps = uniqueness.incremental(udf, uqis, usens)
                chart(figs.incremental_chart(usteps), key="re_up_incremental")
                st.subheader("Generalise your quasi-identifiers")
                st.caption("Numbers: band width (0 = keep exact). Text: keep the first characters (0 = keep all).")
                bands, prefixes = {}, {}
                gcols = st.columns(max(1, len(uqis)))
                for i, q in enumerate(uqis):
                    if filters.is_numeric(udf[q]):
                        w = gcols[i].number_input(
                            f"{md(q)}: band width", min_value=0.0, value=0.0, key=f"re_up_band_{q}"
                        )
                        if w > 0:
                            bands[q] = w
                    else:
                        d = gcols[i].number_input(
                            f"{md(q)}: characters kept", min_value=0, value=0, step=1, key=f"re_up_prefix_{q}"
                        )
                        if d > 0:
                            prefixes[q] = d
                gdf = guarded(generalise.generalise, udf, bands=bands, prefixes=prefixes)
                urep_after = guarded(uniqueness.uniqueness, gdf, uqis, usens) if gdf is not None else None
                if urep_after is not None:
                    chart(
                        figs.generalisation_chart(risk_measures(urep), risk_measures(urep_after)), key="re_up_gen_chart"
                    )
                    st.markdown(
                        f"k-anonymity **{urep.k_anonymity} → {urep_after.k_anonymity}**, unique records "
                        f"**{urep.unique_fraction:.1%} → {urep_after.unique_fraction:.1%}**"
                        + (f", ℓ-diversity **{urep.l_diversity} → {urep_after.l_diversity}**" if usens else "")
                    )
            upload_release(tabs[6], udf, upload.getvalue(), upload.name, upload.file_id)
