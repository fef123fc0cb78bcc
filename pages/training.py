"""Train a model with DP-SGD (Opacus) or the non-private baseline, as a background job, and read the
honest privacy bill of the finished run. Runs belong to the browser (or signed-in user) that started them (and admins see all):
the picker, a link's run, Cancel, downloads, rename and delete go through the job store's ownership checks.

The view of one finished run lives in pages/ui/training_run.py; an upload's storage and its public-bounds editor in
pages/ui/upload.py (shared with the privacy–utility page).

Past 500 formatted lines, one idea: the training form and the job list in the order a visitor meets them."""

import pandas as pd
import streamlit as st

from dpcore import claims, limits
from dpcore.budgets import charged
from dpcore.errors import JobError
from dpcore.figures import training as figs
from dpcore.jobs import display, owners, registry, store, workers
from dpcore.sweep import timing as sweep_timing
from dpcore.training import bounds
from dpcore.training.config import (
    MEDICAL_TARGETS,
    MODEL_NAMES,
    OPTIMIZERS,
    TrainConfig,
    dataset_name,
    model_name,
    recommended,
)
from dpcore.training.data import upload_columns
from dpcore.training.job import admit, baseline_params, preflight
from dpcore.training.results import TrainMetrics
from pages.ui import first_screen, identity
from pages.ui import training_form as form
from pages.ui import training_run as run_view
from pages.ui import upload as upload_ui
from pages.ui.common import (
    admin_box,
    chart,
    clicked,
    from_url,
    guarded,
    headline_md,
    job_caller,
    manage_box,
    required,
    share_in_url,
    submit_once,
    table_downloads,
    unbroken,
    widget_state,
)

TARGET, GROUP = registry.TRAIN, registry.TRAIN_GROUP
# Held in session state, not value=: the dataset and model callbacks set the hyper-parameters, the advisor's
# "open on the training page" sets the privacy fields, and the ε / σ field not shown keeps its value.
widget_state(
    {
        "tr_dataset": "breast_cancer",
        "tr_model": "logreg",
        **{f"tr_{k}": recommended("breast_cancer", "logreg")[k] for k in form.HYPER},
        "tr_privacy_mode": "target ε",
        "tr_eps": 1.0,
        "tr_sigma": 1.0,
        "tr_delta": 1e-5,
    }
)

acc_text, RELATION, ACTIVE = run_view.acc_text, run_view.RELATION, run_view.ACTIVE


st.title("Train with DP-SGD")
top = first_screen.headline()  # the "so what", once the form gives ε (or σ)
upload_ui.release()
caller = job_caller()


# A link to one run (?tr_pick=ID): shown only to its owner (and admins); the form takes its settings.
def _linked(job_id: str):
    """The run a link names, if this session may see it; else a warning that shows nothing of it."""
    try:
        return store.get(job_id, caller=caller, history=False)
    except owners.NotYours:
        st.warning(
            "The run in this link is not yours: only the browser or user that started it (or an admin) can see it. "
            "Start your own below.",
            icon=":material/lock:",
        )
    except JobError:
        st.warning("The link names no run that exists (it may have been deleted).")
    return None


if "tr_pick" not in st.session_state and from_url("tr_pick", ""):
    linked = guarded(_linked, from_url("tr_pick", ""))  # a storage fault: one message
    if linked is not None and linked.group == GROUP:
        st.session_state["tr_pick"] = linked.id
        form.take(linked.params)

