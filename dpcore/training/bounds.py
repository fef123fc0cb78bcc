"""Public bounds of an uploaded table: what the data owner declares about each column *without reading its rows* —
a numeric range, a list of categories, the label's classes — or, as an explicit and labelled choice, bounds learned
from the rows ("learned from the data: not covered by ε").

One home for their form and checks; :mod:`dpcore.training.data` applies them. A column's bounds, as stored in a
run's config (``TrainConfig.bounds``, ``SweepConfig.bounds``: JSON), are one of

* ``{"lower": 0, "upper": 120}`` — a numeric range: values are clipped to it, then scaled to [-1, 1];
* ``{"categories": ["F", "M"]}`` — a text (or coded) column one-hot over these values, any other value all zeros;
  for the target column: the label's classes;
* ``{"from_data": true}`` — learned from the rows (min/max, or the values seen): not covered by ε, and said so.

A column with no entry is treated as before bounds existed: a range known to be public (``age``, ``salary``, …)
or else one learned from the rows, listed as a preprocessing leak. With every column declared the run has no
preprocessing leak, and its statement says the bounds were declared public.

Where they come from: the CLI (``--bounds col=lo:hi``, ``col=a,b,c``, ``col=from-data``; ``--bounds-file FILE.json``)
and the pages' editor (:func:`schema` gives it each column's kind and the only values it may pre-fill: public ones,
never the rows'). Column names and types (number or text) are read from the file as its schema; for the owner's
editor alone, also whether a number column holds only a few whole numbers (offered as codes first) and how many rows
fall outside what they declared (:func:`outside`) — neither goes into a run, a release or a statement.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from .. import limits
from ..errors import DPError

FROM_DATA = "from_data"
#: The CLI's word for the explicit choice of learning a column's bounds from the rows.
FROM_DATA_WORD = "from-data"
LEARNED_LABEL = "learned from the data: not covered by ε"
#: Largest magnitude of a declared range end: (x − lower)/(upper − lower) must stay finite.
MAX_ABS = 1e15


@dataclass(frozen=True)
class ColumnInfo:
    """One column of an upload as the bounds editor shows it: ``kind`` "number" or "text" (the file's schema) and
    ``public``: the bounds it may pre-fill (known public ranges and code lists; never read from the rows)."""

    name: str
    kind: str
    public: dict | None = None
    target: bool = False
    #: a number column holding a few whole numbers (a 0/1 flag, a code): the editor offers it as categories first
    codes: bool = False


#: At most this many distinct whole numbers, and a number column is shown as codes (categories) first.
FEW_VALUES = 5


def _public_default(name: str, kind: str) -> dict | None:
    from ..data import datasets  # lazy: pandas (~0.5 s); training.config imports this and Home imports that

    key = str(name).strip().lower()
    if kind == "number" and key in datasets.PUBLIC_BOUNDS:
        lo, hi = datasets.PUBLIC_BOUNDS[key]
        return {"lower": lo, "upper": hi}
    codes = {
        "sex": datasets.SEXES,
        "ethnicity": datasets.ETHNICITIES,
        "diagnosis": datasets.DIAGNOSES,
        "zip_code": datasets.ZIP_CODES,
    }
    if key in codes:
        return {"categories": [str(v) for v in codes[key]]}
    return None


def schema(source, target: str | None = None) -> list[ColumnInfo]:
    """Every column of an uploaded CSV (bytes or a path) with its kind and its public pre-fill; the target column
    last (its bounds are the label's classes)."""
    # lazy: pandas takes ~0.5 s to import
    import pandas as pd

    from ..data import datasets  # lazy: pandas, as above

    df = datasets.read_csv(source)
    out = []
    for c in df.columns:
        numeric = pd.api.types.is_numeric_dtype(df[c].dtype) or pd.api.types.is_bool_dtype(df[c].dtype)
        kind = "number" if numeric else "text"
        is_target = target is not None and str(c) == str(target)
        public = _public_default(str(c), kind)
        if is_target and public is not None and "categories" not in public:
            public = None  # a label's bounds are its classes, never a range
        codes = False
        if numeric and not is_target and not (public and "lower" in public):
            seen = pd.to_numeric(df[c], errors="coerce").dropna().unique()  # the owner's editor only: a default
            codes = 0 < len(seen) <= FEW_VALUES and all(float(v).is_integer() for v in seen)
        out.append(ColumnInfo(str(c), kind, public, is_target, codes))
    return sorted(out, key=lambda i: i.target)


def as_text(v) -> str:
    """A value as a category: text stripped; a whole number without '.0' (1.0 and 1 are the same code)."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v).strip()


# --- one column's bounds --------------------------------------------------------------------------------


def _number(value, what: str) -> float:
    try:
        f = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise DPError(f"{what} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(f) or abs(f) > MAX_ABS:
        raise DPError(f"{what} must be a finite number of at most {MAX_ABS:g} in size, got {value!r}")
    return f


def check_column(column: str, spec) -> dict:
    """One column's bounds in their stored form (see the module docstring), or a DPError that says what to fix."""
    name = f"bounds of column {column!r}"
    if not isinstance(spec, dict):
        raise DPError(f"{name} must be a range, categories or {FROM_DATA_WORD}, got {spec!r}")
    keys = set(spec)
    if keys == {FROM_DATA}:
        if spec[FROM_DATA] is not True:
            raise DPError(f"{name}: from_data must be true (or leave the column out)")
        return {FROM_DATA: True}
    if keys == {"lower", "upper"}:
        lo, hi = _number(spec["lower"], f"{name}: lower"), _number(spec["upper"], f"{name}: upper")
        if not lo < hi:
            raise DPError(f"{name}: lower must be below upper, got {lo:g} and {hi:g}")
        return {"lower": lo, "upper": hi}
    if keys == {"categories"}:
        cats = spec["categories"]
        if isinstance(cats, str) or not isinstance(cats, (list, tuple)):
            raise DPError(f"{name}: categories must be a list of values, got {cats!r}")
        cats = [str(c).strip() for c in cats]
        if not cats or any(not c for c in cats):
            raise DPError(f"{name}: give at least one category and no empty ones")
        if len(cats) > limits.QUERY_MAX_BINS:
            raise DPError(f"{name}: at most {limits.QUERY_MAX_BINS} categories, got {len(cats)}")
        dupes = sorted({c for c in cats if cats.count(c) > 1})
        if dupes:
            raise DPError(f"{name}: category {dupes[0]!r} is listed twice; list each value once")
        return {"categories": cats}
    raise DPError(f"{name} must be {{lower, upper}}, {{categories}} or {{from_data: true}}, got keys {sorted(keys)}")


def check(bounds) -> dict | None:
    """Every column's bounds checked (None: no bounds given). Keys are column names."""
    if bounds is None:
        return None
    if not isinstance(bounds, dict):
        raise DPError(f"bounds must map column names to their bounds, got {type(bounds).__name__}")
    if len(bounds) > limits.UPLOAD_MAX_COLUMNS:
        raise DPError(f"bounds name {len(bounds)} columns; an upload has at most {limits.UPLOAD_MAX_COLUMNS}")
    return {str(c): check_column(str(c), spec) for c, spec in bounds.items()}


# --- from the CLI and from files ------------------------------------------------------------------------


def parse_spec(text: str) -> tuple[str, dict]:
    """``"age=0:120"`` (a range), ``"sex=F,M"`` (categories), ``"income=from-data"`` (learned from the rows: not
    covered by ε) -> (column, bounds). A category holding ':' or ',' needs a bounds file."""
    col, sep, value = str(text).partition("=")
    col, value = col.strip(), value.strip()
    if not sep or not col or not value:
        raise DPError(f"--bounds takes COLUMN=LOW:HIGH, COLUMN=A,B,C or COLUMN={FROM_DATA_WORD}, got {text!r}")
    if value.lower() in (FROM_DATA_WORD, FROM_DATA):
        return col, {FROM_DATA: True}
    lo, colon, hi = value.partition(":")
    if colon and ":" not in hi:
        try:
            pair = {"lower": float(lo), "upper": float(hi)}
        except ValueError:
            pair = None  # not two numbers: categories that hold a ':'
        if pair is not None:
            return col, check_column(col, pair)
    if colon and "," not in value:  # "0:1:2", "0:1e": a mistyped range, never one category read as such
        raise DPError(
            f"--bounds {text!r}: a range is COLUMN=LOW:HIGH with two numbers (e.g. {col}=0:120); categories are "
            f"COLUMN=A,B,C; a single category holding ':' goes in a --bounds-file"
        )
    return col, check_column(col, {"categories": [v for v in value.split(",")]})


def _shorthand(column: str, spec):
    if isinstance(spec, str) and spec.strip().lower() in (FROM_DATA_WORD, FROM_DATA):
        return {FROM_DATA: True}
    if isinstance(spec, (list, tuple)):
        if len(spec) == 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in spec):
            return {"lower": spec[0], "upper": spec[1]}
        if all(isinstance(v, str) for v in spec):
            return {"categories": list(spec)}
        raise DPError(
            f"bounds of column {column!r}: give two numbers [low, high] or a list of category names "
            f'(text), or {{"categories": [...]}} for coded values; got {spec!r}'
        )
    return spec


def read_file(path) -> dict:
    """A bounds file: a JSON object mapping each column to ``[low, high]``, a list of category names,
    ``"from-data"``, or the stored form (``{"lower": …, "upper": …}``, ``{"categories": […]}``)."""
    p = Path(str(path))
    if not p.is_file():
        raise DPError(f"bounds file not found (or not a file): {p}")
    if p.stat().st_size > BOUNDS_FILE_MAX_BYTES:
        raise DPError(f"bounds file {p.name} is larger than 1 MB; it holds one entry per column")
    return read_bytes(p.read_bytes(), p.name)


BOUNDS_FILE_MAX_BYTES = 1_000_000


def read_bytes(raw: bytes, name: str = "bounds file") -> dict:
    """:func:`read_file` for a file's bytes (the pages' upload of a bounds file): the same forms, checks and words."""
    if len(raw) > BOUNDS_FILE_MAX_BYTES:
        raise DPError(f"bounds file {name} is larger than 1 MB; it holds one entry per column")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise DPError(
            f"bounds file {name} is not valid JSON ({type(exc).__name__}); write an object like "
            '{"age": [0, 120], "sex": ["F", "M"]}'
        ) from None
    if not isinstance(data, dict):
        raise DPError(f'bounds file {name} must hold a JSON object like {{"age": [0, 120], "sex": ["F", "M"]}}')
    return check({str(c): _shorthand(str(c), v) for c, v in data.items()}) or {}  # a dict in: a dict out


def from_cli(specs=(), path=None) -> dict | None:
    """``--bounds-file`` then each ``--bounds`` (a later one replaces an earlier one for the same column)."""
    out = dict(read_file(path)) if path else {}
    for text in specs or ():
        col, spec = parse_spec(text)
        out[col] = spec
    return out or None


# --- what a run's bounds mean ---------------------------------------------------------------------------


def declared(bounds: dict | None) -> list[str]:
    """Columns whose bounds were declared (a range or categories), not learned from the rows."""
    return [c for c, s in (bounds or {}).items() if FROM_DATA not in s]


def missing(columns: list[ColumnInfo], bounds: dict | None) -> list[str]:
    """Columns of ``columns`` with no bounds at all (neither declared nor explicitly learned from the rows)."""
    return [c.name for c in columns if c.name not in (bounds or {})]


def require_all(columns: list[ColumnInfo], bounds: dict | None) -> dict:
    """The page's rule: every column has bounds (declared, or explicitly learned from the rows); else a DPError
    naming what is missing."""
    gap = missing(columns, bounds)
    if gap:
        shown = ", ".join(gap[:6]) + (f" and {len(gap) - 6} more" if len(gap) > 6 else "")
        raise DPError(
            f"declare public bounds for {shown} (a range, or categories), or choose to learn the empty "
            f"ones from the rows ({LEARNED_LABEL})"
        )
    return check(bounds) or {}


def preprocessing(bounds: dict | None, note: str | None, leaks) -> dict:
    """What a run's statement says about its preprocessing: whether every bound was declared public (nothing about
    the scaling read from the rows), the run's own note, and each leak that ε does not cover."""
    leaks = [str(x) for x in (leaks or [])]
    if leaks:
        status = "partly read from the private rows: not covered by ε (see leaks)"
    elif bounds:
        status = "declared public by the data owner: nothing about the scaling was read from the rows"
    else:
        status = "public: the data set's known ranges and code lists, nothing read from the rows"
    return {"bounds": status, "declared_public": bool(bounds) and not leaks, "note": note, "leaks": leaks}


# --- the pages' editor ----------------------------------------------------------------------------------


def from_form(columns: list[ColumnInfo], values: dict, learn_rest: bool = False) -> dict:
    """Bounds from the editor's fields: ``values[name]`` is ``(lower, upper)`` for a number column (either may be
    None: not filled in) or the categories as comma-separated text (for a text column, the label, or a number column
    declared as codes, such as a 0/1 column). A column left empty is learned from the rows
    when ``learn_rest`` (the labelled choice), else left out (:func:`require_all` names it)."""
    out = {}
    for c in columns:
        v = values.get(c.name)
        if c.kind == "number" and not c.target and not isinstance(v, str):  # a number's range (text: its codes)
            lo, hi = v if isinstance(v, (tuple, list)) else (None, None)
            if lo is not None and hi is not None:
                out[c.name] = check_column(c.name, {"lower": lo, "upper": hi})
                continue
            if (lo is None) != (hi is None):
                raise DPError(f"column {c.name!r}: give both its lower and its upper bound (or neither)")
        else:
            cats = [x.strip() for x in str(v or "").split(",") if x.strip()]
            if cats:
                out[c.name] = check_column(c.name, {"categories": cats})
                continue
        if learn_rest:
            out[c.name] = {FROM_DATA: True}
    return out


#: Said wherever :func:`outside`'s counts are shown: they read the rows, so only their owner sees them.
OWNER_ONLY = "computed on your rows: not covered by ε, shown to you only"


def outside(source, b: dict | None) -> dict[str, dict]:
    """How many of the owner's rows fall outside each declared bound: ``{column: {"rows", "below", "above"}}`` for a
    range (those rows are clipped to it) and ``{column: {"rows", "other"}}`` for categories (those rows match none of
    them; for the label, the run refuses them). Columns learned from the data, or not declared, are left out.

    Computed on the rows (:data:`OWNER_ONLY`): for the data owner deciding their declaration, never part of a
    release, a statement or a stored run."""
    import pandas as pd  # lazy: pandas takes ~0.5 s to import

    from ..data import datasets  # lazy, as in schema

    df = datasets.read_csv(source)
    cols = {str(c): c for c in df.columns}
    out: dict[str, dict] = {}
    for name, spec in (b or {}).items():
        if name not in cols or FROM_DATA in spec:
            continue
        col = df[cols[name]]
        rows = int(col.notna().sum())
        if "lower" in spec:
            x = pd.to_numeric(col, errors="coerce")
            out[name] = {"rows": rows, "below": int((x < spec["lower"]).sum()), "above": int((x > spec["upper"]).sum())}
        elif "categories" in spec:
            text = col.dropna().map(as_text)
            out[name] = {"rows": rows, "other": int((~text.isin([str(v) for v in spec["categories"]])).sum())}
    return out


def outside_words(spec: dict, counts: dict | None) -> str | None:
    """:func:`outside`'s counts for one column in words ("3 of 500 rows above 90: clipped to 90"), None when every
    row fits."""
    if not counts:
        return None
    n, parts = counts["rows"], []
    if "lower" in spec:
        if counts["below"]:
            parts.append(f"{counts['below']:,} of {n:,} rows below {spec['lower']:g}: raised to {spec['lower']:g}")
        if counts["above"]:
            parts.append(f"{counts['above']:,} of {n:,} rows above {spec['upper']:g}: lowered to {spec['upper']:g}")
    elif counts.get("other"):
        parts.append(f"{counts['other']:,} of {n:,} rows match none of these categories")
    return "; ".join(parts) or None


def prefill(column: ColumnInfo):
    """What the editor shows for a column before its owner types: the public default, never the rows'."""
    p = column.public or {}
    if column.kind == "number" and not column.target:
        return (p.get("lower"), p.get("upper"))
    return ", ".join(p.get("categories") or [])


def status_words(columns: list[ColumnInfo], b: dict | None) -> str:
    """ "4 of 5 columns declared public · 1 learned from the data: not covered by ε · 0 missing"."""
    b = b or {}
    learned = sum(1 for c in columns if FROM_DATA in b.get(c.name, {}))
    done = sum(1 for c in columns if c.name in b) - learned
    gap = len(missing(columns, b))
    words = [f"{done} of {len(columns)} columns declared public"]
    if learned:
        words.append(f"{learned} {LEARNED_LABEL}")
    if gap:
        words.append(f"{gap} still to fill in")
    return " · ".join(words)
