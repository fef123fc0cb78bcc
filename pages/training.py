"""Train a model with DP-SGD (Opacus) or the non-private baseline, as a background job, and read the
honest privacy bill of the finished run."""

import json

import pandas as pd
import streamlit as st

from dpcore import jobs, training
from dpcore.figures import training as figs
from pages._ui import chart, from_url, guarded, share_in_url, table_downloads

TARGET = "dpcore.training:run_job"
GROUP = "train"
DATASETS = {"breast_cancer": "Breast cancer (569 rows, 30 features, binary)",
            "medical": "Synthetic medical extract (10,000 rows)",
            "digits": "Digits (8×8 images, 10 classes)",
            "csv": "Upload a CSV",
            "mnist": "MNIST from a local .npz file"}
MODEL_NAMES = {"logreg": "Logistic regression", "mlp": "Small MLP", "cnn": "Small CNN (images)",
               "diffprivlib_logreg": "diffprivlib LogisticRegression (objective perturbation)",
               "diffprivlib_nb": "diffprivlib GaussianNB"}


def _models_for(kind: str) -> list[str]:
    if kind in ("digits", "mnist"):
        return ["cnn", "logreg", "mlp"] + (["diffprivlib_logreg", "diffprivlib_nb"] if kind == "digits" else [])
    return ["logreg", "mlp", "diffprivlib_logreg", "diffprivlib_nb"]


def _on_dataset() -> None:
    """A new dataset: its first (recommended) model and that pair's hyper-parameters."""
    st.session_state["tr_model"] = _models_for(st.session_state.get("tr_dataset", "breast_cancer"))[0]
    _apply_recommended()


def _apply_recommended() -> None:
    """Pre-fill the hyper-parameters that work for the chosen dataset and model."""
    kind = st.session_state.get("tr_dataset", "breast_cancer")
    rec = training.recommended(kind, st.session_state["tr_model"])
    for key in ("epochs", "batch_size", "lr", "clip", "optimizer"):
        st.session_state[f"tr_{key}"] = rec[key]


if "tr_epochs" not in st.session_state:
    st.session_state["tr_dataset"] = "breast_cancer"
    st.session_state["tr_model"] = "logreg"
    _apply_recommended()

st.title("Train with DP-SGD")
st.markdown(
    "Train a model with **DP-SGD** (Opacus: per-example gradient clipping, Gaussian noise, Poisson sampling) "
    "and compare it with the **non-private baseline** — same model, data split and epochs. Training runs in a "
    "background worker: you can leave the page, open a second tab or reload; the job keeps running. "
    "The ε you see is computed by a real accountant (PRV, or RDP) for the run's own noise, sampling rate and "
    "steps — next to what the seed notebook's shortcut formula would have claimed."
)