# ---------------------------------------------------------------------------------------------- the form
with st.container(border=True):
    c1, c2, c3 = st.columns([2, 2, 2])
    kind = c1.selectbox(
        "Dataset",
        list(form.DATASETS),
        format_func=form.DATASETS.get,
        key="tr_dataset",
        on_change=form.on_dataset,
        help=form.DATASET_HELP,
    )
    model = c2.selectbox(
        "Model",
        form.models_for(kind),
        format_func=MODEL_NAMES.get,
        key="tr_model",
        on_change=form.apply_recommended,
        help=form.MODEL_HELP,
    )
    dataset, target, upload_bytes, upload_name, upload_cols, upload_bounds = kind, None, None, None, [], None
    if kind == "medical":
        target = c3.selectbox(
            "Predict",
            list(MEDICAL_TARGETS),
            key="tr_target",  # words; the value stays the column
            format_func=lambda t: "Rare disease (yes/no)" if t == "has_rare_disease" else t.title(),
            help="Rare disease: ~2% positives (accuracy is misleading); diagnosis: 6 classes",
        )
    elif kind == "csv":
        up = c3.file_uploader(
            "CSV file",
            type=["csv"],
            key="tr_csv",
            help=f"At most {limits.upload_size()} and {limits.UPLOAD_MAX_ROWS:,} rows.",
        )
        if up is not None:
            cols = guarded(upload_columns, up.getvalue())  # validated in memory: nothing on disk yet
            if cols:
                upload_bytes = up.getvalue()
                dataset = "csv:(upload)"
                target = st.selectbox(
                    "Target column (label to predict)", cols, index=len(cols) - 1, key="tr_csv_target"
                )
                upload_name = up.name
                upload_cols, upload_bounds = upload_ui.editor(upload_bytes, target, "tr_bounds")
                st.caption("The file is validated in memory and stored only while its training jobs need it.")
    elif kind == "mnist":
        mpath = c3.text_input(
            "File name in the data folder",
            key="tr_mnist_path",
            placeholder="mnist.npz",
            help="A keras-layout mnist.npz (x_train, y_train, x_test, y_test) placed by the "
            "server's admin in the `data` folder under DP_EXPLORER_HOME. Only that folder "
            "is read; nothing is downloaded.",
        )
        c3.caption("Files are read only from the `data` folder under DP_EXPLORER_HOME.")
        dataset = f"mnist:{mpath}" if mpath else "mnist:"

    p1, p2, p3, _ = st.columns(4)
    how = p1.radio(
        "Privacy set by",
        ["target ε", "noise multiplier σ"],
        key="tr_privacy_mode",
        horizontal=True,
        format_func=lambda m: m[0].upper() + m[1:],  # shown "Target ε"; the value (links) unchanged
        help="Target ε: the noise is calibrated for the planned epochs. σ (noise multiplier: noise "
        "standard deviation ÷ clip C): ε is computed.",
    )
    epsilon = noise = None
    if how == "target ε":
        epsilon = p2.number_input(
            "Target ε",
            min_value=0.0,
            step=0.5,
            key="tr_eps",
            format="%.2f",
            help=f"Privacy budget ({RELATION}, with the δ beside it): smaller = more "
            "private, more noise. 1 is strong, 8 is moderate.",
        )
    else:
        noise = p2.number_input("Noise multiplier σ", min_value=0.0, step=0.1, key="tr_sigma", format="%.2f")
    delta = p3.number_input(
        "δ",
        min_value=0.0,
        max_value=1.0,
        format="%.0e",
        step=1e-6,
        key="tr_delta",
        help="The small chance the ε guarantee may fail. Keep δ well below 1/n (n = training rows).",
    )
    # the first step stays on a phone's first screen: the buttons under ε and δ, the rest of the settings (each with
    # a recommended value) one click away
    actions = st.container()
    with st.expander(
        "Training settings: accountant, epochs, batch size, learning rate, clip, optimizer, seed, rows",
        icon=":material/tune:",
    ):
        a1, a2, a3, _ = st.columns(4)  # seven inputs in one row wrapped their labels inside the expander
        accountant = a1.selectbox(
            "Accountant",
            ["prv", "rdp"],
            key="tr_accountant",
            format_func={"prv": "PRV (tight)", "rdp": "RDP (looser)"}.get,
            help="How ε is added up over the training steps. PRV (privacy-loss random "
            "variables) is tight; RDP (Rényi DP) is a looser upper bound.",
        )

        h1, h2, h3, h4, h5 = st.columns(5)
        epochs = h1.number_input("Epochs", 1, 500, key="tr_epochs")
        # "Batch size" (not "Expected batch"): with its help icon the longer label wrapped and pushed its input below
        # its neighbours' at 1280 px
        batch = h2.number_input(
            "Batch size",
            1,
            100_000,
            key="tr_batch_size",
            help="Expected records per step: each step takes each record with chance batch ÷ "
            "training rows (Poisson sampling, which the ε accounting assumes).",
        )
        lr = h3.number_input("Learning rate", min_value=0.0, key="tr_lr", format="%.3f", step=0.01)
        clip = h4.number_input(
            "Clip C",
            min_value=0.0,
            key="tr_clip",
            format="%.2f",
            step=0.1,
            help="How far one record can move the model in a step: each example's gradient (its "
            "push on the model) is clipped to this length (L2 norm).",
        )
        optimizer = h5.selectbox(
            "Optimizer", list(OPTIMIZERS), key="tr_optimizer", format_func=lambda o: form.OPTIMIZER_NAMES.get(o, o)
        )
        seed = a2.number_input(
            "Seed",
            0,
            2**31 - 1,
            0,
            key="tr_seed",
            help="Fixes the data split and starting weights only; sampling and noise stay secret.",
        )
        train_size = a3.number_input(
            "Training rows",
            0,
            limits.UPLOAD_MAX_ROWS,
            0,
            key="tr_train_size",
            help="0 = all of the training split. Fewer: a seeded random subset, faster.",
        )

    params = {
        "dataset": dataset,
        "target": target,
        "model": model,
        "epsilon": epsilon,
        "delta": delta,
        "noise_multiplier": noise,
        "epochs": int(epochs),
        "batch_size": int(batch),
        "lr": lr,
        "clip": clip,
        "optimizer": optimizer,
        "accountant": accountant,
        "seed": int(seed),
        "train_size": int(train_size) or None,
        **({"bounds": upload_bounds, "upload_name": upload_name} if kind == "csv" else {}),
    }
    b1, b2, _ = actions.columns([1.4, 1.4, 2.5])
    privacy = f"ε = {epsilon:g}" if epsilon is not None else f"noise σ = {noise:g}"
    with top:
        st.markdown(
            headline_md(
                f"One click trains a model at {unbroken(privacy)} and its twin without DP",
                "Then it measures what privacy cost in test accuracy (read on private test rows: not covered by ε).",
            )
        )
    go_dp = clicked(
        "tr_train_dp",
        b1.button(
            "Train DP + baseline",
            type="primary",
            key="tr_train_dp",
            icon=":material/lock:",
            help="Trains the DP model and its non-private twin together, then shows what DP costs.",
        ),
    )
    # a non-private run for comparison: an icon that says compare, not an (open) lock that reads as privacy
    go_base = clicked(
        "tr_train_base",
        b2.button(
            "Baseline only",
            key="tr_train_base",
            icon=":material/compare_arrows:",
            help="Trains only the non-private model (no DP, ε = ∞), for comparison.",
        ),
    )


