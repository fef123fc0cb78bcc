"""Every limit in one place: widgets, shared links, the CLI, the docs and the tests read these.

A shared link can never ask for more than a widget allows (``pages/_ui.from_url`` clamps to these), and
the CLI refuses what the page would refuse. Sizes are capped so that one visitor cannot exhaust the
server: Streamlit runs every session in threads of one process, so a costly rerun slows every viewer.

The table in ``docs/operations/limits.md`` is checked against :func:`table` by a test: change a limit here and
the test tells you to update that page.
"""

from __future__ import annotations

import math
from typing import Any

from .errors import DPError

# --- privacy parameters -------------------------------------------------------------------------------
#: Smallest ε accepted anywhere: below it the noise scale overflows (ε = 1e-320 gave null draws).
EPSILON_MIN = 1e-6
#: Largest ε a widget or link offers (the differencing page's grid ends here).
EPSILON_MAX = 1_000.0

# --- seeds (pictures, data splits and tests only; never the noise of a release) ----------------------
SEED_MIN = 0
SEED_MAX = 2**32 - 1  # numpy's legacy range; anything a widget, link or the CLI takes

# --- data sizes ---------------------------------------------------------------------------------------
#: Rows of the synthetic medical data the CLI generates (`python -m dpcore data medical --n`).
MEDICAL_MAX_ROWS = 5_000_000
#: One upload limit for every page and the CLI's CSV reader. `.streamlit/config.toml`'s
#: server.maxUploadSize is the same number of MiB (a test checks it).
UPLOAD_MAX_MIB = 50
UPLOAD_MAX_BYTES = UPLOAD_MAX_MIB * 1024 * 1024
UPLOAD_MAX_ROWS = 1_000_000
UPLOAD_MAX_COLUMNS = 200
#: A column name is shown in titles, tables and menus: longer names are refused (shorten them).
UPLOAD_MAX_NAME_CHARS = 100

# --- differencing attack (page, links and CLI) --------------------------------------------------------
DIFFERENCING_MIN_N = 100
#: Population a link or widget may request. 5,000,000 cost ~20 s CPU and ~2 GB per rerun.
DIFFERENCING_MAX_N = 100_000
DIFFERENCING_MAX_MIN_GROUP = 10_000
DIFFERENCING_MAX_K_YEARS = 72.0  # the public age range 18–90
#: Simulated releases: the CLI may ask for this many; the page for fewer (it reruns on every click).
DIFFERENCING_MAX_TRIALS = 1_000_000
DIFFERENCING_PAGE_MAX_TRIALS = 200_000
DIFFERENCING_MAX_CURVE_CELLS = 20_000_000  # epsilons × trials in one vectorised simulation

# --- re-identification page (uniqueness, linkage) ----------------------------------------------------
REID_MIN_ROWS = 1_000
REID_MAX_ROWS = 200_000
LINKAGE_MAX_RECORDS = 10_000  # matching rows printed by `python -m dpcore linkage`

# --- DP synthetic data (dpcore/synth: the release, the re-identification page's study, the CLI) ------------
#: Rows a synthetic release reads (page, CLI): the generators' cost grows with rows (bench/synth.py).
SYNTH_MAX_ROWS = 200_000
#: Synthetic rows written by one release.
SYNTH_MAX_OUTPUT_ROWS = 200_000
#: Declared columns, and categories or bins per column: the generators' marginals grow with their product.
SYNTH_MAX_COLUMNS = 12
SYNTH_MAX_CATEGORIES = 100
#: ε of one synthetic release (page, study, CLI): below 0.01 the marginals are noise; above 100 nothing is hidden.
SYNTH_EPSILON_MIN = 0.01
SYNTH_EPSILON_MAX = 100.0
#: δ of one synthetic release (AIM, or MST under zCDP from the CLI): the page's largest choice. δ is the chance the
#: guarantee fails outright; `synth --delta 0.5` was accepted and released "ε = 1, δ = 0.5".
SYNTH_DELTA_MAX = 1e-5
#: The re-identification page's study: its ε choices, and how many ε and repetitions one study may run.
SYNTH_EPSILONS: tuple[float, ...] = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
SYNTH_STUDY_MAX_EPSILONS = 4
SYNTH_STUDY_MAX_REPETITIONS = 10
#: Held-out rows an upload's synthetic release needs before a model trained on it is tested on them (the page's
#: "Your own data" tab): on fewer, an accuracy is mostly chance.
SYNTH_UTILITY_MIN_TEST_ROWS = 20

