"""The query model: one frozen :class:`Query` (COUNT, SUM, MEAN, HISTOGRAM with WHERE filters), built and validated
by :func:`make_query`, with a canonical text form (so the ledger recognises a repeated question), its neighbour
relation and its :class:`~dpcore.noise.charge.Charge`. No data, no noise: answering is :mod:`dpcore.queries.answering`.
COUNT conditions and WHERE clauses are :class:`dpcore.data.filters.Condition` (one rule for every page).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .. import limits
from ..data.filters import Condition, parse_condition, parse_conditions
from ..errors import DPError
from ..noise import mechanisms
from ..noise.charge import Charge, Neighbour
from ..noise.grid import check_release
from ..validation import check_bounds, check_delta, check_epsilon, check_positive_int

KINDS = ("count", "sum", "mean", "histogram")
NEIGHBOUR = Neighbour.ADD_REMOVE.label  # the ledger's one relation


# --- the query -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    """One private question. ``epsilon`` (and ``delta`` for Gaussian) is what it costs.

    The query console's model, charged to the ledger under add/remove-one neighbours (:attr:`neighbour`; only
    MEAN with a public n is replace-one, and the ledger refuses it). The noise page's teaching query,
    :class:`dpcore.noise.teaching.QueryAnswer`, is a separate replace-one view with a public n (SUM Δ = U − L there,
    max(|L|, |U|) here): it is never charged, and its own ``neighbour`` field says so.
    """

    kind: str
    epsilon: float
    column: str | None = None  # SUM/MEAN/HISTOGRAM column
    condition: Condition | None = None  # COUNT condition (None = all rows passing WHERE)
    bounds: tuple[float, float] | None = None  # public bounds for SUM/MEAN (and numeric histogram)
    where: tuple[Condition, ...] = ()
    mechanism: str = "laplace"
    delta: float = 0.0
    bins: int = 10  # numeric histogram
    categories: tuple[str, ...] | None = None  # public categories for a histogram
    public_n: bool = False  # MEAN only: treat the row count as public

    def canonical(self) -> str:
        """The question without its ε, as stable text (WHERE order does not matter)."""
        d: dict[str, Any] = {
            "kind": self.kind,
            "mechanism": self.mechanism,
            "where": sorted(c.text() for c in self.where),
        }
        if not self.pure:
            d["delta"] = repr(float(self.delta))
        if self.kind == "count":
            d["condition"] = self.condition.text() if self.condition else None
        else:
            d["column"] = self.column
        if self.kind in ("sum", "mean") or (self.kind == "histogram" and self.bounds is not None):
            d["bounds"] = [repr(float(b)) for b in self.clamp]
        if self.kind == "histogram":
            if self.categories is not None:
                d["categories"] = list(self.categories)
            elif self.bounds is not None:
                d["bins"] = int(self.bins)
        if self.kind == "mean":
            d["public_n"] = bool(self.public_n)
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    def describe(self) -> str:
        """Readable SQL-like text."""
        where = " AND ".join(c.text() for c in self.where)
        if self.kind == "count":
            cond = [self.condition.text()] if self.condition else []
            allc = " AND ".join(cond + ([where] if where else []))
            return f"COUNT(*){' WHERE ' + allc if allc else ''}"
        if self.kind == "histogram":
            how = (
                f" BINS {self.bins} IN [{self.bounds[0]:g}, {self.bounds[1]:g}]"
                if self.bounds is not None and self.categories is None
                else ""
            )
            text = f"HISTOGRAM({self.column}){how}"
        else:
            lo, hi = self.clamp
            text = f"{self.kind.upper()}({self.column} CLAMPED TO [{lo:g}, {hi:g}])"
            if self.kind == "mean" and self.public_n:
                text += " WITH PUBLIC n"
        return text + (f" WHERE {where}" if where else "")

    @property
    def clamp(self) -> tuple[float, float]:
        """The public bounds of a SUM, a MEAN or a numeric histogram (:func:`make_query` requires them there)."""
        if self.bounds is None:
            raise DPError(f"a {self.kind.upper()} needs public bounds, e.g. 0:100")
        return self.bounds

    @property
    def pure(self) -> bool:
        """Pure ε-DP (Laplace; counts: geometric), so δ = 0."""
        return mechanisms.mechanism_class(self.mechanism).pure

    @property
    def neighbour(self) -> Neighbour:
        """The relation this query's guarantee is about: MEAN with a public n is replace-one, all else add/remove."""
        return Neighbour.REPLACE_ONE if self.kind == "mean" and self.public_n else Neighbour.ADD_REMOVE

    def charge(self, sensitivity: float = 1.0) -> Charge:
        """What answering costs: ε (and δ) as asked, ρ of the releases, under :attr:`neighbour`.
        MEAN (noisy sum / noisy count) is two releases of ε/2 (δ/2) each, composed."""
        rel = self.neighbour
        if self.kind == "mean" and not self.public_n:
            e2, d2 = self.epsilon / 2, self.delta / 2
            return Charge.of_release(self.mechanism, e2, d2, sensitivity, neighbour=rel) + Charge.of_release(
                self.mechanism, e2, d2, 1.0, neighbour=rel
            )
        return Charge.of_release(self.mechanism, self.epsilon, self.delta, sensitivity, neighbour=rel)

    def cost_note(self) -> str:
        """How ε (and δ) is spent, stated honestly."""
        eps, dl = self.epsilon, self.delta
        dtxt = "" if self.pure else f", δ = {dl:g}"
        if self.kind == "mean" and not self.public_n:
            half = f"ε/2 = {eps / 2:g}" + ("" if self.pure else f", δ/2 = {dl / 2:g}")
            return (
                f"total ε = {eps:g}{dtxt}: {half} on a noisy sum of (x − midpoint) and {half} on a noisy count; "
                "mean = midpoint + sum / count (basic composition)"
            )
        if self.kind == "mean":
            return f"ε = {eps:g}{dtxt} on the clamped mean; the row count n is treated as public"
        if self.kind == "histogram":
            return (
                f"ε = {eps:g}{dtxt} for the whole histogram: the bins are disjoint (each record falls in exactly "
                "one), so adding or removing one record changes one bin by 1 (Δ = 1) and each bin gets the "
                "full ε"
            )
        return f"ε = {eps:g}{dtxt} on one noisy {self.kind}"


