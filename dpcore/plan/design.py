"""A plan's design from public numbers alone: each statistic's share of ε, its noise and its 95% error.

Nothing here reads a row. :func:`design` turns a :class:`~dpcore.plan.model.Plan` into a :class:`PlanDesign`: for
each statistic the cells it releases (its groups × its bins), the noisy measurements behind it (:class:`Part`: a
discrete Laplace count or grid sum, or OpenDP's quantile selection) with their sensitivity for one unit of privacy,
and the error a reader should expect — the preview, which spends nothing.

**Splitting ε.** ε is kept in whole micro-ε, as the ledger charges it, so the statistics' shares add up to the total
exactly. ``hand``: shares in proportion to the weights. ``equal``: in proportion to each statistic's relative error at
ε = 1 (error ∝ 1/ε, so every statistic ends with about the same relative error; exact up to the noise's whole
steps). ``accuracy``: each statistic gets the smallest ε whose 95% error is within its target (the errors fall as ε
grows), and the total is their sum — accuracy in, ε out.

**Errors.** A count's and a sum's 95% half-width is its noise's own (the smallest whole t with P(|noise| > t) ≤ 5%);
a mean's two parts (a noisy centred sum and a noisy count, ε/2 each) hold at 97.5% each, so the ratio interval holds
at 95% or more; its preview at the public guess of rows per cell. A quantile's bound is on its score (rows of rank).
Relative errors divide by what the statistic would be at the public guess (``expected_rows``): used to split ε and to
show the preview, never for the release.

**ε per person and per row.** Pure ε-DP throughout (δ = 0): the statistics compose by adding their ε. A
person-level plan's ε is per person (at most k of their rows are read) and bounds a row too (a row belongs to one
person). A row-level plan's ε is per row; a person with m rows is covered for m·ε (group privacy), stated when the
most rows a person can have is public.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from .. import claims, limits, nist
from ..errors import DPError
from ..noise import grid as noise_grid
from ..noise import mechanisms, release
from .model import OTHER, SPLIT_WORDS, Plan, Statistic, Unit

LEVEL = 0.95
MICRO = 1_000_000


@dataclass(frozen=True)
class Part:
    """One noisy measurement of a statistic (all its cells at once). ``role``: "count", "sum" or "quantile";
    ``epsilon`` its share; ``level`` the level of its interval; ``sensitivity`` how far one unit of privacy moves it
    (whole rows or grid steps, L1 over the cells; a quantile's: rows added or removed); ``scale`` its noise scale;
    ``halfwidth`` its interval in whole units (a quantile's: the score gap); ``grid_exponent`` and ``centre`` a sum's
    grid and centre."""

    role: str
    epsilon: float
    level: float
    sensitivity: int
    scale: float
    halfwidth: float
    grid_exponent: int | None = None
    centre: int = 0

    def noise(self) -> mechanisms.Mechanism:
        """The whole-number mechanism that draws it (discrete Laplace)."""
        return release.noise_for("laplace", epsilon=self.epsilon, sensitivity=self.sensitivity)

    @property
    def step(self) -> float:
        return 1.0 if self.grid_exponent is None else noise_grid.Grid(self.grid_exponent).step


@dataclass(frozen=True)
class Design:
    """One statistic's public design: its ε, its released cells, its parts, the error to expect (in its own unit:
    rows for a count, the column's unit for a sum or mean, rows of rank for a quantile) and that error relative to
    the statistic's size at the public guess of rows."""

    index: int
    statistic: Statistic
    epsilon: float
    groups: tuple[str, ...]
    bins: tuple[str, ...]
    parts: tuple[Part, ...]
    error: float
    relative: float
    quantile: release.QuantileNoise | None = None

    @property
    def cells(self) -> int:
        return len(self.groups) * len(self.bins)

    @property
    def unit(self) -> str:
        s = self.statistic
        if s.kind in ("count", "histogram"):
            return "rows"
        if s.kind == "quantile":
            return "rows of rank"
        return f"in {s.column}'s unit"

    def error_text(self) -> str:
        """The 95% error in words: "± 6 rows", "± 1,234.5", "± 7 rows of rank"."""
        s = self.statistic
        if s.kind in ("count", "histogram", "quantile"):
            return f"± {claims.up(self.error, 3)} {self.unit}"
        return f"± {claims.up(self.error, 3)}"


@dataclass(frozen=True)
class PlanDesign:
    """The whole plan's design: its statistics', the total ε (per unit of privacy), ε per row and per person."""

    plan: Plan
    designs: tuple[Design, ...]
    epsilon: float

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def person_level(self) -> bool:
        return self.plan.unit.person_level

    @property
    def epsilon_per_person(self) -> float | None:
        """ε for one person: the plan's own when person-level; m·ε (group privacy) for a row-level plan when the
        most rows one person has (m) is public; None when not known."""
        u = self.plan.unit
        if u.person_level:
            return self.epsilon
        if u.public_max_rows is not None:
            return _micro_up(self.epsilon * u.public_max_rows)
        return None

    @property
    def epsilon_per_row(self) -> float:
        """ε for one row: the plan's own (a person-level plan's bounds a row too: a row is part of one person)."""
        return self.epsilon

    def worst(self) -> Design:
        """The statistic with the largest relative error (at the public guess of rows)."""
        return max(self.designs, key=lambda d: d.relative)

    def level_words(self) -> str:
        u = self.plan.unit
        if u.person_level:
            return f"person-level: one person's rows (marked by {u.person}; at most {u.max_rows} kept each) added or removed"
        return "row-level: one row added or removed"

    def split_words(self) -> str:
        return SPLIT_WORDS[self.plan.split]

    def unit_words(self) -> str:
        """The unit of privacy in words (what a statement's ``unit_of_privacy`` says)."""
        u = self.plan.unit
        if u.person_level:
            return f"one person: every row with the same {u.person} (at most {u.max_rows} of them read)"
        if u.public_max_rows is not None:
            return f"one row (a person has at most {u.public_max_rows} rows)"
        return "one row of the data"

    def clamped(self) -> tuple[str, ...]:
        """What the plan clamps or leaves out before any noise (NIST's bias from clamping)."""
        out = [f"{s.column} clamped to [{s.bounds[0]:g}, {s.bounds[1]:g}]" for s in self.plan.statistics if s.bounds]
        if self.person_level:
            out.append(f"rows beyond the first {self.plan.unit.max_rows} of each person left out")
        return tuple(dict.fromkeys(out))

    def claim(self) -> nist.Claim:
        """The plan's claim for NIST SP 800-226's checks (the same its statement is read as)."""
        u = self.plan.unit
        return nist.Claim(
            self.epsilon,
            0.0,
            "pure",
            unit=self.unit_words(),
            level="person" if self.person_level else "row",
            rows_per_person=u.max_rows if self.person_level else u.public_max_rows,
            clamped=self.clamped(),
        )


def _micro(x: float) -> int:
    return int(round(x * MICRO))


def _micro_up(x: float) -> float:
    return math.ceil(round(x * MICRO, 6)) / MICRO


def group_labels(plan: Plan, s: Statistic) -> tuple[str, ...]:
    """The released groups of a statistic: every combination of its keys' categories and "(other)"."""
    if not s.by:
        return ("all",)
    cats = [(*plan.key(b).categories, OTHER) for b in s.by]
    return tuple(", ".join(f"{b}={v}" for b, v in zip(s.by, combo)) for combo in itertools.product(*cats))


def bin_labels(s: Statistic) -> tuple[str, ...]:
    """A histogram's bins: its categories and "(other)", or its numeric bins (values outside go to the end bins)."""
    if s.kind != "histogram":
        return ("",)
    if s.categories is not None:
        return (*s.categories, OTHER)
    assert s.bounds is not None and s.bins is not None
    lo, hi = s.bounds
    edges = [lo + (hi - lo) * i / s.bins for i in range(s.bins + 1)]
    return tuple(
        f"[{a:g}, {b:g}{']' if i == s.bins - 1 else ')'}" for i, (a, b) in enumerate(zip(edges[:-1], edges[1:]))
    )


def _magnitude(s: Statistic) -> float:
    """A value's typical size from its public bounds: |midpoint|, or half the range when the midpoint is 0."""
    assert s.bounds is not None
    lo, hi = s.bounds
    mid = abs(lo + hi) / 2
    return mid if mid > 0 else (hi - lo) / 2


def _count_part(eps_micro: int, k: int, level: float) -> Part:
    eps = eps_micro / MICRO
    noise = release.noise_for("laplace", epsilon=eps, sensitivity=k)
    return Part("count", eps, level, k, float(noise.scale), float(noise.halfwidth(level)))


def _sum_part(eps_micro: int, k: int, s: Statistic, level: float, *, centred: bool) -> Part:
    assert s.bounds is not None
    lo, hi = s.bounds
    what = f"the bounds of {s.column}"
    spread = (hi - lo) / 2 if centred else max(abs(lo), abs(hi))
    noise_grid.check_release(
        magnitude=max(abs(lo), abs(hi)),
        sensitivity=spread,
        what=what,
        spread="the bounds' spread",
        spread_max=2 * limits.RELEASE_MAGNITUDE_MAX,
    )
    g = noise_grid.for_sensitivity(spread)
    if centred:
        c, unit_k = noise_grid.centre_and_k(g, lo, hi)
    else:
        c, unit_k = 0, noise_grid.bounded_sum_k(g, lo, hi)
    eps = eps_micro / MICRO
    noise = release.noise_for("laplace", epsilon=eps, sensitivity=max(1, unit_k) * k)
    return Part("sum", eps, level, max(1, unit_k) * k, float(noise.scale), float(noise.halfwidth(level)), g.exponent, c)


def design_one(plan: Plan, index: int, s: Statistic, eps_micro: int) -> Design:
    """The design of statistic ``s`` at ``eps_micro`` micro-ε (public numbers only)."""
    if eps_micro < 1:
        raise DPError(f"{s.label()} would get less than ε = 1e-6: give the plan more ε or fewer statistics")
    k = plan.unit.contributions
    groups, bins = group_labels(plan, s), bin_labels(s)
    cells = len(groups) * len(bins)
    if cells > limits.PLAN_MAX_CELLS:
        raise DPError(
            f"{s.label()} releases {cells:,} cells (groups × bins); at most {limits.PLAN_MAX_CELLS:,}: use fewer keys "
            "or categories"
        )
    per_cell = max(plan.expected_rows / cells, 1.0)  # the public guess of rows, shared by the cells
    eps = eps_micro / MICRO
    if s.kind in ("count", "histogram"):
        part = _count_part(eps_micro, k, LEVEL)
        return Design(index, s, eps, groups, bins, (part,), part.halfwidth, part.halfwidth / per_cell)
    if s.kind == "sum":
        part = _sum_part(eps_micro, k, s, LEVEL, centred=False)
        err = part.halfwidth * part.step
        return Design(index, s, eps, groups, bins, (part,), err, err / (per_cell * _magnitude(s)))
    if s.kind == "mean":
        if eps_micro < 2:
            raise DPError(f"{s.label()} needs at least ε = 2e-6 (a noisy sum and a noisy count)")
        half = eps_micro // 2
        sp = _sum_part(half, k, s, 0.975, centred=True)
        cp = _count_part(eps_micro - half, k, 0.975)
        assert s.bounds is not None
        lo, hi = s.bounds
        err = min((sp.halfwidth * sp.step + (hi - lo) / 2 * cp.halfwidth) / per_cell, hi - lo)
        return Design(index, s, eps, groups, bins, (sp, cp), err, err / _magnitude(s))
    # quantile
    q = release.quantile_noise(s.candidates(), s.quantile_alpha, eps, k)
    part = Part("quantile", eps, LEVEL, k, q.scale, q.gap)
    return Design(index, s, eps, groups, bins, (part,), q.rows, q.rows / per_cell, q)


def shares(total_micro: int, weights: Sequence[float]) -> list[int]:
    """``total_micro`` split in proportion to ``weights``, in whole micro-ε, adding up exactly (largest remainders)."""
    w = [float(x) for x in weights]
    tot = sum(w)
    raw = [total_micro * x / tot for x in w]
    out = [math.floor(r) for r in raw]
    rest = total_micro - sum(out)
    for i in sorted(range(len(w)), key=lambda j: raw[j] - out[j], reverse=True)[:rest]:
        out[i] += 1
    return out


def _for_target(plan: Plan, i: int, s: Statistic) -> int:
    """The smallest micro-ε whose 95% error is within ``s.target`` (errors never grow with ε)."""
    assert s.target is not None
    hi = _micro(limits.PLAN_EPSILON_MAX)
    if design_one(plan, i, s, hi).error > s.target:
        raise DPError(
            f"{s.label()}: a 95% error of {s.target:g} needs more than ε = {limits.PLAN_EPSILON_MAX:g}; ask for a "
            "looser target"
        )
    lo = 2 if s.kind == "mean" else 1
    if design_one(plan, i, s, lo).error <= s.target:
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if design_one(plan, i, s, mid).error <= s.target:
            hi = mid
        else:
            lo = mid
    return hi


def twin(plan: Plan, *, person: str | None, public_max_rows: int | None) -> PlanDesign | None:
    """The same statistics under the other unit, to show ε per row and per person side by side: a person-level
    plan's row-level twin (covered per person for ``public_max_rows``·ε when that is public), or a row-level plan's
    person-level twin on the ``person`` column with ``public_max_rows`` rows kept (None when there is no person
    column)."""
    if plan.unit.person_level:
        unit = Unit(public_max_rows=public_max_rows)
    elif person is not None:
        unit = Unit(person=person, max_rows=public_max_rows or limits.PLAN_MAX_ROWS_PER_PERSON)
    else:
        return None
    return design(dataclasses.replace(plan, unit=unit))


def design(plan: Plan) -> PlanDesign:
    """Each statistic's ε share, noise and expected error; the total ε. Public numbers only: the preview."""
    stats = plan.statistics
    if plan.split == "accuracy":
        micro = [_for_target(plan, i, s) for i, s in enumerate(stats)]
        if sum(micro) > _micro(limits.PLAN_EPSILON_MAX):
            raise DPError(
                f"these targets need ε = {claims.up(sum(micro) / MICRO)} in all, above the plan's limit of "
                f"{limits.PLAN_EPSILON_MAX:g}; loosen a target or drop a statistic"
            )
    else:
        assert plan.epsilon is not None
        total = _micro(plan.epsilon)
        if total < len(stats):
            raise DPError("the plan's ε is too small to give each statistic at least ε = 1e-6")
        if plan.split == "hand":
            weights = [s.weight for s in stats]
        else:  # equal relative error: error ∝ 1/ε, so shares ∝ each one's relative error at ε = 1
            weights = [design_one(plan, i, s, MICRO).relative for i, s in enumerate(stats)]
        micro = shares(total, weights)
    designs = tuple(design_one(plan, i, s, m) for i, (s, m) in enumerate(zip(stats, micro)))
    draws = sum(d.cells for d in designs)
    if draws > limits.RELEASE_DRAWS_MAX:
        raise DPError(f"the plan releases {draws:,} numbers; at most {limits.RELEASE_DRAWS_MAX:,}")
    return PlanDesign(plan, designs, sum(micro) / MICRO)
