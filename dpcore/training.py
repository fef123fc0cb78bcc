"""Model training: DP-SGD with Opacus and the non-private baseline with the same model, split and epochs.

Entry points:

* :class:`TrainConfig` — every knob of a run (frozen; ``validate()`` raises :class:`DPError`).
* :func:`load_split` — features/labels, preprocessed with *public* bounds only.
* :func:`train` — fit one model; returns a :class:`TrainResult` (metrics, model, split, predict_proba).
* :func:`run_job` — the background-job entry point (job target ``"train"``: ``store.submit("train", params)``).

DP-SGD runs through Opacus's ``PrivacyEngine`` with Poisson sampling. The reported epsilon is the
accountant's value for the run's own (noise multiplier, sample rate, steps actually taken).

Randomness: the seed fixes the data split and the initial weights only. Poisson sampling and gradient noise
of every DP run (fused engine, Opacus modes, diffprivlib) come from generators seeded with 64 bits from
:mod:`secrets` that are never stored or shown, so nobody can re-run training on D and D minus one row and
compare. ``reproducible_noise=True`` (tests, teaching) seeds them from the seed instead; such a run is
labelled :data:`REPRODUCIBLE_LABEL` everywhere it is shown.
Metrics on the training rows (loss, train accuracy) are *not* DP and are labelled as such.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import secrets
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import accounting, datasets
from .errors import DPError
from .serialize import dumps
from .validation import _as_float as _float
from .validation import check_delta, check_epsilon, check_positive_int

MODELS = ("logreg", "mlp", "cnn", "diffprivlib_logreg", "diffprivlib_nb")
TORCH_MODELS = ("logreg", "mlp", "cnn")
OPTIMIZERS = ("sgd", "adam")
BUILTIN_DATASETS = ("medical", "breast_cancer", "digits")
MEDICAL_TARGETS = ("has_rare_disease", "diagnosis")
GRAD_SAMPLE_MODES = ("auto", "fused", "hooks", "ghost", "ew", "functorch")
#: Fastest correct per-sample-gradient mode per model, measured with bench/dpsgd_overhead.py on CPU.
#: "fused" (ours, Linear/ReLU nets only): per-sample norms from the ghost-norm identity and one matmul
#: per layer for the clipped sum, inside Opacus's Poisson DPDataLoader and Opacus's accountant;
#: tested equal to Opacus's own clipped, noised gradient. The others are Opacus's modes.
BEST_GRAD_SAMPLE_MODE = {"logreg": "fused", "mlp": "fused", "cnn": "ew"}
MEDICAL_ROWS = 10_000
MEDICAL_DATA_SEED = 0
#: Expected range of test accuracy etc.: labels used in the UI / JSON.
NOT_DP_NOTE = "computed on the private training rows without DP: for diagnosis only, not a DP release"
#: The label of every run (and sweep point) whose sampling and noise were drawn from the public seed.
REPRODUCIBLE_LABEL = "reproducible noise: not a DP release"
#: Model-size limits (checked before any job exists): hidden units of the MLP, parameters of any model.
MAX_HIDDEN = 4096
MAX_PARAMS = 2_000_000


#: Starting points per (dataset, model) that worked in bench/utility.py; the page pre-fills them.
RECOMMENDED = {
    ("breast_cancer", "logreg"): dict(epochs=10, batch_size=64, lr=0.1, optimizer="adam", clip=1.0),
    ("breast_cancer", "mlp"): dict(epochs=10, batch_size=64, lr=0.05, optimizer="adam", clip=1.0),
    ("medical", "logreg"): dict(epochs=5, batch_size=256, lr=0.05, optimizer="adam", clip=1.0),
    ("medical", "mlp"): dict(epochs=5, batch_size=256, lr=0.02, optimizer="adam", clip=1.0),
    ("digits", "logreg"): dict(epochs=15, batch_size=64, lr=0.05, optimizer="adam", clip=1.0),
    ("digits", "mlp"): dict(epochs=15, batch_size=64, lr=0.02, optimizer="adam", clip=1.0),
    ("digits", "cnn"): dict(epochs=15, batch_size=128, lr=0.05, optimizer="adam", clip=1.0),
}


def recommended(dataset: str, model: str) -> dict:
    """Hyper-parameters that are a sensible start for this dataset and model."""
    kind = str(dataset).split(":", 1)[0]
    return dict(RECOMMENDED.get((kind, model), dict(epochs=10, batch_size=64, lr=0.05, optimizer="adam", clip=1.0)))


class TrainingCancelled(Exception):
    """The run was stopped by ``should_stop`` (a cancelled job)."""


# --- configuration --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainConfig:
    """One training run. ``epsilon=None`` and ``noise_multiplier=None``: non-private baseline.
    ``epsilon`` set: noise calibrated for the planned steps. ``noise_multiplier`` set: epsilon computed."""

    dataset: str = "breast_cancer"
    target: str | None = None
    model: str = "logreg"
    epsilon: float | None = 1.0
    delta: float = 1e-5
    noise_multiplier: float | None = None
    epochs: int = 10
    batch_size: int = 64
    lr: float = 0.1
    clip: float = 1.0
    optimizer: str = "adam"
    accountant: str = "prv"
    seed: int = 0
    train_size: int | None = None
    test_size: float = 0.2
    hidden: int = 32
    grad_sample_mode: str = "auto"
    device: str = "auto"  # auto (CUDA GPU when present, else CPU) / cpu / cuda — see dpcore.jobs.executors
    #: True: Poisson sampling and noise drawn from ``seed`` (tests, teaching) -- the run is NOT a DP release.
    reproducible_noise: bool = False

    # -- derived
    @property
    def private(self) -> bool:
        return self.epsilon is not None or self.noise_multiplier is not None

    @property
    def dataset_kind(self) -> str:
        return self.dataset.split(":", 1)[0]

    @property
    def dataset_path(self) -> str | None:
        return self.dataset.split(":", 1)[1] if ":" in self.dataset else None

    def baseline(self) -> "TrainConfig":
        """The non-private baseline: same model, data split, epochs and optimiser, no noise/clipping."""
        return dataclasses.replace(self, epsilon=None, noise_multiplier=None)

    def validate(self) -> "TrainConfig":
        kind = self.dataset_kind
        if kind not in BUILTIN_DATASETS + ("csv", "mnist"):
            raise DPError(f"unknown dataset {self.dataset!r}; use medical, breast_cancer, digits, csv:PATH or mnist:PATH")
        if kind in ("csv", "mnist") and not self.dataset_path:
            raise DPError(f"dataset {kind} needs a file path: {kind}:PATH")
        if kind in BUILTIN_DATASETS and ":" in self.dataset:
            raise DPError(f"dataset {kind} takes no path; use just {kind!r}")
        if kind == "medical" and self.target not in (None,) + MEDICAL_TARGETS:
            raise DPError(f"unknown target {self.target!r} for medical; use has_rare_disease or diagnosis")
        if kind == "csv" and not self.target:
            raise DPError("a CSV dataset needs --target COLUMN (the label to predict)")
        if self.model not in MODELS:
            raise DPError(f"unknown model {self.model!r}; use one of {', '.join(MODELS)}")
        if self.model == "cnn" and kind not in ("digits", "mnist"):
            raise DPError("the cnn model needs image data: use dataset digits or mnist:PATH (or model logreg/mlp)")
        if self.model.startswith("diffprivlib") and kind in ("mnist",):
            raise DPError("diffprivlib models are for tabular data; use logreg/mlp/cnn for mnist")
        if self.epsilon is not None:
            check_epsilon(self.epsilon)
        check_delta(self.delta)
        if self.noise_multiplier is not None:
            if self.epsilon is not None:
                raise DPError("give either a target epsilon or a noise multiplier, not both")
            nm = _float(self.noise_multiplier, "noise multiplier")
            if not (0 < nm < 1e4):
                raise DPError(f"noise multiplier must be > 0, got {self.noise_multiplier!r}; try 0.5–5")
        if self.model.startswith("diffprivlib") and self.noise_multiplier is not None:
            raise DPError("diffprivlib models take a target epsilon, not a noise multiplier")
        check_positive_int(self.epochs, "epochs")
        if self.epochs > 10_000:
            raise DPError("epochs must be at most 10000")
        check_positive_int(self.batch_size, "batch size")
        check_positive_int(self.hidden, "hidden units")
        if self.hidden > MAX_HIDDEN:
            raise DPError(f"hidden units must be at most {MAX_HIDDEN:,} (models are limited to "
                          f"{MAX_PARAMS:,} parameters), got {self.hidden:,}; try 32–512")
        if not isinstance(self.reproducible_noise, (bool, np.bool_)):
            raise DPError(f"reproducible_noise must be true or false, got {self.reproducible_noise!r}")
        for name, v in (("learning rate", self.lr), ("clip (max grad norm)", self.clip)):
            f = _float(v, name)
            if not (f > 0 and math.isfinite(f)):
                raise DPError(f"{name} must be > 0, got {v!r}")
        if self.optimizer not in OPTIMIZERS:
            raise DPError(f"unknown optimizer {self.optimizer!r}; use sgd or adam")
        accounting.check_accountant(self.accountant)
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise DPError(f"seed must be a whole number >= 0, got {self.seed!r}")
        if self.train_size is not None:
            check_positive_int(self.train_size, "train size")
        ts = _float(self.test_size, "test size")
        if not (0 < ts < 1):
            raise DPError(f"test size is a fraction of the rows in (0, 1), got {self.test_size!r}; try 0.2")
        if self.grad_sample_mode not in GRAD_SAMPLE_MODES:
            raise DPError(f"unknown grad_sample_mode {self.grad_sample_mode!r}; use {', '.join(GRAD_SAMPLE_MODES)}")
        from .jobs.executors import check_device

        check_device(self.device)
        if self.device == "cuda" and self.model.startswith("diffprivlib"):
            raise DPError("diffprivlib models run on the CPU only; use --device auto or cpu with them")
        return self

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, params: dict) -> "TrainConfig":
        if isinstance(params, TrainConfig):
            return params.validate()
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(params) - names)
        if unknown:
            raise DPError(f"unknown training parameter(s): {', '.join(unknown)}; known: {', '.join(sorted(names))}")
        p = dict(params)
        if isinstance(p.get("epsilon"), str) and p["epsilon"].strip().lower() in ("none", "", "inf", "nonprivate"):
            p["epsilon"] = None
        for k in ("epsilon", "delta", "noise_multiplier", "lr", "clip", "test_size"):
            if p.get(k) is not None:
                p[k] = _float(p[k], k.replace("_", " "))
        if isinstance(p.get("reproducible_noise"), str):
            p["reproducible_noise"] = p["reproducible_noise"].strip().lower() in ("1", "true", "yes")
        for k in ("epochs", "batch_size", "seed", "train_size", "hidden"):
            if p.get(k) is not None and not isinstance(p[k], bool):
                try:
                    if float(p[k]) == int(float(p[k])):
                        p[k] = int(float(p[k]))
                except (TypeError, ValueError):
                    pass
        return cls(**p).validate()


# --- data -----------------------------------------------------------------------------------------


@dataclass
class Split:
    """Preprocessed train/test arrays. ``image_shape`` is (C, H, W) for image data, else None."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    feature_names: list[str]
    class_names: list[str]
    bounds_note: str
    leaks: list[str] = field(default_factory=list)
    image_shape: tuple[int, int, int] | None = None

    @property
    def n_train(self) -> int:
        return int(len(self.y_train))

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])


