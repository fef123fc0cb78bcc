"""The DP training page's view of one finished run: the headline (what DP cost), the metrics beside the
non-private twin, how ε was computed, the downloads (the release — weights and the signed statement —, the
diagnostics apart and labelled "not covered by ε", the statement, the run as code). pages/training.py
holds the form, the submission, the run picker and the running job, and calls :func:`show_finished`."""

import json

import streamlit as st

from dpcore import claims, export, limits
from dpcore.figures import advisor as adv_figs
from dpcore.figures import promise
from dpcore.figures import training as figs
from dpcore.statements import release
from dpcore.sweep import summary as sweep_summary
from dpcore.textsafe import md, md_message
from dpcore.training.job import baseline_params
from dpcore.training.results import (
    TrainMetrics,
    accuracy_interval,
    compare_accuracy,
    majority_share,
    pays_more,
    pays_more_text,
)
from pages.ui.common import chart, clicked, code_downloads, guarded

acc_text = sweep_summary.accuracy_text
RELATION = "add/remove one record"
ACTIVE = ("queued", "running")
NOT_COVERED_BADGE = ":orange-badge[Not covered by ε]"


def _fmt(v, spec=".3f", none="—"):
    return none if v is None else format(v, spec)


def headline(m: TrainMetrics, bm: TrainMetrics | None, twin: dict | None) -> None:
    """One sentence and one number: what DP cost on this run. The heading is the claim (two lines on a phone;
    with δ, the relation and the comparison in it, it took up to five); δ and the relation open the line under it."""
    eps = claims.up(m.epsilon)
    public = f"; the {m.n_train:,} training rows and the classes are public" if m.n_train else ""
    terms = (
        f"ε = {eps} holds with δ = {claims.delta(m.delta)} ({RELATION}{public})."
        if m.delta
        else f"ε = {eps} is pure ε-DP, δ = 0 ({RELATION}{public})."
    )
    rows = f"{m.n_test:,} test rows" if m.n_test else "the test rows"
    if bm is not None and bm.test_accuracy is not None and m.test_accuracy is not None:
        cost = (bm.test_accuracy - m.test_accuracy) * 100
        side = compare_accuracy(m.test_accuracy, m.n_test, bm.test_accuracy, bm.n_test)
        if side == -1:
            st.subheader(f"DP costs {cost:.1f} points of accuracy at ε = {eps}")
            than = ": the 95% intervals do not overlap"
        elif side == 1:
            st.subheader(f"DP scores {-cost:.1f} points above its twin at ε = {eps}")
            than = ": the 95% intervals do not overlap"
        else:  # a difference only where the intervals show one (a +2.2 on 137 rows was headlined before)
            st.subheader(
                f"No cost shown at ε = {eps} on {m.n_test:,} test rows" if m.n_test else f"No cost shown at ε = {eps}"
            )
            than = ": the 95% intervals overlap, so a test set this size cannot tell the two apart"
        st.markdown(
            f"{terms} Test accuracy **{acc_text(m.test_accuracy)}** {_interval(m)} with DP vs "
            f"**{acc_text(bm.test_accuracy)}** {_interval(bm)} for the non-private twin (same model, split and "
            f"epochs), on {rows}{than}. {_majority(m)}{NOT_COVERED_BADGE} test accuracy is measured on private "
            "test rows."
        )
    else:
        st.subheader(f"Test accuracy {acc_text(m.test_accuracy)}")
        st.markdown(
            f"{terms} {acc_text(m.test_accuracy)} {_interval(m)} on {rows}. {_majority(m)}{NOT_COVERED_BADGE} test "
            "accuracy is measured on private test rows."
        )
        if twin is not None and twin["status"] in ACTIVE:
            st.info("The non-private twin is still training: the cost of DP appears here when it finishes.")
    _no_better_than_guessing(m)


def _interval(m: TrainMetrics) -> str:
    """An accuracy's 95% interval as the headline writes it: "[84.5%, 95.7%]" (empty when unknown)."""
    iv = accuracy_interval(m.test_accuracy, m.n_test)
    return "" if iv is None else f"[{iv[0]:.1%}, {iv[1]:.1%}]"


