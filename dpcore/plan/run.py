"""One planned release through the dataset's budget: validated, charged once for the whole plan, drawn once.

:func:`release_plan` checks the plan against the data first (a bad plan costs nothing), then charges the plan's ε to
the dataset's cap and the asker's quota in one ledger transaction — one charge for all its statistics — and draws
every statistic's noise inside it (:meth:`dpcore.plan.compute.Prepared.release`), so that a refusal draws nothing and
a crash spends nothing. The same plan asked again of the same data returns the stored release for free.

What is charged is ε for one record of the registered dataset: a person-level plan's ε (a record is a person, or part
of one); a row-level plan's ε, or m·ε when its rows belong to people with at most m rows each and the dataset's
records are those people (the built-in visits are charged to the built-in patients). Rows that arrive as a file are
charged to every registered dataset they are (or nearly are); otherwise they are the uploader's own and nothing is
charged (the statement says so).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..budgets import gate, registry, visitors
from ..budgets.identities import Identity
from ..data import datasets
from ..errors import DPError
from ..noise.charge import Charge, pure_rho
from .compute import Outcome, PlanRelease, Prepared, prepare
from .design import PlanDesign, design
from .model import Plan

BUILTIN_KINDS = ("patients", "visits")
BUILTIN_WORDS = {
    "patients": "the built-in synthetic medical data: one row per patient",
    "visits": "the built-in synthetic medical visits: 1 to 10 rows per patient",
}


def builtin(kind: str, n: int, seed: int) -> tuple[pd.DataFrame, str]:
    """The built-in data (``kind`` "patients" or "visits") for n patients and a seed, and its description."""
    if kind == "patients":
        return datasets.medical(n, seed), f"synthetic medical, {n:,} patients (seed {seed})"
    if kind == "visits":
        return datasets.medical_visits(n, seed), f"synthetic medical visits of {n:,} patients (seed {seed})"
    raise DPError(f"unknown built-in data {kind!r}; choose {', '.join(BUILTIN_KINDS)}")


def charged_epsilon(d: PlanDesign) -> float:
    """ε charged to the dataset's cap: per person when known (the cap protects people), else per row."""
    per_person = d.epsilon_per_person
    return per_person if per_person is not None else d.epsilon


def _description(plan: Plan, d: PlanDesign) -> str:
    return f"{plan.title}: {len(plan.statistics)} statistics, ε = {d.epsilon:g} ({d.level_words().split(':')[0]})"


def release_on_dataset(
    plan: Plan, df: pd.DataFrame, who: Identity, dataset: str, *, subject: str, source: str, path: Any = None
) -> Outcome:
    """Release ``plan`` on ``df``, the rows of the registered dataset ``dataset`` (name or fingerprint; the
    built-in patients for the built-in visits), charged once to its cap and ``who``'s quota."""
    d = design(plan)
    prepared = prepare(df, plan, d)  # bad input is refused here, before anything is spent
    r = charge(
        who, dataset, charged_epsilon(d), _description(plan, d), f"{plan.canonical()} ON {source}", prepared, path
    )
    rel = PlanRelease.from_json(d, r["answer"])
    info = registry.info(r["dataset"], path=path)
    rows = registry.PUBLIC_N if info is not None and info["public_n"] else gate.NOT_RELEASED
    budget = {
        "charged_to": [
            {"dataset": r["dataset_name"], "epsilon": r["epsilon_charged"], "delta": 0.0, "number_of_rows": rows}
        ],
        "note": CHARGED_NOTE,
        **({"reused": "the same plan was released before: the stored release, free"} if r["reused"] else {}),
    }
    return Outcome(rel, r, budget, bool(r["reused"]), subject, source)


def release_builtin(plan: Plan, kind: str, n: int, seed: int, who: Identity, *, path: Any = None) -> Outcome:
    """Release ``plan`` on the built-in data, charged to the built-in patients' cap (the visitors' quota for a
    visitor): the visits are the same patients, so one cap protects them in both shapes."""
    df, subject = builtin(kind, n, seed)
    info = visitors.open_builtin(n, seed, path=path)
    return release_on_dataset(plan, df, who, info["fingerprint"], subject=subject, source=f"builtin:{kind}", path=path)


def release_upload(plan: Plan, df: pd.DataFrame, who: Identity, *, name: str, path: Any = None) -> Outcome:
    """Release ``plan`` on uploaded rows: charged to the registered dataset they are (or nearly are), else the
    uploader's own (nothing charged; the statement says so)."""
    d = design(plan)
    prepared: Prepared = prepare(df, plan, d)
    found = gate.registered_rows(df, path=path)
    if len(found) > 1:
        # An answer is drawn inside one dataset's transaction (the gate charges a drawn answer to one dataset), so
        # rows that are two registered datasets' are refused rather than charged to only one of them.
        names = ", ".join(sorted(str(f["name"]) for f in found))
        raise DPError(
            f"these rows are (or nearly are) more than one registered dataset ({names}); nothing was drawn or "
            "spent: release the plan on one registered dataset by name"
        )
    if found:
        return release_on_dataset(
            plan, df, who, found[0]["fingerprint"], subject=f"upload {name}", source="upload", path=path
        )
    return Outcome(prepared.release(), None, {"charged_to": [], "owner": OWN_ROWS}, False, f"upload {name}", "upload")


CHARGED_NOTE = (
    "charged to the dataset's cap and the asker's quota before anything was drawn (one record added or removed; "
    "a person-level plan's ε per person)"
)
OWN_ROWS = (
    "the uploader's own data: these rows are no registered dataset (nor a near-duplicate of one), so no dataset's "
    "cap was charged; ε bounds what this release says about each of its units"
)


def charge(
    who: Identity, dataset: str, epsilon: float, description: str, query: str, prepared: Prepared, path: Any = None
) -> dict[str, Any]:
    """One charge of ``epsilon`` for the whole plan, the release drawn inside the ledger's transaction (an identical
    plan asked again by the same quota returns the stored release, free).

    Every planned release is charged here and nowhere else, through the one gate (:func:`dpcore.budgets.gate.charge`,
    which checks the dataset's cap and the quota before ``compute`` draws anything), as a planned release: pure
    ε-DP, so δ = 0 and ρ = ε²/2."""
    return gate.charge(
        who,
        dataset,
        Charge.planned(epsilon, 0.0, pure_rho(epsilon)),
        description=description,
        query=query,
        compute=lambda: prepared.release().to_json(),
        path=path,
    )
