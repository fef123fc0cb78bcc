"""A run's data: loading a dataset, the seeded train/test split, scaling with public bounds, and uploads.

* :func:`load_split` — features/labels of a :class:`~dpcore.training.config.TrainConfig`, preprocessed with
  *public* bounds only (an uploaded CSV through :mod:`dpcore.training.table` with its owner's declared bounds; any
  bound read from its rows is listed in ``Split.leaks``); :func:`record_view`: a training record as the model saw it.
* Uploads: :func:`upload_columns` validates bytes in memory, :func:`save_upload` stores them for a job under an
  opaque reference (``dataset="upload:<ref>"``: no server path in a job's parameters), :func:`release_uploads`
  deletes them once no queued or running job reads them.
* MNIST only from :func:`data_dir` (``$DP_EXPLORER_HOME/data``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import storage
from ..data import datasets
from ..errors import DPError
from ..jobs import store
from ..jobs.owners import SYSTEM
from .config import MEDICAL_DATA_SEED, MEDICAL_ROWS, UPLOAD_REF_RE, TrainConfig
from .table import _one_hot, _scale, csv_arrays

UPLOAD = "upload:"  # a stored upload's dataset value: "upload:<16 hex of its content hash>"


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
    #: Row numbers of the training rows in the source data (0-based, as in the file: an upload's data rows), or None.
    train_rows: np.ndarray | None = None
    #: How each source column became features (kind, bounds, feature indices): :func:`record_view` reads it.
    layout: list = field(default_factory=list)

    @property
    def n_train(self) -> int:
        return int(len(self.y_train))

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])


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
    layout = [
        {"name": c, "kind": "number", "lower": lo[i], "upper": hi[i], "index": i, "source": "public"}
        for i, c in enumerate(num)
    ]
    j = len(num)
    for col, values in cats.items():
        layout.append(
            {
                "name": col,
                "kind": "categories",
                "categories": [str(v) for v in values],
                "indices": list(range(j, j + len(values))),
                "source": "public",
            }
        )
        j += len(values)
    return X, y, names, classes, note, [], layout


#: Local data files (MNIST .npz) are read only from this folder under $DP_EXPLORER_HOME.
DATA_DIR_NAME = "data"
MNIST_NOT_USABLE = (
    "MNIST file not usable: put a keras-layout mnist.npz (x_train, y_train, x_test, y_test) in "
    "the data folder under DP_EXPLORER_HOME and give its file name, e.g. mnist:mnist.npz"
)


def data_dir() -> Path:
    """``$DP_EXPLORER_HOME/data``: the only folder local data files (MNIST) are read from."""
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
    except Exception as exc:
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


def _given(value: str | None, what: str) -> str:
    """A setting a validated TrainConfig holds for its kind of dataset."""
    if value is None:
        raise DPError(f"this training configuration does not name {what}; build it with TrainConfig(...)")
    return value


def held_out_rows(n_rows: int, test_size: float) -> int:
    """Test rows of a seeded split of ``n_rows`` (:func:`load_split`): the ``test_size`` share, at least one."""
    return max(1, int(round(int(n_rows) * float(test_size))))


def load_split(cfg: TrainConfig) -> Split:
    """Load and preprocess the data for ``cfg`` (seeded split; scaling with public bounds only)."""
    kind, image_shape, leaks, layout = cfg.dataset_kind, None, [], []
    if kind == "mnist":
        (X_tr, X_te), (y_tr, y_te) = _mnist_arrays(_given(cfg.dataset_path, "the MNIST file"))
        names = [f"pixel_{i}" for i in range(X_tr.shape[1])]
        classes = [str(i) for i in range(10)]
        note = "pixels divided by 255 (their public range); the file's own train/test split"
        image_shape = (1, 28, 28)
        rows_tr = np.arange(len(y_tr))
    else:
        if kind == "medical":
            X, y, names, classes, note, leaks, layout = _medical_arrays(_given(cfg.target, "a target column"))
        elif kind in ("csv", "upload"):
            given = _given(cfg.dataset_path, "the uploaded file")
            path = upload_file(given) if kind == "upload" else given
            X, y, names, classes, note, leaks, layout = csv_arrays(
                path, _given(cfg.target, "a target column"), cfg.bounds
            )
        else:
            if cfg.target not in (None, "", "target"):
                raise DPError(f"unknown target {cfg.target!r} for {kind}; it has a single label (leave target empty)")
            ds = datasets.load_breast_cancer() if kind == "breast_cancer" else datasets.load_digits()
            if kind == "digits":
                X = (ds.X / 16.0).astype(np.float32)  # public pixel range 0–16 -> [0, 1]
                image_shape = (1, 8, 8)
            else:  # skewed, non-negative measurements: a fixed log1p (public, data-independent), then bounds
                X = _scale(np.log1p(np.clip(ds.X, ds.lower, ds.upper)), np.log1p(ds.lower), np.log1p(ds.upper))
                layout = [
                    {
                        "name": str(n),
                        "kind": "number",
                        "lower": float(lo),
                        "upper": float(hi),
                        "index": i,
                        "log1p": True,
                        "source": "public",
                    }
                    for i, (n, lo, hi) in enumerate(zip(ds.feature_names, ds.lower, ds.upper))
                ]
            y, names, classes, note = ds.y, ds.feature_names, ds.target_names, ds.bounds_note
            if kind == "breast_cancer":
                note += "; log1p then scaled to [-1, 1] with those bounds"
        rng = np.random.default_rng(cfg.seed)
        perm = rng.permutation(len(y))
        n_test = held_out_rows(len(y), cfg.test_size)
        if len(y) - n_test < 2:
            raise DPError(f"only {len(y)} rows: too few to split into train and test")
        te, tr = perm[:n_test], perm[n_test:]
        X_tr, y_tr, X_te, y_te = X[tr], y[tr], X[te], y[te]
        rows_tr = tr
    if cfg.train_size is not None:
        if cfg.train_size > len(y_tr):
            raise DPError(f"train size {cfg.train_size} is larger than the {len(y_tr)} training rows available")
        sub = np.sort(np.random.default_rng([cfg.seed, 1]).permutation(len(y_tr))[: cfg.train_size])
        X_tr, y_tr, rows_tr = X_tr[sub], y_tr[sub], rows_tr[sub]
    n_classes = max(len(classes), int(max(y_tr.max(initial=0), y_te.max(initial=0))) + 1)
    return Split(
        np.ascontiguousarray(X_tr, np.float32),
        np.asarray(y_tr, np.int64),
        np.ascontiguousarray(X_te, np.float32),
        np.asarray(y_te, np.int64),
        n_classes,
        list(map(str, names)),
        list(map(str, classes)),
        note,
        list(leaks),
        image_shape,
        np.asarray(rows_tr, np.int64),
        list(layout),
    )


def record_view(split: Split, i: int) -> dict:
    """Training record ``i`` of a split as its features were *after* public bounding (what the model saw, in the
    data's own units): a range's value clipped to its bounds, a category's value or "(other)", the label by name;
    an image as its pixels (0–255 for MNIST, 0–16 for digits). These are private rows: shown to their owner only,
    not covered by ε."""
    x, label = (
        split.X_train[i],
        split.class_names[int(split.y_train[i])] if split.class_names else int(split.y_train[i]),
    )
    if split.image_shape is not None:
        top = 255 if split.image_shape[1] == 28 else 16
        return {
            "pixels": np.rint(np.clip(x, 0, 1) * top).astype(int).tolist(),
            "label": label,
            "shape": list(split.image_shape[1:]),
        }
    out: dict[str, Any] = {}
    for col in split.layout:
        if col["kind"] == "number":
            z = (float(x[col["index"]]) + 1) / 2
            if col.get("log1p"):
                lo, hi = np.log1p(col["lower"]), np.log1p(col["upper"])
                out[col["name"]] = _sig(np.expm1(lo + z * (hi - lo)))
            else:
                out[col["name"]] = _sig(col["lower"] + z * (col["upper"] - col["lower"]))
        else:
            hot = [c for c, j in zip(col["categories"], col["indices"]) if x[j] > 0.5]
            out[col["name"]] = hot[0] if hot else "(other)"
    out["label"] = label
    return out


# --- uploads --------------------------------------------------------------------------------------


def upload_columns(data: bytes) -> list[str]:
    """Validate an uploaded CSV *in memory* (nothing is written) and return its column names."""
    if not data:
        raise DPError("the uploaded file is empty")
    return [str(c) for c in datasets.read_csv(bytes(data)).columns]


def save_upload(data: bytes) -> str:
    """Store uploaded bytes under ``$DP_EXPLORER_HOME/uploads/`` (named by content hash) so a background
    job can read them; return the dataset value ``"upload:<ref>"`` — an opaque reference, never the server's
    path. Call it only when a job is submitted, after :func:`upload_columns` accepted the bytes;
    :func:`release_uploads` deletes it once no queued or running job needs it."""
    upload_columns(data)
    ref = hashlib.sha256(data).hexdigest()[:16]
    path = storage.subdir("uploads") / f"{ref}.csv"
    if not path.exists():
        storage.atomic_write_bytes(path, data)
    return UPLOAD + ref


def upload_file(ref: str) -> str:
    """Where the upload ``ref`` (the part after ``upload:``) is kept; a DPError (with no path in it) if it is gone."""
    if not isinstance(ref, str) or not UPLOAD_REF_RE.match(ref):
        raise DPError("an uploaded dataset is named by the reference the page stored it under; upload the file again")
    path = storage.subdir("uploads") / f"{ref}.csv"
    if not path.is_file():
        raise DPError(
            "the uploaded file of this run is no longer kept (uploads stay only while a job needs "
            "them); upload it again"
        )
    return str(path)


def _stored_path(dataset: str) -> str | None:
    """The file a job's dataset value reads from the uploads folder (an upload reference, or an old row's path)."""
    if dataset.startswith(UPLOAD):
        ref = dataset[len(UPLOAD) :]
        return str((storage.subdir("uploads") / f"{ref}.csv").resolve()) if UPLOAD_REF_RE.match(ref) else None
    if dataset.startswith("csv:"):
        return str(Path(dataset[4:]).resolve())
    return None


def release_uploads(keep: str | None = None, finished_job: str | None = None) -> list[str]:
    """Delete stored uploads that no queued or running job reads (finished, failed, cancelled or deleted jobs
    keep nothing on disk). ``keep``: a path still needed by the caller; ``finished_job``: a job that is ending
    now (its own row still says running). Returns the deleted file names."""
    folder = storage.subdir("uploads")
    files = list(folder.glob("*"))
    if not files:
        return []
    active = set() if keep is None else {_stored_path(keep) or str(Path(keep).resolve())}
    for j in store.list_jobs(caller=SYSTEM, limit=10_000):
        if j["status"] in ("queued", "running") and j["id"] != finished_job:
            ds = str(((j.get("params") or {}).get("train") or j.get("params") or {}).get("dataset") or "")
            path = _stored_path(ds)
            if path is not None:
                active.add(path)
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


def is_upload(cfg: TrainConfig) -> bool:
    """Whether the run reads a stored upload (deleted by :func:`release_uploads` once no job needs it)."""
    if cfg.dataset_kind == "upload":
        return True
    if cfg.dataset_kind != "csv":
        return False

    return Path(_given(cfg.dataset_path, "the uploaded file")).resolve().parent == storage.subdir("uploads").resolve()


def _sig(x) -> float:
    """A value back from float32 features at 6 significant digits (80, not 80.00000059604645)."""
    return float(f"{float(x):.6g}")
