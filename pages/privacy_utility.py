"""Privacy–utility curve: what an ε costs in accuracy, and what it buys against membership inference.

Sweeps belong to the browser (or signed-in user) that started them (admins see all); finished runs of the default demo are shared
with everyone, read-only. A cancelled sweep is never the page's default view."""

import pandas as pd
import streamlit as st

from dpcore import claims, textsafe
from dpcore.figures import privacy_utility as figs
from dpcore.figures import promise, proof
from dpcore.jobs import workers
from dpcore.statements import sweep as statement
from dpcore.sweep import runs as sweep_runs
from dpcore.sweep import summary as sweep_summary
from dpcore.sweep import timing as sweep_timing
from dpcore.sweep.config import ATTACK_LABELS, SweepConfig
from dpcore.training.config import REPRODUCIBLE_LABEL
from pages.ui import first_screen, sweep_form, sweep_results
from pages.ui.common import (
    admin_box,
    chart,
    from_url,
    guarded,
    job_caller,
    manage_box,
    required,
    share_in_url,
    table_downloads,
)

D = SweepConfig()

st.title("Privacy–utility curve")
with st.expander("How to read it: why a model leaks, what a small ε costs", icon=":material/help:"):
    st.markdown(
        "Each point is a model trained with DP-SGD at one ε — on the built-in digits or on **your own CSV** — then "
        "attacked with membership inference: what each ε costs in accuracy, and what the attacks can still prove "
        "(δ and the neighbour relation, *add or remove one record*, are stated beside every ε)."
    )
    st.markdown(
        f"**Why the non-private model leaks.** Ordinary records are learned from many similar examples, so a model "
        f"that generalises says little about any one of them. The risk lives in **unusual records**: each sweep "
        f"plants {D.canaries} *canaries* (fewer on small data) — records with public random inputs and random labels "
        f"— and flips a fair coin for each, so about half are trained on. A non-private model **memorises** the "
        f"ones it saw: asked about a canary, it is far more confident in its planted label if that canary was in "
        f"training. From "
        f"those confidences the one-run audit (Steinke, Nasr & Jagielski 2023) **proves** a lower bound on ε with "
        f"95% confidence. DP-SGD clips each example's influence and adds noise, so a canary cannot be memorised: "
        f"under DP every proved bound stays below the claimed ε.\n\n"
        f"**What a small ε costs.** The noise that hides any one record also blurs what the model learns from all of "
        f"them: the curve shows the accuracy given up per ε (the dotted line is chance). The cost shrinks as the "
        f"data grows — the demo's training-set-size control trains at "
        f"{', '.join(f'{f:.0%}' for f in D.size_fractions)} and 100% of the rows."
    )

caller = job_caller()

# ---------------------------------------------------------------------------------------- configure + start
stored = required(sweep_runs.list_sweeps, caller=caller)
started = sweep_form.form(caller, expanded=not stored)
if started:
    st.session_state["pu_current"] = started
    st.session_state["pu_sweep"] = started
    stored = required(sweep_runs.list_sweeps, caller=caller)

# ---------------------------------------------------------------------------------------- choose a sweep
ids = [s["id"] for s in stored]
if "pu_sweep" not in st.session_state and from_url("pu_sweep", ""):
    linked = from_url("pu_sweep", "")
    if linked in ids:
        st.session_state["pu_sweep"] = linked  # a shared link to one sweep this session may see
    else:  # someone else's, or gone: nothing of it is shown
        st.warning(
            "The sweep in this link is not yours (or no longer exists): only the browser or user that started it, or "
            "an admin, can see it — finished runs of the default demo excepted.",
            icon=":material/lock:",
        )
if st.session_state.get("pu_sweep") not in ids:
    # never someone's cancelled sweep: this session's newest, else the newest finished shared demo
    st.session_state["pu_sweep"] = sweep_runs.default_view(stored, caller, st.session_state.get("pu_current"))
if st.session_state.get("pu_sweep") is None:
    demo, upload = (guarded(sweep_timing.words, k, caller=caller) for k in ("demo", "upload"))
    st.info(
        "No sweep yet, so no curve: in **New sweep** above, press **Start sweep**"
        + (f" — the default demo on digit images ({demo}) or your own CSV ({upload})." if demo and upload else "."),
        icon=":material/play_circle:",
    )
    if not ids:
        admin_box("pu_admin")
        st.stop()
