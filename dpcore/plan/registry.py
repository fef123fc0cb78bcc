"""OpenDP's deployments registry beside a release's ε, and a release as a draft registry record.

The registry (https://registry.opendp.org; records in github.com/opendp/deployments-registry-data) lists real DP
deployments with a tiered schema for reporting one. A copy of its 41 records (one CSV row each) and of its schema is
vendored in ``dpcore/plan/data`` (source, commit and licence in its README): nothing is fetched at run time.

* :func:`context` — where an ε sits among the deployments of one kind (statistics, models, synthetic data) and
  trust model (central, local): how many give an ε, how many are above and below it, their median and range. ε is
  the record's own; a record that gives only ρ (zCDP) is converted to ε at δ = 1e-5 and marked so. Records without
  either say nothing about ε and are counted apart.
* :func:`draft` — a planned release as a registry record (``status: Draft``): every field the release can fill
  (tiers 1–3: the product, the DP variant, the unit and its details, ε and δ, the deployment model, what is not
  protected, composition, post-processing, the mechanisms), the rest marked ``TO FILL`` for the curator;
  :func:`validate` checks it against the vendored schema as the registry's own checker does (Draft 7, formats).
"""

from __future__ import annotations

import csv
import datetime as _dt
import functools
import math
import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import claims
from ..errors import DPError
from ..noise import composition

DATA = Path(__file__).resolve().parent / "data"
SCHEMA_FILE = DATA / "deployments-schema.yaml"
RECORDS_FILE = DATA / "deployments_registry.csv"
COMMIT = "3e9c812"
CITATION = (
    "OpenDP deployments registry (registry.opendp.org): the 41 records of github.com/opendp/deployments-registry-data "
    f"at commit {COMMIT} (snapshot of 2026-07-15)"
)
#: Our kinds of release, and the registry's data product types that belong to each.
KINDS: dict[str, tuple[str, ...]] = {
    "statistics": ("Summary statistics", "Interactive API", "SQL queries", "Dataset"),
    "models": ("Machine learning model",),
    "synthetic data": ("Synthetic data",),
}
TO_FILL = "TO FILL"
Json = dict[str, Any]


@dataclass(frozen=True)
class Deployment:
    """One registry record as the CSV gives it (ε, δ, ρ as numbers where they are numbers)."""

    file: str
    name: str
    curators: str
    year: int
    product: str
    tier: int
    variant: str
    unit: str
    epsilon: float | None
    delta: float | None
    rho: float | None
    model: str

    @property
    def kind(self) -> str | None:
        return next((k for k, products in KINDS.items() if self.product in products), None)

    def comparable_epsilon(self) -> tuple[float | None, bool]:
        """(ε, converted): the record's ε, or its ρ converted to ε at δ = 1e-5."""
        if self.epsilon is not None:
            return self.epsilon, False
        if self.rho is not None:
            return composition.rdp_epsilon(self.rho, 1e-5)[0], True
        return None, False


def _float(x: str) -> float | None:
    try:
        v = float(x)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


@functools.lru_cache(maxsize=1)
def records() -> tuple[Deployment, ...]:
    """The vendored registry records."""
    with RECORDS_FILE.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    return tuple(
        Deployment(
            r["file"],
            r["name"],
            r["curators"],
            int(r["year"]),
            r["product"],
            int(r["tier"]),
            r["variant"],
            r["unit"],
            _float(r["epsilon"]),
            _float(r["delta"]),
            _float(r["rho"]),
            r["model"],
        )
        for r in rows
    )


