"""The statement of a planned release (:func:`for_plan`) and its recomputation (:func:`check`).

It names the data (by its description, never a server path), the unit of privacy and the level — person-level (one
person's rows, at most k of them read) or row-level — with the neighbour relation that goes with it, ε for the whole
release (δ = 0: every measurement is pure ε-DP) per person and per row, and each statistic with its public
declaration, its share of ε, and each of its measurements' sensitivity, OpenDP scale and 95% interval. It says where
the budget was charged (or that the rows were the uploader's own), where the ε sits among the registry's
deployments, NIST SP 800-226's checks, and covers the released table (the CSV) by SHA-256.

:func:`check` rebuilds the plan from what the statement records, designs it again from public numbers and compares
every figure; each measurement's ε is OpenDP's own privacy map at its sensitivity and scale (``make_laplace`` on
64-bit integers, the quantile's score-and-select), and the statistics' ε add up to the stated total.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpcore import claims, nist, textsafe
from dpcore.noise import release
from dpcore.plan import registry
from dpcore.plan.compute import Outcome
from dpcore.plan.design import Design, PlanDesign, design
from dpcore.plan.model import Plan
from dpcore.statements import signing
from dpcore.statements.checks import Checker, close, obj

Json = dict[str, Any]
KIND = "plan"
CSV_NAME = "release.csv"
ROW = "add/remove one row"
PERSON = "add/remove one person (all of their rows)"


def unit_words(d: PlanDesign) -> str:
    return d.unit_words()


def _part(p: Any) -> Json:
    noise_scale = release.opendp_scale(p.noise()) if p.role != "quantile" else p.scale
    return {
        "role": p.role,
        "epsilon": p.epsilon,
        "sensitivity": p.sensitivity,
        "opendp_scale": noise_scale,
        "level": p.level,
        "halfwidth": p.halfwidth,
        "grid_step": None if p.grid_exponent is None else p.step,
        "grid_exponent": p.grid_exponent,
    }


def _statistic(x: Design) -> Json:
    s = x.statistic
    out: Json = {
        "index": x.index + 1,
        "label": s.label(),
        **s.to_dict(),
        "epsilon": x.epsilon,
        "cells": x.cells,
        "error_95": x.error_text(),
        "parts": [_part(p) for p in x.parts],
        "mechanism": (
            "OpenDP make_quantile_score_candidates >> make_noisy_max (exponential noise), candidates "
            f"{len(x.quantile.candidates)} public values"
            if x.quantile is not None
            else "discrete Laplace (OpenDP make_laplace on 64-bit integers)"
        ),
    }
    if x.quantile is not None:
        out["score_unit"] = x.quantile.unit
    return out


def body(outcome: Outcome) -> Json:
    """The unsigned statement of a released plan."""
    d = outcome.release.design
    plan = d.plan
    person = plan.unit.person_level
    st: Json = {
        "kind": KIND,
        "subject": outcome.subject,
        "title": plan.title,
        "level": "person-level" if person else "row-level",
        "unit_of_privacy": unit_words(d),
        "unit": plan.unit.to_dict(),
        "neighbour_relation": PERSON if person else ROW,
        "epsilon": d.epsilon,
        "delta": 0.0,
        "epsilon_per_person": d.epsilon_per_person,
        "epsilon_per_row": d.epsilon_per_row,
        "split": plan.split,
        "plan": plan.to_dict(),
        "statistics": [_statistic(x) for x in d.designs],
        "composition": "basic: the statistics' ε add up (pure ε-DP, δ = 0); cells of one statistic are disjoint",
        "budget": outcome.budget,
        "registry": _registry(d),
        "randomness": {
            "noise": release.SECURE_SOURCE if outcome.release.secure else release.NOT_DP,
            "post_processing": "grid steps to values, a mean's ratio and its clamping to the bounds",
        },
        "reproducible_noise": not outcome.release.secure,
        "dp_release": outcome.release.secure,
        "opendp_features": ["contrib"],
    }
    st["summary"] = summary(st)
    st["nist"] = nist.for_statement(st)
    return st


def _registry(d: PlanDesign) -> Json:
    ctx = registry.context(d.epsilon_per_person or d.epsilon, "statistics", "Central")
    return {
        "kind": ctx.kind,
        "model": ctx.model,
        "epsilon": ctx.epsilon,
        "below": ctx.below,
        "above": ctx.above,
        "median": ctx.median,
        "words": ctx.words(),
        "citation": registry.CITATION,
    }


def for_plan(outcome: Outcome, csv_name: str = CSV_NAME, *, also: Mapping[str, bytes] | None = None) -> Json:
    """The signed statement of a released plan, covering its table as ``csv_name`` (:func:`csv_bytes`) and every
    file in ``also`` (the plan, the code, the registry draft) by SHA-256."""
    return signing.issue(body(outcome), files={csv_name: csv_bytes(outcome), **(also or {})})


def csv_bytes(outcome: Outcome) -> bytes:
    """The released table as CSV (formula cells neutralised): the file the statement covers."""
    return textsafe.csv_bytes(outcome.release.frame())


def summary(st: Mapping[str, Any]) -> str:
    per_person = st.get("epsilon_per_person")
    who = (
        f"ε = {claims.up(st['epsilon'])} per person"
        if st.get("level") == "person-level"
        else f"ε = {claims.up(st['epsilon'])} per row"
        + (f" (ε = {claims.up(per_person)} per person)" if per_person is not None else "; a person with k rows: k·ε")
    )
    stats = st.get("statistics") or []
    return (
        f"{who}, δ = 0, for {len(stats)} statistics released once ({st.get('level')}; "
        f"{st.get('neighbour_relation')}); unit: {st.get('unit_of_privacy')}"
    )


def check(c: Checker, st: Mapping[str, Any]) -> None:
    """A plan statement's figures recomputed from its recorded plan: the design, each measurement's ε from OpenDP's
    privacy map, the total, ε per row and per person, the relation, the registry's context and the summary."""
    plan = c.run("plan", Plan.from_dict, st.get("plan"))
    if plan is None:
        return
    d = c.run("plan", design, plan)
    if d is None:
        return
    person = plan.unit.person_level
    c.same("level", st.get("level"), "person-level" if person else "row-level", 0)
    c.same("neighbour_relation", st.get("neighbour_relation"), PERSON if person else ROW, 0)
    c.same("unit_of_privacy", st.get("unit_of_privacy"), unit_words(d), 0)
    c.same("unit", st.get("unit"), plan.unit.to_dict(), 0)
    c.same("epsilon", st.get("epsilon"), d.epsilon)
    c.same("delta", st.get("delta"), 0.0)
    c.same("epsilon_per_person", st.get("epsilon_per_person"), d.epsilon_per_person)
    c.same("epsilon_per_row", st.get("epsilon_per_row"), d.epsilon_per_row)
    raw = st.get("statistics")
    stats: list[Any] = raw if isinstance(raw, list) else []
    if len(stats) != len(d.designs):
        c.fail("statistics", f"statistics lists {len(stats)}, the plan has {len(d.designs)}")
        return
    total = 0.0
    for i, (x, want) in enumerate(zip(stats, d.designs)):
        at = f"statistics[{i}]"
        x = obj(x)
        c.same(f"{at}.epsilon", x.get("epsilon"), want.epsilon)
        c.same(f"{at}.label", x.get("label"), want.statistic.label(), 0)
        raw_parts = x.get("parts")
        parts: list[Any] = raw_parts if isinstance(raw_parts, list) else []
        if len(parts) != len(want.parts):
            c.fail(f"{at}.parts", f"{at}.parts lists {len(parts)} measurements, the design has {len(want.parts)}")
            continue
        spent = 0.0
        for j, (p, q) in enumerate(zip(parts, want.parts)):
            p = obj(p)
            pat = f"{at}.parts[{j}]"
            for k, v in _part(q).items():
                c.same(f"{pat}.{k}", p.get(k), v)
            if q.role == "quantile":
                assert want.quantile is not None
                eps = want.quantile.epsilon  # OpenDP's map of the rebuilt measurement at k rows
            else:
                eps = release.privacy_map("laplace", release.opendp_scale(q.noise()), q.sensitivity)
            if eps > q.epsilon * (1 + 1e-9):
                c.fail(pat, f"{pat}: OpenDP's privacy map gives ε = {eps!r}, above its stated {q.epsilon!r}")
            else:
                c.passed(pat, f"{pat}: OpenDP's privacy map at sensitivity {q.sensitivity} gives ε = {eps:.6g}")
            spent += q.epsilon
        if not close(spent, want.epsilon, 1e-9):
            c.fail(at, f"{at}: its measurements' ε add up to {spent!r}, not its ε {want.epsilon!r}")
        total += want.epsilon
    c.same("epsilon (sum of the statistics')", st.get("epsilon"), total)
    reg = obj(st.get("registry"))
    if reg:
        c.same("registry", reg, _registry(d), 0)
    c.same("summary", st.get("summary"), summary(st), 0)
