"""Answering private queries over a pandas DataFrame: COUNT, SUM, MEAN, HISTOGRAM with WHERE filters.

A query is a frozen :class:`dpcore.queries.model.Query` (which has a canonical text form, so the ledger can
recognise a repeated question). :func:`prepare` validates it against the data and computes the true answer in whole
numbers and its sensitivity — no noise. :meth:`Prepared.release` draws the noise, *only* through
:mod:`dpcore.noise.release` (OpenDP's exact discrete samplers, a cryptographically secure source), and returns the
answer with its 95% interval (the releasing mechanism's own). :func:`ask` ties this to the budgets
(:mod:`dpcore.budgets.spend`): the dataset's cap and the asker's quota checked, the noise drawn and the answer
stored, in one transaction. COUNT conditions and WHERE clauses are :class:`dpcore.data.filters.Condition` (one
rule for every page: typed by the column, text ignores case, a missing value never matches).

Neighbouring datasets: add or remove one row (unbounded DP) — the one relation of the ledger — except MEAN
with ``public_n=True`` (replace one row, the number of rows is treated as public), which is therefore never
answered through the ledger (:func:`ask` refuses it; it stays available to :meth:`Prepared.release` for
teaching). What is released, and its sensitivity:

* COUNT: the count, Δ = 1. HISTOGRAM: the bins' counts; categories are canonicalised by the column's type
  (34 == 34.0 == "3.4e1"; true/yes/1 are one category; text ignores case, as every filter does) and must be
  distinct, so the bins (with "(other)") partition the rows: adding or removing one row changes exactly one bin by
  one (L1 = L2 = 1), and every bin gets the full ε.
* SUM over values clamped to public bounds [lo, hi]: each clamped value rounded to the public grid of
  :mod:`dpcore.noise.grid` (a power of ten fixed by the bounds) and the whole grid steps summed exactly; Δ =
  max(|lo|, |hi|), in grid steps K = max(|r(lo)|, |r(hi)|) (proved there).
* MEAN (default): a noisy centred sum Σ(r(x) − C) (C the grid midpoint; K = max(C − r(lo), r(hi) − C), about
  (hi − lo)/2) with ε/2, divided by a noisy count with ε/2 (δ/2 each for Gaussian); total cost ε (and δ) by
  basic composition.
* MEAN with public n (no WHERE filter): the centred sum with K = r(hi) − r(lo) (replace one), divided by the public
  n, all ε on it.

Laplace noise on whole numbers is the discrete Laplace, Gaussian noise the discrete Gaussian (σ never below the
exact calibration): :mod:`dpcore.noise.release`. Each answer states its grid and rounding (``grid``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from ..budgets import spend
from ..data.filters import Condition, condition_mask, is_numeric, mask_all, parse_bool, parse_number, require_column
from ..errors import DPError
from ..noise import grid as noise_grid
from ..noise import mechanisms, release
from ..noise.charge import Charge, Neighbour
from ..noise.release import GridRelease
from .fingerprint import dataset_key
from .model import Query

T = TypeVar("T")

NOT_DP = "reproducible noise: not a DP release"


def _known(value: T | None, what: str) -> T:
    """A prepared query's private value of the kind it holds (:func:`prepare` sets it for that kind)."""
    if value is None:
        raise DPError(f"this prepared query holds no true {what}; prepare the query again")
    return value