@dataclass(frozen=True)
class Context:
    """Where ``epsilon`` sits among the registry's deployments of ``kind`` under ``model``."""

    epsilon: float
    kind: str
    model: str
    epsilons: tuple[float, ...]  # the comparable ε of each matching record, sorted
    names: tuple[str, ...]  # "curator: name (year)", in the same order
    converted: tuple[bool, ...]
    without: int  # matching records that give no ε or ρ

    @property
    def below(self) -> int:
        return sum(e < self.epsilon for e in self.epsilons)

    @property
    def above(self) -> int:
        return sum(e > self.epsilon for e in self.epsilons)

    @property
    def median(self) -> float | None:
        return statistics.median(self.epsilons) if self.epsilons else None

    def words(self) -> str:
        """One sentence, citing the registry."""
        n = len(self.epsilons)
        if n == 0:
            return (
                f"The registry has no {self.model.lower()} {self.kind} deployment that states an ε. Source: {CITATION}."
            )
        return (
            f"ε = {claims.up(self.epsilon)} is above {self.below} and below {self.above} of the {n} "
            f"{self.model.lower()} {self.kind} deployments in the registry that state an ε (median "
            f"{claims.up(self.median)}, from {claims.up(self.epsilons[0])} to {claims.up(self.epsilons[-1])}"
            + (f"; {sum(self.converted)} converted from ρ at δ = 1e-5" if any(self.converted) else "")
            + (f"; {self.without} more give none" if self.without else "")
            + f"). Source: {CITATION}."
        )


def context(epsilon: float, kind: str = "statistics", model: str = "Central") -> Context:
    """Where ``epsilon`` sits among the registry's deployments of ``kind`` ("statistics", "models", "synthetic
    data") under the trust ``model`` ("Central" or "Local")."""
    if kind not in KINDS:
        raise DPError(f"unknown kind of release {kind!r}; choose {', '.join(KINDS)}")
    if model not in ("Central", "Local"):
        raise DPError("the trust model is Central or Local")
    rows = []
    without = 0
    for r in records():
        if r.kind != kind or r.model != model:
            continue
        e, conv = r.comparable_epsilon()
        if e is None:
            without += 1
            continue
        rows.append((e, f"{r.curators}: {r.name} ({r.year})", conv))
    rows.sort()
    return Context(
        float(epsilon),
        kind,
        model,
        tuple(e for e, _, _ in rows),
        tuple(n for _, n, _ in rows),
        tuple(c for _, _, c in rows),
        without,
    )