def make_query(
    kind: str,
    *,
    epsilon,
    column=None,
    condition=None,
    bounds=None,
    where=(),
    mechanism="laplace",
    delta=0.0,
    bins=10,
    categories=None,
    public_n=False,
) -> Query:
    """Build and validate a :class:`Query` from loose input (strings from a CLI or widgets)."""
    kind = str(kind).strip().lower()
    if kind not in KINDS:
        raise DPError(f"unknown query kind {kind!r}; choose one of {', '.join(KINDS)}")
    eps = check_epsilon(epsilon)
    if eps > limits.QUERY_EPSILON_MAX:
        raise DPError(
            f"epsilon must be at most {limits.QUERY_EPSILON_MAX:g} for one query, got {eps:g}; "
            "try 0.1–10 (an ε this large protects nobody)"
        )
    mechanism = str(mechanism).strip().lower()
    if mechanism not in mechanisms.QUERY_MECHANISMS:
        raise DPError(f"unknown mechanism {mechanism!r}; choose laplace or gaussian")
    dl = 0.0 if mechanisms.mechanism_class(mechanism).pure else check_delta(delta)
    if isinstance(condition, str):
        condition = None if condition.strip() in ("", "*") else parse_condition(condition, "COUNT condition")
    where = parse_conditions(where)
    if bounds is not None:
        lo, hi = parse_bounds(bounds) if isinstance(bounds, str) else bounds
        bounds = check_bounds(lo, hi, name=f"bounds of {column}")
    if kind != "count":
        if not column or not str(column).strip():
            raise DPError(f"{kind.upper()} needs a column")
        column = str(column).strip()
    if kind in ("sum", "mean") and bounds is None:
        raise DPError(
            f"{kind.upper()}({column}) needs public bounds LO:HI (known without looking at the data), "
            "e.g. --bounds 18:90; values outside are clamped"
        )
    if kind == "histogram":
        bins = check_positive_int(bins, "bins")
        if bins > limits.QUERY_MAX_BINS:
            raise DPError(f"bins must be at most {limits.QUERY_MAX_BINS}, got {bins}")
        if categories is not None:
            if isinstance(categories, str):
                categories = [c for c in categories.split(",")]
            categories = tuple(dict.fromkeys(str(c).strip() for c in categories if str(c).strip()))  # same text
            # (several spellings of one value, e.g. 34 and 34.0, are refused in prepare(), once the type is known)
            if not categories:
                raise DPError("categories is empty; list the public categories separated by commas, e.g. F,M")
            if len(categories) > limits.QUERY_MAX_BINS:
                raise DPError(f"at most {limits.QUERY_MAX_BINS} categories, got {len(categories)}")
    if public_n and kind != "mean":
        public_n = False
    if public_n and where:
        raise DPError(
            "MEAN with public n cannot have a WHERE filter: the filtered row count is not public; "
            "untick 'public n' (the mean is then noisy sum / noisy count)"
        )
    if bounds is not None and kind != "count":  # what a release can represent, refused before anything is spent
        lo, hi = bounds
        spread = {"sum": max(abs(lo), abs(hi)), "mean": (hi - lo) / 2}.get(kind, (hi - lo) / int(bins))
        check_release(
            magnitude=max(abs(lo), abs(hi)),
            sensitivity=spread,
            what=f"the bounds of {column}",
            spread="the bins' width" if kind == "histogram" else "the bounds' spread",
            spread_max=2 * limits.RELEASE_MAGNITUDE_MAX,
        )
    return Query(
        kind=kind,
        epsilon=eps,
        column=column if kind != "count" else None,
        condition=condition,
        bounds=bounds if kind != "count" else None,
        where=where,
        mechanism=mechanism,
        delta=dl,
        bins=int(bins) if kind == "histogram" else 10,
        categories=categories if kind == "histogram" else None,
        public_n=bool(public_n),
    )


def parse_bounds(text: str) -> tuple[float, float]:
    """``LO:HI`` -> (lo, hi), validated."""
    parts = str(text).split(":")
    if len(parts) != 2:
        raise DPError(
            f"bounds {text!r} must be LO:HI, e.g. 18:90 (on the command line write --bounds=-10:10 for negatives)"
        )
    return check_bounds(parts[0].strip(), parts[1].strip())
