"""Datasets: the synthetic medical extract every page uses, bundled scikit-learn sets, CSV uploads.

The medical data is in the spirit of a hospital extract that "looks anonymised": no names, but
quasi-identifiers (age, sex, zip code, birth year, ethnicity, salary) that single people out, and
sensitive attributes (``has_rare_disease``, ``diagnosis``). ``medical_population`` adds the hidden
``person_id`` and ``name`` that an attacker would like to recover (ground truth for linkage).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import limits, storage
from ..errors import DPError
from ..validation import check_positive_int
from .filters import require_column

REFERENCE_YEAR = 2026
ZIP_CODES = np.array([10001, 10002, 10003, 10004, 10005])
ZIP_PROBS = np.array([0.30, 0.25, 0.20, 0.15, 0.10])
SEXES = np.array(["F", "M"])
SEX_PROBS = np.array([0.51, 0.49])
ETHNICITIES = np.array(["White", "Black", "Hispanic", "Asian", "Other"])
ETHNICITY_PROBS = np.array([0.45, 0.20, 0.20, 0.10, 0.05])
DIAGNOSES = np.array(["none", "hypertension", "diabetes", "asthma", "depression", "cancer"])

#: Public bounds of each numeric column: known without looking at the data (domain knowledge).
#: Use these, never min/max of the private rows, to clamp values or scale features.
PUBLIC_BOUNDS: dict[str, tuple[float, float]] = {
    "age": (18.0, 90.0),
    "birth_year": (float(REFERENCE_YEAR - 91), float(REFERENCE_YEAR - 18)),
    "salary": (0.0, 250_000.0),
    "has_rare_disease": (0.0, 1.0),
}

QUASI_IDENTIFIERS = ["age", "sex", "zip_code", "birth_year", "ethnicity", "salary"]
SENSITIVE_COLUMNS = ["has_rare_disease", "diagnosis"]
MEDICAL_COLUMNS = QUASI_IDENTIFIERS + SENSITIVE_COLUMNS

MAX_ROWS = limits.MEDICAL_MAX_ROWS

#: The re-identification story's release: 1,000 patients as in the source notebook, drawn with a fixed
#: seed so the default neighbour (34, zip 10001, salary $50-60k) is exactly one woman on every run.
REID_N = 1_000
REID_SEED = 31

_FIRST = np.array(
    "James Mary Robert Patricia John Jennifer Michael Linda David Elizabeth William Barbara Richard "
    "Susan Joseph Jessica Thomas Sarah Charles Karen Jan Peter Anna Sofia Lucas Emma Noah Olivia Liam "
    "Ava Mateo Mia Wei Li Aisha Omar Fatima Carlos Lucia Hiro Yuki Kwame Amara Ivan Olga Priya Arjun".split()
)
_LAST = np.array(
    "Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez "
    "Gonzalez Wilson Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris "
    "Sanchez Clark Ramirez Lewis Robinson Walker Young Allen King Wright Scott Torres Nguyen Hill "
    "Flores Green Adams Nelson Baker Hall Rivera Campbell Mitchell Carter Roberts Kees Jansen Bakker "
    "Visser Smit Chen Wang Kim Patel Singh Khan Ali Cohen Novak Kowalski Silva Costa Rossi Ferrari".split()
)


def _rng(seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def medical_population(n: int = 10_000, seed=0, *, with_names: bool = True) -> pd.DataFrame:
    """The hidden truth: the medical extract plus ``person_id`` and ``name`` (not released).

    Names are drawn last, so ``with_names=False`` gives the same rows, only faster.
    """
    n = check_positive_int(n, "n (number of rows)")
    if n > MAX_ROWS:
        raise DPError(f"n must be at most {MAX_ROWS:,} rows, got {n:,}")
    rng = _rng(seed)

    # Age 18-90: adult hospital population, skewed towards older patients.
    age = np.clip(np.rint(rng.normal(50.0, 17.0, n)), 18, 90).astype(np.int16)
    birthday_passed = rng.random(n) < 0.5
    birth_year = (REFERENCE_YEAR - age - (~birthday_passed)).astype(np.int16)
    sex = SEXES[rng.choice(2, size=n, p=SEX_PROBS)]
    zip_code = ZIP_CODES[rng.choice(len(ZIP_CODES), size=n, p=ZIP_PROBS)].astype(np.int32)
    ethnicity = ETHNICITIES[rng.choice(len(ETHNICITIES), size=n, p=ETHNICITY_PROBS)]

    # Salary rises with age to the mid-50s and drops after retirement; zip shifts it a little.
    a = age.astype(np.float64)
    career = 32_000 + 1_500 * np.minimum(a - 18, 37) - 900 * np.maximum(a - 65, 0)
    zip_shift = (zip_code - 10003) * 2_500.0
    salary = career + zip_shift + rng.normal(0, 9_000, n)
    salary = np.clip(np.rint(salary / 100) * 100, 12_000, 250_000).astype(np.int32)

    # Rare disease: about 0.3% at 18, ~6% at 90 (logistic in age).
    p_rare = 0.002 + 0.08 / (1 + np.exp(-(a - 70) / 8))
    has_rare_disease = rng.random(n) < p_rare

    # Diagnosis: age-dependent mixture.
    t = (a - 18) / 72
    w = np.stack(
        [
            0.55 - 0.35 * t,  # none
            0.05 + 0.25 * t,  # hypertension
            0.04 + 0.12 * t,  # diabetes
            np.full(n, 0.10),  # asthma
            0.14 - 0.06 * t,  # depression
            0.02 + 0.08 * t,  # cancer
        ],
        axis=1,
    )
    w /= w.sum(axis=1, keepdims=True)
    u = rng.random(n)[:, None]
    diag_idx = (u > np.cumsum(w, axis=1)).sum(axis=1)
    diagnosis = DIAGNOSES[np.minimum(diag_idx, len(DIAGNOSES) - 1)]

    columns = {"person_id": np.arange(n, dtype=np.int64)}
    if with_names:
        first = _FIRST[rng.integers(0, len(_FIRST), n)]
        last = _LAST[rng.integers(0, len(_LAST), n)]
        columns["name"] = (pd.Series(first, dtype=object) + " " + pd.Series(last, dtype=object)).to_numpy()

    return pd.DataFrame(
        {
            **columns,
            "age": age,
            "sex": pd.Categorical(sex, categories=SEXES),
            "zip_code": zip_code,
            "birth_year": birth_year,
            "ethnicity": pd.Categorical(ethnicity, categories=ETHNICITIES),
            "salary": salary,
            "has_rare_disease": has_rare_disease,
            "diagnosis": pd.Categorical(diagnosis, categories=DIAGNOSES),
        }
    )


def medical(n: int = 10_000, seed=0) -> pd.DataFrame:
    """The extract as a hospital would release it: no names, no ids; same rows as the population."""
    return medical_population(n, seed, with_names=False).drop(columns=["person_id"])


# --- the multi-visit extract: several rows per patient ----------------------------------------------------

#: Visits per patient in the multi-visit extract: 1 to 10, public by construction (the generator draws them so).
VISITS_MIN, VISITS_MAX = 1, 10
DEPARTMENTS = np.array(["emergency", "cardiology", "oncology", "general", "psychiatry"])
#: Public bounds of the visit-level numbers (domain knowledge, as for PUBLIC_BOUNDS).
VISIT_BOUNDS: dict[str, tuple[float, float]] = {
    "age": PUBLIC_BOUNDS["age"],
    "length_of_stay": (0.0, 30.0),
    "cost": (0.0, 50_000.0),
}
VISIT_COLUMNS = ["patient_id", "visit", "age", "sex", "zip_code", "department", "length_of_stay", "cost", "diagnosis"]


def medical_visits(n: int = 2_000, seed=0) -> pd.DataFrame:
    """The same patients as :func:`medical` (n, seed), one row per hospital visit: 1 to 10 visits each
    (:data:`VISITS_MIN`, :data:`VISITS_MAX`), older and sicker patients more often. ``patient_id`` marks the rows of
    one patient (a number in the hospital's own system: 0 … n−1 in the patients' order), so a release can bound
    each patient's contribution; a row-level release on this table protects one visit, not one patient.

    Drawn from its own stream (``seed`` + a fixed offset), so the patients' columns are exactly :func:`medical`'s."""
    n = check_positive_int(n, "n (number of patients)")
    if n > MAX_ROWS // VISITS_MAX:
        raise DPError(f"n must be at most {MAX_ROWS // VISITS_MAX:,} patients, got {n:,}")
    people = medical_population(n, seed, with_names=False)
    rng = np.random.default_rng([int(seed) if not isinstance(seed, np.random.Generator) else 0, 1_000_003])
    age = people["age"].to_numpy(dtype=np.float64)
    sick = (people["diagnosis"].astype(str) != "none").to_numpy() | people["has_rare_disease"].to_numpy()
    # Expected visits rise with age and illness: 1 + a binomial count, 1 to 10.
    p = np.clip(0.08 + 0.004 * (age - 18) + 0.25 * sick, 0.02, 0.95)
    visits = (VISITS_MIN + rng.binomial(VISITS_MAX - VISITS_MIN, p)).astype(np.int64)
    rows = np.repeat(np.arange(n), visits)
    m = int(rows.size)
    visit = (np.arange(m) - np.repeat(np.cumsum(visits) - visits, visits) + 1).astype(np.int16)
    dept_w = np.where(sick[rows, None], [0.30, 0.25, 0.15, 0.20, 0.10], [0.45, 0.10, 0.02, 0.38, 0.05])
    dept = DEPARTMENTS[(rng.random(m)[:, None] > np.cumsum(dept_w, axis=1)).sum(axis=1).clip(0, len(DEPARTMENTS) - 1)]
    stay = np.clip(rng.poisson(np.where(sick[rows], 4.0, 1.5) + 0.03 * (age[rows] - 18)), 0, 30).astype(np.int16)
    cost = np.clip(np.rint((800 + 1_100 * stay + rng.gamma(2.0, 600.0, m)) / 10) * 10, 0, 50_000).astype(np.int32)
    return pd.DataFrame(
        {
            "patient_id": rows.astype(np.int64),
            "visit": visit,
            "age": people["age"].to_numpy()[rows],
            "sex": pd.Categorical(people["sex"].astype(str).to_numpy()[rows], categories=SEXES),
            "zip_code": people["zip_code"].to_numpy()[rows],
            "department": pd.Categorical(dept, categories=DEPARTMENTS),
            "length_of_stay": stay,
            "cost": cost,
            "diagnosis": pd.Categorical(people["diagnosis"].astype(str).to_numpy()[rows], categories=DIAGNOSES),
        }
    )


# --- bundled scikit-learn datasets (no network) -------------------------------------------------


@dataclass(frozen=True)
class TabularDataset:
    """Features, labels and public per-feature bounds for a bundled dataset."""

    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: list[str]
    target_names: list[str]
    lower: np.ndarray  # public lower bound per feature
    upper: np.ndarray  # public upper bound per feature
    bounds_note: str


#: Min and max of each feature as published in the dataset's description (UCI Wisconsin Diagnostic Breast
#: Cancer; the "Summary Statistics" table of scikit-learn's DESCR), in scikit-learn's feature order. Public
#: metadata typed in here once, never recomputed from the rows. The table is rounded to 3–4 digits, so a
#: few rows lie just outside it: the bounds used are these ranges widened on each side by a tenth of their
#: width (never below 0).
BREAST_CANCER_PUBLISHED_RANGES: tuple[tuple[str, float, float], ...] = tuple(
    (f"{kind} {feature}" if kind != "error" else f"{feature} error", lo, hi)
    for kind, rows in (
        (
            "mean",
            (
                (6.981, 28.11),
                (9.71, 39.28),
                (43.79, 188.5),
                (143.5, 2501.0),
                (0.053, 0.163),
                (0.019, 0.345),
                (0.0, 0.427),
                (0.0, 0.201),
                (0.106, 0.304),
                (0.05, 0.097),
            ),
        ),
        (
            "error",
            (
                (0.112, 2.873),
                (0.36, 4.885),
                (0.757, 21.98),
                (6.802, 542.2),
                (0.002, 0.031),
                (0.002, 0.135),
                (0.0, 0.396),
                (0.0, 0.053),
                (0.008, 0.079),
                (0.001, 0.03),
            ),
        ),
        (
            "worst",
            (
                (7.93, 36.04),
                (12.02, 49.54),
                (50.41, 251.2),
                (185.2, 4254.0),
                (0.071, 0.223),
                (0.027, 1.058),
                (0.0, 1.252),
                (0.0, 0.291),
                (0.156, 0.664),
                (0.055, 0.208),
            ),
        ),
    )
    for feature, (lo, hi) in zip(
        (
            "radius",
            "texture",
            "perimeter",
            "area",
            "smoothness",
            "compactness",
            "concavity",
            "concave points",
            "symmetry",
            "fractal dimension",
        ),
        rows,
    )
)


def load_breast_cancer() -> TabularDataset:
    """Wisconsin breast cancer (569 rows, 30 features, binary). Bundled with scikit-learn.

    Bounds: the published dataset description (UCI) gives each feature's range
    (:data:`BREAST_CANCER_PUBLISHED_RANGES`); we use those ranges, widened, as public metadata rather
    than statistics of the rows.
    """
    # lazy: scikit-learn takes ~1 s to import
    from sklearn.datasets import load_breast_cancer as _load

    d = _load()
    ranges = {name: (lo, hi) for name, lo, hi in BREAST_CANCER_PUBLISHED_RANGES}
    published = np.array([ranges[str(name)] for name in d.feature_names], dtype=np.float64)
    # widened on each side by a tenth of the published width (the table is rounded to 3-4 digits, so a row may lie
    # just outside it), never below 0 (these are lengths, areas and ratios), and not rounded out to whole numbers:
    # rounding made smoothness's [0.053, 0.163] into [0, 1], so a third of the features filled under a seventh of
    # their scaled range and DP-SGD's noise swamped them
    pad = 0.1 * (published[:, 1] - published[:, 0])
    lower = np.maximum(0.0, published[:, 0] - pad)
    upper = published[:, 1] + pad
    return TabularDataset(
        "breast_cancer",
        d.data.astype(np.float64),
        d.target.astype(np.int64),
        list(d.feature_names),
        list(d.target_names),
        lower,
        upper,
        "feature ranges as published in the dataset's UCI description (not computed from the rows), widened on each side by a tenth of their width",
    )


def load_digits() -> TabularDataset:
    """8x8 handwritten digits (1,797 images, 10 classes). Pixel range 0-16 is public."""
    # lazy: scikit-learn takes ~1 s to import
    from sklearn.datasets import load_digits as _load

    d = _load()
    nfeat = d.data.shape[1]
    return TabularDataset(
        "digits",
        d.data.astype(np.float64),
        d.target.astype(np.int64),
        [f"pixel_{i}" for i in range(nfeat)],
        [str(t) for t in d.target_names],
        np.zeros(nfeat),
        np.full(nfeat, 16.0),
        "pixel intensities are 0-16 by construction",
    )


# --- CSV uploads -----------------------------------------------------------------------------------

MAX_UPLOAD_BYTES = limits.UPLOAD_MAX_BYTES  # the names stay importable from here
MAX_UPLOAD_ROWS = limits.UPLOAD_MAX_ROWS
MAX_UPLOAD_COLUMNS = limits.UPLOAD_MAX_COLUMNS


def _header(data: bytes) -> list[str]:
    """The header row's names as written (pandas renames a repeated ``age`` to ``age.1`` before we see it)."""
    first = data[:1_000_000].decode("utf-8-sig", errors="replace")
    try:
        return next(csv.reader(io.StringIO(first)), [])
    except csv.Error:
        return []