# --- a release as a registry record ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def schema() -> Json:
    import yaml  # lazy: only a registry draft needs it

    loaded = yaml.safe_load(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def validate(record: Mapping[str, Any]) -> list[str]:
    """What the registry's schema says is wrong with ``record`` (empty: valid), as its own checker words it."""
    import jsonschema  # lazy: only a registry draft needs it

    v = jsonschema.Draft7Validator(schema(), format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return [f"{'.'.join(str(p) for p in e.path)}: {e.message}" for e in v.iter_errors(dict(record))]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:80] or "planned_release"


def draft(
    statement: Mapping[str, Any],
    *,
    curator: str | None = None,
    intended_use: str | None = None,
    region: str | None = None,
    sector: str | None = None,
    author: str | None = None,
    today: _dt.date | None = None,
) -> Json:
    """A planned release's statement (:mod:`dpcore.statements.plan`) as a draft registry record: tiers 1–3 as far as
    the release can say; what only its curator knows is ``TO FILL``."""
    if statement.get("kind") != "plan":
        raise DPError("a registry draft is made from a planned release's statement")
    stats = [s for s in statement.get("statistics") or [] if isinstance(s, Mapping)]
    labels = "; ".join(str(s.get("label")) for s in stats)
    person = statement.get("level") == "person-level"
    raw_unit = statement.get("unit")
    unit: Mapping[str, Any] = raw_unit if isinstance(raw_unit, Mapping) else {}
    eps = float(statement["epsilon"])
    title = str(statement.get("title") or "Planned release")
    details = (
        f"Datasets are adjacent when they differ by all rows of one person (rows sharing the value of "
        f"{unit.get('person')!r}); at most {unit.get('max_rows')} rows of each person are read (the first ones), "
        "rows without a person id are left out."
        if person
        else "Datasets are adjacent when one row is added or removed (unbounded DP)"
        + (
            f"; a person has at most {unit.get('public_max_rows')} rows (public), so a person is covered for "
            f"ε = {claims.up(statement.get('epsilon_per_person') or eps)}."
            if unit.get("public_max_rows")
            else "; a person with several rows is covered only for their number of rows × ε."
        )
    )
    mechanisms = (
        "Counts, histogram bins and bounded sums: discrete Laplace noise on whole numbers (values clamped to public "
        "bounds and rounded to a public grid first); means: a noisy sum over a noisy count; quantiles: OpenDP's "
        "score of public candidates and report-noisy-max with exponential noise. Drawn by OpenDP 0.16's exact "
        "samplers (make_laplace on 64-bit integers, make_noisy_max) from a cryptographically secure source: no "
        "floating-point noise. Made with DP Explorer."
    )
    record: Json = {
        "url_slug": _slug(title),
        "status": "Draft",
        "tier": 3,
        "deployment": {
            "basic": {
                "name": title,
                "data_curators": [curator or f"{TO_FILL}: who publishes it"],
                "description": f"{len(stats)} statistics released once under one privacy budget: {labels}.",
                "intended_use": intended_use or f"{TO_FILL}: what the statistics are for",
                "data_product_type": "Summary statistics",
                "data_product_region": region or f"{TO_FILL}: the region the data describes",
                "publication_date": (today or _dt.date.today()).isoformat(),
                **({"data_product_sector": sector} if sector else {}),
            },
            "dp_variant": {
                "variant_name": "Pure DP",
                "data_domain": str(statement.get("subject") or TO_FILL),
                "unprotected_quantities": (
                    "The public inputs: column names, bounds, categories, keys and the plan itself; whether the "
                    "release was made. No statistic is released without noise."
                ),
            },
            "privacy_loss": {
                "privacy_unit": "Person-level" if person else "Row-level (event-level)",
                "privacy_unit_details": details,
                "privacy_parameters": {"epsilon": eps, "delta": 0},
                "privacy_parameters_details": (
                    f"ε = {eps:g} for the whole release (δ = 0), the sum of each statistic's ε (basic composition of "
                    "pure ε-DP measurements); ε per row "
                    f"{claims.up(statement.get('epsilon_per_row') or eps)}."
                ),
            },
            "deployment_model": {
                "model_name": "Central",
                "actors": (
                    "The curator's server holds the raw rows and draws the noise; readers see only the released "
                    "table, its signed statement and the code that reproduces the plan."
                ),
                "release_type": "One release",
                "release_type_details": (
                    "Charged once to the dataset's privacy budget (its cap, never reset); further releases from the "
                    "same data are charged to the same cap."
                ),
                "data_source_type": "Static",
                "access_type": "Non-interactive",
            },
            "accounting": {
                "post_processing": (
                    "Grid units to values, a mean's ratio, and clamping a mean to its bounds: post-processing of the "
                    "noisy whole numbers. Intervals come from the noise distributions alone."
                ),
                "composition": "Sequential (basic) composition of the statistics' ε; cells of one statistic are "
                "disjoint (each kept row is in one cell), so one person moves them together by at most their "
                "sensitivity.",
            },
            "implementation": {
                "preprocessing_and_hyperparameter_tuning": (
                    "Bounds, categories, keys and the split of ε were chosen from public knowledge, before reading the "
                    "rows; the preview of each statistic's error uses public numbers only."
                ),
                "mechanisms": mechanisms,
                "justification": f"{TO_FILL}: why this ε and these statistics",
            },
            "administrative": {
                "sources": f"{TO_FILL}: where the release is published",
                "notes": "Drafted by DP Explorer from the release's signed statement.",
                "registry_authors": [author or f"{TO_FILL}: who fills in this record"],
            },
        },
    }
    return record
