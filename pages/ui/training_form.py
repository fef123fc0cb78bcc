"""The training page's form state: the datasets, models and hyper-parameters it offers (each dataset's recommended
model and settings pre-filled by callbacks), and :func:`take`, which puts a run's settings into the form so that the
form and the run shown below it agree. pages/training.py draws the widgets."""

import streamlit as st

from dpcore.training.config import DATASET_NAMES, MEDICAL_TARGETS, recommended

# Option labels short enough for a third of the form at 1280 px; the details are in the widgets' help.
DATASETS = {**DATASET_NAMES, "csv": "Upload a CSV"}  # the option says what to do; elsewhere "Uploaded CSV"
DATASET_HELP = (
    "Breast cancer: 569 rows, 30 features, binary. Synthetic medical: a 10,000-row extract. "
    "Digits: 8×8 images, 10 classes. Upload a CSV: your own table. MNIST: from the server's data "
    "folder (.npz)."
)
OPTIMIZER_NAMES = {"sgd": "SGD", "adam": "Adam"}  # shown; the stored values stay "sgd" / "adam"
MODEL_HELP = (
    "MLP: a small neural network; CNN: a small neural network for images. diffprivlib models are "
    "trained with pure ε (δ = 0): logistic regression by objective perturbation (noise added to what "
    "training minimises), Gaussian naive Bayes (GaussianNB) with noisy statistics. The others train "
    "with DP-SGD (Opacus)."
)


def models_for(kind: str) -> list[str]:
    if kind in ("digits", "mnist"):
        return ["cnn", "logreg", "mlp"] + (["diffprivlib_logreg", "diffprivlib_nb"] if kind == "digits" else [])
    return ["logreg", "mlp", "diffprivlib_logreg", "diffprivlib_nb"]


def on_dataset() -> None:
    """A new dataset: its first (recommended) model and that pair's hyper-parameters."""
    st.session_state["tr_model"] = models_for(st.session_state.get("tr_dataset", "breast_cancer"))[0]
    apply_recommended()


HYPER = ("epochs", "batch_size", "lr", "clip", "optimizer")  # pre-filled per dataset and model


def apply_recommended() -> None:
    """Pre-fill the hyper-parameters that work for the chosen dataset and model."""
    kind = st.session_state.get("tr_dataset", "breast_cancer")
    rec = recommended(kind, st.session_state["tr_model"])
    for key in HYPER:
        st.session_state[f"tr_{key}"] = rec[key]


def take(params: dict) -> None:
    """The form takes a run's settings, so the form and the run shown below it agree (a link, the run picker)."""
    ds = str(params.get("dataset") or "")
    kind = ds.split(":", 1)[0]
    kind = "csv" if kind in ("csv", "upload") else kind
    if kind not in DATASETS:
        return
    st.session_state["tr_dataset"] = kind
    if kind == "mnist":
        st.session_state["tr_mnist_path"] = ds.split(":", 1)[1] if ":" in ds else ""
    if params.get("model") in models_for(kind):
        st.session_state["tr_model"] = params["model"]
    if kind == "medical" and params.get("target") in MEDICAL_TARGETS:
        st.session_state["tr_target"] = params["target"]
    if params.get("epsilon") is not None:
        st.session_state["tr_privacy_mode"], st.session_state["tr_eps"] = "target ε", float(params["epsilon"])
    elif params.get("noise_multiplier") is not None:
        st.session_state["tr_privacy_mode"] = "noise multiplier σ"
        st.session_state["tr_sigma"] = float(params["noise_multiplier"])
    for k in HYPER:
        if params.get(k) is not None:
            st.session_state[f"tr_{k}"] = params[k]
    for k, cast in (("delta", float), ("seed", int)):
        if params.get(k) is not None:
            st.session_state[f"tr_{k}"] = cast(params[k])
    if params.get("accountant") in ("prv", "rdp"):
        st.session_state["tr_accountant"] = params["accountant"]
    st.session_state["tr_train_size"] = int(params.get("train_size") or 0)
