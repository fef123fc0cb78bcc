"""NIST SP 800-226's checks: what a DP claim must state, and the hazards that apply to it, each in one line.

NIST Special Publication 800-226, *Guidelines for Evaluating Differential Privacy Guarantees* (Near, Darais,
Lefkovitz, Howarth; March 2025, https://doi.org/10.6028/NIST.SP.800-226), names the pitfalls between a DP claim and
the protection people get. This module is the one home of those checks in DP Explorer: the plan page and its
statement, every kind of signed statement (:func:`block`, which each statement builder adds and
``statement --verify`` recomputes) and the advisor read them from here.

A :class:`Claim` is what a release (or an advice) says about itself; :func:`checks` turns it into :class:`Flag` s:

* always stated — the **unit of privacy** (whose data ε protects), **ε at δ = 1e-5** (one scale on which claims
  compare) and the **trust model** (central: the server holds the rows; local: each person adds noise first);
* hazards, flagged exactly where they apply —

  - ``epsilon_above_1`` (1 < ε ≤ 10) and ``epsilon_above_10`` (ε > 10): the guarantee weakens fast above 1
    (e^ε: an attacker's odds may move that much) and says little above 10;
  - ``delta_vs_n``: δ > 0 not much smaller than 1/n (flagged when δ·n > 1/100, or when n is not public): a mechanism
    that publishes one whole record at random has δ = 1/n;
  - ``event_level``: the unit is a row (an event) while a person may have several rows: a person with m rows is
    covered only for m·ε;
  - ``variant``: the claim is stated as ρ-zCDP or μ-GDP, not (ε, δ): those numbers are on other scales and compare
    only once converted (the ε at δ = 1e-5 above);
  - ``clamping_bias``: values (or gradients) are clamped to public bounds, or rows beyond k per person dropped: the
    release is of the clamped data, biased when real values fall outside;
  - ``floating_point``: noise is added in floating point, where its low bits can leak (Mironov 2012), rather than by
    exact samplers;
  - ``not_private``: no DP guarantee at all.

:func:`claim_of` reads the claim of a signed statement from its own fields (one reader per kind), so a statement's
flags can be recomputed anywhere. Imports only the foundation and the noise maths (the conversions to ε at δ).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import claims
from .noise import calibration, composition

SOURCE = (
    "NIST SP 800-226 (2025), Guidelines for Evaluating Differential Privacy Guarantees, "
    "https://doi.org/10.6028/NIST.SP.800-226"
)
COMPARE_DELTA = 1e-5
#: δ·n above this is "not much smaller than 1/n".
DELTA_N_RATIO = 0.01
VARIANTS = ("pure", "approx", "zcdp", "gdp")
HAZARDS = (
    "not_private",
    "epsilon_above_10",
    "epsilon_above_1",
    "delta_vs_n",
    "event_level",
    "variant",
    "clamping_bias",
    "floating_point",
)
STATED = ("unit_of_privacy", "epsilon_at_1e-5", "trust_model")
Json = dict[str, Any]


@dataclass(frozen=True)
class Claim:
    """What a release claims. ``epsilon``/``delta``: its (ε, δ) (ε None: not private); ``rho``/``mu``: its native
    zCDP or GDP parameter when it is stated that way (``variant``); ``unit``: whose data, in words; ``level``:
    "person" or "row"; ``rows_per_person``: for a person-level claim the rows kept per person, for a row-level one
    the public most rows a person has (1: one row each; None: not known); ``n``: the public number of units (None:
    not public); ``clamped``: what is clamped to public bounds; ``exact_sampler``: noise from exact samplers on
    whole numbers (no float noise); ``trust``: "central" or "local"."""

    epsilon: float | None
    delta: float = 0.0
    variant: str = "pure"
    rho: float | None = None
    mu: float | None = None
    unit: str = "one row of the data"
    level: str = "row"
    rows_per_person: int | None = None
    n: int | None = None
    clamped: tuple[str, ...] = field(default_factory=tuple)
    exact_sampler: bool = True
    trust: str = "central"

    def to_dict(self) -> Json:
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "variant": self.variant,
            "rho": self.rho,
            "mu": self.mu,
            "unit": self.unit,
            "level": self.level,
            "rows_per_person": self.rows_per_person,
            "n": self.n,
            "clamped": list(self.clamped),
            "exact_sampler": self.exact_sampler,
            "trust": self.trust,
        }


@dataclass(frozen=True)
class Flag:
    """One check that applies: ``code`` (one of :data:`STATED` or :data:`HAZARDS`), ``kind`` ("states" or
    "hazard"), a short ``title`` and its ``line``: what it means for this claim."""

    code: str
    kind: str
    title: str
    line: str

    def to_dict(self) -> Json:
        return {"code": self.code, "kind": self.kind, "title": self.title, "line": self.line}


def epsilon_at(c: Claim, delta: float = COMPARE_DELTA) -> float | None:
    """ε of the claim at δ (None when it cannot be said: not private, or its own δ is above this δ)."""
    if c.epsilon is None and c.rho is None and c.mu is None:
        return None
    if c.variant == "zcdp" and c.rho is not None:
        return 0.0 if c.rho == 0 else composition.rdp_epsilon(c.rho, delta)[0]
    if c.variant == "gdp" and c.mu is not None:
        return 0.0 if c.mu == 0 else calibration.gaussian_epsilon(1.0 / c.mu, delta, 1.0)
    if c.epsilon is None:
        return None
    return float(c.epsilon) if c.delta <= delta * (1 + 1e-12) else None


def _e(x: float) -> str:
    return f"ε = {claims.up(x)}"


def checks(c: Claim) -> tuple[Flag, ...]:
    """Every check that applies to ``c``: the three statements, then each hazard where it applies."""
    out: list[Flag] = []
    level = "person-level" if c.level == "person" else "event-level (one row)"
    out.append(
        Flag("unit_of_privacy", "states", "Unit of privacy", f"{c.unit} — {level}: ε bounds what is learned about it")
    )
    e5 = epsilon_at(c)
    if c.epsilon is None and c.rho is None and c.mu is None:
        cmp = "no ε: this release is not private"
    elif e5 is None:
        cmp = f"not comparable at δ = 1e-5: its own δ = {claims.delta(c.delta)} is larger"
    elif c.variant in ("zcdp", "gdp"):
        cmp = f"{_e(e5)} at δ = 1e-5, converted from its {c.variant.upper()} parameter"
    else:
        cmp = f"{_e(e5)} at δ = 1e-5" + (" (pure ε-DP holds at every δ)" if c.delta == 0 else "")
    out.append(Flag("epsilon_at_1e-5", "states", "ε at δ = 1e-5, for comparison", cmp))
    trust = (
        "central: the server holds the raw rows and adds the noise; ε protects what is released, not the rows "
        "there — that rests on its operator, access control and security"
        if c.trust == "central"
        else "local: each person's data is noised before it leaves them; no curator sees raw rows"
    )
    out.append(Flag("trust_model", "states", "Trust model", trust))
    if c.epsilon is None and c.rho is None and c.mu is None:
        out.append(Flag("not_private", "hazard", "Not private", "no DP guarantee: nothing bounds what it reveals"))
        return tuple(out)
    eps = e5 if c.variant in ("zcdp", "gdp") and e5 is not None else c.epsilon
    if eps is not None and eps > 10:
        out.append(
            Flag(
                "epsilon_above_10",
                "hazard",
                "ε above 10",
                f"{_e(eps)}: e^ε ≈ {math.exp(min(eps, 700)):.3g}; an attacker's odds about one unit may move that much "
                "— little protection is left",
            )
        )
    elif eps is not None and eps > 1:
        out.append(
            Flag(
                "epsilon_above_1",
                "hazard",
                "ε above 1",
                f"{_e(eps)}: e^ε ≈ {math.exp(eps):.3g}; weaker than the strong range (ε ≤ 1) — justify it",
            )
        )
    if c.delta > 0:
        if c.n is None:
            out.append(
                Flag(
                    "delta_vs_n",
                    "hazard",
                    "δ against 1/n",
                    f"δ = {claims.delta(c.delta)} with n not public: δ must be much smaller than 1/n (here: well "
                    f"over {1 / c.delta:,.0f} units in the data); δ = 1/n allows publishing one record outright",
                )
            )
        elif c.delta * c.n > DELTA_N_RATIO:
            times = "at least 1/n" if c.delta * c.n >= 1 else f"only {1 / (c.delta * c.n):,.0f}× below 1/n"
            out.append(
                Flag(
                    "delta_vs_n",
                    "hazard",
                    "δ against 1/n",
                    f"δ = {claims.delta(c.delta)} is {times} (n = {c.n:,}): δ = 1/n allows publishing one record "
                    "outright; NIST asks for δ much smaller",
                )
            )
    if c.level == "row" and c.rows_per_person != 1:
        m = c.rows_per_person
        per = f"; here up to {m} rows each: {_e((c.epsilon or 0) * m)} per person" if m and c.epsilon else ""
        out.append(
            Flag(
                "event_level",
                "hazard",
                "Event-level, not person-level",
                f"ε protects one row; a person with m rows is covered only for m·ε (group privacy){per}",
            )
        )
    if c.variant in ("zcdp", "gdp"):
        p = f"ρ = {claims.up(c.rho or 0)}" if c.variant == "zcdp" else f"μ = {claims.up(c.mu or 0)}"
        out.append(
            Flag(
                "variant",
                "hazard",
                "(ε, δ) vs zCDP or GDP",
                f"stated in {c.variant.upper()} ({p}): not on the (ε, δ) scale — compare ε at δ = 1e-5, never the "
                "raw parameters",
            )
        )
    if c.clamped:
        out.append(
            Flag(
                "clamping_bias",
                "hazard",
                "Bias from clamping",
                f"{'; '.join(c.clamped)}: the release describes the clamped data — biased when real values fall "
                "outside the bounds",
            )
        )
    if not c.exact_sampler:
        out.append(
            Flag(
                "floating_point",
                "hazard",
                "Floating point",
                "noise is added in floating point, whose low bits can leak more than ε allows (Mironov 2012); exact "
                "samplers on whole numbers avoid it",
            )
        )
    return tuple(out)


def block(c: Claim) -> Json:
    """A statement's ``nist`` block: the claim it was read as and every flag that applies."""
    return {"source": SOURCE, "claim": c.to_dict(), "flags": [f.to_dict() for f in checks(c)]}