@dataclass
class Prepared:
    """A validated query with its true answer and sensitivity. Holds private values: never show them."""

    query: Query
    n_rows: int  # rows passing WHERE (private)
    true_value: float | None = None  # COUNT; SUM (on the grid); MEAN with public n (on the grid)
    true_sum: float | None = None  # MEAN: Σ(r(x) − C)·g
    true_count: int | None = None  # MEAN
    labels: list[str] = field(default_factory=list)  # HISTOGRAM
    true_counts: list[int] = field(default_factory=list)
    sensitivity: float = 1.0  # in the answer's unit
    n_total: int = 0
    grid_sum: noise_grid.GridSum | None = None  # SUM, MEAN: the whole grid steps that get the noise

    def release(self, random_state=None) -> dict:
        """Draw the noise (the only place it is drawn, through :mod:`dpcore.noise.release`) and return a JSON-able
        answer. ``random_state`` (tests, teaching): numpy draws of the same discrete noise, labelled not a DP
        release."""
        q = self.query
        rs = random_state
        gauss = not mechanisms.mechanism_class(q.mechanism).pure
        out = {
            "query": q.describe(),
            "kind": q.kind,
            "mechanism": q.mechanism,
            "epsilon": q.epsilon,
            "delta": q.delta if gauss else 0.0,
            "cost_note": q.cost_note(),
            "interval_level": 0.95,
            "secure": random_state is None,
            "sampler": release.SECURE_SOURCE if random_state is None else "numpy, seeded (not a DP release)",
        }
        if random_state is not None:
            out["label"] = NOT_DP
            rs = np.random.default_rng(random_state) if isinstance(random_state, (int, np.integer)) else random_state
        kw = {"mechanism": q.mechanism, "random_state": rs}

        tails: list[mechanisms.Mechanism] | None
        if q.kind == "count":
            (c,), noise = release.release_counts(
                [int(_known(self.true_value, "count"))], epsilon=q.epsilon, delta=q.delta, **kw
            )
            t = int(noise.halfwidth(0.95))
            out.update(answer=c, interval=[c - t, c + t], sensitivity=1.0, noise=release.noise_name(noise))
            tails = [noise]
        elif q.kind == "sum":
            gs = _known(self.grid_sum, "sum")
            r = release.release_sum(gs, epsilon=q.epsilon, delta=q.delta, **kw)
            v, z, t = r.values[0], r.units[0], r.halfwidth_units
            # the ends from whole grid steps too (v ± t·g in floating point wrote 500310.03774999996)
            out.update(
                answer=v,
                interval=[gs.value(z - t), gs.value(z + t)],
                sensitivity=self.sensitivity,
                grid=self._grid(r),
            )
            tails = [r.noise]
        elif q.kind == "mean" and q.public_n:
            lo, hi = q.clamp
            gs = _known(self.grid_sum, "sum")
            r = release.release_sum(gs, epsilon=q.epsilon, delta=q.delta, divide_by=gs.count, **kw)
            v, z, t, n = r.values[0], r.units[0], r.halfwidth_units, gs.count
            out.update(
                answer=min(max(v, lo), hi),
                interval=[max(gs.value(z - t, n), lo), min(gs.value(z + t, n), hi)],
                sensitivity=self.sensitivity,
                grid=self._grid(r),
            )
            tails = [r.noise]
        elif q.kind == "mean":
            lo, hi = q.clamp
            gs = _known(self.grid_sum, "sum")
            e2, d2 = q.epsilon / 2, q.delta / 2
            # Each part gets a 97.5% interval: both hold together with probability >= 95% (union bound).
            r = release.release_sum(gs, epsilon=e2, delta=d2, level=0.975, **kw)
            (n,), count_noise = release.release_counts(
                [int(_known(self.true_count, "count"))], epsilon=e2, delta=d2, **kw
            )
            z, ts, tn = r.units[0], r.halfwidth_units, int(count_noise.halfwidth(0.975))
            mean = min(max(gs.value(z, max(n, 1)), lo), hi)
            if n - tn > 0:
                ratios = [(z - ts, n - tn), (z - ts, n + tn), (z + ts, n - tn), (z + ts, n + tn)]
                vals = [gs.value(a, b) for a, b in ratios]
                interval = [max(min(vals), lo), min(max(vals), hi)]
            else:
                interval = [lo, hi]
            out.update(
                answer=mean,
                interval=interval,
                noisy_sum_centred=gs.grid.value(z),
                noisy_count=n,
                midpoint=gs.grid.value(gs.centre),
                sensitivity=self.sensitivity,
                grid=self._grid(r),
            )
            tails = [r.noise, count_noise]  # each at ε/2: loss > ε needs one part's loss > ε/2 (union bound)
        else:  # histogram
            sens = int(self.sensitivity)  # derived from the bins in prepare(): 1 when they partition the rows
            counts, noise = release.release_counts(
                self.true_counts, epsilon=q.epsilon, delta=q.delta, sensitivity=sens, **kw
            )
            t = int(noise.halfwidth(0.95))
            out.update(
                answer=counts,
                labels=list(self.labels),
                interval=[[c - t for c in counts], [c + t for c in counts]],
                sensitivity=float(sens),
                noise=release.noise_name(noise),
            )
            tails = [noise] if sens == 1 else None  # one record moves one bin by 1: that bin's loss is the loss
        out["interval_note"] = _interval_note(q)
        if gauss and tails:
            # P[privacy loss > ε] of this release (an upper bound, the discrete Gaussian's own): what δ > 0 means
            out["loss_tail"] = min(1.0, sum(m.loss_exceeds_mass() for m in tails))
        charge = self.charge()
        out.update(rho=charge.rho, charge=charge.to_dict(), neighbour=charge.neighbour.label)
        return out

    def _grid(self, r: GridRelease) -> dict[str, Any]:
        lo, hi = self.query.clamp
        how = f"each value clamped to [{lo:g}, {hi:g}] and {r.describe()}" + (
            "; the noisy count is a whole number" if self.query.kind == "mean" and not self.query.public_n else ""
        )
        return {
            "step": r.grid.step,
            "step_text": r.grid.text(),
            "sensitivity_steps": int(r.noise.sensitivity),
            "noise": release.noise_name(r.noise),
            "note": how,
        }

    def charge(self) -> Charge:
        """What releasing this answer costs (ε, δ, ρ, neighbour relation): see :meth:`Query.charge`."""
        return self.query.charge(self.sensitivity)


