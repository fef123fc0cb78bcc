"""Home: what DP promises, where real deployments put epsilon, epsilon in plain language, a tour."""

import streamlit as st

from dpcore import claims
from dpcore.budgets import quotas
from dpcore.figures import home as figs
from dpcore.jobs import display, registry, store
from dpcore.noise.interpret import EXAMPLE_TAIL, fact_reading, posterior_bound, privacy_level, reading
from dpcore.statements import keys
from dpcore.sweep import runs as sweep_runs
from dpcore.sweep import summary as sweep_summary
from dpcore.sweep import timing
from pages.ui import first_screen, my_work
from pages.ui import identity as _identity

# _ui also routes deep links through app.py
from pages.ui.common import chart, from_url, guarded, headline_md, job_caller, share_in_url, state, unbroken

st.title("DP Explorer")
top = first_screen.headline()  # the "so what", filled in once the slider below gives ε
tour = st.container()  # the tour's expander, right under the headline: one click away, not a screen of text

my_work.section()  # a returning visitor's runs, sweeps, studies and releases (nothing for a first visit)

# --- the guided tour: the first step, not a footer --------------------------------------------------------
took = guarded(timing.words, "training", caller=job_caller())  # measured here, else on a 2-core machine
TOUR = [  # the sidebar's order (app.py), so a step's number matches where the page sits
    ("pages/home.py", "Here, on Home", "Move *Your ε* below and read how sure an attacker could become (one minute)."),
    ("pages/noise.py", "Noise mechanisms", "Move ε and watch the error grow as privacy gets stronger."),
    (
        "pages/advisor.py",
        "Choose ε from risk",
        "Say how sure an attacker may become and how accurate a count must be; read the ε range that meets both.",
    ),
    (
        "pages/reidentification.py",
        "Re-identification",
        "Names removed, yet your neighbour (34, zip 10001, "
        "$50–60k) is exactly 1 patient, and her diagnosis shows. Go through the tabs: linkage, uniqueness, defences.",
    ),
    (
        "pages/differencing.py",
        "Differencing attack",
        "Two allowed averages over 50+ people give one person's exact "
        "age. Press *Show all steps*, then see noise spread the attacker's estimate.",
    ),
    (
        "pages/query_console.py",
        "Private query console",
        "Ask noisy questions as a visitor until the shared budget runs out.",
    ),
    (
        "pages/plan.py",
        "Plan a release",
        "Choose several statistics on one budget, split ε between them and preview their error before one release.",
    ),
    (
        "pages/training.py",
        "DP training",
        "Train a model with DP next to its non-private twin" + (f" ({took})." if took else "."),
    ),
    ("pages/privacy_utility.py", "Privacy–utility curve", "Accuracy and attack success against ε on one screen."),
    (
        "pages/audit.py",
        "Audit your model",
        "See what a membership attack's scores prove about a model's ε: "
        "download the *Example scores file* and upload it.",
    ),
]
with tour.expander("Start here: a ten-minute guided tour", icon=":material/tour:"):
    st.markdown(
        "Ten minutes, one step per page in the sidebar's order; each page's settings are in its link, so you can "
        "share the exact view. At the end, *Prepare report* in the sidebar downloads an HTML summary that opens offline."
    )
    # One row per step, the page's link on the left and what to do there beside it: links line up in one column
    # on a laptop and a phone stacks each link over its line, in order (two steps a row left links ragged).
    for i, (path, title, line) in enumerate(TOUR):
        link, text = st.columns([1, 3], vertical_alignment="center", gap="xxsmall")
        # the step's number in words, not an icon: Material's counter icons stop at 9
        link.page_link(path, label=f"**{i + 1} · {title}**")  # step 1, Home: "you are here"
        text.markdown(line)

HOME_EPS = [0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 12.2, 20.0, 50.0]
eps = st.select_slider(
    "Your ε",
    options=HOME_EPS,
    value=from_url("home_eps", 1.0, HOME_EPS),
    key="home_eps",
    help="ε bounds how much one person's data can change any result (pure ε-DP, δ = 0, for "
    "datasets that differ by adding or removing one person).",
)
share_in_url("home_eps")
post = claims.percent(float(posterior_bound(0.5, eps)), up=True)
with top:
    st.markdown(
        headline_md(
            # two lines at most on a phone, no word alone on the last (tests/e2e/test_layout.py)
            f"At {unbroken(f'ε = {eps:g}')}, an attacker's 50% belief can rise to at most {unbroken(post)}",
            "Its belief that you are in the data, once it sees the result: differential privacy (DP) promises that "
            "a result is almost as likely without your record as with it. Smaller ε, stronger privacy, more noise.",
        )
    )
