"""What a synthetic table keeps: its one- and two-way marginals, the query console's standard questions, and a
model trained on it and tested on real rows it never saw — each next to the real table's own answer.

Marginal error, at the release's resolution (declared codes): every cell of a marginal holds a share of the
rows; the error is the largest difference between a synthetic and the real share, in percentage points. "2-way
marginals within ±k%" means every cell of every pair that matters is within k points of the real table
(``two_way_max``). Two real samples of the same population differ too: :func:`marginal_errors` of the real
table against a fresh sample of the same size is the floor no generator goes below.

These numbers are computed on the private rows and are **not covered by ε**: they describe the release for
its owner; the page and the report label them so.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd

from .. import limits
from ..data.filters import parse_finite
from ..errors import DPError
from ..queries import answering, model
from .schema import Schema


def _cells(codes: pd.DataFrame, cols, sizes) -> np.ndarray:
    """Shares of each cell of the marginal over ``cols`` (code -1 is a cell of its own: missing)."""
    x = np.stack([codes[c].to_numpy() + 1 for c in cols])  # -1 (missing) -> 0
    flat = np.ravel_multi_index(x, [s + 1 for s in sizes])
    counts = np.bincount(flat, minlength=int(np.prod([s + 1 for s in sizes])))
    return counts / max(len(codes), 1)


def cell_error(real_codes: pd.DataFrame, synthetic_codes: pd.DataFrame, cols, schema: Schema) -> float:
    """The largest difference, in percentage points, between a cell's share of the synthetic rows and its share
    of the real rows, over the marginal on ``cols``."""
    sizes = [schema.column(c).n_bins for c in cols]
    if not len(synthetic_codes):
        return 100.0
    return 100.0 * float(np.abs(_cells(real_codes, cols, sizes) - _cells(synthetic_codes, cols, sizes)).max())


def marginal_errors(real_codes: pd.DataFrame, synthetic_codes: pd.DataFrame, schema: Schema, pairs=()) -> dict:
    """Cell errors (percentage points) of every column's one-way marginal and of the two-way marginals of
    ``pairs`` (every pair when none are given), with their mean and maximum (None for a single column: no pair)."""
    one = {c: cell_error(real_codes, synthetic_codes, [c], schema) for c in schema.names}
    pairs = [tuple(p) for p in pairs] or list(itertools.combinations(schema.names, 2))
    two = {"+".join(p): cell_error(real_codes, synthetic_codes, list(p), schema) for p in pairs}
    return {
        "one_way": one,
        "two_way": two,
        "one_way_mean": float(np.mean(list(one.values()))),
        "one_way_max": float(max(one.values())),
        "two_way_mean": float(np.mean(list(two.values()))) if two else None,
        "two_way_max": float(max(two.values())) if two else None,
    }


# --- the console's standard questions ----------------------------------------------------------------------

#: The query console's standard questions on the medical data, as (label, unit, make_query arguments): the
#: console's default COUNT, and the questions its examples ask. Counts are compared as shares of the rows (the
#: synthetic table need not have the real number of rows).
STANDARD_QUESTIONS = (
    ("patients 65 or older", "% of rows", dict(kind="count", condition="age>=65")),
    ("patients with the rare disease", "% of rows", dict(kind="count", condition="has_rare_disease=true")),
    ("patients with diabetes", "% of rows", dict(kind="count", condition="diagnosis=diabetes")),
    ("women with hypertension", "% of rows", dict(kind="count", condition="diagnosis=hypertension", where=("sex=F",))),
    ("mean age", "years", dict(kind="mean", column="age", bounds=(18, 90))),
    ("mean salary", "$", dict(kind="mean", column="salary", bounds=(0, 250_000))),
    (
        "mean salary in zip code 10001",
        "$",
        dict(kind="mean", column="salary", bounds=(0, 250_000), where=("zip_code=10001",)),
    ),
)


def _query(kwargs: dict):
    return model.make_query(epsilon=1.0, **kwargs)  # ε is never spent: only the true answer is read


def _answer(df: pd.DataFrame, q) -> float:
    p = answering.prepare(df, q)
    if q.kind == "count":
        return 100.0 * float(p.true_value or 0) / max(len(df), 1)
    lo, hi = q.clamp  # a mean: the noisy-sum-over-count form's true value
    return (lo + hi) / 2 + float(p.true_sum or 0) / p.true_count if p.true_count else float("nan")


def standard_answers(real: pd.DataFrame, synthetic: pd.DataFrame) -> list[dict]:
    """The standard questions whose columns the synthetic table has: real answer, synthetic answer, error."""
    out = []
    for label, unit, kwargs in STANDARD_QUESTIONS:
        q = _query(kwargs)
        needed = {q.column, q.condition.column if q.condition else None, *(w.column for w in q.where)} - {None}
        if not needed <= set(synthetic.columns):
            continue
        r, s = _answer(real, q), _answer(synthetic, q)
        out.append({"question": label, "unit": unit, "real": r, "synthetic": s, "error": s - r})
    return out


# --- a model trained on synthetic rows, tested on real ones ---------------------------------------------------

#: The story's prediction task: is a patient's salary $60,000 or more, from age, sex, zip code and diagnosis?
#: Age drives salary in the medical data (a model on the real rows gets ~99%): a synthetic table that lost the
#: age–salary relation falls back towards always guessing "below".
STORY_TASK = {"target": "salary", "threshold": 60_000.0}


def _features(df: pd.DataFrame, schema: Schema, target: str) -> np.ndarray:
    parts = []
    for c in schema.columns:
        if c.name == target:
            continue
        if c.is_number:
            lo, hi = c.span
            x = pd.to_numeric(df[c.name], errors="coerce").to_numpy(dtype=float)
            parts.append(((np.clip(np.nan_to_num(x, nan=(lo + hi) / 2), lo, hi) - lo) / (hi - lo))[:, None])
        else:
            codes = c.encode(df[c.name])
            parts.append((codes[:, None] == np.arange(c.n_bins)[None, :]).astype(float))
    return np.hstack(parts)


def _labels(df: pd.DataFrame, task: dict, schema: Schema) -> np.ndarray:
    """A number column: whether it reaches ``threshold``; a category column (no threshold): its declared code
    (−1: missing or undeclared)."""
    if task.get("threshold") is None:
        return schema.column(task["target"]).encode(df[task["target"]])
    x = pd.to_numeric(df[task["target"]], errors="coerce").to_numpy(dtype=float)
    return np.nan_to_num(x, nan=-np.inf) >= task["threshold"]


def model_accuracy(train: pd.DataFrame, test: pd.DataFrame, schema: Schema, task: dict = STORY_TASK) -> float:
    """Test accuracy on ``test`` of a logistic regression trained on ``train`` (the analyst's own, non-DP model;
    one class only in ``train``: that class is always predicted)."""
    # lazy: scikit-learn takes ~1 s to import
    from sklearn.linear_model import LogisticRegression

    y, y_test = _labels(train, task, schema), _labels(test, task, schema)
    if not len(y) or not len(y_test):
        return float("nan")
    if (y == y[0]).all():
        return float(np.mean(y_test == y[0]))
    m = LogisticRegression(max_iter=1000).fit(_features(train, schema, task["target"]), y)
    return float(m.score(_features(test, schema, task["target"]), y_test))


def majority_accuracy(train: pd.DataFrame, test: pd.DataFrame, schema: Schema, task: dict) -> float:
    """Test accuracy on ``test`` of always answering ``train``'s most common class (the floor a model must beat)."""
    y, y_test = _labels(train, task, schema), _labels(test, task, schema)
    if not len(y) or not len(y_test):
        return float("nan")
    values, counts = np.unique(y, return_counts=True)
    return float(np.mean(y_test == values[np.argmax(counts)]))