def _interval_note(q: Query) -> str:
    if q.kind == "mean" and not q.public_n:
        return (
            "at least 95%: each of the noisy sum and noisy count lies within its 97.5% noise bound, and the "
            "interval holds every ratio they allow (clamped data)"
        )
    if q.kind == "histogram":
        return "95% noise interval for each bin separately"
    return "95% noise interval: covers the true (clamped) answer with probability 95%"


def prepare(df: pd.DataFrame, query: Query) -> Prepared:
    """Validate ``query`` against ``df`` and compute the true answer and sensitivity. No noise, no spend."""
    if not isinstance(df, pd.DataFrame):
        raise DPError("data must be a table (DataFrame)")
    q = query
    mask = mask_all(df, q.where)
    n_rows = int(mask.sum())
    if q.kind == "count":
        if q.condition is not None:
            mask = mask & condition_mask(df, q.condition)
        return Prepared(q, n_rows, true_value=float(mask.sum()), sensitivity=1.0, n_total=len(df))
    s = df[require_column(df, q.column)]
    if q.kind in ("sum", "mean"):
        if not is_numeric(s) and not pd.api.types.is_bool_dtype(s):
            raise DPError(
                f"{q.kind.upper()} needs a numeric column; {q.column!r} holds "
                f"{'text' if not is_numeric(s) else s.dtype}. Use COUNT with a condition or a "
                "HISTOGRAM for it"
            )
        lo, hi = q.clamp
        x = s.to_numpy(dtype=float)[mask]
        if q.kind == "mean" and q.public_n:
            x = np.where(np.isnan(x), (lo + hi) / 2, x)  # n stays the public row count: impute the midpoint
        x = x[~np.isnan(x)]  # missing values are dropped (the noisy count counts the rest)
        what = f"the bounds of {q.column}"
        if q.kind == "sum":
            gs = noise_grid.clamped_sum(x, lo, hi, what=what)
            return Prepared(
                q,
                n_rows,
                true_value=gs.value(gs.units),
                sensitivity=max(abs(lo), abs(hi)),
                n_total=len(df),
                grid_sum=gs,
            )
        if q.public_n:
            n = len(x)
            if n == 0:
                raise DPError(f"column {q.column!r} has no values; MEAN with public n needs rows")
            gs = noise_grid.centred_sum(x, lo, hi, replace_one=True, what=what)
            return Prepared(
                q, n_rows, true_value=gs.value(gs.units, n), sensitivity=(hi - lo) / n, n_total=len(df), grid_sum=gs
            )
        gs = noise_grid.centred_sum(x, lo, hi, what=what)
        return Prepared(
            q,
            n_rows,
            true_sum=gs.grid.value(gs.units),
            true_count=int(len(x)),
            sensitivity=(hi - lo) / 2,
            n_total=len(df),
            grid_sum=gs,
        )
    # histogram
    labels, counts, sens = _histogram_bins(s[mask], q)
    return Prepared(q, n_rows, labels=labels, true_counts=counts, sensitivity=sens, n_total=len(df))


def canonical_category(s: pd.Series, column: str, text: str):
    """A histogram category as a value of the column's type: a float for numbers (34 == 34.0 == "3.4e1"),
    True/False for booleans (true/yes/1/t/y are one value), otherwise the text as every filter compares it
    (stripped, ignoring case: "a" and "A" are one category)."""
    val = str(text).strip()
    if pd.api.types.is_bool_dtype(s):
        return parse_bool(val, f"column {column!r}")
    if is_numeric(s):
        v = parse_number(val, f"category {val!r} of column {column!r}")
        return 0.0 if v == 0 else v
    return val.lower()


def _category_label(value) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:g}" if float(f"{value:g}") == value else repr(value)
    return value


