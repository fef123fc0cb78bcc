"""One DP synthetic release: OpenDP's marginal-based generators (MST, AIM) fitted to noisy marginals of the
declared codes, then rows drawn from the fitted model.

What is private and what is post-processing:

* **The measurement** (everything that reads the rows) is one OpenDP measurement: noisy one-way marginals,
  the generator's noisy choices of which marginals to measure (report-noisy-max) and the noisy marginals
  themselves, all drawn by OpenDP's exact samplers from a secure source (discrete Laplace for pure ε, discrete
  Gaussian under zCDP). Its privacy map at one record added or removed (symmetric distance 1) is the ε of the
  statement — OpenDP's own number, checked here to be at most the ε asked for. Nothing seeds it; nothing
  stored or shown reproduces it.
* **Post-processing** (no row is read): Private-PGM fits a graphical model to the noisy marginals (mirror
  descent, deterministic), draws the synthetic rows from it (mbi samples with numpy's global generator, which
  :func:`_seeded` seeds with ``sample_seed`` and restores), and numbers are drawn uniformly inside their
  declared bins. A seed here changes which rows are drawn from the DP model, never what the model learned.
  Rows are drawn independently (mbi's ``"sample"``): its default ``"round"`` assigns each column by the rows'
  order inside their parents' groups, which ties together columns the model holds independent (sex and
  diagnosis, independent in the model, came out 36% "F, none" against 21%).

Pure ε (δ = 0) runs MST with Laplace noise; with δ > 0 a generator runs under zCDP (Gaussian noise) at the
largest ρ whose OpenDP conversion to (ε, δ)-DP stays within ε. AIM needs δ > 0 (in OpenDP 0.16 its selection
step fails under pure ε). Every column must be declared (:mod:`dpcore.synth.schema`), so no key is learned from
the data and δ is spent on nothing but the zCDP conversion.

OpenDP marks its generators and the Python-defined measurements inside them as ``contrib`` (not yet through
its proof review): :func:`_opendp` enables that feature, and the statement says so.
"""

from __future__ import annotations

import math
import os
import secrets
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .. import limits, storage
from ..errors import Cancelled, DPError
from ..validation import check_delta
from .schema import Schema

GENERATORS = ("mst", "aim")
GENERATOR_NAMES = {"mst": "MST (McKenna, Miklau & Sheldon 2021)", "aim": "AIM (McKenna et al. 2022)"}
#: What the synthetic rows' count is, when none is declared: the generator's own (DP) estimate of the rows.
ROWS_ESTIMATED = "the generator's DP estimate of the number of records"
_REDRAWS = 30  # rounds of redrawing rows that came out with a missing value (a complete schema)


def check_generator(generator) -> str:
    g = str(generator).strip().lower()
    if g not in GENERATORS:
        raise DPError(f"generator must be one of {', '.join(GENERATORS)}, got {generator!r}")
    return g


def check_synth_epsilon(epsilon) -> float:
    from ..validation import check_epsilon

    eps = check_epsilon(epsilon)
    if not limits.SYNTH_EPSILON_MIN <= eps <= limits.SYNTH_EPSILON_MAX:
        raise DPError(
            f"epsilon of a synthetic release must be from {limits.SYNTH_EPSILON_MIN:g} to "
            f"{limits.SYNTH_EPSILON_MAX:g}, got {eps:g}; try 1"
        )
    return eps


@dataclass(frozen=True)
class SynthConfig:
    """A release's settings. ``pairs``: the column pairs that matter (AIM's workload; the 2-way marginals the
    utility is judged on). ``rows``: synthetic rows, or None for the generator's DP estimate. ``sample_seed``:
    post-processing only (None: drawn from a secure source and recorded)."""

    epsilon: float
    delta: float = 0.0
    generator: str = "mst"
    rows: int | None = None
    pairs: tuple[tuple[str, str], ...] = ()
    sample_seed: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_synth_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=True))
        g = check_generator(self.generator)
        object.__setattr__(self, "generator", g)
        if g == "aim" and self.delta == 0:
            raise DPError(
                "AIM needs δ > 0 (it measures with Gaussian noise under zCDP); give a delta such as 1e-6, "
                "or use the MST generator for pure ε (δ = 0)"
            )
        if self.rows is not None:
            object.__setattr__(
                self, "rows", limits.check_int_range(self.rows, 1, limits.SYNTH_MAX_OUTPUT_ROWS, "synthetic rows")
            )
        pairs = tuple(tuple(str(c) for c in p) for p in self.pairs)
        for p in pairs:
            if len(p) != 2 or p[0] == p[1]:
                raise DPError(f"a column pair names two different columns, e.g. age+diagnosis; got {'+'.join(p)!r}")
        object.__setattr__(self, "pairs", tuple(dict.fromkeys(pairs)))
        if self.sample_seed is not None:
            object.__setattr__(self, "sample_seed", limits.check_seed(self.sample_seed, "sample seed"))

    def check(self, schema: Schema) -> SynthConfig:
        for p in self.pairs:
            for c in p:
                schema.column(c)
        return self

    def to_dict(self) -> dict:
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "generator": self.generator,
            "rows": self.rows,
            "pairs": [list(p) for p in self.pairs],
            "sample_seed": self.sample_seed,
        }

    @classmethod
    def from_dict(cls, d: dict) -> SynthConfig:
        d = dict(d)
        d["pairs"] = tuple(tuple(p) for p in d.get("pairs") or ())
        return cls(**{k: d[k] for k in ("epsilon", "delta", "generator", "rows", "pairs", "sample_seed") if k in d})