# ---------------------------------------------------------------------------------------------- the form
with st.container(border=True):
    c1, c2, c3 = st.columns([2, 2, 2])
    kind = c1.selectbox("Dataset", list(DATASETS), format_func=DATASETS.get, key="tr_dataset",
                        on_change=_on_dataset)
    model = c2.selectbox("Model", _models_for(kind), format_func=MODEL_NAMES.get, key="tr_model",
                         on_change=_apply_recommended)
    dataset, target = kind, None
    if kind == "medical":
        target = c3.selectbox("Predict", list(training.MEDICAL_TARGETS), key="tr_target",
                              help="has_rare_disease: ~2% positives (accuracy is misleading); diagnosis: 6 classes")
    elif kind == "csv":
        up = c3.file_uploader("CSV file", type=["csv"], key="tr_csv")
        if up is not None:
            path = guarded(training.save_upload, up.getvalue())
            cols = guarded(training.csv_columns, path) if path else None
            if cols:
                dataset = f"csv:{path}"
                target = st.selectbox("Target column (label to predict)", cols, index=len(cols) - 1, key="tr_csv_target")
                st.caption("Numeric columns are scaled with public bounds where known (age, salary, …); for others "
                           "the page says below that the scaling leaks. Text columns with ≤ 20 values are one-hot.")
    elif kind == "mnist":
        mpath = c3.text_input("Path to mnist.npz (keras layout)", key="tr_mnist_path",
                              help="A local file with x_train, y_train, x_test, y_test. Nothing is downloaded.")
        dataset = f"mnist:{mpath}" if mpath else "mnist:"

    p1, p2, p3, p4 = st.columns(4)
    how = p1.radio("Privacy set by", ["target ε", "noise multiplier σ"], key="tr_privacy_mode", horizontal=True,
                   help="Target ε: the noise is calibrated for the planned epochs. σ: ε is computed.")
    epsilon = noise = None
    if how == "target ε":
        epsilon = p2.number_input("Target ε", min_value=0.0, value=1.0, step=0.5, key="tr_eps", format="%.2f")
    else:
        noise = p2.number_input("Noise multiplier σ", min_value=0.0, value=1.0, step=0.1, key="tr_sigma",
                                format="%.2f")
    delta = p3.number_input("δ", min_value=0.0, max_value=1.0, value=1e-5, format="%.0e", step=1e-6,
                            key="tr_delta", help="Keep δ well below 1/n (n = training rows).")
    accountant = p4.selectbox("Accountant", ["prv", "rdp"], key="tr_accountant",
                              format_func={"prv": "PRV (tight)", "rdp": "RDP (looser)"}.get)

    h1, h2, h3, h4, h5, h6, h7 = st.columns(7)
    epochs = h1.number_input("Epochs", 1, 500, key="tr_epochs")
    batch = h2.number_input("Expected batch", 1, 100_000, key="tr_batch_size")
    lr = h3.number_input("Learning rate", min_value=0.0, key="tr_lr", format="%.3f", step=0.01)
    clip = h4.number_input("Clip C", min_value=0.0, key="tr_clip", format="%.2f", step=0.1,
                           help="Max L2 norm of each example's gradient.")
    optimizer = h5.selectbox("Optimizer", list(training.OPTIMIZERS), key="tr_optimizer")
    seed = h6.number_input("Seed", 0, 2**31 - 1, 0, key="tr_seed")
    train_size = h7.number_input("Training rows (0 = all)", 0, 1_000_000, 0, key="tr_train_size")

    params = {"dataset": dataset, "target": target, "model": model, "epsilon": epsilon, "delta": delta,
              "noise_multiplier": noise, "epochs": int(epochs), "batch_size": int(batch), "lr": lr, "clip": clip,
              "optimizer": optimizer, "accountant": accountant, "seed": int(seed),
              "train_size": int(train_size) or None}
    b1, b2, _ = st.columns([1, 1.4, 3])
    go_dp = b1.button("Train DP", type="primary", key="tr_train_dp", icon=":material/lock:")
    go_base = b2.button("Train non-private baseline", key="tr_train_base", icon=":material/lock_open:")


def _submit(p: dict, show: bool = True) -> None:
    cfg = guarded(training.TrainConfig.from_dict, p)
    if cfg is None or guarded(training.preflight, cfg) is None:
        return
    label = f"{MODEL_NAMES[cfg.model].split(' (')[0]} · {cfg.dataset.split(':')[0]} · " + (
        f"ε={cfg.epsilon:g}" if cfg.epsilon is not None
        else (f"σ={cfg.noise_multiplier:g}" if cfg.noise_multiplier is not None else "non-private"))
    job_id = guarded(jobs.submit, TARGET, cfg.to_dict(), group=GROUP, label=label)
    if job_id:
        jobs.ensure_workers(2)
        if show:
            st.session_state["tr_new_job"] = job_id
        st.toast(f"Job {job_id} queued: {label}")


if go_dp:
    if params["epsilon"] is None and params["noise_multiplier"] is None:
        st.error("Set a target ε or a noise multiplier σ.")
    else:
        _submit(params)
if go_base:
    _submit({**params, "epsilon": None, "noise_multiplier": None})

# ---------------------------------------------------------------------------------------------- one job
recent = jobs.list_jobs(group=GROUP, limit=30)
if not recent:
    st.info("No training run yet. Press **Train DP** (a few seconds for breast cancer).")
    st.stop()
