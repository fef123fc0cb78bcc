"""Answering private queries over a pandas DataFrame: COUNT, SUM, MEAN, HISTOGRAM with WHERE filters.

A query is a frozen :class:`dpcore.queries.model.Query` (which has a canonical text form, so the ledger can
recognise a repeated question). :func:`prepare` validates it against the data and computes the true
answer and its sensitivity — no noise. :meth:`Prepared.release` draws the noise, *only* through
:func:`dpcore.noise.release.release_value` / :func:`dpcore.noise.release.release_count` (the mechanism classes'
secure samplers), and returns the answer
with its 95% error interval. :func:`ask` ties this to the budgets (:mod:`dpcore.budgets.spend`): the dataset's
cap and the asker's quota checked, the noise drawn and the answer stored, in one transaction. COUNT conditions and WHERE clauses are :class:`dpcore.data.filters.Condition` (one rule for every
page: typed by the column, text ignores case, a missing value never matches).

Neighbouring datasets: add or remove one row (unbounded DP) — the one relation of the ledger — except MEAN
with ``public_n=True`` (replace one row, the number of rows is treated as public), which is therefore never
answered through the ledger (:func:`ask` refuses it; it stays available to :meth:`Prepared.release` for
teaching). Sensitivities:

* COUNT: 1.  HISTOGRAM: derived from the bins released: categories are canonicalised by the column's type
  (34 == 34.0 == "3.4e1"; true/yes/1 are one category) and must be distinct, so the bins (with "(other)")
  partition the rows: adding or removing one row changes exactly one bin by one (L1 = L2 = 1), and every bin
  gets the full ε.
* SUM over values clamped to public bounds [lo, hi]: max(|lo|, |hi|).
* MEAN (default): a noisy sum of (x − c), c = (lo + hi)/2, sensitivity (hi − lo)/2, with ε/2, divided
  by a noisy count with ε/2 (δ/2 each for Gaussian); total cost ε (and δ) by basic composition.
* MEAN with public n (no WHERE filter): the clamped mean, sensitivity (hi − lo)/n, all ε on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..data.filters import condition_mask, is_numeric, mask_all, parse_bool, parse_number, require_column
from ..errors import DPError
from ..noise import mechanisms
from ..noise.charge import Charge, Neighbour
from ..noise.release import release_count, release_value
from .fingerprint import dataset_key
from .model import Query

NOT_DP = "reproducible noise: not a DP release"


@dataclass
class Prepared:
    """A validated query with its true answer and sensitivity. Holds private values: never show them."""

    query: Query
    n_rows: int  # rows passing WHERE (private)
    true_value: float | None = None  # COUNT/SUM (clamped)
    true_sum: float | None = None  # MEAN: Σ(x − c) or Σx
    true_count: int | None = None  # MEAN
    labels: list[str] = field(default_factory=list)  # HISTOGRAM
    true_counts: list[int] = field(default_factory=list)
    sensitivity: float = 1.0
    n_total: int = 0

    def release(self, random_state=None) -> dict:
        """Draw the noise (the only place it is drawn) and return a JSON-able answer."""
        q = self.query
        rs = np.random.RandomState(random_state) if isinstance(random_state, (int, np.integer)) else random_state
        gauss = not mechanisms.mechanism_class(q.mechanism).pure
        out = {"query": q.describe(), "kind": q.kind, "mechanism": q.mechanism, "epsilon": q.epsilon,
               "delta": q.delta if gauss else 0.0, "cost_note": q.cost_note(), "interval_level": 0.95,
               "secure": random_state is None}
        if random_state is not None:
            out["label"] = NOT_DP

        def noise(value, eps, dl, sens, *, integer, level=0.95):
            # a count under Laplace is released by the geometric mechanism; the interval is that mechanism's own
            m = mechanisms.for_release(q.mechanism, epsilon=eps, delta=dl, sensitivity=sens, integer=integer)
            if isinstance(m, mechanisms.Geometric):  # through the release path's public face (tests spy on it)
                v = release_count(int(value), epsilon=m.epsilon, sensitivity=int(m.sensitivity), random_state=rs)
            else:
                v = release_value(value, mechanism=m.name, epsilon=m.epsilon, delta=m.delta,
                                  sensitivity=m.sensitivity, random_state=rs)
            return float(v), m.halfwidth(level)

        def count_noise(value, eps, dl, sens=1, level=0.95):
            return noise(value, eps, dl, sens, integer=True, level=level)

        def value_noise(value, eps, dl, sens, level=0.95):
            return noise(value, eps, dl, sens, integer=False, level=level)

        if q.kind == "count":
            v, t = count_noise(self.true_value, q.epsilon, q.delta)
            out.update(answer=v, interval=[v - t, v + t], sensitivity=1.0)
        elif q.kind == "sum":
            v, t = value_noise(self.true_value, q.epsilon, q.delta, self.sensitivity)
            out.update(answer=v, interval=[v - t, v + t], sensitivity=self.sensitivity)
        elif q.kind == "mean" and q.public_n:
            lo, hi = q.bounds
            v, t = value_noise(self.true_value, q.epsilon, q.delta, self.sensitivity)
            out.update(answer=min(max(v, lo), hi), interval=[max(v - t, lo), min(v + t, hi)],
                       sensitivity=self.sensitivity)
        elif q.kind == "mean":
            lo, hi = q.bounds
            c = (lo + hi) / 2
            e2, d2 = q.epsilon / 2, q.delta / 2
            # Each part gets a 97.5% interval: both hold together with probability >= 95% (union bound).
            s, ts = value_noise(self.true_sum, e2, d2, self.sensitivity, level=0.975)
            n, tn = count_noise(self.true_count, e2, d2, level=0.975)
            mean = c + s / max(n, 1.0)
            mean = min(max(mean, lo), hi)
            if n - tn > 0:
                ratios = [(s - ts) / (n - tn), (s - ts) / (n + tn), (s + ts) / (n - tn), (s + ts) / (n + tn)]
                interval = [max(c + min(ratios), lo), min(c + max(ratios), hi)]
            else:
                interval = [lo, hi]
            out.update(answer=mean, interval=interval, noisy_sum_centred=s, noisy_count=n, midpoint=c,
                       sensitivity=self.sensitivity)
        else:  # histogram
            counts, lows, highs = [], [], []
            sens = int(self.sensitivity)  # derived from the bins in prepare(): 1 when they partition the rows
            for tc in self.true_counts:
                v, t = count_noise(tc, q.epsilon, q.delta, sens)
                counts.append(v)
                lows.append(v - t)
                highs.append(v + t)
            out.update(answer=counts, labels=list(self.labels), interval=[lows, highs], sensitivity=float(sens))
        out["interval_note"] = _interval_note(q)
        charge = self.charge()
        out.update(rho=charge.rho, charge=charge.to_dict(), neighbour=charge.neighbour.label)
        return out

    def charge(self) -> Charge:
        """What releasing this answer costs (ε, δ, ρ, neighbour relation): see :meth:`Query.charge`."""
        return self.query.charge(self.sensitivity)


def _interval_note(q: Query) -> str:
    if q.kind == "mean" and not q.public_n:
        return ("at least 95%: each of the noisy sum and noisy count lies within its 97.5% noise bound, and the "
                "interval holds every ratio they allow (clamped data)")
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
            raise DPError(f"{q.kind.upper()} needs a numeric column; {q.column!r} holds "
                          f"{'text' if not is_numeric(s) else s.dtype}. Use COUNT with a condition or a "
                          "HISTOGRAM for it")
        lo, hi = q.bounds
        x = s.to_numpy(dtype=float)[mask]
        if q.kind == "mean" and q.public_n:
            x = np.where(np.isnan(x), (lo + hi) / 2, x)  # n stays the public row count: impute the midpoint
        x = x[~np.isnan(x)]  # missing values are dropped (the noisy count counts the rest)
        x = np.clip(x, lo, hi)
        if q.kind == "sum":
            return Prepared(q, n_rows, true_value=float(x.sum()), sensitivity=max(abs(lo), abs(hi)),
                            n_total=len(df))
        if q.public_n:
            n = len(x)
            if n == 0:
                raise DPError(f"column {q.column!r} has no values; MEAN with public n needs rows")
            return Prepared(q, n_rows, true_value=float(x.mean()), sensitivity=(hi - lo) / n, n_total=len(df))
        c = (lo + hi) / 2
        return Prepared(q, n_rows, true_sum=float((x - c).sum()), true_count=int(len(x)),
                        sensitivity=(hi - lo) / 2, n_total=len(df))
    # histogram
    labels, counts, sens = _histogram_bins(s[mask], q)
    return Prepared(q, n_rows, labels=labels, true_counts=counts, sensitivity=sens, n_total=len(df))


def canonical_category(s: pd.Series, column: str, text: str):
    """A histogram category as a value of the column's type: a float for numbers (34 == 34.0 == "3.4e1"),
    True/False for booleans (true/yes/1/t/y are one value), the stripped text otherwise."""
    val = str(text).strip()
    if pd.api.types.is_bool_dtype(s):
        return parse_bool(val, f"column {column!r}")
    if is_numeric(s):
        v = parse_number(val, f"category {val!r} of column {column!r}")
        return 0.0 if v == 0 else v
    return val


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
            v = canonical_category(s, q.column, cat)
            if v in seen:
                raise DPError(f"categories {seen[v]!r} and {cat!r} are the same value of column {q.column!r}: they "
                              "would count the same people twice at the price of one; list each category once")
            seen[v] = cat
        masks = []
        for v in seen:
            if isinstance(v, bool):
                masks.append(s.fillna(not v).to_numpy(dtype=bool) == v)
            elif isinstance(v, float):
                masks.append(s.to_numpy(dtype=float) == v)
            else:
                masks.append(s.astype("string").str.strip().eq(v).fillna(False).to_numpy(dtype=bool))
        hits = np.sum(masks, axis=0) if masks else np.zeros(len(s), dtype=int)
        if len(s) and hits.max() > 1:  # pragma: no cover - impossible for distinct canonical values
            raise DPError(f"categories of {q.column!r} select overlapping rows; list disjoint categories")
        labels = [_category_label(v) for v in seen] + ["(other)"]
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
            raise DPError(f"HISTOGRAM of numeric column {q.column!r} needs public bounds LO:HI and a number of "
                          "bins (values outside are clamped into the end bins), or a list of public categories")
        lo, hi = q.bounds
        x = np.clip(s.to_numpy(dtype=float), lo, hi)
        x = x[~np.isnan(x)]
        edges = np.linspace(lo, hi, q.bins + 1)
        counts, _ = np.histogram(x, bins=edges)
        labels = [f"[{a:g}, {b:g}{']' if i == q.bins - 1 else ')'}"
                  for i, (a, b) in enumerate(zip(edges[:-1], edges[1:]))]
        return labels, [int(c) for c in counts], 1.0  # half-open bins: each value in exactly one
    raise DPError(f"HISTOGRAM of text column {q.column!r} needs its public list of categories (the values seen "
                  "in the data are themselves private); pass them separated by commas, e.g. --categories F,M")


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
    from ..budgets import spend

    if random_state is not None:
        raise DPError("a seeded answer cannot be charged to a budget: anyone with the seed could replay the noise "
                      "and recover the exact answer; drop the seed (answers through the ledger always use a secure "
                      "random source); nothing was spent")
    if query.kind == "mean" and query.public_n:
        raise DPError("MEAN with a public n protects against replacing one record, not adding or removing one (its "
                      "interval reveals n), so the ledger does not charge it; untick 'public n' (the mean is then a "
                      "noisy sum / noisy count), or see the teaching view on the noise page; nothing was spent")
    prepared = prepare(df, query)
    key = dataset or dataset_key(df)
    return spend.spend(who, key, query.canonical(), prepared.charge(), lambda: prepared.release(None),
                       description=query.describe(), path=path)


def composition_entries(events) -> list[Charge]:
    """Ledger spend events -> their :class:`Charge` (ε and δ as charged, ρ of the release) for
    :func:`dpcore.noise.composition.ledger_costs`. Older answers stored only ``rho``: the relation is the ledger's."""
    out = []
    for e in events:
        if e.get("kind", "spend") != "spend":
            continue
        ans = e.get("answer") if isinstance(e.get("answer"), dict) else {}
        stored = ans.get("charge") if isinstance(ans.get("charge"), dict) else ans
        rho = stored.get("rho")
        out.append(Charge(float(e["epsilon"]), float(e.get("delta") or 0.0), rho, Neighbour.ADD_REMOVE))
    return out