def parse_pairs(text) -> tuple[tuple[str, str], ...]:
    """``"age+diagnosis,age+salary"`` -> (("age", "diagnosis"), ("age", "salary"))."""
    if text is None or not str(text).strip():
        return ()
    out = []
    for item in str(text).split(","):
        parts = [p.strip() for p in item.split("+")]
        if len(parts) != 2 or not all(parts):
            raise DPError(f"a column pair is two names joined by '+', e.g. age+diagnosis; got {item.strip()!r}")
        out.append(tuple(parts))
    return tuple(out)


# --- OpenDP ------------------------------------------------------------------------------------------------

_SETUP = threading.Lock()
_READY = False


def _opendp():
    """opendp.prelude with the ``contrib`` feature on (the generators are contrib in OpenDP 0.16), and jax (the
    model fits) on the CPU with its compiled kernels cached under ``$DP_EXPLORER_HOME/cache/jax`` — a fresh
    worker then skips most of the ~20 s of compiling a first release costs."""
    global _READY
    with _SETUP:
        if not _READY:
            os.environ.setdefault("JAX_PLATFORMS", "cpu")
            import jax

            try:
                jax.config.update("jax_compilation_cache_dir", str(storage.subdir("cache") / "jax"))
                jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
            except storage.StorageError:
                pass  # a read-only home: compile every time, nothing else changes
            import opendp.prelude as dp

            dp.enable_features("contrib")
            _READY = True
    import opendp.prelude as dp

    return dp


@dataclass(frozen=True)
class Plan:
    """A built measurement (data-independent: the schema, the generator and the budget decide it)."""

    measurement: object
    epsilon: float  # OpenDP's privacy map at one record added or removed
    delta: float
    rho: float | None  # zCDP budget the generator ran under (δ > 0), else None
    noise: str

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta, "rho": self.rho, "noise": self.noise}


_PLANS: OrderedDict = OrderedDict()
_PLANS_MAX = 8


def _domain(dp, schema: Schema):
    return dp.lazyframe_domain(
        [dp.series_domain(c.name, dp.option_domain(dp.atom_domain(T="i64"))) for c in schema.columns]
    )


def _algorithm(dp, schema: Schema, cfg: SynthConfig):
    if cfg.generator == "mst":
        return dp.mbi.MST()
    queries = [dp.mbi.Count(p) for p in cfg.pairs] or 2  # the pairs that matter, else every pair
    return dp.mbi.AIM(queries=queries)


def rho_for(epsilon: float, delta: float) -> float:
    """The largest zCDP ρ whose OpenDP conversion to (ε, δ)-DP gives at most ``epsilon`` at ``delta``."""
    dp = _opendp()

    def eps_at(rho: float) -> float:
        gauss = dp.m.make_gaussian(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=1.0)
        return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(gauss), delta).map(math.sqrt(2 * rho))[0]

    lo, hi = 0.0, max(epsilon, 1.0)
    while eps_at(hi) <= epsilon:
        lo, hi = hi, hi * 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if eps_at(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


def plan(schema: Schema, cfg: SynthConfig) -> Plan:
    """The measurement for this schema and config (built once per process and kept: building takes seconds)."""
    key = (schema.key(), cfg.generator, cfg.epsilon, cfg.delta, cfg.pairs)
    if key in _PLANS:
        _PLANS.move_to_end(key)
        return _PLANS[key]
    dp = _opendp()
    from opendp.domains import _lazyframe_from_domain
    from opendp.extras.mbi import make_contingency_table

    domain = _domain(dp, schema)
    t_plan = dp.t.make_stable_lazyframe(
        domain, dp.symmetric_distance(), lazyframe=_lazyframe_from_domain(domain), MO="FrameDistance<SymmetricDistance>"
    )
    keys = {c.name: list(range(c.n_bins)) for c in schema.columns}
    rho = None
    if cfg.delta == 0:
        measure, d_out, noise = dp.max_divergence(), float(cfg.epsilon), "discrete Laplace (pure ε-DP)"
    else:
        rho = rho_for(cfg.epsilon, cfg.delta)
        measure, d_out, noise = dp.zero_concentrated_divergence(), rho, "discrete Gaussian (zCDP)"
    try:
        m_table, _, _ = make_contingency_table(
            t_plan.output_domain,
            t_plan.output_metric,
            measure,
            d_in=t_plan.map(1),
            d_out=d_out,
            keys=keys,
            algorithm=_algorithm(dp, schema, cfg),
        )
    except Exception as exc:
        raise DPError(
            f"the {cfg.generator.upper()} generator cannot be built for these settings "
            f"({str(exc).strip().splitlines()[-1][:200]}); try a larger ε or fewer columns"
        ) from None
    m = t_plan >> m_table
    if cfg.delta == 0:
        eps, delta = float(m.map(1)), 0.0
    else:
        m = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(m), cfg.delta)
        eps, delta = (float(x) for x in m.map(1))
    if eps > cfg.epsilon * (1 + 1e-9) or delta > cfg.delta * (1 + 1e-9):  # pragma: no cover - OpenDP's own check
        raise DPError(f"internal check failed: the measurement spends ε = {eps} > {cfg.epsilon}")
    p = Plan(m, eps, delta, rho, noise)
    _PLANS[key] = p
    while len(_PLANS) > _PLANS_MAX:
        _PLANS.popitem(last=False)
    return p


