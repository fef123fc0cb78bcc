"""Privacy–utility curve: what an ε costs in accuracy, and what it buys against membership inference.

Sweeps belong to the session that started them (admins see all); finished runs of the default demo are shared
with everyone, read-only. A cancelled sweep is never the page's default view."""

import pandas as pd
import streamlit as st

from dpcore import claims, limits, statement, textsafe
from dpcore.sweep import runs as sweep_runs, summary as sweep_summary
from dpcore.sweep.config import ATTACK_LABELS, SweepConfig
from dpcore.training.config import DATASET_NAMES, MODEL_NAMES, REPRODUCIBLE_LABEL
from dpcore.figures import privacy_utility as figs
from dpcore.jobs import executors, workers
from pages._ui import (admin_box, chart, clicked, from_url, guarded, job_caller, manage_box, required, share_in_url,
                       submit_once, table_downloads)

D = SweepConfig()
EPS_OPTIONS = [0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
# Short option and chip labels (they must fit at 1280 px and on a phone); the details are in the widgets' help.
DATASETS = {k: DATASET_NAMES[k] for k in ("digits", "breast_cancer", "medical")}  # the sweep's, demo first
DATASET_HELP = ("Digits: 8×8 images, 10 classes. Breast cancer: 30 features, binary. Synthetic medical: "
                "predict the diagnosis.")
ATTACK_NAMES = {"threshold": "Confidence", "loss": "Loss (Yeom)", "lira": "LiRA"}
ATTACK_HELP = ("Confidence: member if the model's confidence is above the median (the simplest attack). "
               "Loss (Yeom): member if the loss is below a threshold. LiRA: likelihood-ratio attack with shadow "
               "models (offline and online).")

st.title("Privacy–utility curve")
st.markdown(
    "**So what:** on the default demo (digit images), DP-SGD at **ε = 1** keeps about **88%** test accuracy "
    "against about **97%** without privacy — and the audit that catches the non-private model red-handed proves "
    "nothing against the private ones. Each point below is a model trained with DP-SGD at one ε "
    "(δ and the neighbour relation, *add or remove one record*, are stated beside every ε), then attacked."
)
st.markdown(
    f"**Why the non-private model leaks.** Ordinary digits are learned from many similar examples, so a model "
    f"that generalises says little about any one of them. The risk lives in **unusual records**: the demo plants "
    f"{D.canaries} *canaries* — training images given a wrong label — and flips a fair coin for each, so about "
    f"half are trained on. A non-private model **memorises** the ones it saw: asked about a canary, it is far "
    f"more confident in the planted wrong label if that canary was in training. From those confidences the "
    f"one-run audit (Steinke, Nasr & Jagielski 2023) **proves** a lower bound on ε with 95% confidence — the "
    f"baseline is caught. DP-SGD clips each example's influence and adds noise, so a canary cannot be memorised: "
    f"under DP every proved bound stays below the claimed ε.\n\n"
    f"**What a small ε costs.** The noise that hides any one record also blurs what the model learns from all of "
    f"them: the curve shows the accuracy given up per ε (the dotted line is chance). The cost shrinks as the "
    f"data grows — the training-set-size control below trains at {D.size_fractions and ', '.join(f'{f:.0%}' for f in D.size_fractions)} "
    f"and 100% of the rows."
)

caller = job_caller()

# ---------------------------------------------------------------------------------------- configure + start
with st.container(border=True):
    c1, c2, c3, c4 = st.columns([2, 1.5, 1, 1])
    dataset = c1.selectbox("Dataset", list(DATASETS), format_func=DATASETS.get, key="pu_dataset",
                           help=DATASET_HELP)
    model = c2.selectbox("Model", ["mlp", "logreg"], key="pu_model", format_func=MODEL_NAMES.get)
    seeds = c3.number_input("Models per ε", 1, 10, D.seeds, key="pu_seeds",
                            help="Models trained at each ε, each from its own seed (a different random start): "
                                 "their spread gives the error bars.")
    epochs = c4.number_input("Epochs", 1, 500, D.epochs, key="pu_epochs")
    c5, c6 = st.columns([3, 2])  # the multiselects get their own row: every chip stays visible
    # wrap: chips in a column would otherwise stay on one row and fade out at the edge (the last ε on a phone)
    epsilons = c5.multiselect("ε grid", EPS_OPTIONS, default=list(D.epsilons), key="pu_eps",
                              format_func="{:g}".format, wrap=True)
    attacks = c6.multiselect("Attacks", list(ATTACK_NAMES), default=list(D.attacks), format_func=ATTACK_NAMES.get,
                             key="pu_attacks", help=ATTACK_HELP, wrap=True)
    c7, c8, _, c9 = st.columns([1, 1, 1, 1.3], vertical_alignment="bottom")
    shadows = c7.number_input("LiRA shadows", 2, 64, D.shadows, key="pu_shadows",
                              help="Shadow models: copies the attacker trains on random halves of the member + "
                                   "non-member pool, to learn what a member's score looks like.")
    train_size = c8.number_input("Training rows", 0, 5000, D.train_size or 0, key="pu_train_size",
                                 help="0 = every training row (the demo). Fewer rows: DP costs more accuracy.")
    start = clicked("pu_start", c9.button("Start sweep", type="primary", key="pu_start", icon=":material/play_arrow:"))
    run_on = "local"  # issue 17: the choice appears only when a Ray cluster address is configured
    if "ray" in executors.available_executors():
        run_on = st.radio("Run on", ["local", "ray"], horizontal=True, key="pu_executor",
                          format_func={"local": "Worker processes here", "ray": "Ray cluster"}.get,
                          help=f"Ray: {executors.RAY_ADDRESS_ENV} = {executors.ray_address()}; one Ray task per "
                               "model, results stored here.")
    if start:
        cfg = guarded(lambda: SweepConfig(
            dataset=dataset, model=model, target="diagnosis" if dataset == "medical" else None,
            epsilons=tuple(epsilons), seeds=int(seeds), attacks=tuple(attacks), shadows=int(shadows),
            epochs=int(epochs), train_size=int(train_size) or None,
            hidden=D.hidden if model == "mlp" else None).validate())
        if cfg is not None:
            ex = guarded(executors.make_executor, run_on)
            # once per click: a double click starts one sweep (the store refuses the repeated key)
            sid, repeated = (submit_once("pu_start", sweep_runs.start_sweep, cfg, owner=caller.owner, executor=ex)
                             if ex is not None else (None, False))
            if sid:
                st.session_state["pu_current"] = sid
                st.session_state["pu_sweep"] = sid
                if not repeated:
                    st.toast(f"Sweep started: {len(cfg.point_params())} models in the background")
    st.caption(f"The sweep runs as background jobs in worker processes (parallel), baselines first; closing the "
               f"tab loses nothing. Training settings: batch {D.batch_size}, learning rate {D.lr}, clip {D.clip}, "
               f"δ = {claims.delta(D.delta)} (add/remove one record), accountant PRV (privacy-loss random variables, "
               f"a tight bound), {D.canaries} canaries, size control at ε = {D.size_epsilon:g}; the non-private "
               f"baselines train {D.baseline_scale:g}× the epochs from {D.baseline_scale:g}× the learning rate, "
               f"decaying linearly (their best accuracy; the DP models' settings and accounting are untouched). "
               f"Sampling and noise come from a secure source and are never stored. Your sweeps are yours: only "
               f"this browser session (and an admin) sees them; finished runs of the default demo are shared with "
               f"everyone. One click trains at most {limits.SWEEP_MAX_TRAININGS:,} models.")

# ---------------------------------------------------------------------------------------- choose a sweep
stored = required(sweep_runs.list_sweeps, caller=caller)
ids = [s["id"] for s in stored]
if "pu_sweep" not in st.session_state and from_url("pu_sweep", ""):
    linked = from_url("pu_sweep", "")
    if linked in ids:
        st.session_state["pu_sweep"] = linked  # a shared link to one sweep this session may see
    else:  # someone else's, or gone: nothing of it is shown
        st.warning("The sweep in this link is not yours (or no longer exists): only the session that started it, or "
                   "an admin, can see it — finished runs of the default demo excepted.", icon=":material/lock:")
if st.session_state.get("pu_sweep") not in ids:
    # never someone's cancelled sweep: this session's newest, else the newest finished shared demo
    st.session_state["pu_sweep"] = sweep_runs.default_view(stored, caller, st.session_state.get("pu_current"))
if st.session_state.get("pu_sweep") is None:
    st.info("No sweep yet, so no curve: press **Start sweep** to run the default demo (about two minutes on 2 "
            "cores). The 88% and 97% above are what earlier runs of this default measured; your sweep measures "
            "them again, with its own noise, and draws every point.", icon=":material/play_circle:")
    if not ids:
        admin_box("pu_admin")
        st.stop()
by_id = {s["id"]: s for s in stored}
# names are distinct per owner; someone else's (a shared demo, or everyone's for an admin) says so
names = {s["id"]: s["name"] if s["mine"] else f"{s['name']} ({'shared demo' if s['shared'] else 'not yours'})"
         for s in stored}
cs1, cs2 = st.columns([3, 2])
sweep_id = cs1.selectbox("Sweep", ids, format_func=names.get, key="pu_sweep", placeholder="Choose a stored sweep")
share_in_url("pu_sweep")
if sweep_id is None:
    admin_box("pu_admin")
    st.stop()
compare = cs2.multiselect("Compare with stored sweeps", [i for i in ids if i != sweep_id], format_func=names.get,
                          key="pu_compare")

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
    cols[0].metric("Accuracy without DP", sweep_summary.accuracy_text(b),
                   help=f"Median test accuracy of the {(h['baseline'] or {}).get('n', 0)} non-private baselines.")
    for col, p in zip(cols[1:], h["points"]):
        a = p["accuracy"]
        col.metric(f"Accuracy at ε = {p['epsilon']:g}", sweep_summary.accuracy_text(a),
                   delta=None if a is None or b is None else f"{(a - b) * 100:+.1f} points",
                   help=f"Median test accuracy of the {p['n']} DP models at ε = {p['epsilon']:g} (δ = "
                        f"{claims.delta(result['config']['delta'])}, add/remove one record); the change is against the "
                        "non-private median.")
    cols[-1].metric("Leak proved without DP", "—" if not h["proved"] else f"ε ≥ {claims.down(h['proved'])}",
                    help=f"The canary audit's 95% lower bound on ε over the {h['proved_k']} baselines together. "
                         "A model with no DP has no upper bound at all.")
    words = []
    if h["attack"] is not None:
        words.append(f"The best attack on the non-private model catches **{h['tpr']:.0%}** of its members at 1% "
                     f"false positives — {ATTACK_LABELS.get(h['attack'], h['attack'])}.")
    if h["audited"]:
        words.append(f"**{h['violations']} of {h['audited']}** DP models have a proved ε above their claimed ε "
                     "(a bug to report)." if h["violations"] else
                     f"Under DP every proved ε stays below the claimed ε ({h['audited']} models audited).")
    st.caption("Medians over the models of each setting (the charts show mean ± SD, the standard deviation). "
               + " ".join(words))


@st.fragment(run_every=1.5 if status0["status"] == "running" else None)
def show_sweep(sid: str, was_running: bool) -> None:
    s = guarded(sweep_runs.state, sid, caller=caller)
    if s is None:
        return
    result = s["result"]
    mine = caller.may_change(s["owner"])
    if s["status"] == "running":
        st.progress(min(s["fraction"], 1.0), text=f"{s['done']} of {s['total']} models finished"
                    + (f" · running: {', '.join(r['text'] for r in s['running'][:2])}" if s["running"] else ""))
        if mine and st.button("Cancel sweep", key="pu_cancel", icon=":material/stop:"):
            guarded(sweep_runs.cancel, sid, caller=caller)
    elif was_running:
        st.rerun(scope="app")  # finished: stop polling
    else:
        st.caption(f"Sweep {sid}: {s['status']}, {s['done']} of {s['total']} models."
                   + ("" if mine else " A shared demo sweep: everyone sees it; only whoever started it (or an admin) "
                                      "can rename or delete it."))
    problems = sweep_runs.problems(s)  # one summary, not a box per model (a cancelled sweep had 31)
    if problems:
        st.warning(textsafe.md_message(" ".join(problems)))
    if mine and s["status"] != "running":
        if manage_box("sweep", s.get("name") or sid, key=f"pu_manage_{sid}",
                      rename=lambda new: sweep_runs.rename(sid, new, caller=caller),
                      delete=lambda: sweep_runs.delete(sid, caller=caller)):
            st.session_state.pop("pu_current", None)
            st.rerun(scope="app")
    if not result["points"] and not result["baseline"]:
        st.info("Waiting for the first model (the non-private baseline comes first)…")
        return
    if result.get("release_label") or (s.get("reproducible_noise")):
        st.warning(f"**{REPRODUCIBLE_LABEL}** — this sweep drew sampling, noise and canary coins from its "
                   "seeds (tests, teaching). Its models are not DP releases.")
    bad = sweep_summary.violations(result)
    if bad:
        st.error(f"{len(bad)} model(s) have an empirical ε above the claimed ε — that would be a bug in "
                 "training or accounting; please report it.")

    headline(result)
    g1, g2 = st.columns(2)
    chart(figs.accuracy_chart(result), key="pu_fig_acc", where=g1)
    chart(figs.empirical_epsilon_chart(result), key="pu_fig_emp", where=g2)
    g2.caption("Each dot: one model's 95% lower bound on ε from the canary audit (runs that proved nothing are "
               "counted in a note); each diamond: all seeds of an ε together, 95% overall. "
               "A low bound is not proof of safety; a bound above the claimed ε would be a bug.")
    g3, g4 = st.columns(2)
    chart(figs.attack_chart(result, "tpr_at_1pct_fpr"), key="pu_fig_tpr", where=g3)
    chart(figs.attack_chart(result, "auc"), key="pu_fig_auc", where=g4)
    if result.get("size_control"):
        chart(figs.size_chart(result), key="pu_fig_size")

    # one model: ROC with the DP ceiling, and the reading. The slider's options are the sweep's whole grid
    # (fixed while it runs), so the value shown is always the model whose ROC and metrics are drawn.
    cfg_eps = sorted(float(e) for e in (result.get("config") or {}).get("epsilons") or [])
    options = ["baseline"] + (cfg_eps or sorted({p["epsilon"] for p in result["points"]}))
    if st.session_state.get("pu_point") not in options:
        st.session_state["pu_point"] = 1.0 if 1.0 in options else options[-1]
    r1, r2 = st.columns([3, 2])
    with r2:
        choice = st.select_slider("Model to inspect", options, key="pu_point",
                                  format_func=lambda o: "no DP" if o == "baseline" else f"ε = {o:g}")
        if choice == "baseline":
            point = result["baseline"]
            if point is not None:
                st.markdown("**Non-private baseline** — no ε: nothing bounds what an attacker can learn; the ROC "
                            "has no ceiling. Pick an ε to compare.")
        else:
            point = next((p for p in result["points"] if p["epsilon"] == choice), None)
            if point is not None:
                st.markdown(sweep_summary.reading(result, choice))
        if point is None:
            st.info("This model has not finished yet.")
        elif point.get("empirical_epsilon"):
            e = point["empirical_epsilon"]
            m1, m2, m3 = st.columns(3)
            m1.metric("Claimed ε", "∞ (no DP)" if e.get("claimed") is None else claims.up(e["claimed"]),
                      help=f"Accountant's upper bound, δ = {claims.delta(point.get('delta') or result['config']['delta'])}, "
                           "add/remove one record.")
            row = sweep_summary.summary_row(result, None if choice == "baseline" else choice) or {}
            k, proved = row.get("empirical_epsilon_k") or 0, row.get("empirical_epsilon")
            m2.metric("Proved ε ≥", "—" if proved is None else claims.down(proved),
                      help=f"95% lower bound over all {k} model(s) here together (each model's audit corrected "
                           "for the number of models), not the largest of the models' own 95% bounds.")
            cert = row.get("max_certifiable")
            m3.metric("Provable at most", "—" if cert is None else f"{cert:.1f}",
                      help="What this audit could prove over these models if every guess were right.")
        st.caption("Audit: Steinke, Nasr & Jagielski (2023), one training run — each canary is in or out by a "
                   "fair coin; the attacker guesses in/out for the canaries it is surest about, and the share of "
                   "right guesses bounds ε (95% confidence). Loss and threshold attacks on ordinary records "
                   "(training rows vs test rows) are shown beside it.")
    if point is not None:
        block = None
        if choice != "baseline" and point.get("tradeoff") and point.get("noise_multiplier"):
            block = guarded(statement.for_point, point)
        chart(figs.roc_chart(point, block=block), key="pu_fig_roc", where=r1)
        if block is not None:
            r1.markdown(statement.gap_words(block, point["mia"], labels=ATTACK_LABELS))
            r1.caption("The shaded region is impossible for any attacker: the curve is this model's worst-case "
                       "ROC (the largest share of members any attack can catch at each false-positive rate) from the "
                       "privacy-loss distribution (PLD) of its own noise, sampling rate and steps. ε at "
                       "three δ (1e-5, 1e-6 and 1/n, n = rows trained on) and μ (Gaussian DP by the central limit "
                       "theorem: an estimate, not a bound) are in its legend.")

    rows = sweep_summary.by_epsilon(result)
    if rows:
        df = pd.DataFrame(rows)
        cols = [c for c in df.columns if not c.endswith("_sd")]
        # headers in words, not field names (the JSON and the CLI keep those); the download adds the SDs
        shown = pd.DataFrame([sweep_summary.shown_row(r) for r in rows])[cols]  # bounds keep their side
        st.dataframe(shown.rename(columns=sweep_summary.column_label), hide_index=True, key="pu_table")
        st.caption("Per ε, over its seeds. TPR: the share of members an attack catches; FPR: the share of "
                   "non-members it flags wrongly; AUC 0.5 is guessing; SD: standard deviation.")
        table_downloads(df.rename(columns=sweep_summary.column_label), f"sweep-{sid}", key="pu_dl")
    if compare:
        others = {names[i]: (guarded(sweep_runs.state, i, caller=caller) or {}).get("result") for i in compare}
        others = {k: v for k, v in others.items() if v}
        others[names[sid]] = result
        c1, c2 = st.columns(2)
        chart(figs.compare_chart(others, "accuracy"), key="pu_fig_cmp_acc", where=c1)
        chart(figs.compare_chart(others, "auc"), key="pu_fig_cmp_auc", where=c2)


show_sweep(sweep_id, status0["status"] == "running")
admin_box("pu_admin")
