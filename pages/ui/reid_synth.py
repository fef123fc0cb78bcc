"""The re-identification page's "DP synthetic data" tab (its own file: one idea, and the page stays short), and the
advisor page's synthetic-data question.

Widgets -> a :class:`dpcore.synth.study.StudyConfig` -> a background job (``"synth.study"``) of this session
(:func:`pages.ui.common.job_caller`) -> the finished study's numbers, words and charts from dpcore. A second click with
the same settings reuses the session's queued, running or finished study, and a double click queues it once
(:func:`pages.ui.common.submit_once`); the tab polls only while it is open and its study is running. The default study
is shared (:func:`dpcore.synth.study.is_default`): a visitor without one of their own sees the newest finished
one at once, read-only and labelled with when it ran, or the one in progress; pressing Start while one runs joins
it (:func:`dpcore.synth.study.submit`).

A little over 400 lines, one idea: the page's synthetic-data widgets (the story's study, the advisor's question
and an upload's release share their helpers and keys); the upload's release is the part to move out if it grows."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dpcore import claims, textsafe
from dpcore import limits as L
from dpcore.attacks import reidentification as reid
from dpcore.budgets import charged, gate
from dpcore.errors import DPError, sentence
from dpcore.figures import synth as figs
from dpcore.jobs import display, registry, store, workers
from dpcore.noise.charge import ReleaseKind
from dpcore.synth import advise as synth_advise
from dpcore.synth import job as synth_job
from dpcore.synth import release as synth_release
from dpcore.synth import schema as synth_schema
from dpcore.synth import story as synth_story
from dpcore.synth import study as synth_study
from dpcore.synth import timing as synth_timing
from dpcore.synth import utility as synth_utility
from dpcore.training.data import release_uploads, save_upload
from pages.ui import identity
from pages.ui import upload as upload_ui
from pages.ui.common import chart, clicked, guarded, headline_md, job_caller, submit_once, table_downloads

D = synth_study.StudyConfig()
GENERATORS = {"mst": "MST · pure ε (δ = 0)", "aim": "AIM · δ = 1e-6"}
REPETITIONS = [1, 2, 3, 5, 10]
PAIR_OPTIONS = ["+".join(p) for p in synth_study.STORY_PAIRS]


def _pair_label(p: str) -> str:
    return " × ".join(reid.label(c) for c in p.split("+"))


def _config(n: int, seed: int, facts, qis, sensitive) -> synth_study.StudyConfig | None:
    c1, c2, c3 = st.columns([3, 2, 2])
    eps = c1.multiselect(
        "ε of the synthetic tables",
        list(L.SYNTH_EPSILONS),
        default=list(D.epsilons),
        key="re_syn_eps",
        format_func="{:g}".format,
        max_selections=L.SYNTH_STUDY_MAX_EPSILONS,
        help=f"Up to {L.SYNTH_STUDY_MAX_EPSILONS} values: each is released and attacked "
        "several times (for add or remove one patient).",
    )
    reps = c2.select_slider(
        "Releases per ε",
        REPETITIONS,
        value=D.repetitions,
        key="re_syn_reps",
        help="Each release draws new noise: the spread over releases is what the numbers "
        "show. Each also gets a twin fitted without these patients (the baseline).",
    )
    gen = c3.radio(
        "Generator",
        list(GENERATORS),
        format_func=GENERATORS.get,
        key="re_syn_gen",
        help="MST (a tree of 2-way marginals) runs with pure ε and δ = 0; AIM (picks the marginals "
        "that matter, one at a time) needs δ > 0: it adds Gaussian noise under zero-concentrated "
        "DP (zCDP), converted to ε at δ = 1e-6.",
    )
    with st.expander("Columns, pairs that matter, rows"):
        a, b, c = st.columns([3, 3, 2])
        must = list(dict.fromkeys([*qis, sensitive]))
        cols = a.multiselect(
            "Released columns",
            list(synth_schema.MEDICAL_COLUMNS),
            default=list(dict.fromkeys([*synth_schema.STORY_COLUMNS, *must])),
            key="re_syn_cols",
            format_func=reid.label,
            help="Every column's categories or bounds and bins are "
            "declared public beforehand (listed in the statement).",
        )
        pairs = b.multiselect(
            "Pairs that matter",
            PAIR_OPTIONS,
            default=PAIR_OPTIONS,
            key="re_syn_pairs",
            format_func=_pair_label,
            help="AIM measures these; for both generators the 2-way errors are judged on them.",
        )
        rows = c.number_input(
            "Synthetic rows (0 = estimated)",
            0,
            L.SYNTH_MAX_OUTPUT_ROWS,
            0,
            step=100,
            key="re_syn_rows",
            help="0: the generator's own DP estimate of the number of "
            "patients (a row count read from the data would leak it).",
        )
    return guarded(
        synth_study.StudyConfig,
        n=n,
        seed=seed,
        columns=tuple(cols),
        epsilons=tuple(eps),
        repetitions=int(reps),
        generator=gen,
        delta=0.0 if gen == "mst" else 1e-6,
        rows=int(rows) or None,
        pairs=tuple(tuple(p.split("+")) for p in pairs),
        facts=tuple(facts),
        qis=tuple(qis),
        sensitive=sensitive,
    )


def _submit(cfg: synth_study.StudyConfig) -> None:
    caller = job_caller()
    existing = guarded(synth_study.find, cfg, caller=caller)
    if existing is not None:
        st.session_state["re_syn_job"] = existing["id"]
        st.toast(f"This study is already {existing['status']}: showing it")
        return
    got, repeated = submit_once("re_syn_run", synth_study.submit, cfg, owner=caller.owner)
    if got:
        job_id, joined = (got, False) if repeated else got
        workers.ensure_workers(2)
        st.session_state["re_syn_job"] = job_id
        if joined:  # the shared default study is already queued or running: one run for everyone
            st.info(
                "The default study is already running for everyone: nothing new was queued. Its progress is "
                "below, and its results will be too.",
                icon=":material/groups:",
            )
        elif not repeated:
            st.toast(f"Study queued: {cfg.releases} synthetic releases in the background")


def open_study(job, tab: str) -> None:
    """Open a study on its tab (from My work): the tab's settings (and the page's patients) become the study's, so
    the tab shows it; ``tab`` is the page's label of this tab. Call before switching to the page."""
    cfg = synth_study.StudyConfig.from_dict(job["params"])
    pairs = ["+".join(p) for p in cfg.pairs]
    shown = {  # a setting the widgets cannot show (a command line's study) is left as it is
        "re_syn_eps": list(cfg.epsilons) if set(cfg.epsilons) <= set(L.SYNTH_EPSILONS) else None,
        "re_syn_reps": cfg.repetitions if cfg.repetitions in REPETITIONS else None,
        "re_syn_gen": cfg.generator if cfg.generator in GENERATORS else None,
        "re_syn_cols": list(cfg.columns) if set(cfg.columns) <= set(synth_schema.MEDICAL_COLUMNS) else None,
        "re_syn_pairs": pairs if set(pairs) <= set(PAIR_OPTIONS) else None,
        "re_syn_rows": cfg.rows or 0,
    }
    st.session_state.update(
        {"re_tab": tab, "re_n": cfg.n, "re_seed": cfg.seed, "re_syn_job": job["id"]}
        | {k: v for k, v in shown.items() if v is not None}
    )


