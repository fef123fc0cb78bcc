"""The privacy statement of a synthetic release, as one dict (the one builder: the CLI writes it beside the CSV,
the page offers it, the report shows it; signing is applied to it like every other statement).

It names the generator, ε and δ (OpenDP's privacy map of the whole measurement), the unit and neighbour
relation (one patient's record, added or removed), what was declared public (each column's categories or
bounds and bins, and where the number of synthetic rows came from), and which randomness is the DP noise
(OpenDP's secure samplers, never stored) and which is post-processing (the seeded drawing of rows). It leaves
signed (:func:`dpcore.statements.signing.issue`); :func:`recompute` rebuilds the measurement from what the statement
records and compares OpenDP's privacy map with its ε and δ (``statement --verify`` runs it).
"""

from __future__ import annotations

import math

from dpcore.statements.common import ADD_REMOVE, UNIT
from dpcore.statements.signing import issue

from .. import claims, nist, textsafe
from .release import GENERATOR_NAMES, ROWS_ESTIMATED, SynthConfig, SynthRelease, plan
from .schema import Schema

OPENDP = "OpenDP 0.16.0 (opendp.extras.mbi) with Private-PGM (mbi 1.1.0)"


def release_statement(
    rel: SynthRelease,
    dataset: str,
    rows_read: str | None = None,
    csv_name: str = "synthetic.csv",
    budget: dict | None = None,
) -> dict:
    """The statement of one release of ``dataset`` (a description such as "synthetic medical, 1,000 patients").
    ``rows_read``: which of its rows the release read, in words, when not simply all of them (an upload with a
    held-out part: :mod:`dpcore.synth.job`). Signed, covering the synthetic table as the CSV ``csv_name`` that is
    written beside it (:func:`dpcore.textsafe.csv_bytes`) by SHA-256."""
    cfg, p = rel.config, rel.plan
    pure = cfg.delta == 0
    rows_from = f"declared: {cfg.rows:,}" if cfg.rows is not None else ROWS_ESTIMATED
    out = {
        "kind": "synthetic_release",
        "subject": dataset,
        "unit_of_privacy": UNIT,
        "neighbour_relation": ADD_REMOVE,
        "generator": {
            "name": cfg.generator.upper(),
            "method": GENERATOR_NAMES[cfg.generator],
            "library": OPENDP,
            "pairs_that_matter": ["+".join(x) for x in cfg.pairs],
            "noise": p.noise,
            "rho": p.rho,
        },
        "epsilon": p.epsilon,
        "delta": p.delta,
        "epsilon_requested": cfg.epsilon,
        "privacy_map": "OpenDP's privacy map of the whole measurement at one record added or removed "
        "(symmetric distance 1)" + ("" if pure else f"; zCDP ρ = {p.rho:.6g} converted to (ε, δ)"),
        "declared_public": {
            "columns": [dict(c.to_dict(), declared=c.describe()) for c in rel.schema.columns],
            "complete": rel.schema.complete,
            "rows": rows_from,
            "note": "every category, bound and bin width was declared before the release, never read from the rows",
        },
        **({"rows_read": rows_read} if rows_read else {}),
        "columns_released": rel.schema.names,
        "synthetic_rows": int(len(rel.table)),
        "randomness": {
            "measurement": "OpenDP's exact samplers from a secure random source (noisy marginals and the "
            "generator's noisy choices): never seeded, stored or shown",
            "post_processing": f"rows drawn from the fitted model (mbi, numpy seeded with {rel.sample_seed}) and "
            "numbers drawn inside their declared bins: a seed here changes which rows are drawn "
            "from the DP model, not what it learned",
            "sample_seed": rel.sample_seed,
        },
        "opendp_features": ["contrib"],
        "opendp_note": "OpenDP marks its marginal-based generators as contrib: implemented and tested in OpenDP, "
        "not yet through its proof review",
        "reproducible_noise": False,
        "dp_release": True,
        "notes": list(rel.notes),
        **({"budget": budget} if budget is not None else {}),  # which dataset's cap it was charged to, if any
    }
    out["summary"] = summary(out)
    out["nist"] = nist.for_statement(out)
    return issue(out, files={csv_name: textsafe.csv_bytes(rel.table)})


def recompute(st: dict) -> list[str]:
    """What does not check out in a synthetic release's statement, each naming its field: the relation and unit,
    the measurement rebuilt from the recorded declarations, generator, ε asked for, δ and pairs — its OpenDP
    privacy map against the stated ε, δ and ρ — and the summary."""
    problems = []
    if st.get("neighbour_relation") != ADD_REMOVE:
        problems.append(
            f"neighbour_relation is {st.get('neighbour_relation')!r}; a synthetic release is stated for {ADD_REMOVE!r}"
        )
    if st.get("unit_of_privacy") != UNIT:
        problems.append(f"unit_of_privacy is {st.get('unit_of_privacy')!r}, not {UNIT!r}")
    gen = st["generator"]
    schema = Schema.from_dict(st["declared_public"])
    cfg = SynthConfig(
        st["epsilon_requested"],
        st["delta"],
        str(gen["name"]).lower(),
        pairs=tuple(tuple(p.split("+")) for p in gen.get("pairs_that_matter") or ()),
    )
    p = plan(schema, cfg)
    for field, stated, again in (
        ("epsilon", st["epsilon"], p.epsilon),
        ("delta", st["delta"], p.delta),
        ("generator.rho", gen.get("rho"), p.rho),
    ):
        if (stated is None) != (again is None) or (
            again is not None and not math.isclose(float(stated), again, rel_tol=1e-9, abs_tol=1e-15)
        ):
            problems.append(f"{field} is {stated!r}, recomputed {again!r} from OpenDP's privacy map of the release")
    if st["epsilon"] > st["epsilon_requested"]:
        problems.append(f"epsilon {st['epsilon']!r} is above the ε asked for ({st['epsilon_requested']!r})")
    if st.get("summary") != summary(st):
        problems.append("summary does not say what the statement's fields say")
    return problems


def summary(st: dict) -> str:
    """One line: ε and δ (rounded up), the generator, the unit, what was declared public."""
    d = "δ = 0" if not st["delta"] else f"δ = {claims.delta(st['delta'])}"
    cols = ", ".join(c["name"] for c in st["declared_public"]["columns"])
    return (
        f"ε = {claims.up(st['epsilon'])}, {d} ({st['generator']['name']}); {st['neighbour_relation']}; "
        f"unit: {st['unit_of_privacy']}; declared public: the categories or bounds and bins of {cols}, and the "
        f"number of synthetic rows ({st['declared_public']['rows']})"
    )