def hazards(c: Claim) -> tuple[str, ...]:
    """The codes of the hazards that apply (tests and summaries)."""
    return tuple(f.code for f in checks(c) if f.kind == "hazard")


# --- reading a statement's claim ------------------------------------------------------------------------------


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(float(x)) else None


def _obj(x: Any) -> Mapping[str, Any]:
    return x if isinstance(x, Mapping) else {}


def _rows(kind: Any) -> int | None:
    """Rows one person has in a built-in dataset (one patient per row), else not known."""
    return 1 if kind in ("medical", "breast_cancer") else None


def _dpsgd(st: Mapping[str, Any], acc: Mapping[str, Any], rows: Any, kind: Any) -> Claim:
    clamped = ["gradients clipped to norm C (DP-SGD)"] if _obj(st.get("mechanism")).get("noise_multiplier") else []
    pre = st.get("preprocessing")
    if isinstance(pre, list) and pre:
        clamped.append("features scaled and clamped to their bounds")
    eps, d = _num(acc.get("epsilon")), _num(acc.get("delta")) or 0.0
    return Claim(
        eps,
        d,
        "approx" if d > 0 else "pure",
        unit=str(st.get("unit_of_privacy") or "one record"),
        rows_per_person=_rows(kind),
        n=int(rows) if isinstance(rows, int) and not isinstance(rows, bool) else None,
        clamped=tuple(clamped),
        exact_sampler=False,
    )


