"""The privacy–utility page's "New sweep" form: a built-in data set (the default demo) or the user's own CSV with its
public bounds, the grid, seeds, attacks and shadows, and Start. It returns the id of a sweep it started."""

import hashlib

import streamlit as st

from dpcore import claims, limits
from dpcore.budgets import charged
from dpcore.errors import DPError
from dpcore.jobs import executors
from dpcore.sweep import budget as sweep_budget
from dpcore.sweep import runs as sweep_runs
from dpcore.sweep.config import TABLE_DEFAULTS, SweepConfig, canaries_for, for_upload, upload_train_rows
from dpcore.training import bounds
from dpcore.training.config import DATASET_NAMES, MODEL_NAMES
from dpcore.training.data import upload_columns
from pages.ui import identity
from pages.ui import upload as upload_ui
from pages.ui.common import clicked, guarded, submit_once

D = SweepConfig()
T = SweepConfig(**TABLE_DEFAULTS)
EPS_OPTIONS = [0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
# Short option and chip labels (they must fit at 1280 px and on a phone); the details are in the widgets' help.
DATASETS = {k: DATASET_NAMES[k] for k in ("digits", "breast_cancer", "medical")}  # the sweep's, demo first
SOURCES = {"builtin": "Built-in data", "csv": "Your CSV"}
DATASET_HELP = (
    "Digits: 8×8 images, 10 classes. Breast cancer: 30 features, binary. Synthetic medical: predict the diagnosis."
)
ATTACK_NAMES = {"threshold": "Confidence", "loss": "Loss (Yeom)", "lira": "LiRA", "rmia": "RMIA"}
ATTACK_HELP = (
    "Confidence: member if the model's confidence is above the median (the simplest attack). "
    "Loss (Yeom): member if the loss is below a threshold. LiRA: likelihood-ratio attack with shadow "
    "models (offline and online). RMIA (Zarifzadeh et al. 2024, offline): the model's confidence "
    "relative to the shadow models', strong with few of them."
)


def _settings(prefix: str, d: SweepConfig, models: list[str]) -> dict:
    """The grid, seeds, epochs, attacks, shadows and rows: ``prefix`` keeps the demo's and an upload's apart (each
    with its own defaults)."""
    c1, c2, c3 = st.columns([2, 1, 1])
    model = c1.selectbox("Model", models, key=f"{prefix}_model", format_func=MODEL_NAMES.get)
    seeds = c2.number_input(
        "Models per ε",
        1,
        10,
        d.seeds,
        key=f"{prefix}_seeds",
        help="Models trained at each ε, each from its own seed (a different random start): "
        "their spread gives the error bars.",
    )
    epochs = c3.number_input("Epochs", 1, 500, d.epochs, key=f"{prefix}_epochs")
    c5, c6 = st.columns([3, 2])  # the multiselects get their own row: every chip stays visible
    # wrap: chips in a column would otherwise stay on one row and fade out at the edge (the last ε on a phone)
    epsilons = c5.multiselect(
        "ε grid", EPS_OPTIONS, default=list(d.epsilons), key=f"{prefix}_eps", format_func="{:g}".format, wrap=True
    )
    attacks = c6.multiselect(
        "Attacks",
        list(ATTACK_NAMES),
        default=list(d.attacks),
        format_func=ATTACK_NAMES.get,
        key=f"{prefix}_attacks",
        help=ATTACK_HELP,
        wrap=True,
    )
    c7, c8 = st.columns(2)
    shadows = c7.number_input(
        "Shadow models",
        2,
        64,
        d.shadows,
        key=f"{prefix}_shadows",
        help="LiRA's and RMIA's shadow (reference) models: copies the attacker trains on random "
        "halves of the member + non-member pool, to learn what a member's score looks like.",
    )
    train_size = c8.number_input(
        "Training rows",
        0,
        limits.UPLOAD_MAX_ROWS,
        d.train_size or 0,
        key=f"{prefix}_train_size",
        help="0 = every training row. Fewer rows: faster, and DP costs more accuracy.",
    )
    return {
        "model": model,
        "seeds": int(seeds),
        "epochs": int(epochs),
        "epsilons": tuple(epsilons),
        "attacks": tuple(attacks),
        "shadows": int(shadows),
        "train_size": int(train_size) or None,
    }


@st.cache_data(max_entries=16, show_spinner=False)
def _train_rows(dataset: str, train_size: int | None, tag: str | None, _data: bytes | None) -> int | None:
    """Training rows of one point (an upload's by its digest ``tag``), or None where the settings are refused (Start
    then says why)."""
    try:
        if _data is not None:
            return upload_train_rows(_data, train_size=train_size)
        target = "diagnosis" if dataset == "medical" else None
        return SweepConfig(dataset=dataset, target=target, train_size=train_size).n_rows()
    except DPError:
        return None


def canary_words(asked: int, n_train: int | None) -> str:
    """The canaries the sweep will plant (the count its validated config keeps), and why when it is fewer."""
    if n_train is None:
        return f"up to {asked} canaries (at most a quarter of the training rows)"
    used = canaries_for(asked, n_train)
    if used == asked:
        return f"{used} canaries"
    if used == 0:
        return f"no canaries ({n_train:,} training rows are too few: no canary audit)"
    return f"{used} canaries (at most a quarter of the {n_train:,} training rows)"


def form(caller, expanded: bool) -> str | None:
    """Draw the form (in an expander, open when ``expanded``); return the id of a sweep this click started for
    ``caller`` (this session, as the job store sees it), once per click."""
    with st.expander("New sweep", expanded=expanded, icon=":material/add_chart:"):
        source = st.radio(
            "Data",
            list(SOURCES),
            format_func=SOURCES.get,
            key="pu_source",
            horizontal=True,
            help="Your CSV: a table with a label column, validated in memory and stored only while its "
            "sweep's jobs need it.",
        )
        up_bytes = up_name = target = cols = b = None
        if source == "builtin":
            dataset = st.selectbox(
                "Dataset", list(DATASETS), format_func=DATASETS.get, key="pu_dataset", help=DATASET_HELP
            )
            s = _settings("pu", D, ["mlp", "logreg"])
        else:
            up = st.file_uploader(
                "CSV file",
                type=["csv"],
                key="pu_csv",
                help=f"At most {limits.upload_size()} and {limits.UPLOAD_MAX_ROWS:,} rows.",
            )
            if up is not None and guarded(upload_columns, up.getvalue()):
                up_bytes, up_name = up.getvalue(), up.name
                names = guarded(upload_columns, up_bytes)
                target = st.selectbox(
                    "Target column (label to predict)", names, index=len(names) - 1, key="pu_csv_target"
                )
                cols, b = upload_ui.editor(up_bytes, target, "pu_bounds")
            s = _settings("pu_up", T, ["mlp", "logreg"])
        b1, b2 = st.columns([1, 3], vertical_alignment="center")
        start = clicked(
            "pu_start", b1.button("Start sweep", type="primary", key="pu_start", icon=":material/play_arrow:")
        )
        run_on = "local"  # the choice appears only when a Ray cluster address is configured
        if "ray" in executors.available_executors():
            run_on = b2.radio(
                "Run on",
                ["local", "ray"],
                horizontal=True,
                key="pu_executor",
                format_func={"local": "Worker processes here", "ray": "Ray cluster"}.get,
                help=f"Ray: {executors.RAY_ADDRESS_ENV} = {executors.ray_address()}; one Ray task per "
                "model, results stored here.",
            )
        d = D if source == "builtin" else T
        if source == "builtin":
            n_train = _train_rows(dataset, s["train_size"], None, None)
        elif up_bytes is not None:
            n_train = _train_rows("upload", s["train_size"], hashlib.sha256(up_bytes).hexdigest(), up_bytes)
        else:
            n_train = None  # no file yet
        st.caption(
            f"Models train as background jobs in worker processes (parallel), baselines first; closing the tab "
            f"loses nothing. Batch {d.batch_size}, learning rate {d.lr}, clip {d.clip}, δ = {claims.delta(d.delta)} "
            f"(add/remove one record), accountant PRV (tight), {canary_words(d.canaries, n_train)} (records with "
            "public random inputs and random labels, each in training by a secret fair coin); the non-private "
            f"baselines train {d.baseline_scale:g}× the epochs from a decaying learning rate (their best accuracy). "
            "Sampling and noise come from a secure source and are never stored. Your sweeps are yours: only this "
            "browser session (and an admin) sees them; finished runs of the default demo are shared with everyone. "
            f"One click trains at most {limits.SWEEP_MAX_TRAININGS:,} models."
        )
        if not start:
            return None
        if source == "builtin":
            cfg = guarded(
                lambda: SweepConfig(
                    dataset=dataset,
                    target="diagnosis" if dataset == "medical" else None,
                    hidden=D.hidden if s["model"] == "mlp" else None,
                    **s,
                ).validate()
            )
        else:
            cfg = _upload_config(up_bytes, up_name, target, cols, b, s)
        # the gate: rows that are a registered dataset's are charged (its DP points composed) before any point runs
        adm = guarded(sweep_budget.admit, identity.current(), cfg) if cfg is not None else None
        if adm is None:
            upload_ui.release()  # a refused sweep keeps nothing on disk
            return None
        ex = guarded(executors.make_executor, run_on)
        # once per click: a double click starts one sweep (the store refuses the repeated key)
        sid, repeated = (
            submit_once("pu_start", sweep_runs.start_sweep, cfg, owner=caller.owner, executor=ex)
            if ex is not None
            else (None, False)
        )
        if not sid or repeated:
            adm.refund("the sweep was not started (refused, or a repeated click)")
        if sid and not repeated and adm.tickets:
            jobs = guarded(sweep_budget.point_jobs, cfg, guarded(sweep_runs.load, sid, caller=caller) or {})
            if jobs is None or guarded(charged.tie, adm, jobs) is None:
                guarded(sweep_runs.cancel, sid, caller=caller)  # its charge could not be tied: it must not run
                return None
        if not sid:
            upload_ui.release()  # nothing queued: nothing kept
        elif not repeated:
            st.toast(f"Sweep started: {len(cfg.point_params())} models in the background")
            if adm.charged:
                st.caption(f"Charged to {', '.join(map(repr, adm.datasets))}: ε = {adm.charge.epsilon:.3g} in all.")
        return sid


def _upload_config(data, name, target, cols, b, s):
    """An upload's sweep config, or None after an error shown on the page (nothing stays stored then)."""
    if data is None:
        st.error("Upload a CSV file first (or choose the built-in data).")
        return None
    if b is None or guarded(bounds.require_all, cols, b) is None:
        return None  # every column needs bounds, or the labelled choice to learn them: said above
    path = upload_ui.store(data)
    if path is None:
        return None
    return guarded(
        for_upload,
        path,
        target,
        bounds=b,
        upload_name=name,
        **{**s, "hidden": T.hidden if s["model"] == "mlp" else None},
    )