# --- noise draws --------------------------------------------------------------------------------------
SIMULATED_DRAWS_MAX = 2_000_000  # plain-numpy pictures (dpcore.noise.mechanisms.MAX_SIMULATED_DRAWS)
RELEASE_DRAWS_MAX = 1_000_000  # secure draws through the release path (dpcore.noise.release.MAX_RELEASE_DRAWS)
#: Public candidates of one released quantile (each is scored against every row).
QUANTILE_MAX_CANDIDATES = 10_001

# --- released numbers (dpcore.noise.grid.check_release: the noise page, the console, the CLI) -------------
#: Largest |value|, |bound| or sensitivity a release takes: within it, every number in grid units is exact in int64
#: and every released value finite (±1e308 bounds once gave null answers, charged, and page tracebacks).
RELEASE_MAGNITUDE_MAX = 1e15
#: Δ (or a histogram's bin width) must be at least this × the largest |value| or |bound|: a float near 1e9 cannot
#: hold differences of 1e-9, so finer noise would vanish in the sum.
RELEASE_RESOLUTION = 1e-9
#: Smallest Δ (other than 0) a release takes: finer noise needs another unit.
RELEASE_SENSITIVITY_MIN = 1e-12

# --- noise page (its public row count n) ----------------------------------------------------------------
NOISE_ROWS_MIN = 100
NOISE_ROWS_MAX = 200_000

# --- query console and budget ledger (page, links, `query` and `budget` CLI) ------------------------
#: ε of one query: above this a release protects nobody (and exp(−ε) underflows in the interval maths).
QUERY_EPSILON_MAX = 100.0
#: Bins of a numeric histogram, and public categories of a histogram (plus "(other)").
QUERY_MAX_BINS = 200
#: Who pays for privacy by subgroup (a run's test accuracy per category of its categorical feature columns): at
#: most this many columns, each with at most this many categories (a column with more is not split).
SUBGROUP_MAX_COLUMNS = 6
SUBGROUP_MAX_GROUPS = 20
#: A budget's total ε (the ledger stores micro-ε integers).
BUDGET_EPSILON_MAX = 1_000_000.0
#: Synthetic medical data on the console: rows and seed (each (rows, seed) is its own registered dataset).
QUERY_CONSOLE_MIN_ROWS = 100
QUERY_CONSOLE_MAX_ROWS = 200_000
QUERY_CONSOLE_SEED_MAX = 10_000
#: Events of a quota's history the console shows (the latest; the visitors' shared history grows with every click).
HISTORY_ROWS_SHOWN = 500
#: Columns whose leave-one-out row sketches are kept for the near-duplicate check when registering data.
QUERY_MAX_SKETCH_COLUMNS = 64
#: The built-in synthetic data (each size and seed is its own population): its cap, the per-query cap, and the
#: visitors' shared quota inside the cap (no sign-in). δ: 1/(10·n), the cap's and the visitors' quota's.
BUILTIN_EPSILON_CAP = 20.0
BUILTIN_MAX_QUERY_EPSILON = 5.0
VISITORS_EPSILON_QUOTA = 10.0

# --- planned releases (the "Plan a release" page, `plan` CLI) ------------------------------------------------
#: Statistics in one plan, ε of one plan (its total), rows kept per person, and the cells one statistic may release
#: (its groups × its bins: each cell is one noisy number).
PLAN_MAX_STATISTICS = 20
PLAN_EPSILON_MAX = 100.0
PLAN_MAX_ROWS_PER_PERSON = 100
PLAN_MAX_CELLS = 10_000
#: A plan file read by `plan --plan FILE` or the page's upload.
PLAN_FILE_MAX_BYTES = 200_000