with st.expander("How it works: DP-SGD, the twin, ε and who sees your runs", icon=":material/help:"):
    st.markdown(
        "DP-SGD (Opacus) clips each example's influence and adds noise; the twin has the same model, data split and "
        f"epochs without it. ε is the accountant's upper bound for the run's own noise, sampling and steps, with δ "
        f"beside it; neighbouring datasets differ by one record ({RELATION}). Training runs in a background worker, "
        "so leaving the page stops nothing. Your runs are yours: only this browser (or, signed in, you) and an admin "
        "see their results; a reload or another tab finds them again (**My work**). The seed fixes only the data "
        "split and the starting weights; sampling and noise come from a secure source that is never stored."
    )


def _with_upload(p: dict) -> dict | None:
    """Job params with the upload stored for the job (only now, after it was validated in memory), named by an
    opaque reference (``upload:<ref>``): the job's parameters never hold the server's path."""
    if not str(p.get("dataset", "")).startswith("csv:"):
        return p
    if upload_bytes is None:
        st.error("Upload a CSV file first.")
        return None
    if upload_bounds is None or guarded(bounds.require_all, upload_cols, upload_bounds) is None:
        return None  # every column needs its bounds (or the labelled choice to learn them): said above
    ref = upload_ui.store(upload_bytes)
    return None if ref is None else {**p, "dataset": ref}