def read_csv(source, *, max_bytes: int = MAX_UPLOAD_BYTES, max_rows: int = MAX_UPLOAD_ROWS) -> pd.DataFrame:
    """Read and validate a CSV (a path, bytes or a file-like object). Raises DPError with a clear message."""
    if isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    elif hasattr(source, "read"):
        data = source.read()
        if isinstance(data, str):
            data = data.encode()
    else:  # a path: a regular file only (a named pipe would hang the reader, a device never end)
        data = storage.read_user_file(source, max_bytes=max_bytes, what="CSV file")
    if len(data) > max_bytes:
        raise DPError(f"CSV is larger than {limits.mib(max_bytes)}; upload a sample of the rows")
    if not data.strip():
        raise DPError("CSV is empty; it needs a header row and at least one data row")
    try:
        df = pd.read_csv(io.BytesIO(data), nrows=max_rows + 1)
    except UnicodeDecodeError:
        raise DPError("CSV is not UTF-8 text; save it as UTF-8 CSV and upload again") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "unreadable"
        raise DPError(f"CSV could not be parsed ({first}); check delimiters and quoting") from None
    if len(df) > max_rows:
        raise DPError(f"CSV has more than {max_rows:,} rows; upload a sample of the rows")
    if df.shape[1] > MAX_UPLOAD_COLUMNS:
        raise DPError(f"CSV has {df.shape[1]} columns; at most {MAX_UPLOAD_COLUMNS} are supported")
    if len(df) == 0:
        raise DPError("CSV has a header but no data rows")
    unnamed = [c for c in df.columns if str(c).startswith("Unnamed:")]
    if unnamed and len(unnamed) == df.shape[1]:
        raise DPError("CSV has no header row; the first line must name the columns")
    if df.shape[1] == 1:  # "age;sex;label" read as one column: a CSV saved with another separator
        only = str(df.columns[0])
        sep = next((c for c in (";", "\t", "|") if c in only), None)
        if sep is not None:
            shown = {"\t": "tabs"}.get(sep, repr(sep))
            raise DPError(
                f"CSV has one column named {only[:40]!r}: the file separates values with {shown}, not commas; "
                "save it as comma-separated CSV (in a spreadsheet: CSV, comma delimited) and upload again"
            )
    names = [c.strip() for c in _header(data)]
    long = [str(c) for c in df.columns if len(str(c)) > limits.UPLOAD_MAX_NAME_CHARS]
    if long:
        raise DPError(
            f"CSV column name {long[0][:40] + '…'!r} is {len(long[0]):,} characters long; at most "
            f"{limits.UPLOAD_MAX_NAME_CHARS} are supported: shorten it and upload again"
        )
    dupes = sorted({c for c in names if c and names.count(c) > 1})
    if dupes:
        raise DPError(
            f"CSV has duplicate column names: {', '.join(map(repr, dupes))}; give each column its own "
            "name and upload again"
        )
    return df


def require_columns(df: pd.DataFrame, columns, what: str = "column") -> None:
    """Raise DPError naming a missing column and listing the available ones (:func:`filters.require_column`)."""
    for c in columns:
        require_column(df, c, what)


def to_csv_bytes(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False).encode()


def preview(df: pd.DataFrame, rows: int = 100) -> pd.DataFrame:
    """The first ``rows`` rows as a page's table can show them: a column of Python objects (integers too long for
    64 bits, mixed numbers and text) becomes text, which Streamlit's Arrow tables always hold — a 20-digit
    number read from a CSV failed the preview. Missing values stay missing; the data itself is untouched."""
    head = df.head(rows).copy()
    for c in head.columns:
        if head[c].dtype == object:
            head[c] = head[c].map(lambda v: v if v is None or (isinstance(v, float) and v != v) else str(v))
    return head