# --- identities (admin token, analysts' keys) ----------------------------------------------------------------
ADMIN_TOKEN_MIN_CHARS = 16
ANALYST_KEY_BYTES = 24  # random bytes in a new analyst key (shown once; a salted scrypt hash is stored)
#: Identical queries k in a composition curve: the page draws up to the first, the library computes the second.
COMPOSITION_PAGE_K_MAX = 10_000
COMPOSITION_K_MAX = 100_000

# --- background jobs ----------------------------------------------------------------------------------
WORKERS_MAX = 8  # worker processes on this machine (`jobs workers --start`, `sweep --workers`)
JOBS_LIST_MAX = 1_000  # `jobs list --limit`
#: A visitor's share of the queue (a browser session or a signed-in user; the CLI operator is not limited):
#: jobs waiting for a worker at once. The default demo sweep is 33 jobs; 50 leave room for a few runs beside it.
JOBS_QUEUED_PER_OWNER = 50
#: Model trainings one sweep click may start: points × (1 + LiRA shadows). The default demo trains 33 × 9 = 297;
#: the page's largest settings would train 130 × 65 = 8,450 (about 280 CPU-hours on 2 cores).
SWEEP_MAX_TRAININGS = 400
#: Characters in a run's or sweep's name (shown in pickers, tables and the report, always as text).
JOB_NAME_MAX_CHARS = 100

# --- models (the checks live in dpcore.training; mirrored here for the docs) -----------------------------
MODEL_MAX_HIDDEN = 4_096
MODEL_MAX_PARAMS = 2_000_000
TRAINING_EPOCHS_MAX = 10_000  # a sweep's non-private baselines train more epochs, capped here too
#: Learning rate and clip norm C of a training run (page, CLI, sweeps): above these the weights or the noise
#: (σ·C) overflow float32 (`train --lr 1e308` ended in a torch traceback).
TRAINING_LR_MAX = 1_000.0
TRAINING_CLIP_MAX = 1_000.0
#: A DP-SGD noise multiplier σ, given or stated (training, audit page and CLI, the accountants): below it the
#: accountants divide by zero (1e-320) or need terabytes (PRV at 0.001); above it a run is all noise (1e308
#: overflowed the RDP accountant). The audit page's field and training's former ceiling.
NOISE_MULTIPLIER_MIN = 0.01
NOISE_MULTIPLIER_MAX = 1e4
#: Points of the PRV accountant's grid (its memory and time grow with ε): 6.6 million took 4 s and 1.4 GB (σ = 0.2,
#: q = 1/6, 180 steps: ε ≈ 590), and σ = 0.05 there asked numpy for 64 GiB; 2 million is about a second. Past it, ε
#: comes from RDP or not at all, and calibration stops at the least noise within it.
PRV_MAX_POINTS = 2_000_000
#: DP-SGD steps a stated mechanism may have (audit page and CLI; the advisor takes the same): with the RDP pre-check
#: below ε_max this keeps the exact PLD ceiling under about a second (σ = 0.5, q = 1, 10⁶ steps took 116 s).
DPSGD_MAX_STEPS = 1_000_000
#: Rows of a scores file on "Audit your model" and `audit --scores`: the split audit took 27 s on 10⁶ rows and the
#: one-run audit 7 s on 10⁵ canaries (its δ term grows with the canaries): at most ~10 s of one page's rerun.
AUDIT_MAX_ROWS = 100_000
#: Members and non-members each sweep point attacks and audits (its LiRA/RMIA pool and its per-record exposure, kept
#: with the sweep): a sample of this many when the data has more (the built-in data sets have at most 2,000).
SWEEP_AUDIT_MAX_PER_SIDE = 10_000
#: Canaries one training run (or sweep point) may plant for its own one-run audit (the sweep's form has the same cap).
RUN_CANARIES_MAX = 1000