by_id = {s["id"]: s for s in stored}
# names are distinct per owner; someone else's (a shared demo, or everyone's for an admin) says so
names = {
    s["id"]: s["name"] if s["mine"] else f"{s['name']} ({'shared demo' if s['shared'] else 'not yours'})"
    for s in stored
}
sweep_id = st.selectbox("Sweep", ids, format_func=names.get, key="pu_sweep", placeholder="Choose a stored sweep")
share_in_url("pu_sweep")
if sweep_id is None:
    admin_box("pu_admin")
    st.stop()

status0 = required(sweep_runs.state, sweep_id, caller=caller)
if status0["status"] == "running":
    workers.ensure_workers(2)


def headline(result: dict) -> None:
    """The sweep's own figures in one row: what DP costs at ε = 1 and at the largest ε, and the leak it stops."""
    h = sweep_summary.headline(result)
    if h is None:
        return
    b = (h["baseline"] or {}).get("accuracy")
    cols = st.columns(len(h["points"]) + 2)
    cols[0].metric(
        "Accuracy without DP",
        sweep_summary.accuracy_text(b),
        help=f"Median test accuracy of the {(h['baseline'] or {}).get('n', 0)} non-private baselines.",
    )
    for col, p in zip(cols[1:], h["points"]):
        a = p["accuracy"]
        col.metric(
            f"Accuracy at ε = {p['epsilon']:g}",
            sweep_summary.accuracy_text(a),
            delta=None if a is None or b is None else f"{(a - b) * 100:+.1f} points",
            help=f"Median test accuracy of the {p['n']} DP models at ε = {p['epsilon']:g} (δ = "
            f"{claims.delta(result['config']['delta'])}, add/remove one record); the change is against the "
            "non-private median.",
        )
    # a bound of 0 is a result ("ε ≥ 0", as the sentence below says), not a missing one: "—" only without an audit
    cols[-1].metric(
        "Leak proved without DP",
        "—" if h["proved"] is None else f"ε ≥ {claims.down(h['proved'])}",
        help=f"The canary audit's 95% lower bound on ε over the {h['proved_k']} baselines together "
        "(ε ≥ 0: it proved no leak; — : no audit ran). A model with no DP has no upper bound at all.",
    )
    words = []
    if h["attack"] is not None:
        words.append(
            f"The best attack on the non-private model catches **{h['tpr']:.0%}** of its members at 1% "
            f"false positives — {ATTACK_LABELS.get(h['attack'], h['attack'])}."
        )
    if h["audited"]:
        words.append(
            f"**{h['violations']} of {h['audited']}** DP models have a proved ε above their claimed ε "
            "(a bug to report)."
            if h["violations"]
            else f"Under DP every proved ε stays below the claimed ε ({h['audited']} models audited)."
        )
    above = [p["epsilon"] for p in h["points"] if b is not None and p["accuracy"] is not None and p["accuracy"] > b]
    if above:  # a DP median above the non-private one read as DP buying accuracy
        words.append(
            f"At ε = {', '.join(f'{e:g}' for e in above)} the DP models' median is above the non-private "
            "one: with few models and a small test set, medians a point or two apart differ by chance (and "
            "DP's noise can regularise a small model); it is no sign that privacy is free."
        )
    st.caption(
        "Medians over the models of each setting (the charts show mean ± SD, the standard deviation). "
        + " ".join(words)
    )


@st.cache_data(max_entries=16, show_spinner="Reading the audits as promise and proof…")
def _promise_chart(sid: str, n_points: int, status: str, _result: dict):
    """The sweep's promise-and-proof chart (heuristics and f-DP re-readings cost ~0.1 s a point: once per state)."""
    runs = promise.sweep_bounds(_result)
    return promise.sweep_chart(runs, float(runs[0].delta)) if runs else None


@st.cache_data(max_entries=32, show_spinner=False)
def _point_tradeoff(sid: str, epsilon: float, seed: int, _point: dict):
    return proof.point_tradeoff(_point)


def _manage(s: dict, sid: str, mine: bool) -> None:
    """Rename or delete the sweep (its owner's, once it stopped running), below what it shows."""
    if mine and s["status"] != "running":
        if manage_box(
            "sweep",
            s.get("name") or sid,
            key=f"pu_manage_{sid}",
            rename=lambda new: sweep_runs.rename(sid, new, caller=caller),
            delete=lambda: sweep_runs.delete(sid, caller=caller),
        ):
            st.session_state.pop("pu_current", None)
            st.rerun(scope="app")