def _label(cfg) -> str:
    return f"{model_name(cfg.model)} · {cfg.upload_name or dataset_name(cfg.dataset)} · " + (
        f"ε={cfg.epsilon:g}"
        if cfg.epsilon is not None
        else (f"σ={cfg.noise_multiplier:g}" if cfg.noise_multiplier is not None else "non-private")
    )


def _submit(p: dict, button: str, show: bool = True, with_baseline: bool = False) -> None:
    """Queue the run (and its twin) for this session, once per click: the pair goes in all or none, and a
    double click's second press queues nothing (the store refuses its repeated key)."""
    p = _with_upload(p)
    if p is None:
        return
    cfg = guarded(TrainConfig.from_dict, p)
    # the gate: rows that are a registered dataset's are charged to its cap and this session's quota first
    adm = guarded(admit, identity.current(), cfg, label=f"DP training run: {_label(cfg)}") if cfg else None
    if adm is None or guarded(preflight, cfg) is None:
        if adm is not None:
            adm.refund("the run was refused before it was queued")
        upload_ui.release()  # a refused run keeps nothing on disk
        return
    units = [(TARGET, cfg.to_dict(), _label(cfg))]
    if adm.charged:
        st.caption(
            f"Charged to {', '.join(map(repr, adm.datasets))}: ε = {adm.charge.epsilon:.3g} of its cap and your quota."
        )
    elif with_baseline and cfg.private and _find_baseline(cfg.to_dict(), ACTIVE + ("done",)) is None:
        base = cfg.baseline()  # a non-private twin only of the uploader's own rows (ε = ∞ on a registered dataset's)
        units.append((TARGET, base.to_dict(), _label(base) + " (twin)"))
    ids, repeated = submit_once(button, store.submit_many, units, owner=caller.owner, group=GROUP)
    if not ids or repeated:
        adm.refund("the run was not queued (refused, or a repeated click)")
    if not ids:
        upload_ui.release()
        return
    if not repeated and guarded(charged.tie, adm, ids[:1]) is None and adm.tickets:
        store.cancel(ids[0], caller=caller)  # its charge could not be tied to it: it must not run uncharged
        return
    job_id = ids if repeated else ids[0]
    workers.ensure_workers(2)
    if show:
        st.session_state["tr_new_job"] = job_id
    if not repeated:
        st.toast(f"Queued: {_label(cfg)}" + (" and its non-private twin" if len(units) > 1 else ""))


def _find_baseline(params: dict, statuses=("done",), owner: str | None = None) -> dict | None:
    """The newest non-private baseline of the same owner with the same model, split and epochs, in one of
    ``statuses``."""
    try:
        want = baseline_params(params)
    except Exception:
        return None
    owner = owner or caller.owner
    for j in store.list_jobs(caller=caller, group=GROUP, limit=100):
        if j["status"] in statuses and j["params"] == want and j.owner == owner:
            return j
    return None


if go_dp:
    if params["epsilon"] is None and params["noise_multiplier"] is None:
        st.error("Set a target ε or a noise multiplier σ.")
    else:
        _submit(params, "tr_train_dp", with_baseline=True)
