"""Tables as features: scaling to [-1, 1] with bounds, one-hot categories, and an uploaded CSV with the public bounds
its owner declared (:mod:`dpcore.training.bounds`): :func:`csv_arrays`. A column without declared bounds is scaled as
before bounds existed — a known public range, or the rows' own min/max and values, each listed as a leak that ε does
not cover — and the label's classes come from the declaration or, listed as a leak, from the rows.
:mod:`dpcore.training.data` loads every data set through these and splits it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .. import limits
from ..data import datasets
from ..errors import DPError
from .bounds import FROM_DATA, LEARNED_LABEL, as_text


def _scale(X: np.ndarray, lower, upper) -> np.ndarray:
    """Map to [-1, 1] with public bounds (clipping values outside them)."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    Z = (np.clip(X, lower, upper) - lower) / (upper - lower)
    return (2 * Z - 1).astype(np.float32)


def _one_hot(values, categories) -> np.ndarray:
    values = np.asarray(values, dtype=object)
    return np.stack([(values == c) for c in categories], axis=1).astype(np.float32)


def _label_classes(y_raw, target: str, spec: dict | None):
    """The label's classes: declared (``spec``'s categories) or read from the rows (a leak, returned as text)."""
    if spec is not None and FROM_DATA not in spec:
        if "categories" not in spec:
            raise DPError(
                f"the target column {target!r} needs its classes as categories (e.g. {target}=no,yes), not a range"
            )
        classes = list(spec["categories"])
        labels = y_raw.map(as_text)
        outside = sorted(set(labels) - set(classes))
        if outside:
            raise DPError(
                f"{int((~labels.isin(classes)).sum()):,} rows of the target column {target!r} have a label "
                f"outside its declared classes (e.g. {outside[0]!r}); add it to the classes or drop those rows"
            )
        return classes, None
    classes = sorted(map(as_text, pd_unique(y_raw)))
    how = LEARNED_LABEL if spec is not None else "not covered by ε"
    return classes, f"the classes of the label {target!r} are read from the uploaded rows ({how})"


def csv_arrays(path: str, target: str, bounds: dict | None = None):
    """An uploaded table as features in [-1, 1] and labels, with the public ``bounds`` declared per column
    (:mod:`dpcore.training.bounds`); a column without them is scaled as before bounds existed (a known public
    range, or the rows' own min/max listed as a leak). Returns the arrays, names, classes, the note, the leaks and
    the column layout (:func:`record_view`)."""
    bounds = bounds or {}
    df = datasets.read_csv(path)
    datasets.require_columns(df, [target], "target column")
    unknown = [c for c in bounds if c not in map(str, df.columns)]
    if unknown:
        raise DPError(
            f"bounds name column(s) the CSV does not have: {', '.join(map(repr, unknown[:5]))}; "
            f"its columns are {', '.join(map(str, df.columns[:20]))}"
        )
    y_raw = df[target]
    if y_raw.isna().any():
        raise DPError(f"target column {target!r} has missing values; drop those rows first")
    classes, label_leak = _label_classes(y_raw, target, bounds.get(str(target)))
    if len(classes) < 2:
        raise DPError(f"target column {target!r} has a single value; a classifier needs at least 2 classes")
    if len(classes) > 50:
        raise DPError(
            f"target column {target!r} has {len(classes)} distinct values; choose a categorical label (≤ 50 classes)"
        )
    order = {c: i for i, c in enumerate(classes)}
    y = np.array([order[as_text(v)] for v in y_raw], dtype=np.int64)
    feats = df.drop(columns=[target])
    parts: list[np.ndarray] = []
    names: list[str] = []
    leaks: list[str] = []
    layout: list[dict[str, Any]] = []
    learned: list[str] = []
    guessed: list[str] = []
    dropped: list[str] = []
    declared: list[str] = []
    for c in feats.columns:
        col, spec = feats[c], bounds.get(str(c))
        numeric = pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype)
        if spec is not None and "categories" in spec:
            cats = list(spec["categories"])
            source = "declared"
        elif spec is not None and "lower" in spec:
            if not numeric:
                raise DPError(
                    f"column {c!r} holds text, so a range does not fit it; declare its categories instead ({c}=A,B,C)"
                )
            lo, hi, source, cats = spec["lower"], spec["upper"], "declared", None
        elif numeric:
            cats = None
            if spec is None and str(c) in datasets.PUBLIC_BOUNDS:
                (lo, hi), source = datasets.PUBLIC_BOUNDS[str(c)], "public"
            else:
                vals = col.astype(float).to_numpy()
                vals = vals[~np.isnan(vals)]
                lo, hi = (float(vals.min()), float(vals.max())) if len(vals) else (0.0, 1.0)
                hi = hi if hi > lo else lo + 1.0
                source = "learned"
                (learned if spec is not None else guessed).append(str(c))
        else:  # text without declared categories: its values are read from the rows
            seen = sorted(map(as_text, pd_unique(col.dropna())))
            if spec is None and len(seen) > 20:
                dropped.append(str(c))
                continue
            cats, source = seen[: limits.QUERY_MAX_BINS], "learned"
            (learned if spec is not None else guessed).append(str(c))
        if source == "declared":
            declared.append(str(c))
        j = sum(p.shape[1] for p in parts)
        if cats is None:
            x = col.astype(float).to_numpy()
            x = np.where(np.isnan(x), lo, x)
            parts.append(_scale(x[:, None], [lo], [hi]))
            names.append(str(c))
            layout.append(
                {"name": str(c), "kind": "number", "lower": float(lo), "upper": float(hi), "index": j, "source": source}
            )
        else:
            text = col.astype(object).map(lambda v: as_text(v) if v == v else None).to_numpy()
            parts.append(_one_hot(text, cats))
            names += [f"{c}={v}" for v in cats]
            layout.append(
                {
                    "name": str(c),
                    "kind": "categories",
                    "categories": cats,
                    "indices": list(range(j, j + len(cats))),
                    "source": source,
                }
            )
    if not parts:
        raise DPError(
            f"the CSV has no feature columns besides the target {target!r} that a model can use; "
            "declare the categories of its text columns"
        )
    if learned:
        leaks.append(
            f"bounds of {', '.join(learned)} are {LEARNED_LABEL} (min/max or the values seen in the uploaded "
            "rows), as chosen"
        )
    if guessed:
        leaks.append(
            f"bounds of {', '.join(guessed)} are read from the uploaded rows (min/max or the values seen): "
            "that leaks a little about the extreme rows and is not covered by ε; declare public bounds"
        )
    if label_leak:
        leaks.append(label_leak)
    if not leaks and bounds:
        note = (
            "every column scaled with bounds declared public by the data owner (numeric ranges, categories "
            "and the label's classes); nothing was read from the rows"
        )
    else:
        note = "numeric features scaled to [-1, 1]" + ("" if guessed or learned else " with public bounds")
        if declared:
            note += f"; declared public: {', '.join(declared)}"
    if dropped:
        note += f"; dropped text columns with many values: {', '.join(dropped)}"
    return np.concatenate(parts, axis=1), y, names, classes, note, leaks, layout


def pd_unique(series):
    return pd.unique(pd.Series(series).astype(object))