# --- the ε advisor (page, links and `advise`) ------------------------------------------------------------
#: (Public bounds and Δ of a SUM or MEAN target take the release's limit, RELEASE_MAGNITUDE_MAX: the advice opens
#: the console with them. ±1e308 made the sensitivity infinite; ±1e30 broke the page.)
#: Public rows n of a MEAN target.
ADVISOR_MAX_ROWS = 1_000_000_000
#: DP-SGD: the smallest sample rate q (one record in a million per batch) and the most steps T.
ADVISOR_SAMPLE_RATE_MIN = 1e-6
ADVISOR_MAX_STEPS = 1_000_000

# --- caches -------------------------------------------------------------------------------------------
#: st.cache_data(max_entries=...) for any cached computation whose size a visitor chooses.
CACHE_MAX_ENTRIES = 8

# --- ε and δ grids (sliders, links and the tables/curves drawn beside them) ------------------------------
#: Noise page: log-spaced ε choices for its slider (about 0.01 – 20), δ choices for the Gaussian mechanisms,
#: a few ε values compared side by side, and the rows of its small table.
NOISE_EPSILON_GRID: tuple[float, ...] = (
    0.01,
    0.02,
    0.03,
    0.05,
    0.07,
    0.1,
    0.15,
    0.2,
    0.3,
    0.5,
    0.7,
    1.0,
    1.5,
    2.0,
    3.0,
    4.0,
    5.0,
    7.0,
    10.0,
    15.0,
    20.0,
)
NOISE_DELTA_GRID: tuple[float, ...] = (1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
NOISE_COMPARE_EPSILONS: tuple[float, ...] = (0.5, 1.0, 5.0)
NOISE_TABLE_EPSILONS: tuple[float, ...] = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0)
#: Re-identification page: ε values of the DP simulation's curve (its slider offers the same ones).
REID_EPSILONS: tuple[float, ...] = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
#: Distinct sensitive values the re-identification DP simulation takes (one noisy count per value).
LINKAGE_MAX_SENSITIVE_VALUES = 200

# --- files a user names on the command line ------------------------------------------------------------
#: A privacy statement read by `statement --verify` (a real one is a few hundred KB at most).
STATEMENT_MAX_BYTES = 5_000_000

# --- background job store -----------------------------------------------------------------------------
JOBS_LOG_MAX_BYTES = 5_000_000  # workers.log is rotated (one old copy) when a worker starts past this size
JOBS_MAX_HISTORY = 10_000  # progress history entries kept per job (live charts); later ones update progress only


def mib(n_bytes: int) -> str:
    """Bytes as MiB for messages: ``52428800`` -> ``'50 MiB'``."""
    value = n_bytes / (1024 * 1024)
    return f"{value:.0f} MiB" if value == int(value) else f"{value:.1f} MiB"


def upload_size() -> str:
    """The upload limit as every page writes it: ``'50 MB'``, the words of Streamlit's own uploader beside it.

    server.maxUploadSize is a number of MB that Streamlit's uploader counts in the visitor's operating system's
    unit, as their file browser shows sizes: it writes "50MB per file" everywhere, and refuses a larger file
    ("File must be 50.0MB or smaller.") at 50,000,000 bytes on macOS and Linux (MB of 10^6 bytes, as Finder
    shows them) and at 52,428,800 on Windows (2^20 bytes, as Explorer shows them). The server and the CLI's CSV
    reader allow :data:`UPLOAD_MAX_BYTES` (50 MiB, the larger), so a file the uploader accepts is never refused
    later; "50 MiB" on a page would promise 2.4 MB more than a Mac's browser takes. The CLI says MiB (:func:`mib`).
    """
    return f"{UPLOAD_MAX_MIB} MB"


