"""One DP synthetic release: OpenDP's marginal-based generators (MST, AIM) fitted to noisy marginals of the
declared codes, then rows drawn from the fitted model.

What is private and what is post-processing:

* **The measurement** (everything that reads the rows) is one OpenDP measurement: noisy one-way marginals,
  the generator's noisy choices of which marginals to measure (report-noisy-max) and the noisy marginals
  themselves, all drawn by OpenDP's exact samplers from a secure source (discrete Laplace for pure ε, discrete
  Gaussian under zCDP). Its privacy map at one record added or removed (symmetric distance 1) is the ε of the
  statement — OpenDP's own number, checked here to be at most the ε asked for. Nothing seeds it; nothing
  stored or shown reproduces it.
* **Post-processing** (no row is read): a graphical model is fitted to the noisy marginals (Private-PGM's mirror
  descent, deterministic, run in numpy by :mod:`dpcore.synth.fit`), the synthetic rows are drawn from it
  (:func:`dpcore.synth.fit.sample`, a numpy generator seeded with ``sample_seed``), and numbers are drawn
  uniformly inside their declared bins. A seed here changes which rows are drawn from the DP model, never what the model learned.
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
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from .. import limits, storage
from ..errors import Cancelled, DPError
from ..noise.charge import Charge
from ..validation import check_delta
from . import fit, search, split
from .failures import LOG_NAME, STOPPED, log_failure
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
    out: list[tuple[str, str]] = []
    for item in str(text).split(","):
        parts = [p.strip() for p in item.split("+")]
        if len(parts) != 2 or not all(parts):
            raise DPError(f"a column pair is two names joined by '+', e.g. age+diagnosis; got {item.strip()!r}")
        out.append((parts[0], parts[1]))
    return tuple(out)


# --- OpenDP ------------------------------------------------------------------------------------------------

_SETUP = threading.Lock()
_DP = None


def _opendp():
    """OpenDP's names as ``opendp.prelude`` gives them (``dp.c``, ``dp.m``, ``dp.t``, ``dp.mbi``, the domains, metrics
    and measures), with the ``contrib`` feature on (the generators are contrib in OpenDP 0.16) and the bracketed
    scale searches installed (:mod:`dpcore.synth.search`). Not the prelude itself: it also imports OpenDP's
    scikit-learn extra (5 s of a cold release's imports in a profile), which nothing here uses. jax (the noisy
    marginals are jax arrays) stays on the CPU and caches what it compiles under ``$DP_EXPLORER_HOME/cache/jax``."""
    global _DP
    with _SETUP:
        if _DP is None:
            import types

            os.environ.setdefault("JAX_PLATFORMS", "cpu")
            import jax
            import opendp.combinators
            import opendp.domains
            import opendp.extras.mbi
            import opendp.measurements
            import opendp.measures
            import opendp.metrics
            import opendp.mod
            import opendp.transformations

            try:
                jax.config.update("jax_compilation_cache_dir", str(storage.subdir("cache") / "jax"))
                jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
            except storage.StorageError:
                pass  # a read-only home: compile every time, nothing else changes
            ns = types.ModuleType("dpcore.synth.opendp")  # a module: hashable, so split's classes cache by it
            for module in (opendp.mod, opendp.domains, opendp.metrics, opendp.measures):
                ns.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("_")})
            ns.c, ns.m, ns.t, ns.mbi = (
                opendp.combinators,
                opendp.measurements,
                opendp.transformations,
                opendp.extras.mbi,
            )
            opendp.mod.enable_features("contrib")
            search.install()
            _DP = ns
    return _DP


@dataclass(frozen=True)
class Plan:
    """A built measurement (data-independent: the schema, the generator and the budget decide it)."""

    measurement: Any  # an OpenDP Measurement (OpenDP ships no types mypy reads here)
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
    """OpenDP's generator with a budget split that fits OpenDP's own sums (:mod:`dpcore.synth.split`)."""
    if cfg.generator == "mst":
        return split.algorithm(dp, "mst")
    queries = [dp.mbi.Count(p) for p in cfg.pairs] or 2  # the pairs that matter, else every pair
    return split.algorithm(dp, "aim", queries=queries)


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


def _table(dp, t_plan, measure, d_out: float, keys: dict, schema: Schema, cfg: SynthConfig):
    from opendp.extras.mbi import make_contingency_table

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
        log_failure("building the measurement", _settings(schema, cfg), exc)
        raise DPError(
            f"the {cfg.generator.upper()} generator cannot be built for these settings; try a larger ε or fewer "
            f"columns (the server's log, logs/{LOG_NAME}, has the details)"
        ) from exc
    return m_table


_PLAN_TRIES = 16


def plan(schema: Schema, cfg: SynthConfig) -> Plan:
    """The measurement for this schema and config (built once per process and kept: building takes seconds)."""
    key = (schema.key(), cfg.generator, cfg.epsilon, cfg.delta, cfg.pairs)
    if key in _PLANS:
        _PLANS.move_to_end(key)
        return _PLANS[key]
    dp = _opendp()
    from opendp.domains import _lazyframe_from_domain

    domain = _domain(dp, schema)
    t_plan = dp.t.make_stable_lazyframe(
        domain, dp.symmetric_distance(), lazyframe=_lazyframe_from_domain(domain), MO="FrameDistance<SymmetricDistance>"
    )
    keys = {c.name: list(range(c.n_bins)) for c in schema.columns}
    if cfg.delta == 0:
        measure, d_out, noise = dp.max_divergence(), float(cfg.epsilon), "discrete Laplace (pure ε-DP)"
    else:
        measure, d_out, noise = (
            dp.zero_concentrated_divergence(),
            rho_for(cfg.epsilon, cfg.delta),
            "discrete Gaussian (zCDP)",
        )
    for _ in range(_PLAN_TRIES):
        m = t_plan >> _table(dp, t_plan, measure, d_out, keys, schema, cfg)
        if cfg.delta == 0:
            eps, delta = float(m.map(1)), 0.0
        else:
            m = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(m), cfg.delta)
            eps, delta = (float(x) for x in m.map(1))
        if eps <= cfg.epsilon and delta <= cfg.delta:
            break
        d_out = split.prior(d_out)  # OpenDP's sum of the parts came out a unit in the last place above: spend less
    else:  # pragma: no cover - the map of the parts is within a few units of their budget
        raise DPError(
            f"the {cfg.generator.upper()} generator cannot be built within ε = {cfg.epsilon:g}; try another ε"
        )
    rho = None if cfg.delta == 0 else d_out
    p = Plan(m, eps, delta, rho, noise)
    _PLANS[key] = p
    while len(_PLANS) > _PLANS_MAX:
        _PLANS.popitem(last=False)
    return p


def spend(schema: Schema, cfg: SynthConfig) -> tuple[float, float]:
    """What a release of ``schema`` at ``cfg`` spends — OpenDP's privacy map of its measurement at one record added
    or removed, ``(ε, δ)`` with ``ε ≤ cfg.epsilon`` and ``δ ≤ cfg.delta`` — known before any row is read (the
    measurement depends on the declarations and the budget only): what a gate charges before :func:`release` runs."""
    p = plan(schema, cfg.check(schema))
    return p.epsilon, p.delta


def charge(schema: Schema, cfg: SynthConfig) -> Charge:
    """What the release costs a registered dataset, before it runs: :func:`spend`'s (ε, δ) with the zCDP ρ it
    came from, as the budget gate books it (:mod:`dpcore.budgets.gate`)."""
    p = plan(schema, cfg.check(schema))
    return Charge.synthetic(p.epsilon, p.delta, p.rho)


def _settings(schema: Schema, cfg: SynthConfig) -> str:
    """What the log says about a release's settings: the generator, the budget, the column names (never data)."""
    return f"{cfg.generator.upper()} ε={cfg.epsilon!r} δ={cfg.delta!r}, columns {schema.names}"


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