@st.fragment(run_every=1.5 if status0["status"] == "running" else None)
def show_sweep(sid: str, was_running: bool) -> None:
    s = guarded(sweep_runs.state, sid, caller=caller)
    if s is None:
        return
    result = s["result"]
    mine = caller.may_change(s["owner"])
    if s["status"] == "running":
        st.progress(
            min(s["fraction"], 1.0),
            text=f"{s['done']} of {s['total']} models finished"
            + (f" · running: {', '.join(r['text'] for r in s['running'][:2])}" if s["running"] else ""),
        )
        if mine and st.button("Cancel sweep", key="pu_cancel", icon=":material/stop:"):
            guarded(sweep_runs.cancel, sid, caller=caller)
    elif was_running:
        st.rerun(scope="app")  # finished: stop polling
    else:
        name = s.get("name") or sweep_summary.sweep_title(s)  # the picker's name; the id only in the tooltip
        st.caption(
            f"Sweep “{textsafe.md(name)}”: {s['status']}, {s['done']} of {s['total']} models."
            + ("" if mine else " Shared demo."),
            help=f"Sweep id {sid} (its link and the CLI name it so)."
            + (
                ""
                if mine
                else " A shared demo sweep: everyone sees it; only whoever started it (or an admin) can rename or "
                "delete it."
            ),
        )
    problems = sweep_runs.problems(s)  # one summary, not a box per model (a cancelled sweep had 31)
    if problems:
        st.warning(textsafe.md_message(" ".join(problems)))
    if not result["points"] and not result["baseline"]:
        st.info("Waiting for the first model (the non-private baseline comes first)…")
        _manage(s, sid, mine)
        return
    if result.get("release_label") or (s.get("reproducible_noise")):
        st.warning(
            f"**{REPRODUCIBLE_LABEL}** — this sweep drew sampling, noise and canary coins from its "
            "seeds (tests, teaching). Its models are not DP releases."
        )
    bad = sweep_summary.violations(result)
    if bad:
        st.error(
            f"{len(bad)} model(s) have an empirical ε above the claimed ε — that would be a bug in "
            "training or accounting; please report it."
        )

    with first_screen.headline():
        sweep_results.story(result)
    g1, g2 = st.columns(2)
    with g1, first_screen.main_chart():
        chart(figs.accuracy_chart(result), key="pu_fig_acc")
    canaries = sweep_results.canary_note(result)  # what the accuracies were measured on
    if canaries:
        g1.caption(canaries)
    chart(figs.empirical_epsilon_chart(result), key="pu_fig_emp", where=g2)
    g2.caption(figs.empirical_epsilon_note(result))
    headline(result)  # the figures behind the story, under its charts
    g3, g4 = st.columns(2)
    chart(figs.attack_chart(result, "tpr_at_1pct_fpr"), key="pu_fig_tpr", where=g3)
    chart(figs.attack_chart(result, "auc"), key="pu_fig_auc", where=g4)
    if result.get("size_control"):
        chart(figs.size_chart(result), key="pu_fig_size")
    promise_fig = guarded(_promise_chart, sid, len(result["points"]), s["status"], result)
    if promise_fig is not None:
        chart(promise_fig, key="pu_fig_promise")
        st.caption(
            "**Promise** (the dashed diagonal): the accountant's ε, an upper bound for every attack. **Measurements** "
            "(►): each audit's 95% lower bound over all seeds of an ε together, with its seeds' spread as a bar — "
            "what these attacks proved, never a guarantee. **Heuristic** (○): what auditing only the final model can "
            "be expected to show (Steinke et al. 2025). A measurement above the diagonal would be a bug."
        )

    # one model: ROC with the DP ceiling, and the reading. The slider's options are the sweep's whole grid
    # (fixed while it runs), so the value shown is always the model whose ROC and metrics are drawn.
    cfg_eps = sorted(float(e) for e in (result.get("config") or {}).get("epsilons") or [])
    options = ["baseline"] + (cfg_eps or sorted({p["epsilon"] for p in result["points"]}))
    if st.session_state.get("pu_point") not in options:
        st.session_state["pu_point"] = 1.0 if 1.0 in options else options[-1]
    r1, r2 = st.columns([3, 2])
    with r2:
        choice = st.select_slider(
            "Model to inspect",
            options,
            key="pu_point",
            format_func=lambda o: "no DP" if o == "baseline" else f"ε = {o:g}",
        )
        if choice == "baseline":
            point = result["baseline"]
            if point is not None:
                st.markdown(
                    "**Non-private baseline** — no ε: nothing bounds what an attacker can learn; the ROC "
                    "has no ceiling. Pick an ε to compare."
                )
        else:
            point = next((p for p in result["points"] if p["epsilon"] == choice), None)
            if point is not None:
                st.markdown(sweep_summary.reading(result, choice))
        if point is None:
            st.info("This model has not finished yet.")
        elif point.get("empirical_epsilon"):
            e = point["empirical_epsilon"]
            m1, m2, m3 = st.columns(3)
            m1.metric(  # "∞ (no DP)" as the value was cut to "∞ (…" in a third of a phone's width
                "Claimed ε" if e.get("claimed") is not None else "Claimed ε (no DP)",
                "∞" if e.get("claimed") is None else claims.up(e["claimed"]),
                help=f"Accountant's upper bound, δ = {claims.delta(point.get('delta') or result['config']['delta'])}, "
                "add/remove one record.",
            )
            row = sweep_summary.summary_row(result, None if choice == "baseline" else choice) or {}
            k, proved = row.get("empirical_epsilon_k") or 0, row.get("empirical_epsilon")
            m2.metric(
                "Proved ε ≥",
                "—" if proved is None else claims.down(proved),
                help=f"95% lower bound over all {k} model(s) here together (each model's audit corrected "
                "for the number of models), not the largest of the models' own 95% bounds.",
            )
            cert = row.get("max_certifiable")
            # "Audit max": "Provable at most" and "Max provable" were cut ("Provable …") in a third of this column
            m3.metric(
                "Audit max",
                "—" if cert is None else f"{cert:.1f}",
                help="The most this audit could prove over these models if every guess were right.",
            )
        own = sweep_results.point_canaries(point) if point is not None else None
        st.caption(
            (f"{own} " if own else "")
            + "Audit: Steinke, Nasr & Jagielski (2023), one training run — each canary is in or out by a "
            "fair coin; the attacker guesses in/out for the canaries it is surest about, and the share of "
            "right guesses bounds ε (95% confidence). Loss and threshold attacks on ordinary records "
            "(training rows vs test rows) are shown beside it."
        )
    if point is not None:
        block = None
        if choice != "baseline" and point.get("tradeoff") and point.get("noise_multiplier"):
            block = guarded(statement.for_point, point)
        chart(figs.roc_chart(point), key="pu_fig_roc", where=r1)
        if block is not None:
            with r1.expander("What the audits prove about this model's trade-off curve", expanded=False):
                tfig = guarded(_point_tradeoff, sid, float(point["epsilon"]), int(point.get("seed") or 0), point)
                if tfig is not None:
                    chart(tfig, key="pu_fig_tradeoff")
                    st.caption(
                        "The accountant's worst case (promise) against what the audits measured: the corner the "
                        "records audit proves (95%, the true curve lies above it) and the Gaussian curve the "
                        "canaries' f-DP audit rules out below; the heuristic is the final model's expected curve."
                    )
        if block is not None:
            r1.markdown(statement.gap_words(block, point["mia"], labels=ATTACK_LABELS))
            r1.caption(
                "The shaded region is impossible for any attacker: the curve is this model's worst-case "
                "ROC (the largest share of members any attack can catch at each false-positive rate) from the "
                "privacy-loss distribution (PLD) of its own noise, sampling rate and steps: "
                + figs.ceiling_words(block)
                + "."
            )

    rows = sweep_summary.by_epsilon(result)
    if rows:
        df = pd.DataFrame(rows)
        cols = [c for c in df.columns if not c.endswith("_sd")]
        # headers in words, not field names (the JSON and the CLI keep those); the download adds the SDs
        shown = pd.DataFrame([sweep_summary.shown_row(r) for r in rows])[cols]  # bounds keep their side
        st.dataframe(shown.rename(columns=sweep_summary.column_label), hide_index=True, key="pu_table")
        st.caption(
            "Per ε, over its seeds. TPR: the share of members an attack catches; FPR: the share of "
            "non-members it flags wrongly; AUC 0.5 is guessing; SD: standard deviation."
        )
        table_downloads(df.rename(columns=sweep_summary.column_label), f"sweep-{sid}", key="pu_dl")
    if s["status"] != "running":
        sweep_results.exposure(result)
        sweep_results.who_pays(result)
        sweep_results.downloads(sid, result, caller)
    # the comparison under the sweep's own figures (beside the picker it pushed the first chart off a phone's screen)
    compare = st.multiselect(
        "Compare with stored sweeps", [i for i in ids if i != sid], format_func=names.get, key="pu_compare"
    )
    if compare:
        others = {names[i]: (guarded(sweep_runs.state, i, caller=caller) or {}).get("result") for i in compare}
        others = {k: v for k, v in others.items() if v}
        others[names[sid]] = result
        c1, c2 = st.columns(2)
        chart(figs.compare_chart(others, "accuracy"), key="pu_fig_cmp_acc", where=c1)
        chart(figs.compare_chart(others, "auc"), key="pu_fig_cmp_auc", where=c2)
    _manage(s, sid, mine)


show_sweep(sweep_id, status0["status"] == "running")
admin_box("pu_admin")