c1, c2 = st.columns([3, 2])
with c1, first_screen.main_chart():
    chart(figs.posterior_chart(eps), key="home_posterior")
with c2:
    st.metric(
        "Privacy level",
        privacy_level(eps),
        help="The word follows the membership bound beside it: strong while an attacker 50% sure that a "
        "person is in the data ends at most 75% sure, moderate up to 90%, weak up to 99%, very weak "
        "beyond.",
    )
    with st.expander("What this ε means, in words", icon=":material/translate:"):
        st.markdown(
            "**Differential privacy (DP) is a promise about what anyone can learn about you from a published "
            "result.** Whether or not your record was used, every result is almost equally likely — so no one, "
            "however much else they know, learns much about *you*. A budget called **ε (epsilon)** says how much "
            'is "much".'
        )
        st.markdown(reading(eps, 0.5))  # the level's word is the metric above; its number is this sentence's
        st.markdown(reading(eps, 0.01))
        st.markdown(fact_reading(eps, 0.5))  # a fact about a known person: the replace-one question, 2ε
    with st.expander("Where the bounds come from"):
        tail_eps, tail_delta, tail = EXAMPLE_TAIL
        # maths as the formal definition below writes it (LaTeX), not "e^ε" in plain text
        st.markdown(
            r"Bayes' rule with a likelihood ratio of at most $e^{\varepsilon}$: "
            r"$p' \le e^{\varepsilon} p \,/\, (1 - p + e^{\varepsilon} p)$ for **whether a person is in "
            "the data** — ε is for datasets that differ by adding or removing one person, with δ = 0. A "
            r"**fact about someone known to be in the data** compares their record with one value against "
            r"another (a removal and an addition), so the ratio is $e^{2\varepsilon}$. With δ > 0 a bound "
            "holds except on outputs where the privacy loss exceeds ε; how often that happens depends on "
            f"the mechanism and is not δ: for the Gaussian mechanism at ε = {tail_eps:g}, δ = "
            f"{claims.delta(tail_delta)} it is {claims.up(tail, 2)}, {tail / tail_delta:.0f} × δ."
        )
st.subheader("Where is your epsilon?")
chart(figs.deployments_chart(eps), key="home_deployments")
st.caption(
    "Epsilons of published deployments are not directly comparable: the unit of privacy (a record, a "
    "user per day, a device) and the time window differ."
)

with st.expander("The formal definition", icon=":material/function:"):
    # two lines, so a phone (390 px) shows the whole formula without scrolling sideways
    st.latex(r"\begin{gathered}\Pr[M(D) \in S] \\ \le\; e^{\varepsilon}\,\Pr[M(D') \in S] + \delta\end{gathered}")
    st.markdown(
        "For every pair of **neighbouring** datasets D, D′ — here: D′ is D with one person's record added "
        "or removed — and every set of outputs S. δ is a small probability (≪ 1/n, the number of people) "
        "that the bound may fail; δ = 0 is *pure* ε-DP."
    )

with st.expander("Checking this server's statements", icon=":material/verified_user:"):
    published = guarded(keys.published)
    if published:
        st.markdown(
            "Every privacy statement this server hands out (runs, sweeps, query histories, synthetic releases, "
            "decisions) is signed with its Ed25519 key; only this server can sign, anyone can check. Publish "
            "this fingerprint; a data-protection officer checks a statement on any machine with "
            "`python -m dpcore statement --verify FILE --public-key KEY.pem` (the key below, or the API's "
            "`/public-key`), or in the advisor page's *Verify a statement* box."
        )
        st.markdown(f"**Fingerprint** (SHA-256 of the key): `{published['fingerprint']}`")
        st.code(published["public_key"], language=None)