def _histogram_bins(s: pd.Series, q: Query) -> tuple[list[str], list[int], float]:
    """Labels, true counts and the L1 sensitivity of the released bins (1 when they partition the rows)."""
    if q.categories is not None:
        seen: dict = {}
        for cat in q.categories:
            v = canonical_category(s, str(q.column), cat)
            if v in seen:
                raise DPError(
                    f"categories {seen[v]!r} and {cat!r} are the same value of column {q.column!r}: they "
                    "would count the same people twice at the price of one; list each category once"
                )
            seen[v] = cat
        masks = []
        frame = s.to_frame(q.column)
        for v, typed in seen.items():
            if isinstance(v, bool):
                masks.append(s.fillna(not v).to_numpy(dtype=bool) == v)
            elif isinstance(v, float):
                masks.append(s.to_numpy(dtype=float) == v)
            else:  # the filters' one rule for text (strip, ignore case)
                masks.append(condition_mask(frame, Condition(q.column, "=", typed)))
        hits = np.sum(masks, axis=0) if masks else np.zeros(len(s), dtype=int)
        if len(s) and hits.max() > 1:  # pragma: no cover - impossible for distinct canonical values
            raise DPError(f"categories of {q.column!r} select overlapping rows; list disjoint categories")
        labels = [_category_label(v) if not isinstance(v, str) else str(typed).strip() for v, typed in seen.items()]
        labels += ["(other)"]
        counts = [int(m.sum()) for m in masks] + [int((hits == 0).sum())]
        return labels, counts, 1.0  # bins + (other) partition the rows: one record moves one bin by 1
    if isinstance(s.dtype, pd.CategoricalDtype):
        cats = [str(c) for c in s.dtype.categories]
        if len(set(cats)) != len(cats):
            raise DPError(f"column {q.column!r} declares categories that read the same; list them explicitly")
        vc = s.astype(str).value_counts()
        return cats, [int(vc.get(c, 0)) for c in cats], 1.0
    if pd.api.types.is_bool_dtype(s):
        x = s.to_numpy(dtype=bool)
        return ["False", "True"], [int((~x).sum()), int(x.sum())], 1.0
    if is_numeric(s):
        if q.bounds is None:
            raise DPError(
                f"HISTOGRAM of numeric column {q.column!r} needs public bounds LO:HI and a number of "
                "bins (values outside are clamped into the end bins), or a list of public categories"
            )
        lo, hi = q.clamp
        x = np.clip(s.to_numpy(dtype=float), lo, hi)
        x = x[~np.isnan(x)]
        edges = np.linspace(lo, hi, q.bins + 1)
        hist, _ = np.histogram(x, bins=edges)
        labels = [
            f"[{a:g}, {b:g}{']' if i == q.bins - 1 else ')'}" for i, (a, b) in enumerate(zip(edges[:-1], edges[1:]))
        ]
        return labels, [int(c) for c in hist], 1.0  # half-open bins: each value in exactly one
    raise DPError(
        f"HISTOGRAM of text column {q.column!r} needs its public list of categories (the values seen "
        "in the data are themselves private); pass them separated by commas, e.g. --categories F,M"
    )


def ask(df: pd.DataFrame, who, query: Query, *, dataset: str | None = None, random_state=None, path=None) -> dict:
    """Answer ``query`` on the registered dataset ``df`` for ``who`` (a checked
    :class:`~dpcore.budgets.identities.Identity`), charged to the dataset's cap and their quota (ε and δ). See
    :func:`dpcore.budgets.spend.spend`; ``dataset`` is its fingerprint or name (default: ``df``'s fingerprint).

    Validates first (bad input costs nothing), then spends and draws in one ledger transaction, always from a
    cryptographically secure source: a seed (``random_state``) is refused, since replaying seeded noise would
    recover the exact answer. An identical earlier question (same quota, data, query and ε) returns the stored
    answer for free. MEAN with a public n (a replace-one mechanism) is refused: the ledger charges every answer
    under one relation, add or remove one record.
    """
    if random_state is not None:
        raise DPError(
            "a seeded answer cannot be charged to a budget: anyone with the seed could replay the noise "
            "and recover the exact answer; drop the seed (answers through the ledger always use a secure "
            "random source); nothing was spent"
        )
    if query.kind == "mean" and query.public_n:
        raise DPError(
            "MEAN with a public n protects against replacing one record, not adding or removing one (its "
            "interval reveals n), so the ledger does not charge it; untick 'public n' (the mean is then a "
            "noisy sum / noisy count), or see the teaching view on the noise page; nothing was spent"
        )
    prepared = prepare(df, query)
    key = dataset or dataset_key(df)
    return spend.spend(
        who,
        key,
        query.canonical(),
        prepared.charge(),
        lambda: prepared.release(None),
        description=query.describe(),
        path=path,
    )


def composition_entries(events) -> list[Charge]:
    """Ledger spend events -> their :class:`Charge` (ε and δ as charged, ρ of the release) for
    :func:`dpcore.noise.composition.ledger_costs`. Older answers stored only ``rho``: the relation is the ledger's."""
    out = []
    for e in events:
        if e.get("kind", "spend") != "spend":
            continue
        ans = e["answer"] if isinstance(e.get("answer"), dict) else {}
        stored = ans["charge"] if isinstance(ans.get("charge"), dict) else ans
        rho = stored.get("rho")
        out.append(Charge(float(e["epsilon"]), float(e.get("delta") or 0.0), rho, Neighbour.ADD_REMOVE))
    return out