def _job(cfg: synth_study.StudyConfig | None):
    """(the study to show, whether it has exactly these settings): this session's last submission if it matches,
    else its newest queued, running or finished study with exactly these settings, else — for the default settings
    — the shared default study (the newest finished, else the one running), else its newest finished study of the
    same patients and neighbour, shown as such. Studies belong to the browser (or signed-in user) that ran them, like runs; the
    default one is everyone's to read."""
    if cfg is None:
        return None, False
    caller = job_caller()
    mine = st.session_state.get("re_syn_job")
    if mine:
        job = guarded(store.get, mine, caller=caller, history=False)
        if job is not None and job["params"] == cfg.to_dict():
            return job, True
    job = guarded(synth_study.find, cfg, caller=caller) or guarded(synth_study.find_shared, cfg, caller=caller)
    if job is not None:
        return job, True
    return guarded(synth_study.find_similar, cfg, caller=caller), False


def _results(job: dict, ctx: dict) -> None:
    study = guarded(synth_study.from_job, job)
    if study is None:
        return
    eps_list = study.epsilons
    default = min(eps_list, key=lambda e: abs(e - ctx["dp_eps"]))
    at = st.select_slider("Show the tables at ε", eps_list, value=default, key="re_syn_at", format_func="{:g}".format)
    st.markdown(headline_md(*synth_story.headline(study, at)))
    nb = synth_story.neighbour_counts(study, at)
    s = study.point(at)["summary"]
    c = st.columns(2) + st.columns(2)  # two rows of two: a phone stacks them in reading order
    c[0].metric(
        "Rows matching her facts",
        synth_story.count_text(nb),
        help=f"{nb['min']} to {nb['max']} over {nb['repetitions']} releases; exactly one in {nb['single']} "
        "(a synthetic row is nobody)",
    )
    c[1].metric(
        "Her diagnosis named",
        f"{nb['right']} of {nb['repetitions']}",
        help=f"Tables fitted without her: {nb['baseline_right']} of {nb['repetitions']}",
    )
    c[2].metric(
        "Patients' diagnosis named",
        f"{s['targets_right']['mean']:.0%}",
        help=f"Over {study.config.n_targets} patients; tables without them "
        f"{s['baseline_targets_right']['mean']:.0%}; blind guess "
        f"{study.result['reference']['blind_right']:.0%}",
    )
    mb = s["membership_lower_bound"]
    c[3].metric(
        "Membership audit proves",
        f"ε ≥ {claims.down(mb['max'])}",
        help=f"One-run audit on 2,000 canaries per release (95% confidence each), the largest of "
        f"{mb['count']}; AUC {s['membership_auc']['mean']:.2f}. DP allows at most ε = {at:g}.",
    )
    st.info(synth_story.guarantee(study, at), icon=":material/verified_user:")
    table = guarded(
        synth_story.comparison,
        study,
        at,
        release=ctx["release"],
        generalisation=ctx["gen"],
        dp=ctx["dp"](at),
        qis=study.config.qis,
        sensitive=study.config.sensitive,
        facts=study.config.facts,
        target_seed=study.config.target_seed,
        n_targets=study.config.n_targets,
    )
    if table is not None:
        st.markdown("**Side by side at the same ε.**")
        st.dataframe(table, hide_index=True, key="re_syn_compare")
        st.caption(synth_story.comparison_note(study, at, ctx["gen"]))
        table_downloads(table, "synthetic_vs_defences", key="re_syn_compare_dl")
    chart(figs.attack_chart(study, at, label=reid.label), key="re_syn_attack_chart")
    st.caption(
        f"Each synthetic table is searched for rows that share a patient's "
        f"{', '.join(map(reid.label, study.config.qis))} (salary in its $5,000 bin); the attacker names the "
        "diagnosis most common among them. The ceiling is what DP allows any attacker about a known patient."
    )
    chart(figs.utility_chart(study, at), key="re_syn_utility_chart")
    st.caption(
        "Every cell of a marginal holds a share of the rows; the chart shows the largest gap between the "
        "synthetic and the real share, for the pairs that matter (and the 1-way marginals). Two real samples "
        "of the same size differ by the dotted line: no generator goes below it."
    )
    chart(figs.model_chart(study, at), key="re_syn_model_chart")
    q = study.questions(at)
    if len(q):
        st.markdown("**The console's standard questions, asked of the real and the synthetic tables.**")
        st.dataframe(q, hide_index=True, key="re_syn_questions")
    st.caption(
        ":orange-badge[Not covered by ε] " + synth_study.NOT_COVERED.capitalize() + ". They describe the "
        "release for its owner; the synthetic table and its statement are what would be published."
    )
    sample = study.result.get("sample")
    if sample:
        with st.expander(f"A synthetic table (ε = {sample['epsilon']:g}): its first rows"):
            rows = reid.shown_table(pd.DataFrame(sample["rows"]))
            st.dataframe(rows, hide_index=True, key="re_syn_sample")
            table_downloads(rows, "synthetic_sample", key="re_syn_sample_dl")
            st.caption("Covered by ε: drawn from the DP model, not from the patients. Nobody in it exists.")
    stmt = study.statement(at)
    if stmt:
        st.download_button(
            "Privacy statement (JSON)",
            json.dumps(stmt, indent=2).encode(),
            f"synthetic-statement-eps{at:g}.json",
            "application/json",
            key="re_syn_statement",
            icon=":material/verified_user:",
        )