def check_int_range(value: Any, lo: int, hi: int, name: str, hint: str = "") -> int:
    """A whole number in ``[lo, hi]`` or a DPError that names the range (bools, NaN, 1.5 refused)."""
    if isinstance(value, bool):
        raise DPError(f"{name} must be a whole number from {lo:,} to {hi:,}, got {value!r}")
    if isinstance(value, str):  # "99999999999999999999999": exact, not rounded through a float
        try:
            value = int(value.strip())
        except ValueError:
            pass
    try:
        f = value if isinstance(value, int) else float(value)
        ok = isinstance(f, int) or (math.isfinite(f) and f == int(f))
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise DPError(f"{name} must be a whole number from {lo:,} to {hi:,}, got {value!r}")
    v = int(f)
    if not lo <= v <= hi:
        raise DPError(f"{name} must be from {lo:,} to {hi:,}, got {v:,}" + (f"; {hint}" if hint else ""))
    return v


def check_seed(value: Any, name: str = "seed") -> int:
    """A seed in 0 .. 2³²−1 (what numpy, the widgets and the links accept)."""
    return check_int_range(value, SEED_MIN, SEED_MAX, name, "seeds are whole numbers like 0, 1, 42")


def _power(x: float) -> str:
    """1e15, 1e-9 (a power of ten as the docs write it)."""
    return f"{x:.0e}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


