"""One training run's settings: :class:`TrainConfig`, validated once, where it is built.

A ``TrainConfig`` that exists is valid: ``__post_init__`` checks every field (a :class:`~dpcore.errors.DPError`
that says what to do next), so code that receives one — the loader, the loop, the job, a sweep point — never
checks it again. :meth:`TrainConfig.from_dict` turns job params / form values into one (string numbers accepted).

Also here: the names a run may use (models, optimisers, datasets, grad-sample modes), the recommended starting
hyper-parameters, the one batch-size check (:func:`check_batch_size`), and the labels every result carries
(:func:`noise_fields`, :func:`delta_warnings`). Importing this module imports neither torch nor opacus.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

import numpy as np

from .. import limits
from ..errors import DPError
from ..jobs.executors import check_device
from ..validation import _as_float as _float
from ..validation import check_delta, check_epsilon, check_noise_multiplier, check_positive_int
from . import accounting
from .bounds import check as check_bounds

MODELS = ("logreg", "mlp", "cnn", "diffprivlib_logreg", "diffprivlib_nb")
TORCH_MODELS = ("logreg", "mlp", "cnn")
OPTIMIZERS = ("sgd", "adam")
#: Learning-rate schedules: "constant", or "linear" (from ``lr`` down to ~0 over the planned steps; the sweep's
#: non-private baselines use it so that every seed settles at its best accuracy, see SweepConfig).
LR_SCHEDULES = ("constant", "linear")
BUILTIN_DATASETS = ("medical", "breast_cancer", "digits")
MEDICAL_TARGETS = ("has_rare_disease", "diagnosis")
GRAD_SAMPLE_MODES = ("auto", "fused", "hooks", "ghost", "ew", "functorch")
#: Fastest correct per-sample-gradient mode per model, measured with bench/dpsgd_overhead.py on CPU.
#: "fused" (ours, for Sequential nets of Linear, Conv2d, ReLU, Tanh, AvgPool2d and reshapes; see fused.SUPPORTED):
#: per-sample norms without per-sample Linear gradients and one matmul per layer for the clipped sum, on
#: Poisson batches (dpcore.training.sampling) with Opacus's accountant; tested equal to Opacus's own clipped, noised gradient
#: for all three built-in models. The others are Opacus's modes.
BEST_GRAD_SAMPLE_MODE = {"logreg": "fused", "mlp": "fused", "cnn": "fused"}
#: What people read for each dataset and model, with a short detail in brackets for option lists: the one home
#: of these names (the training and privacy–utility pages, sweep titles, the report); ``dataset_name`` and
#: ``model_name`` give them without the detail.
DATASET_NAMES = {
    "breast_cancer": "Breast cancer (569 rows)",
    "medical": "Synthetic medical (10k rows)",
    "digits": "Digits (8×8 images)",
    "csv": "Uploaded CSV",
    "upload": "Uploaded CSV",
    "mnist": "MNIST (server .npz)",
}
MODEL_NAMES = {
    "logreg": "Logistic regression",
    "mlp": "Small MLP",
    "cnn": "Small CNN (images)",
    "diffprivlib_logreg": "diffprivlib logistic reg.",
    "diffprivlib_nb": "diffprivlib naive Bayes",
}


#: Accountants as the pages and the report name them: the acronym with what it stands for.
ACCOUNTANT_NAMES = {
    "prv": "PRV (privacy-loss random variables)",
    "rdp": "RDP (Rényi DP)",
    "pld": "PLD (privacy-loss distribution)",
}


def accountant_name(name) -> str:
    """ "PRV (privacy-loss random variables)", not prv; unknown: as it is."""
    return ACCOUNTANT_NAMES.get(str(name).lower(), str(name))


def _plain(code, names: dict) -> str:
    return "?" if code is None else names[code].split(" (")[0] if code in names else str(code)


def dataset_name(dataset) -> str:
    """ "Breast cancer", not breast_cancer; an upload ("upload:<ref>", or a CLI "csv:<path>") is "Uploaded CSV";
    unknown: as it is."""
    kind = None if dataset is None else str(dataset).split(":", 1)[0]
    return _plain(kind if kind in DATASET_NAMES else dataset, DATASET_NAMES)


#: The unit of privacy of each dataset: what one "record" in "add/remove one record" is there.
DATASET_UNITS = {
    "medical": "one patient's record (one row of the data)",
    "breast_cancer": "one patient's record (one row: the measurements of one patient's tumour)",
    "digits": "one image (one row: an 8×8 handwritten digit)",
    "mnist": "one image (one row: a 28×28 handwritten digit)",
    **dict.fromkeys(
        ("csv", "upload"), "one record (one row of the uploaded file); a person with k rows is covered only for k·ε"
    ),
}


def dataset_kind(dataset) -> str | None:
    """The kind of a dataset code: "upload" or "csv" for an upload ("upload:<ref>", a CLI's "csv:<path>"), else
    the code itself."""
    return None if dataset is None else str(dataset).split(":", 1)[0]


def unit_of_privacy(dataset) -> str:
    """What one record is for this dataset (a patient, an image, a row of an upload)."""
    return DATASET_UNITS.get(dataset_kind(dataset) or "", "one record (one row of the data)")


def model_name(model) -> str:
    """ "Logistic regression", not logreg; unknown: as it is."""
    return _plain(model, MODEL_NAMES)


#: An upload stored for a job is named by an opaque reference ("upload:<16 hex>", its content hash), never by
#: where the server keeps it: job parameters, JSON downloads and statements never show a server path.
UPLOAD_REF_RE = re.compile(r"^[0-9a-f]{16}$")

MEDICAL_ROWS = 10_000
MEDICAL_DATA_SEED = 0
#: The label of every diagnostic a run computes on private rows (test and training): the UI, the JSON, the
#: statement and the report say it wherever one appears.
NOT_DP_NOTE = (
    "not covered by ε: computed on private rows (test and training) without DP — loss and accuracy "
    "curves, test loss and accuracy, per-class counts; for diagnosis only, rounded to what a chart needs"
)
#: What a run (its stored result, its statement, the page) says about n: it is released, not covered by ε.
N_PUBLIC_NOTE = (
    "n (the training rows) and the list of classes are treated as public: n fixes the sample rate "
    "q = 1/⌈n/batch⌉ and the step count, so it is released exactly, and ε does not cover it. Whoever "
    "knows every other record learns from n alone whether one more is there; for a person known to "
    "be in data of this size, a fact about them is the replace-one question, bounded by 2ε "
    "(group privacy)."
)
#: The label of every run (and sweep point) whose sampling and noise were drawn from the public seed.
REPRODUCIBLE_LABEL = "reproducible noise: not a DP release"
#: Model-size limits (checked before any job exists): hidden units of the MLP, parameters of any model.
MAX_HIDDEN = limits.MODEL_MAX_HIDDEN
MAX_PARAMS = limits.MODEL_MAX_PARAMS


#: Starting points per (dataset, model) that worked in bench/utility.py; the page pre-fills them.
RECOMMENDED = {
    ("breast_cancer", "logreg"): dict(epochs=10, batch_size=64, lr=0.1, optimizer="adam", clip=1.0),
    ("breast_cancer", "mlp"): dict(epochs=10, batch_size=64, lr=0.05, optimizer="adam", clip=1.0),
    ("medical", "logreg"): dict(epochs=5, batch_size=256, lr=0.05, optimizer="adam", clip=1.0),
    ("medical", "mlp"): dict(epochs=5, batch_size=256, lr=0.02, optimizer="adam", clip=1.0),
    # 30 epochs of 256 at clip 0.5 (fewer, larger noisy steps): median 0.907 at ε = 1 and 0.950 at ε = 8 over 12
    # seeds (360 test rows), against 0.893 and 0.940 at 15 of 64, clip 1 (bench/utility.py --grid)
    ("digits", "logreg"): dict(epochs=30, batch_size=256, lr=0.05, optimizer="adam", clip=0.5),
    ("digits", "mlp"): dict(epochs=15, batch_size=64, lr=0.02, optimizer="adam", clip=1.0),
    ("digits", "cnn"): dict(epochs=15, batch_size=128, lr=0.05, optimizer="adam", clip=1.0),
}


def recommended(dataset: str, model: str) -> dict:
    """Hyper-parameters that are a sensible start for this dataset and model."""
    kind = str(dataset).split(":", 1)[0]
    return dict(RECOMMENDED.get((kind, model), dict(epochs=10, batch_size=64, lr=0.05, optimizer="adam", clip=1.0)))


# --- configuration --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainConfig:
    """One training run. ``epsilon=None`` and ``noise_multiplier=None``: non-private baseline.
    ``epsilon`` set: noise calibrated for the planned steps. ``noise_multiplier`` set: epsilon computed.

    Validated when built (``__post_init__``, also on ``dataclasses.replace``): an instance is a valid run."""

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
    lr_schedule: str = "constant"
    accountant: str = "prv"
    seed: int = 0
    train_size: int | None = None
    test_size: float = 0.2
    hidden: int = 32
    grad_sample_mode: str = "auto"
    device: str = "auto"  # auto (CUDA GPU when present, else CPU) / cpu / cuda — see dpcore.jobs.executors
    #: True: Poisson sampling and noise drawn from ``seed`` (tests, teaching) -- the run is NOT a DP release.
    reproducible_noise: bool = False
    #: An uploaded CSV's public bounds per column (:mod:`dpcore.training.bounds`); None: as before bounds existed.
    bounds: dict | None = None
    #: The uploaded file's own name as its owner chose it (titles, exported code); never a server path.
    upload_name: str | None = None
    #: Canaries of the run's own one-run audit (:mod:`dpcore.training.canaries`): None = the default (a DP-SGD run
    #: plants :func:`~dpcore.training.canaries.auto_count` of them, a non-private run none), 0 = no audit.
    canaries: int | None = None

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

    def baseline(self) -> TrainConfig:
        """The non-private baseline: same model, data split, epochs and optimiser, no noise/clipping."""
        return dataclasses.replace(self, epsilon=None, noise_multiplier=None)

    def __post_init__(self) -> None:
        kind = self.dataset_kind
        if kind not in BUILTIN_DATASETS + ("csv", "mnist", "upload"):
            raise DPError(
                f"unknown dataset {self.dataset!r}; use medical, breast_cancer, digits, csv:PATH or mnist:PATH"
            )
        if kind in ("csv", "mnist") and not self.dataset_path:
            raise DPError(f"dataset {kind} needs a file path: {kind}:PATH")
        if kind == "upload" and not UPLOAD_REF_RE.match(self.dataset_path or ""):
            raise DPError(
                "an uploaded dataset is named by the reference the page stored it under; upload the file again"
            )
        if kind in BUILTIN_DATASETS and ":" in self.dataset:
            raise DPError(f"dataset {kind} takes no path; use just {kind!r}")
        if kind == "medical" and self.target not in (None,) + MEDICAL_TARGETS:
            raise DPError(f"unknown target {self.target!r} for medical; use has_rare_disease or diagnosis")
        if kind in ("csv", "upload") and not self.target:
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
            check_noise_multiplier(self.noise_multiplier)
        if self.model.startswith("diffprivlib") and self.noise_multiplier is not None:
            raise DPError("diffprivlib models take a target epsilon, not a noise multiplier")
        check_positive_int(self.epochs, "epochs")
        if self.epochs > limits.TRAINING_EPOCHS_MAX:
            raise DPError(f"epochs must be at most {limits.TRAINING_EPOCHS_MAX}")
        check_positive_int(self.batch_size, "batch size")
        check_positive_int(self.hidden, "hidden units")
        if self.hidden > MAX_HIDDEN:
            raise DPError(
                f"hidden units must be at most {MAX_HIDDEN:,} (models are limited to "
                f"{MAX_PARAMS:,} parameters), got {self.hidden:,}; try 32–512"
            )
        if not isinstance(self.reproducible_noise, (bool, np.bool_)):
            raise DPError(f"reproducible_noise must be true or false, got {self.reproducible_noise!r}")
        for name, v, top, hint in (
            ("learning rate", self.lr, limits.TRAINING_LR_MAX, "try 0.01–0.5"),
            ("clip (max grad norm)", self.clip, limits.TRAINING_CLIP_MAX, "try 0.1–10"),
        ):
            f = _float(v, name)
            if not (f > 0 and math.isfinite(f)):
                raise DPError(f"{name} must be > 0, got {v!r}; {hint}")
            if f > top:
                raise DPError(f"{name} must be at most {top:g}, got {f:g}; {hint}")
        if self.optimizer not in OPTIMIZERS:
            raise DPError(f"unknown optimizer {self.optimizer!r}; use sgd or adam")
        if self.lr_schedule not in LR_SCHEDULES:
            raise DPError(f"unknown lr_schedule {self.lr_schedule!r}; use {' or '.join(LR_SCHEDULES)}")
        accounting.check_accountant(self.accountant)
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)):
            raise DPError(f"seed must be a whole number >= 0, got {self.seed!r}")
        limits.check_seed(self.seed)  # above 2³²−1 torch's and numpy's seeding overflowed into a traceback
        if self.train_size is not None:
            check_positive_int(self.train_size, "train size")
        ts = _float(self.test_size, "test size")
        if not (0 < ts < 1):
            raise DPError(f"test size is a fraction of the rows in (0, 1), got {self.test_size!r}; try 0.2")
        if self.grad_sample_mode not in GRAD_SAMPLE_MODES:
            raise DPError(f"unknown grad_sample_mode {self.grad_sample_mode!r}; use {', '.join(GRAD_SAMPLE_MODES)}")

        check_device(self.device)
        if self.device == "cuda" and self.model.startswith("diffprivlib"):
            raise DPError("diffprivlib models run on the CPU only; use --device auto or cpu with them")
        if self.bounds is not None:
            if kind not in ("csv", "upload"):
                raise DPError("public bounds are for an uploaded CSV (csv:PATH); the built-in data sets have theirs")
            object.__setattr__(self, "bounds", check_bounds(self.bounds))
        if self.upload_name is not None:
            object.__setattr__(self, "upload_name", check_upload_name(self.upload_name))
        if self.canaries is not None:
            if (
                isinstance(self.canaries, bool)
                or not isinstance(self.canaries, (int, np.integer))
                or not 0 <= self.canaries <= limits.RUN_CANARIES_MAX
            ):
                raise DPError(
                    f"canaries must be a whole number from 0 to {limits.RUN_CANARIES_MAX}, got {self.canaries!r}; "
                    "leave it unset for the default, 0 for no audit"
                )
            if self.canaries and self.model.startswith("diffprivlib"):
                raise DPError("diffprivlib models do not carry canaries; leave canaries unset or 0")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, params: dict) -> TrainConfig:
        if isinstance(params, TrainConfig):
            return params
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
        for k in ("epochs", "batch_size", "seed", "train_size", "hidden", "canaries"):
            if p.get(k) is not None and not isinstance(p[k], bool):
                try:
                    if float(p[k]) == int(float(p[k])):
                        p[k] = int(float(p[k]))
                except (TypeError, ValueError):
                    pass
        return cls(**p)


def check_upload_name(name) -> str:
    """An uploaded file's own name, as shown and as exported code asks for it: the last part of what the browser
    sent (never a folder), printable, at most 200 characters."""
    text = str(name).replace("\\", "/").rsplit("/", 1)[-1].strip()
    text = "".join(ch for ch in text if ch.isprintable())[:200]
    if not text:
        raise DPError(f"upload name must be a file name like data.csv, got {name!r}")
    return text


def noise_fields(cfg: TrainConfig) -> dict:
    """Where a run's sampling and noise came from: the fields every result (JSON, page, sweep) carries."""
    out = {
        "reproducible_noise": bool(cfg.reproducible_noise),
        "dp_release": bool(cfg.private and not cfg.reproducible_noise),
        "noise_source": (
            None
            if not cfg.private
            else "seeded from the public seed"
            if cfg.reproducible_noise
            else "secure: secret seeds from the OS CSPRNG, never stored"
        ),
    }
    if cfg.reproducible_noise:
        out["release_label"] = REPRODUCIBLE_LABEL
    return out


def check_batch_size(batch_size: int, n_train: int) -> None:
    """The one batch-size check: a batch (the expected size under Poisson sampling) fits in the training rows."""
    if batch_size > n_train:
        raise DPError(
            f"batch size {batch_size} is larger than the {n_train} training rows; "
            f"use at most {n_train} (e.g. {max(1, n_train // 8)})"
        )


def delta_warnings(cfg: TrainConfig, n_train: int) -> list[str]:
    """A warning when δ is not below 1/n (a mechanism publishing one row outright would meet it)."""
    return delta_warning(cfg.delta, n_train) if cfg.private else []


def delta_warning(delta, n_train) -> list[str]:
    """The δ ≥ 1/n warning for a δ and a row count (either missing: none)."""
    if delta and n_train and float(delta) >= 1.0 / int(n_train):
        n = int(n_train)
        return [
            f"δ = {float(delta):g} is not below 1/n = 1/{n} = {1 / n:.2g}: a mechanism that "
            "publishes one random row outright would satisfy this δ. Use δ ≤ 1/(10·n), e.g. 1e-5 or smaller."
        ]
    return []