def synthetic_tab(tab, ctx: dict) -> None:
    """Draw the tab. ``ctx``: the story's n, seed, facts, qis, sensitive, the release, the generalisation, the DP
    tab's ε and ``dp(eps)`` (the noisy-counts simulation at an ε)."""
    st.markdown(
        "**Release a fake table instead.** A DP synthetic table has the same columns as the release but no real "
        "row: a generator (OpenDP's MST or AIM) learns noisy counts of a few column combinations and draws new "
        "patients from them. Then the attacker runs the same linkage on it: your neighbour's facts, and every "
        "patient's quasi-identifiers."
    )
    cfg = _config(ctx["n"], ctx["seed"], ctx["facts"], ctx["qis"], ctx["sensitive"])
    left, right = st.columns([2, 3], vertical_alignment="center")
    if (
        clicked(
            "re_syn_run", left.button("Start the study", type="primary", key="re_syn_run", icon=":material/play_arrow:")
        )
        and cfg is not None
    ):
        _submit(cfg)
    if cfg is not None:
        right.caption(guarded(synth_timing.before, cfg.releases, caller=job_caller()) or "")
    job, exact = _job(cfg)
    if job is None or not exact:
        if cfg is not None:
            st.info(
                "No study with these settings yet: press **Start the study**."
                + (
                    f" Below: the newest finished study of the same patients ({textsafe.md(job['label'])})."
                    if job
                    else ""
                ),
                icon=":material/play_circle:",
            )
        if job is None:
            return
    active = job["status"] in ("queued", "running")
    if active:
        workers.ensure_workers(2)
    caller = job_caller()
    note = synth_study.shared_note(job, caller=caller)  # someone else's shared study: whose, when, read-only
    if note:
        st.info(note, icon=":material/groups:")

    @st.fragment(run_every=2.0 if active and tab.open is not False else None)
    def progress(jid: str, status0: str, mine: bool) -> None:
        v = guarded(display.view, jid, caller=job_caller())
        if v is None:
            return
        if v["job"]["status"] != status0:
            st.rerun(scope="app")
            return
        if status0 in ("queued", "running"):
            pace = synth_timing.during(v["job"])
            name = textsafe.md(v["job"]["label"])  # its readable name (settings, or as renamed), not its id
            st.progress(v["fraction"] or 0.0, text=f"Study “{name}”: {v['text']}" + (f" · {pace}" if pace else ""))
            if mine and st.button("Cancel", key="re_syn_cancel", icon=":material/stop:"):
                guarded(store.cancel, jid, caller=job_caller())
                st.rerun(scope="app")

    progress(job["id"], job["status"], caller.may_change(job["owner"]))
    if job["status"] == "failed":
        st.error(f"The study failed: {job['error']}")
    elif job["status"] == "cancelled":
        st.warning(f"The study was cancelled ({job['error']}).")
    elif job["status"] == "done":
        _results(job, ctx)