def claim_of(st: Mapping[str, Any]) -> Claim:
    """The claim a statement makes, read from its own fields (one reader per kind; unknown kinds: not private)."""
    kind = st.get("kind")
    if kind == "plan":
        unit = _obj(st.get("unit"))
        person = st.get("level") == "person-level"
        k = unit.get("max_rows") if person else unit.get("public_max_rows")
        clamped = [
            f"{x.get('column')} clamped to [{x['bounds'][0]:g}, {x['bounds'][1]:g}]"
            for x in st.get("statistics") or []
            if isinstance(x, Mapping) and isinstance(x.get("bounds"), list) and len(x["bounds"]) == 2
        ]
        if person:
            clamped.append(f"rows beyond the first {k} of each person left out")
        return Claim(
            _num(st.get("epsilon")),
            0.0,
            "pure",
            unit=str(st.get("unit_of_privacy") or ""),
            level="person" if person else "row",
            rows_per_person=k if isinstance(k, int) and not isinstance(k, bool) else None,
            clamped=tuple(dict.fromkeys(clamped)),
        )
    if kind == "training_run":
        if st.get("private") is False:
            return Claim(None, unit=str(st.get("unit_of_privacy") or ""), exact_sampler=False)
        return _dpsgd(st, _obj(st.get("accountant")), st.get("rows"), st.get("dataset_kind"))
    if kind == "sweep":
        pts = [p for p in st.get("points") or [] if isinstance(p, Mapping)]
        accs = [_obj(p.get("accountant")) for p in pts]
        best = max(accs, key=lambda a: _num(a.get("epsilon")) or 0.0, default={})
        first = pts[0] if pts else {}
        c = _dpsgd(
            {**first, "unit_of_privacy": st.get("unit_of_privacy")}, best, st.get("rows"), st.get("dataset_kind")
        )
        return c
    if kind == "ledger":
        acc = _obj(st.get("accountant"))
        queries = [q for q in st.get("queries") or [] if isinstance(q, Mapping)]
        bounded = any(str(q.get("query") or "").upper().startswith(("SUM", "MEAN")) for q in queries)
        d = _num(acc.get("delta")) or 0.0
        return Claim(
            _num(acc.get("epsilon")) if queries else 0.0,
            d,
            "approx" if d > 0 else "pure",
            unit=str(st.get("unit_of_privacy") or ""),
            clamped=("SUM and MEAN values clamped to their bounds",) if bounded else (),
        )
    if kind == "synthetic_release":
        d = _num(st.get("delta")) or 0.0
        gen = _obj(st.get("generator"))
        cols = [c for c in _obj(st.get("declared_public")).get("columns") or [] if isinstance(c, Mapping)]
        numeric = [str(c.get("name")) for c in cols if c.get("bounds") is not None]
        upload = str(st.get("subject") or "").startswith("upload")
        return Claim(
            _num(st.get("epsilon")),
            d,
            "zcdp" if d > 0 and _num(gen.get("rho")) is not None else "pure",
            rho=_num(gen.get("rho")) if d > 0 else None,
            unit=str(st.get("unit_of_privacy") or ""),
            rows_per_person=None if upload else 1,
            clamped=(f"{', '.join(numeric)} clamped to their declared bounds",) if numeric else (),
        )
    if kind == "advice":
        dec = _obj(st.get("decision"))
        mech = _obj(st.get("inputs")).get("mechanism")
        d = _num(dec.get("delta")) or 0.0
        return Claim(
            _num(dec.get("epsilon")),
            d,
            "approx" if d > 0 else "pure",
            unit=str(st.get("unit_of_privacy") or ""),
            clamped=("gradients clipped to norm C (DP-SGD)",) if mech == "dpsgd" else (),
            exact_sampler=mech != "dpsgd",
        )
    return Claim(None, unit=str(st.get("unit_of_privacy") or ""))


def for_statement(st: Mapping[str, Any]) -> Json:
    """The ``nist`` block of a statement (its builder adds it; ``statement --verify`` recomputes it)."""
    return block(claim_of(st))