def table() -> list[tuple[str, str]]:
    """(what, limit) rows for the docs' limits table (docs/operations/limits.md)."""
    return [
        (
            "Upload size: pages (Streamlit's uploader, MB as the visitor's system counts them) / CLI CSV reader",
            f"{upload_size()} / {mib(UPLOAD_MAX_BYTES)}",
        ),
        ("Rows in an uploaded CSV", f"{UPLOAD_MAX_ROWS:,}"),
        ("Columns in an uploaded CSV", f"{UPLOAD_MAX_COLUMNS:,}"),
        ("Characters in a column name of an uploaded CSV", f"{UPLOAD_MAX_NAME_CHARS:,}"),
        ("Model size (hidden units / parameters)", f"{MODEL_MAX_HIDDEN:,} / {MODEL_MAX_PARAMS:,}"),
        (
            "Training learning rate / clip norm C (page, CLI, sweeps)",
            f"{TRAINING_LR_MAX:,.0f} / {TRAINING_CLIP_MAX:,.0f}",
        ),
        (
            "Members and non-members a sweep point attacks and audits (each; a sample past it)",
            f"{SWEEP_AUDIT_MAX_PER_SIDE:,}",
        ),
        (
            "Audit your model: rows of a scores file / DP-SGD steps of a stated mechanism (page, CLI)",
            f"{AUDIT_MAX_ROWS:,} / {DPSGD_MAX_STEPS:,}",
        ),
        ("ε accepted (widgets and links)", f"{EPSILON_MIN:g} to {EPSILON_MAX:g}"),
        (
            "DP-SGD noise multiplier σ / grid points of the PRV accountant (past them, use RDP or more noise)",
            f"{NOISE_MULTIPLIER_MIN:g} to {NOISE_MULTIPLIER_MAX:g} / {PRV_MAX_POINTS:,}",
        ),
        ("Seeds (pictures, splits, tests)", f"{SEED_MIN} to {SEED_MAX:,}"),
        ("Synthetic medical rows (`data medical --n`)", f"{MEDICAL_MAX_ROWS:,}"),
        ("Differencing population (page, links, CLI)", f"{DIFFERENCING_MIN_N:,} to {DIFFERENCING_MAX_N:,}"),
        (
            "Differencing simulated releases (page / CLI)",
            f"{DIFFERENCING_PAGE_MAX_TRIALS:,} / {DIFFERENCING_MAX_TRIALS:,}",
        ),
        ("Re-identification rows (page, links)", f"{REID_MIN_ROWS:,} to {REID_MAX_ROWS:,}"),
        ("DP synthetic data: rows read / rows written (page, CLI)", f"{SYNTH_MAX_ROWS:,} / {SYNTH_MAX_OUTPUT_ROWS:,}"),
        ("DP synthetic data: columns / categories or bins per column", f"{SYNTH_MAX_COLUMNS} / {SYNTH_MAX_CATEGORIES}"),
        ("DP synthetic data: ε of one release", f"{SYNTH_EPSILON_MIN:g} to {SYNTH_EPSILON_MAX:g}"),
        (
            "DP synthetic data study (re-identification page): ε values / repetitions",
            f"{SYNTH_STUDY_MAX_EPSILONS} / {SYNTH_STUDY_MAX_REPETITIONS}",
        ),
        (
            "DP synthetic table of an upload: held-out rows needed to test a model trained on it",
            f"{SYNTH_UTILITY_MIN_TEST_ROWS:,}",
        ),
        ("Simulated noise draws / secure release draws", f"{SIMULATED_DRAWS_MAX:,} / {RELEASE_DRAWS_MAX:,}"),
        ("Public candidates of one released quantile", f"{QUANTILE_MAX_CANDIDATES:,}"),
        (
            "Planned release: statistics / total ε / rows kept per person / cells of one statistic / plan file",
            f"{PLAN_MAX_STATISTICS} / {PLAN_EPSILON_MAX:g} / {PLAN_MAX_ROWS_PER_PERSON} / {PLAN_MAX_CELLS:,} / "
            f"{PLAN_FILE_MAX_BYTES:,} bytes",
        ),
        (
            "Size of a released value, bound or sensitivity Δ (noise page, console, CLI)",
            f"at most {_power(RELEASE_MAGNITUDE_MAX)}; Δ 0 or at least {_power(RELEASE_SENSITIVITY_MIN)}, and Δ (or a "
            f"bin width) at least {_power(RELEASE_RESOLUTION)} × the largest value or bound",
        ),
        ("Noise page rows n (public)", f"{NOISE_ROWS_MIN:,} to {NOISE_ROWS_MAX:,}"),
        ("Background worker processes", f"{WORKERS_MAX}"),
        (
            "Queued jobs per visitor (browser session or signed-in user) / model trainings per sweep click",
            f"{JOBS_QUEUED_PER_OWNER:,} / {SWEEP_MAX_TRAININGS:,}",
        ),
        ("Characters in a run's or sweep's name", f"{JOB_NAME_MAX_CHARS:,}"),
        (
            "ε of one private query / of a budget total (query console, CLI)",
            f"{QUERY_EPSILON_MAX:g} / {BUDGET_EPSILON_MAX:,.0f}",
        ),
        ("Histogram bins or public categories (query console, CLI)", f"{QUERY_MAX_BINS:,}"),
        (
            "Who pays by subgroup: categorical columns split / categories of one (a run's test accuracy per group)",
            f"{SUBGROUP_MAX_COLUMNS} / {SUBGROUP_MAX_GROUPS}",
        ),
        (
            "Built-in synthetic data, each size and seed: dataset cap / visitors' quota / per query (ε)",
            f"{BUILTIN_EPSILON_CAP:g} / {VISITORS_EPSILON_QUOTA:g} / {BUILTIN_MAX_QUERY_EPSILON:g} "
            "(δ: 1/(10·n) for both)",
        ),
        ("Events of a query history shown on the console (the latest)", f"{HISTORY_ROWS_SHOWN:,}"),
        (
            "Admin token (characters, at least) / analyst key (random bytes)",
            f"{ADMIN_TOKEN_MIN_CHARS} / {ANALYST_KEY_BYTES}",
        ),
        (
            "Query console synthetic rows / seeds",
            f"{QUERY_CONSOLE_MIN_ROWS:,} to {QUERY_CONSOLE_MAX_ROWS:,} / 0 to {QUERY_CONSOLE_SEED_MAX:,}",
        ),
        ("Statement file read by `statement --verify`", f"{STATEMENT_MAX_BYTES:,} bytes"),
        (
            "Advisor: rows n / DP-SGD sample rate / steps (its bounds and Δ: as a release's)",
            f"{ADVISOR_MAX_ROWS:,} / {ADVISOR_SAMPLE_RATE_MIN:g} to 1 / {ADVISOR_MAX_STEPS:,}",
        ),
    ]