def advice_section() -> None:
    """The advisor page's synthetic-data question, answered from a finished study."""
    st.subheader("Synthetic data: which ε for ±k\u00a0points?")  # on a phone: two lines, no word alone
    st.markdown(
        "Which ε keeps every cell of the 2-way marginals that matter within ±k percentage points of the real "
        "table — read from the releases of a synthetic-data study, not from a formula."
    )
    done = guarded(synth_study.finished, caller=job_caller(), limit=50) or []
    if not done:
        st.info(
            "Run a study on the Re-identification page (tab *DP synthetic data*): its releases answer this, "
            "measured rather than guessed. Studies belong to the browser (or signed-in user) that ran them; the default "
            "study, once anyone has run it, is everyone's to read.",
            icon=":material/play_circle:",
        )
        return
    c1, c2 = st.columns([1, 3])
    within = c1.number_input(
        "Within ± (percentage points)",
        synth_advise.WITHIN_MIN,
        synth_advise.WITHIN_MAX,
        5.0,
        step=0.5,
        key="adv_syn_within",
        help="Every cell of every 2-way marginal that matters (its share of the rows) within "
        "this many percentage points of the real table, in every release measured.",
    )
    labels = {j["id"]: f"{j['label']} · {j['id']}" for j in done}
    jid = c2.selectbox("Study", list(labels), format_func=labels.get, key="adv_syn_study")
    study = guarded(synth_study.from_job, next(j for j in done if j["id"] == jid))
    res = guarded(synth_advise.epsilon_for_marginals, study, within) if study is not None else None
    if res is None:
        return
    (st.success if res["epsilon"] is not None else st.warning)(res["text"])
    rows = pd.DataFrame(
        [
            {
                "ε": f"{r['epsilon']:g}",
                "worst release (points)": round(r["worst"], 2),
                "mean (points)": round(r["mean"], 2),
                "releases": r["releases"],
                f"within ±{res['within']:g}": "yes" if r["ok"] else "no",
            }
            for r in res["rows"]
        ]
    )
    st.dataframe(rows, hide_index=True, key="adv_syn_table")
    st.caption(
        ":orange-badge[Not covered by ε] the marginal errors are computed on the real rows, for the data "
        "owner; they are not part of the release."
    )