ids = [j["id"] for j in recent]
new_job = st.session_state.pop("tr_new_job", None)
if new_job in ids:
    st.session_state["tr_pick"] = new_job  # a new submission: show it
if "tr_pick" not in st.session_state and from_url("tr_pick", "") in ids:
    st.session_state["tr_pick"] = from_url("tr_pick", "")  # a shared link to one run
if st.session_state.get("tr_pick") not in ids:
    st.session_state["tr_pick"] = ids[0]
names = {j["id"]: f"{j['label']} · {j['status']} · {j['id']}" for j in recent}
job_id = st.selectbox("Run", ids, format_func=names.get, key="tr_pick")
share_in_url("tr_pick")
first = guarded(jobs.get, job_id, history=False)
if first is None:
    st.stop()
if first["status"] in ("queued", "running"):
    jobs.ensure_workers(2)


def _baseline_for(job: dict) -> dict | None:
    """The newest finished non-private baseline with the same model, split and epochs."""
    try:
        want = training.baseline_params(job["params"])
    except Exception:  # noqa: BLE001 - an old or foreign job
        return None
    for j in jobs.list_jobs(group=GROUP, limit=100):
        if j["status"] == "done" and j["params"] == want:
            return j
    return None


def _fmt(v, spec=".3f", none="—"):
    return none if v is None else format(v, spec)


def _show_finished(job: dict) -> None:
    m = job["result"] or {}
    private = m.get("private")
    base = None if not private else _baseline_for(job)
    bm = (base or {}).get("result") or {}
    st.subheader("Result")
    k1, k2, k3, k4 = st.columns(4)
    k1.metric("Test accuracy", _fmt(m.get("test_accuracy")),
              delta=None if not bm else f"{m['test_accuracy'] - bm['test_accuracy']:+.3f} vs baseline")
    k2.metric("Baseline test accuracy (no DP)", _fmt(bm.get("test_accuracy")) if private else "this is it")
    if private and m.get("accountant") and m.get("noise_multiplier") is not None:
        k3.metric(f"ε ({m['accountant'].upper()})", _fmt(m.get("epsilon")), help="Upper bound from the accountant")
        k4.metric("δ", f"{m.get('delta'):g}")
        k5, k6, k7, k8 = st.columns(4)
        k5.metric("Noise multiplier σ", _fmt(m.get("noise_multiplier"), ".3f"))
        k6.metric("Sample rate q", _fmt(m.get("sample_rate"), ".4f"))
        k7.metric("Steps T", f"{m.get('steps')}")
        k8.metric("Training time", f"{m.get('train_seconds', 0):.1f} s")
        st.markdown(
            f"**Both accountants** for this run: PRV ε = **{m['epsilon_prv']:.3f}**, RDP ε = **{m['epsilon_rdp']:.3f}** "
            f"(δ = {m['delta']:g}). The seed notebook's shortcut q/σ·√(2T ln 1/δ) would claim "
            f"**{m['shortcut_epsilon']:.3f}** — that formula is *not* a privacy guarantee "
            + ("and here it claims *less* privacy loss than is real." if m['shortcut_epsilon'] < m['epsilon_prv']
               else "(here it happens to be above the real value; it can also be far below).")
            + f" Per-example gradients: Opacus-compatible mode `{m.get('grad_sample_mode')}`."
        )
        if not bm:
            if st.button("Train the matching non-private baseline", key="tr_train_pair", icon=":material/lock_open:"):
                _submit(training.baseline_params(job["params"]), show=False)  # stay here: compare when done
                st.rerun(scope="app")
    elif private:  # diffprivlib
        k3.metric("ε (pure, diffprivlib)", _fmt(m.get("epsilon")))
        k4.metric("Training time", f"{m.get('train_seconds', 0):.2f} s")
    else:
        k3.metric("ε", "∞ (not private)")
        k4.metric("Training time", f"{m.get('train_seconds', 0):.2f} s")
    st.caption(f":orange-badge[Not DP] training accuracy {_fmt(m.get('train_accuracy'))}, training loss "
               f"{_fmt(m.get('train_loss'))}: computed on the private training rows, for diagnosis only. "
               f"Rows: {m.get('n_train')} train / {m.get('n_test')} test. Preprocessing: {m.get('bounds_note')}.")
    for w in m.get("warnings") or []:
        st.warning(w)
    for leak in m.get("leaks") or []:
        st.warning(f"Preprocessing leak (not covered by ε): {leak}")
    if private and m.get("epsilon_prv"):
        chart(figs.epsilon_comparison_chart(m), key="tr_fig_eps_cmp")
    d1, d2, _ = st.columns([1, 1, 3])
    d1.download_button("Metrics (JSON)", json.dumps(m, indent=2).encode(), f"run-{job['id']}.json",
                       "application/json", key="tr_dl_metrics", icon=":material/download:")
    wname = m.get("weights_file")
    wpath = jobs.result_path(job["id"], wname) if wname else None
    if wpath is not None and wpath.exists():
        d2.download_button("Model weights", wpath.read_bytes(), f"model-{job['id']}{wpath.suffix}",
                           "application/octet-stream", key="tr_dl_weights", icon=":material/download:")
    if private and m.get("noise_multiplier") is not None:  # trade-off curve + privacy statement (engineer G)
        from dpcore import statement
        from dpcore.figures import advisor as adv_figs

        stmt = guarded(statement.for_job, job["id"])
        if stmt:
            chart(adv_figs.statement_tradeoff_chart(stmt), key="tr_fig_tradeoff")
            st.download_button("Privacy statement (JSON)", json.dumps(stmt, indent=2).encode(),
                               f"statement-{job['id']}.json", "application/json", key="tr_dl_statement",
                               icon=":material/verified_user:")