with st.sidebar:
    st.markdown("**Report**")
    caller = job_caller()  # the report offers this session's runs and sweeps (and the shared demo), nobody else's
    finished = [s for s in sweep_runs.list_sweeps(caller=caller, refresh=False) if s.get("status") == "done"]
    sweep_names = {s["id"]: sweep_summary.sweep_title(s) for s in finished}  # named by what they are, never by id
    sweep_id = st.selectbox(
        "Include a privacy–utility sweep",
        [None, *sweep_names],
        key="home_report_sweep",
        format_func=lambda i: "none" if i is None else sweep_names[i],
        disabled=not finished,
        help="Finished sweeps from the Privacy–utility page",
    )
    # training runs and query histories: each gets a privacy statement section (reads only; nothing imported
    # beyond the job store and the ledger until the button is pressed)
    runs = {
        j["id"]: j.get("label") or j["id"]
        for j in (guarded(store.list_jobs, caller=caller, group=registry.TRAIN_GROUP, limit=30) or [])
        if j["status"] == "done"
    }
    job_ids = st.multiselect(
        "Include training runs",
        list(runs),
        format_func=runs.get,
        key="home_report_jobs",
        disabled=not runs,
        placeholder="none" if runs else "no finished runs yet",
        help="Finished runs from the DP training page: each adds its privacy statement "
        "(ε at several δ, trade-off curve, noise source)",
    )
    viewer = _identity.current()  # the picker lists only what this session may see (all of it for an admin)
    books = {(b["dataset"], b["analyst"]): b for b in (guarded(quotas.ledgers, viewer) or [])}
    picked = st.multiselect(
        "Include query ledgers",
        list(books),
        key="home_report_ledgers",
        format_func=lambda k: (
            f"{books[k]['dataset_name']}: "
            + ("every answer" if books[k]["shown"] is None else f"{books[k]['shown']}'s quota")
            + f" (ε {books[k]['spent']:g} spent)"
        ),
        disabled=not books,
        placeholder="none" if books else "no queries answered yet",
        help="Query histories from the console that you may see (sign in there): each adds the "
        "privacy statement of what its dataset released as a whole",
    )
    studies = {
        j["id"]: (j.get("label") or j["id"])
        + ("" if j.owner == caller.owner else f" · shared default study, {display.ran_at(j)}")
        for j in (guarded(store.list_jobs, caller=caller, group=registry.SYNTH_GROUP, limit=30, shared=True) or [])
        if j["status"] == "done"
    }  # this session's studies, and the default study anyone finished
    synth_ids = st.multiselect(
        "Include DP synthetic-data studies",
        list(studies),
        format_func=studies.get,
        key="home_report_synth",
        disabled=not studies,
        placeholder="none" if studies else "no finished studies yet",
        help="Finished studies from the re-identification page's DP synthetic data tab: "
        "each adds its privacy statement, attacks and utility",
    )
    decision = st.session_state.get("adv_decision")  # the advisor's last decision in this session, if any
    with_decision = st.checkbox(
        "Include the advisor's decision"
        + (f" (the report then explains its ε = {decision['decision']['epsilon_text']})" if decision else ""),
        key="home_report_advice",
        value=False,
        disabled=decision is None,
        help="The last answer of Choose ε from risk in this browser session, as a decision "
        "record: risk limit → ε → expected error, with the failure probabilities. The report then explains the "
        "advisor's ε, not Home's slider: one ε throughout"
        if decision
        else "Open Choose ε from risk first: its answer can be added here",
    )
    audit = st.session_state.get("au_report")  # the last audit of Audit your model in this session, if any
    with_audit = st.checkbox(
        "Include your model's audit",
        key="home_report_audit",
        value=False,
        disabled=audit is None,
        help=f"The last audit on Audit your model in this browser session ({audit['name']}): "
        "what its scores prove, the claim and its ceiling, the ROC"
        if audit
        else "Open Audit your model and audit a scores file first: it can then be added here",
    )
    if st.button(
        "Prepare report",
        key="home_report_prepare",
        icon=":material/description:",
        help="A self-contained HTML file (opens offline) for the ε chosen on Home",
    ):
        # progress where the button is, and a toast when it is ready: on a phone the sidebar closes and a spinner
        # in it was never seen (the first click "did nothing")
        bar = st.progress(0.0, text="Building the report …")
        from dpcore.report import document as report  # only when asked: plotly.io's HTML export is slow to import

        advice = [decision] if with_decision and decision else []
        # one ε throughout: the advisor's when its decision goes in, else Home's slider, its source said beside it
        r_eps, r_delta, r_source = report.chosen_epsilon(eps, advice, given=not advice)
        html = guarded(
            report.build,
            r_eps,
            delta=r_delta,
            epsilon_source=r_source or "Home's ε slider",
            sweep_id=sweep_id,
            job_ids=job_ids,
            ledgers=picked,
            caller=caller,
            viewer=viewer,
            advice=advice,
            synth_ids=synth_ids,
            audits=[audit] if with_audit and audit else [],
            progress=lambda f, text: bar.progress(min(max(f, 0.0), 1.0), text=text),
        )
        bar.empty()
        st.session_state["home_report_html"] = html
        if html:
            st.toast("Report ready: **Download report** is in the sidebar.", icon=":material/description:")
    if state("home_report_html", None):
        st.download_button(
            "Download report",
            st.session_state["home_report_html"].encode(),
            "dp-explorer-report.html",
            "text/html",
            key="home_report_download",
            icon=":material/download:",
        )