UPLOAD_EPSILONS = [0.1, 0.3, 1.0, 3.0, 10.0]
UPLOAD_GENERATORS = {"mst": "MST · pure ε (δ = 0)", "aim": "AIM · with δ"}
UPLOAD_DELTAS = [1e-7, 1e-6, 1e-5]
NO_MODEL = "(no model)"


def _declared(declared: dict | None, widths: dict, missing: bool):
    """The schema the editor declares, or None while it does not (the release button says why)."""
    try:
        return synth_schema.from_bounds(declared or {}, widths, complete=not missing)
    except DPError:
        return None


def upload_release(tab, udf: pd.DataFrame, data: bytes, name: str, upload_id: str) -> None:
    """ "Your own data": a DP synthetic table of the upload, from the columns the visitor declares (never from the
    rows), with MST (pure ε) or AIM (with δ), released by a background job of this session that also measures what
    the table keeps (marginals at the declared bins; a model trained on it, tested on a held-out part of the
    upload); its statement, first rows, CSV and utility when done."""
    st.subheader("Release a DP synthetic table instead")
    st.markdown(
        "Declare each column to release in the same editor as training and sweeps: its **public** range and bin "
        "width, or its public categories — what is known without looking at the data; nothing is read from the "
        "rows to fill these in. Columns left empty are not released."
    )
    widths: dict = {}
    _, declared = upload_ui.editor(data, None, "re_up_syn", widths=widths, learn_rest=False)
    c1, c2, c3 = st.columns([2, 2, 1], vertical_alignment="bottom")
    eps = c1.select_slider("ε (add or remove one record)", UPLOAD_EPSILONS, value=1.0, key="re_up_syn_eps")
    rows = c2.number_input(
        "Synthetic rows (0 = estimated)",
        0,
        L.SYNTH_MAX_OUTPUT_ROWS,
        0,
        step=100,
        key="re_up_syn_rows",
        help="0: the generator's own DP estimate of the number of rows.",
    )
    missing = c3.checkbox(
        "May be missing",
        key="re_up_syn_missing",
        help="Declare that values may be missing: synthetic rows may then hold missing values.",
    )
    g1, g2, g3 = st.columns([2, 1, 2], vertical_alignment="bottom")
    gen = g1.radio(
        "Generator",
        list(UPLOAD_GENERATORS),
        format_func=UPLOAD_GENERATORS.get,
        key="re_up_syn_gen",
        horizontal=True,
        help="MST (a tree of 2-way marginals) runs with pure ε and δ = 0; AIM (picks the "
        "marginals that matter, one at a time) needs δ > 0: Gaussian noise under "
        "zCDP, converted to ε at the δ you choose. As `synth --generator` on the CLI.",
    )
    delta = g2.select_slider(
        "δ",
        UPLOAD_DELTAS,
        value=1e-6,
        key="re_up_syn_delta",
        format_func="{:.0e}".format,
        disabled=gen != "aim",
        help="AIM only; keep it well below 1 / rows.",
    )
    pairs = g3.text_input(
        "Pairs that matter (optional)",
        key="re_up_syn_pairs",
        placeholder="age+sex, age+income",
        help="Column pairs joined by +: AIM measures these; the 2-way errors are judged on them "
        "(all pairs when empty). As `synth --pairs`.",
    )
    schema0 = _declared(declared, widths, missing)
    names = schema0.names if schema0 is not None else []
    u1, u2, u3 = st.columns([2, 2, 1], vertical_alignment="bottom")
    measure = u1.checkbox(
        "Measure what it keeps",
        value=True,
        key="re_up_syn_measure",
        help="In the same background job: each column's and pair's marginal against your rows, at "
        "the declared bins; with a column to predict, a model trained on the synthetic rows "
        f"and tested on a held-out {synth_job.HOLDOUT_SHARE:.0%} of your rows (not released).",
    )
    target = u2.selectbox(
        "Model: predict",
        [NO_MODEL, *names],
        key="re_up_syn_target",
        disabled=not measure,
        help="A category column: its value; a number column: whether it reaches the threshold. "
        f"Then {synth_job.HOLDOUT_SHARE:.0%} of your rows, drawn by a secure coin, are held "
        "out of the release to test it.",
    )
    threshold = None
    col = schema0.column(target) if schema0 is not None and target in names else None
    if measure and col is not None and col.is_number:
        lo, hi = col.bounds
        threshold = u3.number_input(
            "at least",
            float(lo),
            float(hi),
            float((lo + hi) / 2),
            key=f"re_up_syn_thr_{target}",
            help="The public threshold the model predicts.",
        )
    caller = job_caller()
    if clicked(
        "re_up_syn_go", st.button("Release a synthetic table", key="re_up_syn_go", icon=":material/play_arrow:")
    ):
        schema = guarded(synth_schema.from_bounds, declared or {}, widths, complete=not missing)
        pair_list = guarded(synth_release.parse_pairs, pairs) if schema is not None else None
        cfg = (
            guarded(synth_release.SynthConfig, eps, delta if gen == "aim" else 0.0, gen, int(rows) or None, pair_list)
            if pair_list is not None
            else None
        )
        if cfg is not None and guarded(schema.encode, udf.head(1)) is not None:  # every declared column exists
            chosen = target if measure and target in schema.names else None
            p = guarded(
                synth_job.params,
                "upload:pending",
                schema,
                cfg,
                name,
                utility=measure,
                target=chosen,
                threshold=threshold if chosen else None,
            )  # checked before the upload is kept
            # the gate: rows that are a registered dataset's are charged to its cap and this session's quota first
            adm = (
                guarded(
                    gate.admit,
                    identity.current(),
                    udf,
                    lambda: (synth_release.charge(schema, cfg), None),
                    kind=ReleaseKind.SYNTHETIC,
                    description=f"DP synthetic table ({gen.upper()}) of an upload",
                )
                if p is not None
                else None
            )
            ref = guarded(save_upload, data) if adm is not None else None
            p = {**p, "dataset": ref} if ref else None
            ids, repeated = (
                submit_once(
                    "re_up_syn_go",
                    store.submit_many,
                    [(registry.SYNTH_RELEASE, p, f"synthetic {name} · ε {eps:g}")],
                    owner=caller.owner,
                    group=registry.SYNTH_RELEASE_GROUP,
                )
                if p
                else (None, False)
            )
            if adm is not None and (not ids or repeated):
                adm.refund("the release was not queued (refused, or a repeated click)")
            if ids and not repeated and adm is not None and guarded(charged.tie, adm, ids[:1]) is None:
                store.cancel(ids[0], caller=caller)  # its charge could not be tied to it: it must not run uncharged
                ids = None
            if ids:
                workers.ensure_workers(2)
                st.session_state["re_up_syn_job"] = (upload_id, ids if repeated else ids[0])
            else:
                try:
                    release_uploads()  # a refused release keeps nothing on disk
                except Exception:
                    pass
    st.caption(
        ":grey-badge[No attack study here] The attacks of tab 6 need the story's neighbour and an independent "
        "population drawn from the same generator as the data (the baseline a table reaches without anyone "
        "in it); an upload has neither, so for your own data this tab measures what the table keeps, not "
        "what an attacker gets. The guarantee below (ε, δ) is what bounds that."
    )
    mine = st.session_state.get("re_up_syn_job")
    if not mine or mine[0] != upload_id:
        return
    job = guarded(store.get, mine[1], caller=caller, history=False)
    if job is None:
        return
    active = job["status"] in ("queued", "running")

    @st.fragment(run_every=2.0 if active and tab.open is not False else None)
    def progress(jid: str, status0: str) -> None:
        v = guarded(display.view, jid, caller=job_caller())
        if v is not None and v["job"]["status"] != status0:
            st.rerun(scope="app")
        elif v is not None and status0 in ("queued", "running"):
            st.progress(v["fraction"] or 0.0, text=f"Synthetic release {jid}: {v['text']}")

    progress(job["id"], job["status"])
    if job["status"] == "failed":
        st.error(f"The release failed: {job['error']}")
    elif job["status"] == "done":
        release_result(job, caller)