@st.fragment(run_every=1.0 if first["status"] in ("queued", "running") else None)
def show_job(jid: str, was_active: bool) -> None:
    v = guarded(jobs.view, jid)
    if v is None:
        return
    job = v["job"]
    status = job["status"]
    if status in ("queued", "running"):
        st.progress(v["fraction"] or 0.0, text=v["text"])
        if st.button("Cancel", key="tr_cancel", icon=":material/stop:"):
            guarded(jobs.cancel, jid)
    elif was_active:
        st.rerun(scope="app")  # finished: draw the final state once and stop polling
        return
    if status == "failed":
        st.error(f"The run failed: {job['error']}")
    elif status == "cancelled":
        st.warning(f"The run was cancelled ({job['error']}).")
    history = job.get("history") or []
    p = job.get("params") or {}
    base = _baseline_for(job) if status == "done" and (job.get("result") or {}).get("private") else None
    base_hist = ((base or {}).get("result") or {}).get("history")
    if figs.epoch_rows(history):
        c1, c2, c3 = st.columns(3)
        chart(figs.loss_chart(history, base_hist), key="tr_fig_loss", where=c1)
        chart(figs.accuracy_chart(history, base_hist), key="tr_fig_acc", where=c2)
        if p.get("epsilon") is not None or p.get("noise_multiplier") is not None:
            final = (job.get("result") or {}).get("epsilon")
            chart(figs.epsilon_chart(history, p.get("epsilon"), final), key="tr_fig_eps", where=c3)
            c3.caption("Live ε is an RDP upper bound; the final point is the chosen accountant's value.")
    elif status in ("queued", "running"):
        st.info("Waiting for the first epoch…" if status == "running" else "Queued: waiting for a worker…")
    if status == "done":
        _show_finished(job)


show_job(job_id, first["status"] in ("queued", "running"))

# ---------------------------------------------------------------------------------------------- recent runs
with st.expander("Recent runs", expanded=False):
    rows = []
    for j in recent:
        r = j.get("result") or {}
        rows.append({"id": j["id"], "run": j["label"], "status": j["status"],
                     "test accuracy": r.get("test_accuracy"), "ε": r.get("epsilon"), "δ": r.get("delta"),
                     "σ": r.get("noise_multiplier"), "seconds": r.get("train_seconds"), "error": j.get("error")})
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="tr_recent")
    table_downloads(pd.DataFrame(rows), "tr_recent", key="tr_recent_dl")