if go_base:
    _submit({**params, "epsilon": None, "noise_multiplier": None}, "tr_train_base")

# ---------------------------------------------------------------------------------------------- one job
recent = list(required(store.list_jobs, caller=caller, group=GROUP, limit=30))
if st.session_state.get("tr_pick") and st.session_state["tr_pick"] not in [j.id for j in recent]:
    try:  # a linked run older than the 30 newest: still this session's (or an admin's) to see
        recent.append(store.get(st.session_state["tr_pick"], caller=caller, history=False))
    except (JobError, OSError):
        pass
if not recent:
    took = guarded(sweep_timing.words, "training", caller=caller)  # measured here, else on a 2-core machine
    st.info(
        "No training run yet in this browser. Press **Train DP + baseline**"
        + (f" (a run and its twin, {took})." if took else ".")
    )
    admin_box("tr_admin")
    st.stop()
ids = [j["id"] for j in recent]
by_id = {j.id: j for j in recent}
new_job = st.session_state.pop("tr_new_job", None)
if new_job in ids:
    st.session_state["tr_pick"] = new_job  # a new submission: show it
if st.session_state.get("tr_pick") not in ids:
    # default: the newest private run (the comparison view), not its twin baseline submitted after it
    private = [
        j["id"]
        for j in recent
        if (j.get("params") or {}).get("epsilon") is not None
        or (j.get("params") or {}).get("noise_multiplier") is not None
    ]
    st.session_state["tr_pick"] = private[0] if private else ids[0]


def _on_pick() -> None:
    """Another run picked: the form shows its settings."""
    job = by_id.get(st.session_state.get("tr_pick"))
    if job is not None:
        form.take(job.params)


# The picker's labels never carry the status: a select box keeps showing the label it was opened with, so a
# status in it stayed on "queued" while the job ran and finished. The status is drawn fresh beside it. Names are
# distinct per owner; an admin's list (several owners) adds the id where two read the same.
labels = [j["label"] or j["id"] for j in recent]
names = {j["id"]: (lb if labels.count(lb) == 1 else f"{lb} · {j['id']}") for j, lb in zip(recent, labels)}
pick_col, status_col = st.columns([4, 1], vertical_alignment="bottom")
job_id = pick_col.selectbox("Run", ids, format_func=names.get, key="tr_pick", on_change=_on_pick)
share_in_url("tr_pick")
first = required(store.get, job_id, caller=caller, history=False)
STATUS_WORDS = {"queued": "queued", "running": "running", "done": "done", "failed": "failed", "cancelled": "cancelled"}
status_col.markdown(f"Status: **{STATUS_WORDS.get(first['status'], first['status'])}**")
_private_first = (first.get("params") or {}).get("epsilon") is not None or (first.get("params") or {}).get(
    "noise_multiplier"
) is not None
twin0 = _find_baseline(first["params"], ACTIVE + ("done",), first.owner) if _private_first else None
polling = first["status"] in ACTIVE or (twin0 is not None and twin0["status"] in ACTIVE)
if polling:
    workers.ensure_workers(2)


def _baseline_for(job: dict) -> dict | None:
    """The newest finished non-private baseline with the same model, split and epochs."""
    return _find_baseline(job["params"], ("done",), job.get("owner"))


def _state(job: dict | None) -> str | None:
    return None if job is None else job["status"]