def release_result(job, caller, *, key: str = "re_up_syn") -> None:
    """A finished synthetic release: its statement's summary, first rows, the table and the statement to download,
    and what it keeps (here, and on My work: the upload it came from stays in its session only)."""
    res = job["result"]
    st.info(f"**Released.** {res['statement']['summary']}.", icon=":material/verified_user:")
    shown = pd.DataFrame(res["sample"])
    st.dataframe(shown, hide_index=True, key=f"{key}_table")
    read = res["statement"].get("rows_read")
    st.caption(
        f"{res['rows']:,} synthetic rows (first {len(shown)} shown), covered by ε: drawn from the DP "
        "model, not from your rows."
        + (f" Rows read: {read}." if read and res.get("utility") and (res["utility"].get("held_out_rows") or 0) else "")
    )
    path = guarded(store.result_path, job["id"], synth_job.CSV_NAME, caller=caller)
    if path is not None and path.is_file():
        st.download_button(
            "Synthetic table (CSV)",
            path.read_bytes(),
            f"synthetic-{job['id']}.csv",
            "text/csv",
            key=f"{key}_csv",
            icon=":material/download:",
        )
    budget = guarded(gate.statement_block, job=job["id"]) or {}
    st.caption(
        "Charged to "
        + ", ".join(f"{textsafe.md(str(c['dataset']))} (ε = {c['epsilon']:.3g})" for c in budget["charged_to"])
        + " before it ran."
        if budget.get("charged_to")
        else f"Budget: {budget.get('owner', gate.OWN_ROWS)}."
    )
    st.download_button(
        "Privacy statement (JSON)",
        json.dumps({**res["statement"], "budget": budget}, indent=2).encode(),
        f"synthetic-statement-{job['id']}.json",
        "application/json",
        key=f"{key}_statement",
        icon=":material/verified_user:",
    )
    if res.get("utility"):
        _upload_utility(res["utility"])