def _majority(m: TrainMetrics) -> str:
    """The majority-class line: what always guessing the most common class scores on the same test rows."""
    top = majority_share(m.per_class)
    if top is None:
        return ""
    return f"Always guessing the most common class ({md(top[0])}) scores {acc_text(top[1])}. "


def _no_better_than_guessing(m: TrainMetrics) -> None:
    """A warning when the model's accuracy is not shown to beat always guessing the most common class."""
    top = majority_share(m.per_class)
    if top is None or m.test_accuracy is None or not m.n_test:
        return
    if compare_accuracy(m.test_accuracy, m.n_test, top[1], m.n_test) != 1:
        st.warning(
            f"This model is not shown to beat always guessing {md(top[0])} ({acc_text(top[1])} of these test rows): "
            "it may have learned little. Train longer, raise ε, or check the target column."
        )


def show_finished(job: dict, twin: dict | None, baseline: dict | None, train_baseline, caller) -> None:
    """A finished run: ``twin`` its non-private twin job (any state) or None, ``baseline`` the newest finished
    baseline with the same model, split and epochs, ``train_baseline(params, button)`` submits one, ``caller`` this
    session as the job store sees it."""
    m = TrainMetrics.from_job(job) or TrainMetrics.from_dict({})
    private = m.private
    bm = None if not private else TrainMetrics.from_job(baseline)
    if m.release_label:
        st.warning(
            f"**{m.release_label}** — sampling and noise were drawn from the public seed "
            "(tests, teaching). Do not publish this model as DP."
        )
    if m.diverged:
        st.error(f"This run failed to learn: {m.diverged}.")
    if private:
        headline(m, bm, twin)
    else:
        st.subheader(f"Non-private baseline: {acc_text(m.test_accuracy)} test accuracy")
        st.markdown("ε = ∞ (no privacy): trained without DP, so no ε bounds what the model reveals about a record.")
    k1, k2, k3, k4 = st.columns(4)
    vs = (  # an arrow only for a difference the 95% intervals show
        None
        if bm is None or not compare_accuracy(m.test_accuracy, m.n_test, bm.test_accuracy, bm.n_test)
        else f"{(m.test_accuracy - bm.test_accuracy) * 100:+.1f} points vs baseline"
    )
    k1.metric(
        "Test accuracy",
        acc_text(m.test_accuracy),
        delta=vs,
        help="Share of held-out test rows classified correctly, with its 95% interval in the sentence above. A "
        "diagnostic on private rows: not covered by ε, rounded, and not part of the release.",
    )
    k2.metric(
        "Baseline test accuracy (no DP)",
        acc_text(bm.test_accuracy if bm is not None else None) if private else "this is it",
    )
    if private and m.accountant and m.noise_multiplier is not None:
        k3.metric(
            f"ε ({m.accountant.upper()})",
            claims.up(m.epsilon),
            help=f"Upper bound from the accountant, with δ beside it ({RELATION}).",
        )
        k4.metric("δ", claims.delta(m.delta), help="Chance the ε guarantee may fail; keep it below 1/rows.")
        with st.expander("How ε was computed (σ, q, T, both accountants)", expanded=False):
            k5, k6, k7, k8 = st.columns(4)
            k5.metric("Noise multiplier σ", _fmt(m.noise_multiplier, ".3f"), help="Noise standard deviation ÷ clip C.")
            k6.metric(
                "Sample rate q", _fmt(m.sample_rate, ".3g"), help="Chance each record is in a batch (Poisson sampling)."
            )
            k7.metric("Steps T", f"{m.steps}", help="Noisy gradient steps taken.")
            k8.metric("Training time", f"{m.train_seconds or 0:.1f} s")
            st.markdown(
                f"**Both accountants** for this run: PRV ε = **{claims.up(m.epsilon_prv, 4)}**"
                + ("" if m.epsilon_prv is not None else " (an ε too large for its grid)")
                + ", RDP ε = "
                f"**{claims.up(m.epsilon_rdp, 4)}** (δ = {claims.delta(m.delta)}, {RELATION}). A common shortcut formula, "
                f"q/σ·√(2T ln 1/δ), would claim **{m.shortcut_epsilon:.3f}** — that formula is *not* a privacy "
                "guarantee "
                + (
                    "and here it claims *less* privacy loss than is real."
                    if m.shortcut_epsilon < m.epsilon
                    else "(here it happens to be above the real value; it can also be far below)."
                )
                + " Engineering detail, no effect on ε: each example's gradient (its push on the model) was "
                f"computed in the Opacus-compatible mode `{m.grad_sample_mode}`."
            )
            if m.epsilon_prv:
                chart(figs.epsilon_comparison_chart(m), key="tr_fig_eps_cmp")
        promise_section(m)
        per_class_section(m, bm)
        if bm is None and (twin is None or twin["status"] not in ACTIVE):
            if clicked(
                "tr_train_pair",
                st.button(
                    "Train the matching non-private baseline", key="tr_train_pair", icon=":material/compare_arrows:"
                ),
            ):
                train_baseline(baseline_params(job["params"]), "tr_train_pair")  # stay: compare when done
                st.rerun(scope="app")
    elif private:  # diffprivlib
        k3.metric("ε (pure, diffprivlib)", claims.up(m.epsilon), help=f"δ = 0, {RELATION}.")
        k4.metric("Training time", f"{m.train_seconds or 0:.2f} s")
    else:
        k3.metric("ε", "∞ (not private)")
        k4.metric("Training time", f"{m.train_seconds or 0:.2f} s")
    st.caption(
        f"{NOT_COVERED_BADGE} test accuracy, training accuracy {acc_text(m.train_accuracy)} and "
        f"training loss {_fmt(m.train_loss)} nats (natural-log units), and the curves below, are computed on "
        "private rows without DP: diagnostics, rounded to what a chart needs. "
        f"Rows: {m.n_train} train / {m.n_test} test (public: n fixes the sample rate and the steps). "
        f"Preprocessing: {md(m.bounds_note)}."
    )
    # these name an upload's columns: shown as text, never as a link, an image or HTML
    for w in m.warnings:
        st.warning(md_message(w))
    for leak in m.leaks:
        st.warning(f"Preprocessing leak (not covered by ε): {md_message(leak)}")
    # the default download is the release: weights + the signed statement (what ε covers); the diagnostics,
    # computed on private rows, come apart and labelled (dpcore.statements.release)
    out = guarded(_downloads, job["id"], caller)
    if out:
        d1, d2, d3 = st.columns(3)
        d1.download_button(
            "Release: model + statement",
            out["release"],
            f"release-{job['id']}.zip",
            "application/zip",
            key="tr_dl_release",
            icon=":material/download:",
            type="primary",
            help="The model weights, the run's public settings and its signed privacy statement: "
            "what ε covers. Nothing computed on private rows.",
        )
        d2.download_button(
            "Diagnostics (not covered by ε)",
            out["diagnostics"],
            f"diagnostics-{job['id']}.json",
            "application/json",
            key="tr_dl_diagnostics",
            icon=":material/download:",
            help="Test and training accuracy and loss and their curves, computed on private rows "
            "without DP: not covered by ε, rounded. Share them only where that is acceptable.",
        )
        d3.download_button(
            "Privacy statement (signed)",
            json.dumps(out["statement"], indent=2).encode(),
            f"statement-{job['id']}.json",
            "application/json",
            key="tr_dl_statement",
            icon=":material/verified_user:",
            help="Check it with python -m dpcore statement --verify FILE: the signature and every "
            "figure, recomputed from the recorded settings.",
        )
        if private and m.noise_multiplier is not None:
            chart(adv_figs.statement_tradeoff_chart(out["statement"]), key="tr_fig_tradeoff")
    _code(job["id"], caller)