@st.fragment(run_every=1.0 if polling else None)
def show_job(jid: str, status0: str, twin_status0: str | None) -> None:
    v = guarded(display.view, jid, caller=caller)
    if v is None:
        return
    job = v["job"]
    status = job["status"]
    twin = _find_baseline(job["params"], ACTIVE + ("done",), job.owner) if _private_first else None
    if status != status0 or _state(twin) != twin_status0:
        # the run (or its twin) moved on: redraw the whole page so the run picker's label and the
        # polling follow (queued -> running -> done / cancelled)
        st.rerun(scope="app")
        return
    if status in ACTIVE:
        st.progress(v["fraction"] or 0.0, text=v["text"])
        if caller.may_change(job.owner) and st.button("Cancel", key="tr_cancel", icon=":material/stop:"):
            guarded(store.cancel, jid, caller=caller)
            st.rerun(scope="app")
    if status == "failed":
        st.error(f"The run failed: {job['error']}")
    elif status == "cancelled":
        st.warning(f"The run was cancelled ({job['error']}).")
    history = job.get("history") or []
    p = job.get("params") or {}
    m = TrainMetrics.from_job(job) if status == "done" else None
    bm = TrainMetrics.from_job(_baseline_for(job)) if m is not None and m.private else None
    base_hist = bm.history if bm is not None else None
    if status == "done":
        run_view.show_finished(
            job,
            twin,
            _baseline_for(job) if m is not None and m.private else None,
            lambda p, button: _submit(p, button, show=False),
            caller,
        )
    if figs.epoch_rows(history):
        c1, c2, c3 = st.columns(3)
        chart(figs.loss_chart(history, base_hist), key="tr_fig_loss", where=c1)
        chart(figs.accuracy_chart(history, base_hist), key="tr_fig_acc", where=c2)
        if p.get("epsilon") is not None or p.get("noise_multiplier") is not None:
            final = m.epsilon if m is not None else None
            chart(
                figs.epsilon_chart(history, p.get("epsilon"), final, accountant=p.get("accountant")),
                key="tr_fig_eps",
                where=c3,
            )
            c3.caption(
                f"ε spent so far (δ = {claims.delta(p.get('delta'))}, {RELATION}). While the run trains, ε "
                "is a quick RDP (Rényi DP) upper bound, looser than the final accountant's value (the "
                "diamond), so it can end a little above a target that the diamond meets."
            )
    elif status in ACTIVE:
        st.info("Waiting for the first epoch…" if status == "running" else "Queued: waiting for a worker…")
    if status not in ACTIVE and caller.may_change(job.owner):
        if manage_box(
            "run",
            job["label"] or jid,
            key=f"tr_manage_{jid}",
            rename=lambda new: store.rename(jid, new, caller=caller),
            delete=lambda: store.delete(jid, caller=caller),
        ):
            if not store_has(jid):
                st.session_state.pop("tr_pick", None)
            st.rerun(scope="app")


def store_has(jid: str) -> bool:
    try:
        store.get(jid, caller=caller, history=False)
    except JobError:
        return False
    return True


show_job(job_id, first["status"], _state(twin0))

# ---------------------------------------------------------------------------------------------- recent runs
with st.expander("Recent runs", expanded=False):
    rows = []
    for j in recent:
        r = TrainMetrics.from_job(j)
        # words and rounded numbers, "—" where a run has none (a table of "None" read as broken); the id last
        eps = (
            "—"
            if r is None
            else claims.up(r.epsilon)
            if r.epsilon is not None
            else "∞ (no DP)"
            if not r.private
            else "—"
        )
        rows.append(
            {
                "run": j["label"] or j["id"],
                "status": j["status"],
                "test accuracy (not covered by ε)": acc_text(r.test_accuracy) if r else "—",
                "ε": eps,
                "δ": claims.delta(r.delta) if r and r.delta else "—",
                "σ": f"{r.noise_multiplier:.3g}" if r and r.noise_multiplier is not None else "—",
                "seconds": f"{r.train_seconds:.1f}" if r and r.train_seconds is not None else "—",
                "noise": "reproducible: not a DP release" if r and r.reproducible_noise else "",
                "diverged": "yes" if r and r.diverged else "",
                "error": j.get("error") or "",
                "id": j["id"],
            }
        )
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="tr_recent")
    table_downloads(pd.DataFrame(rows), "tr_recent", key="tr_recent_dl")
admin_box("tr_admin")