# --- the release ---------------------------------------------------------------------------------------------


@dataclass
class SynthRelease:
    """A synthetic table and how it was made. ``table`` holds declared columns only (post-processing of the DP
    model: covered by ε). ``model_rows`` is the generator's DP estimate of the number of records."""

    table: pd.DataFrame
    codes: pd.DataFrame  # the same rows as declared codes (-1 = missing): what the attacks compare
    schema: Schema
    config: SynthConfig
    plan: Plan
    sample_seed: int
    model_rows: float
    seconds: float
    notes: list[str] = field(default_factory=list)
    contingency: object = field(default=None, repr=False)  # OpenDP's ContingencyTable: the noisy marginals, model


_GLOBAL_RNG = threading.Lock()


@contextmanager
def _seeded(seed: int):
    """numpy's global generator seeded for mbi's row sampling, and restored afterwards (one thread at a time)."""
    with _GLOBAL_RNG:
        state = np.random.get_state()
        np.random.seed(seed % 2**32)
        try:
            yield
        finally:
            np.random.set_state(state)


def _frame(schema: Schema, codes: pd.DataFrame):
    import polars as pl

    cols = {}
    for c in schema.columns:
        x = codes[c.name].to_numpy(dtype=np.int64)
        cols[c.name] = pl.Series(c.name, x, dtype=pl.Int64).set(pl.Series(x < 0), None)  # -1: missing
    return pl.DataFrame(cols).lazy()


def _draw(table, schema: Schema, rows: int, seed: int) -> tuple[pd.DataFrame, list[str]]:
    """``rows`` rows of codes drawn from the fitted model (post-processing): mbi samples indices, the last
    index of each column being "missing"; with a complete schema such rows are redrawn."""
    names = schema.names
    sizes = np.array([c.n_bins for c in schema.columns])
    parts, have, notes = [], 0, []
    with _seeded(seed):
        for _ in range(_REDRAWS):
            idx = table.model.synthetic_data(rows - have, "sample").df[names].to_numpy(dtype=np.int64)
            idx = np.where(idx >= sizes, -1, idx)
            if schema.complete:
                idx = idx[(idx >= 0).all(axis=1)]
            parts.append(idx)
            have += len(idx)
            if have >= rows:
                break
    out = np.concatenate(parts)[:rows] if parts else np.empty((0, len(names)), dtype=np.int64)
    if len(out) < rows:
        notes.append(
            f"the model put almost all its weight on missing values: {len(out):,} of {rows:,} rows drawn "
            "without one; try a larger ε"
        )
    return pd.DataFrame(out, columns=names), notes


def release(df: pd.DataFrame, schema: Schema, cfg: SynthConfig, *, cancelled=None) -> SynthRelease:
    """Release a synthetic table of ``df``'s declared columns at ``cfg``'s budget (see the module docstring)."""
    cfg.check(schema)
    if not isinstance(df, pd.DataFrame) or len(df) == 0:
        raise DPError("the data has no rows; a synthetic release needs a table with rows")
    if len(df) > limits.SYNTH_MAX_ROWS:
        raise DPError(
            f"the data has {len(df):,} rows; a synthetic release reads at most {limits.SYNTH_MAX_ROWS:,}: "
            "release a sample of the rows"
        )
    t0 = time.perf_counter()
    p = plan(schema, cfg)
    if cancelled is not None and cancelled():
        raise Cancelled("synthetic release cancelled")
    codes = schema.encode(df)
    table = p.measurement(_frame(schema, codes))
    model_rows = float(table.model.total)
    rows = cfg.rows if cfg.rows is not None else int(min(max(round(model_rows), 1), limits.SYNTH_MAX_OUTPUT_ROWS))
    seed = cfg.sample_seed if cfg.sample_seed is not None else secrets.randbits(32)
    out_codes, notes = _draw(table, schema, rows, seed)
    synthetic = schema.decode(out_codes, np.random.default_rng([seed, 0x5D]))
    return SynthRelease(
        synthetic,
        out_codes,
        schema,
        replace(cfg, sample_seed=seed),
        p,
        seed,
        model_rows,
        time.perf_counter() - t0,
        notes,
        table,
    )