def _rows(model, names: list[str], rows: int, rng: np.random.Generator, notes: list[str]) -> np.ndarray:
    """``rows`` rows of model indices, columns in ``names``' order: :func:`dpcore.synth.fit.sample` (numpy,
    ``rng``), or Private-PGM's sampler for a model fitted some other way (numpy's global generator, seeded from
    ``rng`` and restored)."""
    try:
        drawn = fit.sample(model, rows, rng, notes)
        return np.stack([drawn[n] for n in names], axis=1).astype(np.int64)
    except fit.Unsupported:
        with _GLOBAL_RNG:
            state = np.random.get_state()
            np.random.seed(int(rng.integers(2**32)))
            try:
                return model.synthetic_data(rows, "sample").df[names].to_numpy(dtype=np.int64)
            finally:
                np.random.set_state(state)


_GLOBAL_RNG = threading.Lock()


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
    parts, have = [], 0
    notes: list[str] = []
    rng = np.random.default_rng([seed, 0xD7])
    for _ in range(_REDRAWS):
        idx = _rows(table.model, names, rows - have, rng, notes)
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
    return pd.DataFrame(out, columns=names), list(dict.fromkeys(notes))  # a redraw repeats a note


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
    try:
        table = p.measurement(_frame(schema, codes))
    except (OSError, MemoryError):
        raise  # a storage fault or no memory: the caller's message for it (the job runner names the fault)
    except Exception as exc:  # OpenDP's FFI error, jax's: the log keeps it, the user reads what to do
        log_failure("the release", _settings(schema, cfg), exc)
        raise DPError(STOPPED) from exc
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