def _scale(X: np.ndarray, lower, upper) -> np.ndarray:
    """Map to [-1, 1] with public bounds (clipping values outside them)."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    Z = (np.clip(X, lower, upper) - lower) / (upper - lower)
    return (2 * Z - 1).astype(np.float32)


def _one_hot(values, categories) -> np.ndarray:
    values = np.asarray(values, dtype=object)
    return np.stack([(values == c) for c in categories], axis=1).astype(np.float32)


def _medical_arrays(target: str):
    df = datasets.medical(MEDICAL_ROWS, MEDICAL_DATA_SEED)
    target = target or "has_rare_disease"
    parts, names = [], []
    num = ["age", "salary"]  # birth_year is age in disguise
    lo = [datasets.PUBLIC_BOUNDS[c][0] for c in num]
    hi = [datasets.PUBLIC_BOUNDS[c][1] for c in num]
    parts.append(_scale(df[num].to_numpy(float), lo, hi))
    names += num
    cats = {"sex": datasets.SEXES, "zip_code": datasets.ZIP_CODES, "ethnicity": datasets.ETHNICITIES}
    if target != "diagnosis":
        cats["diagnosis"] = datasets.DIAGNOSES
    for col, values in cats.items():
        parts.append(_one_hot(df[col].astype(object).to_numpy(), list(values)))
        names += [f"{col}={v}" for v in values]
    if target != "has_rare_disease":
        parts.append(df[["has_rare_disease"]].to_numpy(np.float32))
        names.append("has_rare_disease")
    X = np.concatenate(parts, axis=1)
    if target == "has_rare_disease":
        y, classes = df["has_rare_disease"].to_numpy().astype(np.int64), ["no", "yes"]
    else:
        classes = list(datasets.DIAGNOSES)
        order = {c: i for i, c in enumerate(classes)}
        y = np.array([order[v] for v in df["diagnosis"].astype(object)], dtype=np.int64)
    note = "numeric features scaled with public bounds (age 18–90, salary 0–250k); categories are public code lists"
    return X, y, names, classes, note, [], None


def _csv_arrays(path: str, target: str):
    df = datasets.read_csv(path)
    datasets.require_columns(df, [target], "target column")
    y_raw = df[target]
    if y_raw.isna().any():
        raise DPError(f"target column {target!r} has missing values; drop those rows first")
    classes = sorted(map(str, pd_unique(y_raw)))
    if len(classes) < 2:
        raise DPError(f"target column {target!r} has a single value; a classifier needs at least 2 classes")
    if len(classes) > 50:
        raise DPError(f"target column {target!r} has {len(classes)} distinct values; choose a categorical label (≤ 50 classes)")
    order = {c: i for i, c in enumerate(classes)}
    y = np.array([order[str(v)] for v in y_raw], dtype=np.int64)
    feats = df.drop(columns=[target])
    import pandas as pd

    numeric = [c for c in feats.columns
               if pd.api.types.is_numeric_dtype(feats[c].dtype) or pd.api.types.is_bool_dtype(feats[c].dtype)]
    if not numeric:
        raise DPError(f"the CSV has no numeric feature columns besides the target {target!r}; "
                      "a model needs at least one numeric column")
    other = [c for c in feats.columns if c not in numeric]
    categorical = [c for c in other if feats[c].nunique(dropna=True) <= 20]
    dropped = [c for c in other if c not in categorical]
    parts, names, leaks = [], [], []
    Xn = feats[numeric].astype(float).to_numpy()
    lower, upper, data_bounds = [], [], []
    for j, c in enumerate(numeric):
        if c in datasets.PUBLIC_BOUNDS:
            lo, hi = datasets.PUBLIC_BOUNDS[c]
        else:
            col = Xn[:, j][~np.isnan(Xn[:, j])]
            lo, hi = (float(col.min()), float(col.max())) if len(col) else (0.0, 1.0)
            if hi <= lo:
                hi = lo + 1.0
            data_bounds.append(c)
        lower.append(lo)
        upper.append(hi)
    Xn = np.where(np.isnan(Xn), np.asarray(lower), Xn)
    parts.append(_scale(Xn, lower, upper))
    names += numeric
    if data_bounds:
        leaks.append("scaling of " + ", ".join(map(str, data_bounds)) + " uses the min/max of the uploaded rows "
                     "(not public bounds): that leaks a little about the extreme rows and is not covered by ε")
    for c in categorical:
        cats = sorted(map(str, pd_unique(feats[c].dropna())))
        parts.append(_one_hot(feats[c].astype(object).map(lambda v: str(v) if v == v else None).to_numpy(), cats))
        names += [f"{c}={v}" for v in cats]
    if categorical:
        leaks.append("one-hot categories of " + ", ".join(map(str, categorical)) + " are read from the uploaded rows")
    note = "numeric features scaled to [-1, 1]" + (" with public bounds" if not data_bounds else "")
    if dropped:
        note += f"; dropped text columns with many values: {', '.join(map(str, dropped))}"
    return np.concatenate(parts, axis=1), y, names, classes, note, leaks, None


def pd_unique(series):
    import pandas as pd

    return pd.unique(pd.Series(series).astype(object))


#: Local data files (MNIST .npz) are read only from this folder under $DP_EXPLORER_HOME.
DATA_DIR_NAME = "data"
MNIST_NOT_USABLE = ("MNIST file not usable: put a keras-layout mnist.npz (x_train, y_train, x_test, y_test) in "
                    "the data folder under DP_EXPLORER_HOME and give its file name, e.g. mnist:mnist.npz")


def data_dir() -> Path:
    """``$DP_EXPLORER_HOME/data``: the only folder local data files (MNIST) are read from."""
    from . import storage

    return storage.subdir(DATA_DIR_NAME)


def _data_file(path: str) -> Path:
    """A file inside :func:`data_dir` (a bare name or a path in it), else one message that never says whether
    a path exists elsewhere on the server."""
    root = data_dir().resolve()
    p = Path(str(path)).expanduser()
    p = (p if p.is_absolute() else root / p).resolve()
    if p.parent != root and root not in p.parents or not p.is_file():
        raise DPError(MNIST_NOT_USABLE)
    return p


def _mnist_arrays(path: str):
    p = _data_file(path)
    try:
        with np.load(p, allow_pickle=False) as z:
            missing = [k for k in ("x_train", "y_train", "x_test", "y_test") if k not in z.files]
            if missing:
                raise DPError(f"{p.name} lacks arrays {', '.join(missing)}; expected the keras mnist.npz layout")
            arrs = {k: z[k] for k in ("x_train", "y_train", "x_test", "y_test")}
    except DPError:
        raise
    except Exception as exc:  # noqa: BLE001 - a corrupt/foreign file
        raise DPError(f"could not read {p.name} as .npz ({type(exc).__name__}); expected keras mnist.npz") from None
    xs = []
    for k in ("x_train", "x_test"):
        x = arrs[k]
        if x.ndim != 3 or x.shape[1:] != (28, 28):
            raise DPError(f"{k} must have shape (n, 28, 28), got {x.shape}")
        xs.append((x.astype(np.float32) / 255.0).reshape(len(x), -1))
    ys = [arrs[k].astype(np.int64).reshape(-1) for k in ("y_train", "y_test")]
    if len(ys[0]) != len(xs[0]) or len(ys[1]) != len(xs[1]):
        raise DPError("x and y arrays in the .npz have different lengths")
    if ys[0].min() < 0 or ys[0].max() > 9:
        raise DPError("MNIST labels must be digits 0–9")
    return xs, ys


def load_split(cfg: TrainConfig) -> Split:
    """Load and preprocess the data for ``cfg`` (seeded split; scaling with public bounds only)."""
    cfg.validate()
    kind, image_shape, leaks = cfg.dataset_kind, None, []
    if kind == "mnist":
        (X_tr, X_te), (y_tr, y_te) = _mnist_arrays(cfg.dataset_path)
        names = [f"pixel_{i}" for i in range(X_tr.shape[1])]
        classes = [str(i) for i in range(10)]
        note = "pixels divided by 255 (their public range); the file's own train/test split"
        image_shape = (1, 28, 28)
    else:
        if kind == "medical":
            X, y, names, classes, note, leaks, image_shape = _medical_arrays(cfg.target)
        elif kind == "csv":
            X, y, names, classes, note, leaks, image_shape = _csv_arrays(cfg.dataset_path, cfg.target)
        else:
            if cfg.target not in (None, "", "target"):
                raise DPError(f"unknown target {cfg.target!r} for {kind}; it has a single label (leave target empty)")
            ds = datasets.load_breast_cancer() if kind == "breast_cancer" else datasets.load_digits()
            if kind == "digits":
                X = (ds.X / 16.0).astype(np.float32)  # public pixel range 0–16 -> [0, 1]
                image_shape = (1, 8, 8)
            else:  # skewed, non-negative measurements: a fixed log1p (public, data-independent), then bounds
                X = _scale(np.log1p(np.clip(ds.X, ds.lower, ds.upper)), np.log1p(ds.lower), np.log1p(ds.upper))
            y, names, classes, note = ds.y, ds.feature_names, ds.target_names, ds.bounds_note
            if kind == "breast_cancer":
                note += "; log1p then scaled to [-1, 1] with those bounds"
        rng = np.random.default_rng(cfg.seed)
        perm = rng.permutation(len(y))
        n_test = max(1, int(round(len(y) * cfg.test_size)))
        if len(y) - n_test < 2:
            raise DPError(f"only {len(y)} rows: too few to split into train and test")
        te, tr = perm[:n_test], perm[n_test:]
        X_tr, y_tr, X_te, y_te = X[tr], y[tr], X[te], y[te]
    if cfg.train_size is not None:
        if cfg.train_size > len(y_tr):
            raise DPError(f"train size {cfg.train_size} is larger than the {len(y_tr)} training rows available")
        sub = np.random.default_rng([cfg.seed, 1]).permutation(len(y_tr))[: cfg.train_size]
        X_tr, y_tr = X_tr[np.sort(sub)], y_tr[np.sort(sub)]
    n_classes = max(len(classes), int(max(y_tr.max(initial=0), y_te.max(initial=0))) + 1)
    return Split(np.ascontiguousarray(X_tr, np.float32), np.asarray(y_tr, np.int64),
                 np.ascontiguousarray(X_te, np.float32), np.asarray(y_te, np.int64),
                 n_classes, list(map(str, names)), list(map(str, classes)), note, list(leaks), image_shape)


# --- models ---------------------------------------------------------------------------------------


def _append_one_class():
    import torch
    import torch.nn as nn

    class AppendOne(nn.Module):
        """Adds a constant-1 input so that a bias-free Linear layer carries its bias in the weight.
        Same model class as Linear(bias=True), but one parameter tensor per layer instead of two:
        DP-SGD's per-parameter work (per-sample grads, norms, noise) halves."""

        def forward(self, x):
            return torch.nn.functional.pad(x, (0, 1), value=1.0)

    return AppendOne