def _upload_utility(u: dict) -> None:
    """What an upload's synthetic table keeps (the job's numbers), labelled: computed on the private rows."""
    st.markdown(
        "**What the synthetic table keeps.** :orange-badge[Not covered by ε] "
        + synth_utility.UPLOAD_NOT_COVERED.capitalize()
        + "."
    )
    m = u["marginals"]
    c = st.columns(2) + st.columns(2)  # two rows of two: a phone stacks them in reading order
    c[0].metric(
        "1-way marginals, worst cell",
        f"{m['one_way_max']:.1f} points",
        help=f"Mean over the columns {m['one_way_mean']:.1f} points: the largest gap between a value's (or "
        "bin's) share of the synthetic rows and of your rows.",
    )
    c[1].metric(
        "2-way marginals, worst cell",
        "—" if m["two_way_max"] is None else f"{m['two_way_max']:.1f} points",
        help="One column declared: no pair to compare."
        if m["two_way_max"] is None
        else f"Mean over the pairs {m['two_way_mean']:.1f} points, for the pairs that matter (all pairs "
        "when none were named).",
    )
    model = u.get("model")
    if model is not None:
        c[2].metric(
            "Model on synthetic rows",
            f"{model['synthetic']:.1%}",
            delta=f"{(model['synthetic'] - model['real']) * 100:+.1f} points vs your rows",
            help=f"Predicting {textsafe.md(model['task'])}: test accuracy on {u['held_out_rows']:,} held-out "
            "rows of yours that no release read.",
        )
        c[3].metric(
            "Model on your rows",
            f"{model['real']:.1%}",
            help=f"Trained on the {u['fitted_rows']:,} rows the release read, tested on the same held-out "
            f"rows; always answering the most common class: {model['majority']:.1%}.",
        )
    elif u.get("model_note"):
        st.caption(textsafe.md_message(sentence(u["model_note"])))
    chart(figs.upload_marginals_chart(u), key="re_up_syn_utility_chart")