def promise_section(m: TrainMetrics) -> None:
    """The run's promise and proof: the accountant's ε, the last-iterate heuristic and, when the run audited
    itself, its audits' lower bounds — one chart and the words that say which is which."""
    bounds = guarded(promise.run_bounds, m.to_dict())
    if not bounds:
        return
    chart(promise.run_chart(bounds, m.delta, height=300), key="tr_fig_promise")
    st.caption(promise.verdict(bounds, m.delta))
    if m.canaries:  # the canaries as used, and what they do to the accuracy shown
        c = m.canaries
        st.caption(f"This run's own audit planted {c['n']} canaries; {c['included']} went in. The {c['utility_note']}.")
    if m.accounting_check and m.accounting_check.get("passed"):
        st.caption(
            "Accounting check passed: the batches drawn, the records in them and the noise added each step were "
            "counted during training and matched what the accountant was told."
        )


def per_class_section(m: TrainMetrics, bm: TrainMetrics | None) -> None:
    """Who pays: each class's (and each subgroup's: the categories of the categorical feature columns) test accuracy
    with its 95% interval and test rows, beside the non-private twin's."""
    if not m.per_class and not m.per_group:
        return

    def acc(c):
        return "—" if c.get("accuracy") is None else claims.percent(c["accuracy"], 1, up=False)

    def interval(c):
        lo, hi = c["interval"]
        return f"{claims.percent(lo, 1, up=False)}–{claims.percent(hi, 1, up=True)}"

    def rows(entries, twins, key, label):
        out = []
        for c in entries:
            t = twins.get(key(c))
            out.append(
                {
                    **label(c),
                    "test rows": int(c["n_test"]),
                    "accuracy": acc(c),
                    "95% interval": interval(c),
                    "non-private twin": "—" if t is None else acc(t),
                    "twin's 95% interval": "—" if t is None else interval(t),
                    "pays more": pays_more_text(pays_more(c, t)),  # only where the intervals say so
                }
            )
        return out

    def by_class(c):
        return int(c["class"])

    def by_group(c):
        return (str(c["column"]), str(c["group"]))

    twin_classes = {by_class(c): c for c in (bm.per_class if bm is not None else ())}
    twin_groups = {by_group(c): c for c in (bm.per_group if bm is not None else ())}
    title = "Who pays for privacy: accuracy per class" + (" and subgroup" if m.per_group else "")
    with st.expander(title, icon=":material/groups:"):
        if m.per_class:
            table = rows(m.per_class, twin_classes, by_class, lambda c: {"class": str(c["name"])})
            st.dataframe(table, hide_index=True, key="tr_per_class")
        if m.per_group:
            st.markdown(
                "**By subgroup**: each category of the data's categorical columns (public or declared by the data's "
                "owner), on the same test rows."
            )
            table = rows(
                m.per_group, twin_groups, by_group, lambda c: {"column": str(c["column"]), "group": str(c["group"])}
            )
            st.dataframe(table, hide_index=True, key="tr_per_group")
        st.caption(
            ":orange-badge[Not covered by ε] computed on the private test rows. A class or group loses more than "
            'the twin only where the intervals say so ("pays more": yes): few test rows give a wide interval.'
        )


def _code(job_id: str, caller) -> None:
    """The run as code that trains it again (dpcore.export): a Python script and a notebook."""
    recipe = guarded(export.for_job, job_id, caller=caller)
    if recipe is None:
        return
    row = st.container(horizontal=True, gap="small")
    code_downloads(recipe, "tr_dl", row)
    st.caption(
        "They train this run again (and its non-private twin) through dpcore's functions, headless, with "
        "comments in plain words; an uploaded file is named by its own name and none of its rows is in them."
    )


@st.cache_data(max_entries=limits.CACHE_MAX_ENTRIES, show_spinner=False)
def _downloads(job_id: str, who) -> dict:
    """A finished run's downloads, built once per run and caller (its statement is signed once, not on every
    rerun; the caller is part of the key, so nobody is served another session's run from the cache)."""
    return release.downloads(job_id, caller=who)