def build_model(cfg: TrainConfig, split: Split):
    import torch.nn as nn

    d, c = split.n_features, split.n_classes
    one = _append_one_class()
    if cfg.model == "logreg":
        return nn.Sequential(one(), nn.Linear(d + 1, c, bias=False))
    if cfg.model == "mlp":
        return nn.Sequential(one(), nn.Linear(d + 1, cfg.hidden, bias=False), nn.ReLU(),
                             one(), nn.Linear(cfg.hidden + 1, c, bias=False))
    if cfg.model == "cnn":
        if split.image_shape is None:
            raise DPError("the cnn model needs image data: use dataset digits or mnist:PATH")
        ch, h, w = split.image_shape
        # tanh (bounded activations) trains markedly better than ReLU under DP-SGD's clipping and noise
        # (digits, ε = 1: ~0.82 vs ~0.66 test accuracy; Papernot et al. 2021, "tempered sigmoids")
        return nn.Sequential(
            nn.Unflatten(1, (ch, h, w)),
            nn.Conv2d(ch, 8, 3, padding=1), nn.Tanh(), nn.AvgPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.Tanh(), nn.AvgPool2d(2),
            nn.Flatten(), nn.Linear(16 * (h // 4) * (w // 4), c),
        )
    raise DPError(f"{cfg.model} is not a torch model")


def n_parameters(cfg: TrainConfig, split: Split) -> int:
    """Number of weights :func:`build_model` would create (without creating them)."""
    d, c = split.n_features, split.n_classes
    if cfg.model.startswith("diffprivlib"):
        return 2 * d * c + 2 * c
    if cfg.model == "logreg":
        return (d + 1) * c
    if cfg.model == "mlp":
        return (d + 1) * cfg.hidden + (cfg.hidden + 1) * c
    if split.image_shape is None:
        return 0
    ch, h, w = split.image_shape
    return (ch * 9 + 1) * 8 + (8 * 9 + 1) * 16 + (16 * (h // 4) * (w // 4) + 1) * c


def check_model_size(cfg: TrainConfig, split: Split) -> int:
    """Refuse a model above :data:`MAX_PARAMS` weights before any memory is spent on it."""
    n = n_parameters(cfg, split)
    if n > MAX_PARAMS:
        raise DPError(f"the model would have {n:,} parameters; the limit is {MAX_PARAMS:,}. "
                      "Use fewer hidden units (e.g. 32–512) or fewer features")
    return n


def secure_seed() -> int:
    """64 bits from the operating system's CSPRNG, for a generator whose state is never stored."""
    return secrets.randbits(64)


def resolve_grad_sample_mode(cfg: TrainConfig) -> str:
    if cfg.grad_sample_mode != "auto":
        return cfg.grad_sample_mode
    return BEST_GRAD_SAMPLE_MODE.get(cfg.model, "hooks")


class FusedDPSGD:
    """DP-SGD for a ``Sequential`` of AppendOne / bias-free Linear / ReLU layers, in one pass.

    Per step: forward keeping each Linear layer's input ``a`` and output ``z``; one ``autograd.grad`` of
    the *summed* loss w.r.t. the outputs gives the per-sample backprops ``g`` (row i is sample i's).
    A Linear layer's per-sample gradient is ``g_i a_iᵀ``, so its squared norm is ``|g_i|²·|a_i|²``
    (exact, no per-sample gradient is materialised). Clip factors as Opacus:
    ``min(1, C / (‖grad_i‖ + 1e-6))`` over all layers (flat clipping); the clipped sum is ``(c·g)ᵀ a``;
    noise ``N(0, σ²C²)`` from the run's generator; division by Opacus's expected batch size.
    """

    def __init__(self, model, clip: float, noise_multiplier: float, expected_batch_size: int, generator):
        import torch.nn as nn

        self.layers = list(model)
        self.linears = [m for m in self.layers if isinstance(m, nn.Linear)]
        for m in self.layers:
            if not (isinstance(m, (nn.Linear, nn.ReLU)) or type(m).__name__ == "AppendOne"):
                raise DPError(f"fused DP-SGD supports Linear/ReLU models only, not {type(m).__name__}")
        if any(m.bias is not None for m in self.linears):
            raise DPError("fused DP-SGD needs bias-free Linear layers (the bias rides on an AppendOne input)")
        for a, b in zip(self.layers, self.layers[1:]):
            if isinstance(a, nn.Linear) and not isinstance(b, nn.ReLU) and b is not self.layers[-1]:
                raise DPError("fused DP-SGD expects Linear layers followed by ReLU (or the output)")
        if not isinstance(self.layers[-1], nn.Linear):
            raise DPError("fused DP-SGD expects the last layer to be Linear (logits)")
        self.plan = [("lin", m.weight) if isinstance(m, nn.Linear) else ("relu" if isinstance(m, nn.ReLU) else "one", None)
                     for m in self.layers]
        self.n_params = sum(m.weight.numel() for m in self.linears)
        self.clip, self.sigma, self.ebs, self.gen = float(clip), float(noise_multiplier), expected_batch_size, generator

    def backward(self, xb, yb):
        """Set ``p.grad`` of every Linear weight to the clipped, noised, averaged gradient; return the
        batch's mean loss (not DP: for the loss curve).

        The per-sample backprops are written out (softmax cross-entropy and ReLU have closed-form
        derivatives), so no autograd graph is built: ``dz_L = softmax(z_L) − onehot(y)``, and going
        down a Linear layer ``W`` (last column = bias) then a ReLU: ``dz = (dz_next · W[:, :-1]) ⊙ [z > 0]``.
        """
        import torch
        import torch.nn.functional as F

        with torch.no_grad():
            acts, pre, h = [], [], xb  # inputs of each Linear layer; inputs of each ReLU
            for kind, w in self.plan:
                if kind == "lin":
                    acts.append(h)
                    h = F.linear(h, w)
                elif kind == "relu":
                    pre.append(h)
                    h = F.relu(h)
                else:  # AppendOne
                    h = F.pad(h, (0, 1), value=1.0)
            n = len(yb)
            std = self.sigma * self.clip
            noise = torch.randn(self.n_params, generator=self.gen, device=self.gen.device) if std > 0 else None
            if n:
                logp = F.log_softmax(h, dim=1)
                loss = -logp.gather(1, yb[:, None]).sum()
                g = logp.exp_()
                g[torch.arange(n, device=g.device), yb] -= 1.0  # d(sum of per-sample losses)/d logits, row i = sample i
                backprops = [None] * len(self.linears)
                for i in range(len(self.linears) - 1, -1, -1):
                    backprops[i] = g
                    if i:
                        w = self.linears[i].weight
                        g = (g @ w[:, :-1]) * (pre[i - 1] > 0)
                norms_sq = None
                for g, a in zip(backprops, acts):  # |g_i a_iᵀ|² = |g_i|² |a_i|²
                    t = torch.linalg.vecdot(g, g) * torch.linalg.vecdot(a, a)
                    norms_sq = t if norms_sq is None else norms_sq + t
                factor = (self.clip / (norms_sq.sqrt() + 1e-6)).clamp_(max=1.0)  # Opacus's flat clipping
            else:
                loss = torch.zeros((), device=xb.device)
            offset = 0
            for i, lin in enumerate(self.linears):
                w = lin.weight
                k = w.numel()
                base = noise[offset:offset + k].view_as(w) if noise is not None else torch.zeros_like(w)
                offset += k
                if n:
                    # grad = (σC·z + Σ_i c_i g_i a_iᵀ) / expected batch size, in one fused op
                    w.grad = torch.addmm(base, (backprops[i] * factor[:, None]).T, acts[i],
                                         beta=std / self.ebs, alpha=1.0 / self.ebs)
                else:  # empty Poisson batch: the update is noise only
                    w.grad = base * (std / self.ebs)
        return loss / max(n, 1)


def _make_dataset(X, y):
    import torch
    from torch.utils.data import Dataset

    class ArrayDataset(Dataset):
        """Tensor dataset whose batches are gathered with one index op (``__getitems__``)."""

        def __init__(self, X, y):
            self.X, self.y = torch.from_numpy(X), torch.from_numpy(y)

        def __len__(self):
            return len(self.y)

        def __getitem__(self, i):
            return self.X[i], self.y[i]

        def __getitems__(self, idx):
            idx = torch.as_tensor(idx, dtype=torch.long)
            return [self.X[idx], self.y[idx]]

    return ArrayDataset(X, y)


def _batch_as_is(batch):
    return batch


# --- results --------------------------------------------------------------------------------------


@dataclass
class TrainResult:
    config: TrainConfig
    metrics: dict
    model: Any
    split: Split

    def predict_proba(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float32)
        if self.config.model.startswith("diffprivlib"):
            return np.asarray(self.model.predict_proba(X), dtype=np.float64)
        import torch

        self.model.eval()
        dev = next(self.model.parameters()).device
        with torch.no_grad():
            x = torch.from_numpy(np.ascontiguousarray(X)).to(dev)
            return torch.softmax(self.model(x), dim=1).double().cpu().numpy()

    def predict(self, X) -> np.ndarray:
        return self.predict_proba(X).argmax(axis=1)

    @property
    def weights_filename(self) -> str:
        return "model.json" if self.config.model.startswith("diffprivlib") else "model.pt"

    def state_dict_bytes(self) -> bytes:
        """Model weights: a torch ``state_dict`` (torch.save), or the fitted arrays of a diffprivlib
        estimator as JSON (coef_/intercept_ or theta_/var_/class_prior_)."""
        if self.config.model.startswith("diffprivlib"):
            attrs = ("classes_", "coef_", "intercept_", "theta_", "var_", "class_prior_", "class_count_")
            arrays = {a: np.asarray(getattr(self.model, a)).tolist() for a in attrs
                      if getattr(self.model, a, None) is not None}
            return json.dumps({"estimator": type(self.model).__name__, **arrays}).encode()
        import torch

        buf = io.BytesIO()
        torch.save(self.model.state_dict(), buf)
        return buf.getvalue()

    def metrics_json(self) -> bytes:
        return dumps(self.metrics).encode()


# --- training -------------------------------------------------------------------------------------


def plan(cfg: TrainConfig, n_train: int) -> dict:
    """Sample rate, steps and noise multiplier for a private run (noise calibrated if epsilon given)."""
    if cfg.batch_size > n_train:
        raise DPError(f"batch size {cfg.batch_size} is larger than the {n_train} training rows; "
                      f"use at most {n_train} (e.g. {max(1, n_train // 8)})")
    q = accounting.sample_rate_for(n_train, cfg.batch_size)
    steps = cfg.epochs * accounting.steps_per_epoch(q)
    out = {"sample_rate": q, "steps": steps, "steps_per_epoch": accounting.steps_per_epoch(q)}
    if cfg.epsilon is not None:
        t0 = time.perf_counter()
        sigma, eps = accounting.calibrate_noise(cfg.epsilon, cfg.delta, q, steps, cfg.accountant)
        out.update(noise_multiplier=sigma, planned_epsilon=eps, calibration_seconds=time.perf_counter() - t0)
    elif cfg.noise_multiplier is not None:
        out.update(noise_multiplier=float(cfg.noise_multiplier))
    return out


def _evaluate(model, X, y, crit=None):
    import torch

    model.eval()
    with torch.no_grad():
        logits = model(X)
        acc = float((logits.argmax(1) == y).float().mean()) if len(y) else float("nan")
        loss = float(torch.nn.functional.cross_entropy(logits, y)) if len(y) else float("nan")
    model.train()
    return acc, loss


def divergence(history, n_classes: int = 2) -> str | None:
    """A plain sentence if the run's training loss diverged — not finite, or ending far above the loss of a
    uniform guess, ln(classes) — else None. The loss is not DP: a diagnosis for the person who trains."""
    losses = [float(h["loss"]) for h in (history or []) if isinstance(h, dict) and h.get("loss") is not None]
    if not losses:
        return None
    if not all(math.isfinite(v) for v in losses):
        return ("the training loss diverged (it became infinite or not a number): the model is useless. "
                "Lower the learning rate (e.g. 10× smaller) or the clip C and train again")
    guess = math.log(max(int(n_classes), 2))
    if losses[-1] > 3 * guess:
        return (f"the training loss diverged: it ends at {losses[-1]:.3g} nats, far above the {guess:.2f} of a "
                "uniform guess. Lower the learning rate (e.g. 10× smaller) and train again")
    return None


def noise_fields(cfg: TrainConfig) -> dict:
    """Where a run's sampling and noise came from: the fields every result (JSON, page, sweep) carries."""
    out = {"reproducible_noise": bool(cfg.reproducible_noise),
           "dp_release": bool(cfg.private and not cfg.reproducible_noise),
           "noise_source": (None if not cfg.private else
                            "seeded from the public seed" if cfg.reproducible_noise else
                            "secure: secret seeds from the OS CSPRNG, never stored")}
    if cfg.reproducible_noise:
        out["release_label"] = REPRODUCIBLE_LABEL
    return out


def _delta_warnings(cfg: TrainConfig, n_train: int) -> list[str]:
    if cfg.private and cfg.delta >= 1.0 / n_train:
        return [f"δ = {cfg.delta:g} is not below 1/n = 1/{n_train} = {1 / n_train:.2g}: a mechanism that "
                "publishes one random row outright would satisfy this δ. Use δ ≤ 1/(10·n), e.g. 1e-5 or smaller."]
    return []


def train(cfg: TrainConfig, progress: Callable[..., None] | None = None,
          should_stop: Callable[[], bool] | None = None, split: Split | None = None) -> TrainResult:
    """Train one model. ``progress(**fields)`` is called every epoch and every few steps;
    ``should_stop()`` is checked every step (raises :class:`TrainingCancelled`)."""
    cfg = TrainConfig.from_dict(cfg.to_dict()) if isinstance(cfg, TrainConfig) else TrainConfig.from_dict(cfg)
    split = split if split is not None else load_split(cfg)
    check_model_size(cfg, split)
    if cfg.model.startswith("diffprivlib"):
        return _train_diffprivlib(cfg, split, progress)
    import torch

    progress = progress or (lambda **_: None)
    should_stop = should_stop or (lambda: False)
    t_start = time.perf_counter()
    torch.manual_seed(cfg.seed)
    n = split.n_train
    pl = plan(cfg, n) if cfg.private else {"sample_rate": min(1.0, cfg.batch_size / n),
                                           "steps": cfg.epochs * math.ceil(n / cfg.batch_size),
                                           "steps_per_epoch": math.ceil(n / cfg.batch_size)}
    if cfg.batch_size > n:
        raise DPError(f"batch size {cfg.batch_size} is larger than the {n} training rows; use at most {n}")
    warn = _delta_warnings(cfg, n)

    from .jobs.executors import resolve_device

    dev = torch.device(resolve_device(cfg.device))  # cuda asked without a GPU: a clear DPError
    model = build_model(cfg, split).to(dev)
    crit = torch.nn.CrossEntropyLoss()
    opt_cls = torch.optim.SGD if cfg.optimizer == "sgd" else torch.optim.Adam
    opt = opt_cls(model.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(cfg.seed)  # the baseline's shuffling: not a DP release, seeded
    # DP runs: Poisson sampling and noise from secret seeds that are never stored (see the module docstring)
    secure = cfg.private and not cfg.reproducible_noise
    sample_gen = torch.Generator().manual_seed(secure_seed() if secure else cfg.seed)
    noise_gen = torch.Generator(device=dev).manual_seed(secure_seed() if secure else cfg.seed + 7919)
    ds = _make_dataset(split.X_train, split.y_train)
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=cfg.batch_size, shuffle=True, generator=gen, collate_fn=_batch_as_is)
    mode = None
    accountant = None
    fused = None
    if cfg.private:
        mode = resolve_grad_sample_mode(cfg)
        if mode == "fused" and cfg.model == "cnn":
            raise DPError("grad_sample_mode fused is for logreg/mlp; use auto, ew or hooks for the cnn")
    if cfg.private and mode == "fused":
        from opacus.accountants import create_accountant
        from opacus.data_loader import DPDataLoader

        loader = DPDataLoader.from_data_loader(loader, generator=sample_gen)  # Poisson sampling
        q_actual = loader.sample_rate
        fused = FusedDPSGD(model, cfg.clip, pl["noise_multiplier"], int(len(ds) * q_actual), noise_gen)
        accountant = create_accountant(cfg.accountant)  # Opacus's accountant, stepped once per optimizer step
        if abs(q_actual - pl["sample_rate"]) > 1e-12:
            raise RuntimeError(f"sample rate mismatch: planned {pl['sample_rate']}, Opacus {q_actual}")
    elif cfg.private:
        from opacus import PrivacyEngine

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # secure RNG / functorch notices
            engine = PrivacyEngine(accountant=cfg.accountant)
            accountant = engine.accountant
            out = engine.make_private(module=model, optimizer=opt, criterion=crit, data_loader=loader,
                                      noise_multiplier=pl["noise_multiplier"], max_grad_norm=cfg.clip,
                                      poisson_sampling=True, grad_sample_mode=mode, noise_generator=noise_gen)
        if len(out) == 4:
            model, opt, crit, loader = out
        else:
            model, opt, loader = out
        loader.batch_sampler.generator = sample_gen  # Poisson sampling: the run's secret (or seeded) generator
        q_actual = 1 / len(loader)
        if abs(q_actual - pl["sample_rate"]) > 1e-12:  # accounting must describe what really runs
            raise RuntimeError(f"sample rate mismatch: planned {pl['sample_rate']}, Opacus {q_actual}")

    core = model._module if hasattr(model, "_module") else model
    X_te, y_te = torch.from_numpy(split.X_test).to(dev), torch.from_numpy(split.y_test).to(dev)
    X_tr, y_tr = torch.from_numpy(split.X_train).to(dev), torch.from_numpy(split.y_train).to(dev)
    total = pl["steps"]
    report_every = max(1, pl["steps_per_epoch"] // 4)
    history, step, t_train = [], 0, 0.0
    sigma, q = pl.get("noise_multiplier"), pl["sample_rate"]
    progress(epoch=0, step=0, total_steps=total, epochs=cfg.epochs, phase="training",
             noise_multiplier=sigma, sample_rate=q, private=cfg.private)
    for epoch in range(1, cfg.epochs + 1):
        t_ep = time.perf_counter()
        losses, seen = 0.0, 0
        model.train()
        for xb, yb in loader:
            if should_stop():
                raise TrainingCancelled("training was cancelled")
            if dev.type != "cpu":
                xb, yb = xb.to(dev, non_blocking=True), yb.to(dev, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            if fused is not None:
                loss = fused.backward(xb, yb)
                opt.step()
                accountant.step(noise_multiplier=fused.sigma, sample_rate=q)
            elif cfg.private and len(yb) == 0:
                # An empty Poisson batch (some Opacus modes, e.g. "ew", cannot run one): the DP-SGD update is
                # noise only — exactly what Opacus's optimizer computes for zero clipped gradients.
                for p in opt.params:
                    p.grad = torch.normal(0.0, sigma * cfg.clip, p.shape, generator=noise_gen,
                                          device=p.device) / opt.expected_batch_size
                opt.original_optimizer.step()
                accountant.step(noise_multiplier=sigma, sample_rate=q)
                loss = torch.zeros(())
            else:
                loss = crit(model(xb), yb)
                loss.backward()
                opt.step()
            step += 1
            if len(yb):
                losses += float(loss.detach()) * len(yb)
                seen += len(yb)
            if step % report_every == 0 and step % pl["steps_per_epoch"] != 0:
                progress(epoch=epoch - 1 + (step % pl["steps_per_epoch"]) / pl["steps_per_epoch"], step=step,
                         total_steps=total, batch_loss=float(loss.detach()) if len(yb) else None)
        t_train += time.perf_counter() - t_ep
        acc, test_loss = _evaluate(core, X_te, y_te)  # the bare module: no per-sample machinery
        eps_so_far = accounting.fast_rdp_epsilon(sigma, q, step, cfg.delta) if cfg.private else None
        row = {"epoch": epoch, "step": step, "total_steps": total, "loss": losses / max(seen, 1),
               "accuracy": acc, "test_loss": test_loss, "epsilon": eps_so_far}
        history.append(row)
        progress(**row, epsilon_bound="rdp (integer orders), an upper bound" if cfg.private else None)

    final = build_model(cfg, split).to(dev)
    final.load_state_dict(core.state_dict())
    final.eval()
    test_acc, test_loss = _evaluate(final, X_te, y_te)
    train_acc, train_loss = _evaluate(final, X_tr, y_tr)
    metrics = {
        "dataset": cfg.dataset, "target": cfg.target, "model": cfg.model, "private": cfg.private,
        "epsilon": None, "delta": cfg.delta if cfg.private else None, "target_epsilon": cfg.epsilon,
        "noise_multiplier": sigma, "sample_rate": q, "steps": step, "epochs": cfg.epochs,
        "batch_size": cfg.batch_size, "lr": cfg.lr, "clip": cfg.clip if cfg.private else None,
        "optimizer": cfg.optimizer, "accountant": cfg.accountant if cfg.private else None, "seed": cfg.seed,
        "epsilon_prv": None, "epsilon_rdp": None, "shortcut_epsilon": None,
        "shortcut_note": "seed notebook's q/σ·sqrt(2T ln(1/δ)): NOT a privacy guarantee, shown for comparison",
        "test_accuracy": test_acc, "test_loss": test_loss,
        "train_accuracy": train_acc, "train_loss": train_loss, "train_metrics_note": NOT_DP_NOTE,
        "n_train": n, "n_test": int(len(split.y_test)), "n_features": split.n_features,
        "n_classes": split.n_classes, "grad_sample_mode": mode, "bounds_note": split.bounds_note,
        "leaks": split.leaks, "warnings": warn, "history": history,
        "train_seconds": time.perf_counter() - t_start, "loop_seconds": t_train,
        "calibration_seconds": pl.get("calibration_seconds"), "device": dev.type,
        "diverged": divergence(history, split.n_classes),
        **noise_fields(cfg),
    }
    if cfg.private:
        acc_hist = list(accountant.history)
        assert sum(h[2] for h in acc_hist) == step, "accountant saw a different number of steps"
        metrics["epsilon_prv"] = accounting.epsilon_from_history(acc_hist, cfg.delta, "prv")
        metrics["epsilon_rdp"] = accounting.epsilon_from_history(acc_hist, cfg.delta, "rdp")
        metrics["epsilon"] = metrics["epsilon_prv"] if cfg.accountant == "prv" else metrics["epsilon_rdp"]
        metrics["shortcut_epsilon"] = accounting.shortcut_epsilon(sigma, q, step, cfg.delta) if step else 0.0
        if history:
            history[-1]["epsilon"] = metrics["epsilon"]
        metrics["train_seconds"] = time.perf_counter() - t_start
    progress(phase="done", step=step, total_steps=total, epsilon=metrics["epsilon"],
             test_accuracy=test_acc)
    return TrainResult(cfg, metrics, final, split)


def _train_diffprivlib(cfg: TrainConfig, split: Split, progress) -> TrainResult:
    """diffprivlib LogisticRegression / GaussianNB on the [-1, 1]-scaled features with explicit
    bounds / data_norm (no PrivacyLeakWarning). epsilon=None: scikit-learn's non-private model."""
    if split.image_shape is not None and cfg.dataset_kind == "mnist":
        raise DPError("diffprivlib models are for tabular data")
    progress = progress or (lambda **_: None)
    t0 = time.perf_counter()
    X, y = split.X_train.astype(np.float64), split.y_train
    d = X.shape[1]
    # public bounds: tabular features are scaled to [-1, 1] (one-hot to {0, 1}); pixels to [0, 1]
    lo = np.zeros(d) if split.image_shape is not None else np.full(d, -1.0)
    hi = np.ones(d)
    Xc = np.clip(X, lo, hi)
    classes = np.arange(split.n_classes)
    # None: diffprivlib's mechanisms draw from secrets.SystemRandom; a seed only in reproducible-noise mode
    dp_random_state = cfg.seed if cfg.reproducible_noise else None
    with warnings.catch_warnings():
        warnings.simplefilter("error", category=_privacy_leak_warning())
        if cfg.model == "diffprivlib_logreg":
            data_norm = float(np.sqrt(np.sum(np.maximum(lo**2, hi**2))))
            if cfg.epsilon is None:
                from sklearn.linear_model import LogisticRegression

                est = LogisticRegression(max_iter=cfg.epochs * 10, C=1.0)
            else:
                from diffprivlib import BudgetAccountant

                est = _dp_logistic_regression_class()(
                    epsilon=cfg.epsilon, data_norm=data_norm, max_iter=max(100, cfg.epochs * 10),
                    random_state=dp_random_state, C=1.0, accountant=BudgetAccountant())
            est.fit(Xc, y)
        else:
            if cfg.epsilon is None:
                from sklearn.naive_bayes import GaussianNB

                est = GaussianNB()
            else:
                from diffprivlib import BudgetAccountant
                from diffprivlib.models import GaussianNB

                est = GaussianNB(epsilon=cfg.epsilon, bounds=(lo, hi), priors=None, random_state=dp_random_state,
                                 accountant=BudgetAccountant())
            est.fit(Xc, y)
    res = TrainResult(cfg, {}, est, split)
    proba_classes = list(getattr(est, "classes_", classes))

    def acc(Xa, ya):
        p = np.asarray(est.predict(np.clip(Xa.astype(np.float64), lo, hi)))
        return float(np.mean(p == ya))

    test_acc, train_acc = acc(split.X_test, split.y_test), acc(split.X_train, split.y_train)
    res.metrics = {
        "dataset": cfg.dataset, "target": cfg.target, "model": cfg.model, "private": cfg.epsilon is not None,
        "epsilon": cfg.epsilon, "delta": 0.0 if cfg.epsilon is not None else None, "target_epsilon": cfg.epsilon,
        "noise_multiplier": None, "sample_rate": None, "steps": None, "epochs": None, "batch_size": None,
        "accountant": "pure ε (diffprivlib)" if cfg.epsilon is not None else None, "seed": cfg.seed,
        "device": "cpu",  # diffprivlib is numpy-only
        "epsilon_prv": None, "epsilon_rdp": None, "shortcut_epsilon": None,
        "test_accuracy": test_acc, "train_accuracy": train_acc, "train_metrics_note": NOT_DP_NOTE,
        "n_train": split.n_train, "n_test": int(len(split.y_test)), "n_features": d,
        "n_classes": split.n_classes, "grad_sample_mode": None, "bounds_note": split.bounds_note + "; features clipped to [-1, 1]"
        + (", data_norm = sqrt(d)" if cfg.model == "diffprivlib_logreg" else ""),
        "leaks": split.leaks, "warnings": [], "history": [], "classes_seen": [int(c) for c in proba_classes],
        "train_seconds": time.perf_counter() - t0, **noise_fields(cfg),
    }
    progress(phase="done", epoch=1, step=1, total_steps=1, accuracy=test_acc, epsilon=cfg.epsilon)
    return res


def _dp_logistic_regression_class():
    """diffprivlib 0.6.6's LogisticRegression passes ``multi_class`` to scikit-learn, which 1.8 removed;
    the same model without that argument (diffprivlib already fixes OvR + lbfgs + l2)."""
    import sklearn.linear_model as lm
    from diffprivlib import BudgetAccountant
    from diffprivlib.models import LogisticRegression

    class DPLogisticRegression(LogisticRegression):
        def __init__(self, *, epsilon=1.0, data_norm=None, tol=1e-4, C=1.0, fit_intercept=True, max_iter=100,
                     verbose=0, warm_start=False, n_jobs=None, random_state=None, accountant=None):
            lm.LogisticRegression.__init__(self, dual=False, tol=tol, C=C, fit_intercept=fit_intercept,
                                           intercept_scaling=1.0, class_weight=None, random_state=random_state,
                                           solver="lbfgs", max_iter=max_iter, verbose=verbose,
                                           warm_start=warm_start, n_jobs=n_jobs)
            self.epsilon = epsilon
            self.data_norm = data_norm
            self.classes_ = None
            self.accountant = BudgetAccountant.load_default(accountant)

    return DPLogisticRegression


def _privacy_leak_warning():
    from diffprivlib.utils import PrivacyLeakWarning

    return PrivacyLeakWarning


# --- helpers for the page / CLI --------------------------------------------------------------------


def upload_columns(data: bytes) -> list[str]:
    """Validate an uploaded CSV *in memory* (nothing is written) and return its column names."""
    if not data:
        raise DPError("the uploaded file is empty")
    return [str(c) for c in datasets.read_csv(bytes(data)).columns]


def save_upload(data: bytes, suffix: str = ".csv") -> str:
    """Store uploaded bytes under ``$DP_EXPLORER_HOME/uploads/`` (named by content hash) so a background
    job can read them; return the path for ``dataset="csv:PATH"``. Call it only when a job is submitted,
    after :func:`upload_columns` accepted the bytes; :func:`release_uploads` deletes it once no queued or
    running job needs it."""
    import hashlib

    from . import storage

    upload_columns(data)
    path = storage.subdir("uploads") / (hashlib.sha256(data).hexdigest()[:16] + suffix)
    if not path.exists():
        storage.atomic_write_bytes(path, data)
    return str(path)


def release_uploads(keep: str | None = None, finished_job: str | None = None) -> list[str]:
    """Delete stored uploads that no queued or running job reads (finished, failed, cancelled or deleted jobs
    keep nothing on disk). ``keep``: a path still needed by the caller; ``finished_job``: a job that is ending
    now (its own row still says running). Returns the deleted file names."""
    from . import storage
    from .jobs import store

    folder = storage.subdir("uploads")
    files = list(folder.glob("*"))
    if not files:
        return []
    active = set() if keep is None else {str(Path(keep).resolve())}
    for j in store.list_jobs(limit=10_000):
        if j["status"] in ("queued", "running") and j["id"] != finished_job:
            ds = str(((j.get("params") or {}).get("train") or j.get("params") or {}).get("dataset") or "")
            if ds.startswith("csv:"):
                active.add(str(Path(ds[4:]).resolve()))
    gone = []
    for f in files:
        if str(f.resolve()) not in active:
            try:
                f.unlink()
                gone.append(f.name)
            except OSError:
                pass
    return gone


def csv_columns(path: str) -> list[str]:
    """Column names of a stored CSV (validated), for choosing the target."""
    return [str(c) for c in datasets.read_csv(path).columns]


def preflight(cfg: TrainConfig | dict) -> dict:
    """Check a run before it is queued (load the data, batch size vs rows); raise DPError with a clear
    message. Returns a short summary (rows, features, classes, warnings)."""
    cfg = cfg if isinstance(cfg, TrainConfig) else TrainConfig.from_dict(cfg)
    split = load_split(cfg.validate())
    check_model_size(cfg, split)
    n = split.n_train
    if cfg.batch_size > n:
        raise DPError(f"batch size {cfg.batch_size} is larger than the {n} training rows; "
                      f"use at most {n} (e.g. {max(1, n // 8)})")
    return {"n_train": n, "n_test": int(len(split.y_test)), "n_features": split.n_features,
            "n_classes": split.n_classes, "n_parameters": n_parameters(cfg, split),
            "warnings": _delta_warnings(cfg, n), "leaks": split.leaks}


def baseline_params(params: dict) -> dict:
    """Job params of the non-private baseline for a run: same model, data split, epochs and optimiser."""
    return TrainConfig.from_dict(params).baseline().to_dict()


# --- background job entry point -------------------------------------------------------------------


def _is_upload(cfg: TrainConfig) -> bool:
    if cfg.dataset_kind != "csv":
        return False
    from . import storage

    return Path(cfg.dataset_path).resolve().parent == storage.subdir("uploads").resolve()


def _release_after_job(job_id) -> None:
    """This job no longer needs its upload: delete uploads no *other* queued or running job reads."""
    try:
        release_uploads(finished_job=job_id)
    except Exception:  # noqa: BLE001 - clean-up must never turn a finished run into a failure
        pass


def run_job(params: dict, ctx) -> dict:
    """Job target ``"train"`` (:mod:`dpcore.jobs.registry`): train, report progress, save weights + metrics."""
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover
        pass
    cfg = TrainConfig.from_dict(params)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # Opacus's per-step hook notices flood the log
            result = train(cfg, progress=ctx.progress, should_stop=ctx.cancelled)
    except TrainingCancelled:
        check = getattr(ctx, "check_cancelled", None)
        if check is not None:
            check()
        raise
    finally:
        if _is_upload(cfg):
            _release_after_job(getattr(ctx, "job_id", None))
    ctx.save_bytes(result.weights_filename, result.state_dict_bytes())
    ctx.save_bytes("metrics.json", result.metrics_json())
    out = dict(result.metrics)
    out["weights_file"] = result.weights_filename
    out["config"] = cfg.to_dict()
    return out