# --- an upload's synthetic table (the re-identification page's "Your own data" tab) ---------------------------


def upload_task(schema: Schema, target: str | None, threshold=None) -> dict | None:
    """The model test of an upload's release: predict the declared column ``target`` from the other declared
    columns — a category column's value, or whether a number column reaches ``threshold`` (default: the middle of
    its declared bounds, which are public). None: no model test."""
    if target is None or not str(target).strip():
        return None
    col = schema.column(str(target))
    if len(schema.columns) < 2:
        raise DPError(
            f"a model predicts {col.name!r} from the other declared columns: declare at least one more column, "
            "or release without the model test"
        )
    if not col.is_number:
        if threshold is not None:
            raise DPError(
                f"column {col.name!r} is a category column: the model predicts its value, so leave the threshold out"
            )
        return {"target": col.name, "threshold": None, "text": f"{col.name} (its category)"}
    lo, hi = col.span
    t = (lo + hi) / 2 if threshold is None else parse_finite(threshold, f"threshold for {col.name!r}")
    if not lo < t <= hi:
        raise DPError(
            f"the threshold for {col.name!r} must be inside its declared bounds ({lo:g} to {hi:g}], got {t:g}"
        )
    return {"target": col.name, "threshold": float(t), "text": f"{col.name} ≥ {t:g}"}


#: What the upload's utility figures are, beside them (page, job result).
UPLOAD_NOT_COVERED = "computed on your private rows: not covered by ε"


def upload_utility(
    fitted: pd.DataFrame,
    held_out: pd.DataFrame | None,
    synthetic_codes: pd.DataFrame,
    synthetic: pd.DataFrame,
    schema: Schema,
    pairs=(),
    task: dict | None = None,
) -> dict:
    """What an upload's synthetic table keeps, for its owner: every declared column's 1-way marginal and the 2-way
    marginals of ``pairs`` (every pair when none), against the rows the generator read (``fitted``), at the declared
    bins; and with a ``task`` (:func:`upload_task`), the test accuracy on the ``held_out`` rows (which no release
    read) of a model trained on the synthetic rows, beside one trained on the fitted rows and always answering
    their most common class. Computed on the private rows: not covered by ε."""
    out: dict[str, Any] = {
        "marginals": marginal_errors(schema.encode(fitted), synthetic_codes, schema, pairs),
        "fitted_rows": int(len(fitted)),
        "held_out_rows": int(len(held_out)) if held_out is not None else 0,
        "model": None,
        "not_covered_by_epsilon": UPLOAD_NOT_COVERED,
    }
    if task is None:
        return out
    n = int(out["held_out_rows"])
    if n < limits.SYNTH_UTILITY_MIN_TEST_ROWS:
        out["model_note"] = (
            f"the held-out part has {n:,} rows; a model is tested on at least "
            f"{limits.SYNTH_UTILITY_MIN_TEST_ROWS:,}: upload more rows"
        )
        return out
    out["model"] = {
        "task": task["text"],
        "target": task["target"],
        "threshold": task["threshold"],
        "synthetic": model_accuracy(synthetic, held_out, schema, task),
        "real": model_accuracy(fitted, held_out, schema, task),
        "majority": majority_accuracy(fitted, held_out, schema, task),
    }
    return out
