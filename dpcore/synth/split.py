"""A release's budget split so that the parts provably add up to at most the whole, in the arithmetic OpenDP checks.

OpenDP 0.16's generators split their budget in floating point; its compositors add the parts back with their own
conservative (rounded-up) sum and refuse a query whose loss exceeds its share. MST's split can add up to a few units
in the last place more than its whole, and the release then fails at its last selection, after the first fit:

* **MST** gives its selection ``d_select = prior(prior(d − 0.9·d))`` of its budget ``d`` and spends it in
  ``k = columns − 1`` rounds of ``prior(d_select / k)`` each; OpenDP's sum of those rounds can exceed ``d_select``
  (ε = 1 and 9 or 10 columns: "insufficient budget for query: 0.04999999999999998 > 0.049999999999999975"). For
  ``k = 8`` no smaller ``d`` helps (dividing by 8 is exact, so every budget fails the same way). :func:`mst_pieces`
  splits ``d`` the same way but takes each part as the largest that OpenDP's own sum (:func:`composer`) accepts:
  ``k`` rounds within the selection, selection and measurement within ``d``.
* **AIM** spends its budget in rounds, sizing the last at ``prior(d − spent)``; its privacy filter adds each round's
  cost to what is spent (``compose([spent, cost])``) and refuses a round that would pass ``d``. No sweep in the tests
  made OpenDP's rule pass ``d``, but nothing in its arithmetic promises it, so :func:`algorithm`'s AIM is OpenDP's loop
  with one change: a round's budget is the largest whose cost (:func:`aim_cost`, OpenDP's split of a round) added to
  what is spent stays within ``d`` (:func:`aim_round`), and the round's real cost is checked before it is asked.
* With **one column** MST has no pair to choose (OpenDP divides by ``k = 0``): the part MST would spend on pairs
  measures the column's one-way marginal a second time (OpenDP's ``Fixed``).

:func:`algorithm` gives OpenDP's MST and AIM with these splits: their code as OpenDP 0.16 writes it (the version is
pinned), with the parts of the budget, the model fit (:mod:`dpcore.synth.fit`) and the scale searches
(:mod:`dpcore.synth.search`) the only changes. What runs is OpenDP's measurement on at most its share, so the privacy
map of the whole release — OpenDP's number, the statement's ε — is a true upper bound, and
:func:`dpcore.synth.release.plan` checks it is at most the ε asked. The arithmetic here is pure (a ``compose`` callable
comes in): the tests check it over every column count and many budgets without running a release.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..errors import DPError
from .fit import mirror_descent, pair_marginal
from .search import binary_search_chain

Compose = Callable[[Sequence[float]], float]

MEASURE_SPLIT = 0.9  # OpenDP's default share of an MST budget or an AIM round for measuring (the rest selects)


def prior(x: float) -> float:
    """The next float below ``x`` (OpenDP's ``prior``)."""
    return math.nextafter(x, -math.inf)


def composer(dp: Any, measure: Any) -> Compose:
    """OpenDP's own sum of privacy losses under ``measure`` (max divergence: ε, zCDP: ρ): the number its
    compositors and filters compare with a budget. A composition of the parts on a trivial space, mapped."""
    domain, metric = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)

    def compose(parts: Sequence[float]) -> float:
        parts = [float(p) for p in parts]
        if not parts:
            return 0.0
        return float(dp.c.make_adaptive_composition(domain, metric, measure, 1.0, parts).map(1.0))

    return compose


# --- the search ---------------------------------------------------------------------------------------------


def largest(fits: Callable[[float], bool], hi: float) -> float:
    """The largest float in ``[0, hi]`` that ``fits`` finds: ``hi`` and the few floats below it first (a sum that
    overshoots does so by a few units in the last place), then bisection (0 is taken to fit). Whatever comes back has
    been checked with ``fits`` (or is 0), monotone or not."""
    x = float(hi)
    for _ in range(_STEPS):
        if x <= 0:
            return 0.0
        if fits(x):
            return x
        x = prior(x)
    lo = 0.0
    for _ in range(2_100):  # value bisection: lo and hi are neighbouring floats after ~60 rounds, 1,100 at most
        mid = lo + (hi - lo) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


_STEPS = 32


# --- MST ------------------------------------------------------------------------------------------------------


def mst_rounds(num_selections: int | None, n_columns: int) -> int:
    """How many pairs MST selects (OpenDP 0.16: ``num_selections``, capped at columns − 1)."""
    most = n_columns - 1
    return min(max(0, num_selections or most), most)


def opendp_mst_pieces(d: float, k: int, measure_split: float = MEASURE_SPLIT) -> tuple[float, float, float]:
    """OpenDP 0.16's own split of MST's budget ``d`` (``_mst.MST.make_marginals``, ``_make_mst_select``):
    (selection, measurement, one of ``k`` selection rounds) — what :func:`mst_pieces` replaces."""
    d_measure = d * measure_split
    d_select = prior(prior(d - d_measure))
    return d_select, d_measure, prior(d_select / k)


def mst_fits(pieces: tuple[float, float, float], d: float, k: int, compose: Compose) -> bool:
    """Whether OpenDP accepts MST's pieces: ``k`` rounds within the selection's part, and selection plus
    measurement within ``d`` (what its compositors compare, with its sum)."""
    d_select, d_measure, d_round = pieces
    return d_round > 0 and compose([d_round] * k) <= d_select and compose([d_select, d_measure]) <= d


def mst_pieces(d: float, k: int, compose: Compose, measure_split: float = MEASURE_SPLIT) -> tuple[float, float, float]:
    """MST's budget ``d`` split as OpenDP 0.16 splits it, but each part the largest that fits OpenDP's sum: the
    measurement ``measure_split·d``; the selection the largest ≤ OpenDP's whose sum with it is within ``d``; a
    round the largest ≤ selection / k whose ``k``-fold sum is within the selection."""
    d_measure = d * measure_split
    d_select = largest(lambda y: compose([y, d_measure]) <= d, prior(prior(d - d_measure)))
    d_round = largest(lambda x: compose([x] * k) <= d_select, d_select / k)
    pieces = (d_select, d_measure, d_round)
    if not mst_fits(pieces, d, k, compose):  # pragma: no cover - a budget too small to split at all
        raise DPError(f"MST's budget {d!r} is too small to split into {k} rounds; try a larger ε")
    return pieces


# --- AIM ------------------------------------------------------------------------------------------------------


def aim_cost(x: float, compose: Compose, measure_split: float = MEASURE_SPLIT) -> float:
    """What one AIM round of budget ``x`` costs: OpenDP 0.16's split of a round (``_make_aim_marginal``:
    selection ``max(prior(prior(x − split·x)), 0)``, measurement ``split·x``) composed."""
    d_measure = x * measure_split
    d_select = max(prior(prior(x - d_measure)), 0.0)
    return compose([d_select, d_measure])


def aim_round(x: float, spent: float, d: float, compose: Compose, measure_split: float = MEASURE_SPLIT) -> float:
    """The largest round budget ``≤ x`` whose cost, added to ``spent`` as OpenDP's privacy filter adds it
    (``compose([spent, cost])``), stays within ``d``; 0.0 when none does, or when what is left is below
    :data:`AIM_LEAST_ROUND` of ``d`` (a round that small would add noise a billion times the others': nothing but
    another model fit)."""
    if x < d * AIM_LEAST_ROUND:
        return 0.0
    return largest(lambda y: compose([spent, aim_cost(y, compose, measure_split)]) <= d, x)


AIM_LEAST_ROUND = 1e-9


# --- the generators -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Generators:
    mst: type
    aim: type


@functools.lru_cache(maxsize=2)  # one per OpenDP module (there is one)
def _generators(dp: Any) -> Generators:
    """OpenDP 0.16's MST and AIM with the splits above: their ``make_marginals`` as OpenDP writes them, the budget's
    parts the only change (classes made on first use: OpenDP's mbi extra imports jax)."""
    from mbi import MarkovRandomField  # OpenDP's mbi extra and Private-PGM import jax: loaded with a release
    from opendp._internal import _make_transformation, _new_pure_function
    from opendp.combinators import make_fully_adaptive_composition, make_privacy_filter, then_adaptive_composition
    from opendp.domains import atom_domain, vector_domain
    from opendp.extras.mbi import AIM, MST, Count, Fixed
    from opendp.extras.mbi._aim import _expand_queries, _make_aim_marginal
    from opendp.extras.mbi._utilities import (
        TypedDictDistance,
        TypedDictDomain,
        get_associated_metric,
        make_noise_marginals,
        make_stable_marginals,
    )
    from opendp.extras.numpy import NPArrayDDomain
    from opendp.measurements import make_noisy_max
    from opendp.metrics import linf_distance
    from scipy.cluster.hierarchy import DisjointSet

    def mst_scores(input_domain, input_metric, queries, model):
        """OpenDP's ``_make_mst_scores`` (how poorly the model holds each pair: the same norm, the same stability
        map), the model's pair marginals from :func:`dpcore.synth.fit.pair_marginal`."""
        for value_domain in input_domain.cast(TypedDictDomain).values():
            value_domain.cast(NPArrayDDomain)
        input_metric.cast(TypedDictDistance)
        return _make_transformation(
            input_domain=input_domain,
            input_metric=input_metric,
            output_domain=vector_domain(atom_domain(T="f64", nan=False)),
            output_metric=linf_distance(T="f64", monotonic=False),
            function=lambda exact: [float(np.linalg.norm(exact[q] - pair_marginal(model, q), 1)) for q in queries],
            stability_map=lambda d_in: max(d_in.values()),
        )

    def mst_select(input_domain, input_metric, output_measure, d_in, d_round, k, edges, model):
        """OpenDP's ``_make_mst_select``: ``k`` report-noisy-max rounds of ``d_round`` each."""
        t_scores = mst_scores(input_domain, input_metric, edges, model)
        d_scores = t_scores.map(d_in)

        def function(qbl):
            selected, components = [], DisjointSet(model.domain.attrs)
            for _ in range(k):
                unconnected = [i for i, e in enumerate(edges) if not components.connected(*e)]
                t_unconnected = _make_transformation(
                    *t_scores.output_space,
                    *t_scores.output_space,
                    function=lambda scores, u=unconnected: [scores[i] for i in u],
                    stability_map=lambda d: d,
                )
                m_rnm = binary_search_chain(
                    lambda s, t=t_unconnected: make_noisy_max(*t.output_space, output_measure=output_measure, scale=s),
                    d_in=d_scores,
                    d_out=d_round,
                    T=float,
                )
                edge = edges[unconnected[qbl(t_unconnected >> m_rnm)]]
                selected.append(edge)
                components.merge(*edge)
            return selected

        return (
            t_scores
            >> then_adaptive_composition(output_measure, d_in=d_scores, d_mids=[d_round] * k)
            >> _new_pure_function(function)
        )

    @dataclass(kw_only=True, frozen=True)
    class SafeMST(MST):
        """OpenDP's MST with its budget split by :func:`mst_pieces`."""

        def make_marginals(self, input_domain, input_metric, output_measure, d_in, d_out, *, marginals, model):
            if not isinstance(model, MarkovRandomField):
                raise ValueError("model must be a MarkovRandomField")
            k = mst_rounds(self.num_selections, len(model.domain.attrs))
            if k == 0:  # one column: no pair to select; its one-way marginal is measured again with the budget
                fixed = Fixed(queries=[Count(tuple(input_domain.columns))], estimator=self.estimator)
                return fixed.make_marginals(
                    input_domain, input_metric, output_measure, d_in, d_out, marginals=marginals, model=model
                )
            d_select, d_measure, d_round = mst_pieces(d_out, k, composer(dp, output_measure), self.measure_split)
            edges = list(itertools.combinations(input_domain.columns, 2))
            t_marginals = make_stable_marginals(
                input_domain, input_metric, get_associated_metric(output_measure), edges
            )
            d_marginals = t_marginals.map(d_in)

            def function(qbl):
                m_select = mst_select(*t_marginals.output_space, output_measure, d_marginals, d_round, k, edges, model)
                cliques = qbl(m_select)
                m_measure = binary_search_chain(
                    lambda s: make_noise_marginals(*t_marginals.output_space, output_measure, cliques, scale=s),
                    d_in=d_marginals,
                    d_out=d_measure,
                    T=float,
                )
                all_marginals = marginals.add(*qbl(m_measure))
                return all_marginals, self.estimator(model.domain, all_marginals.flatten(), potentials=model.potentials)

            return (
                t_marginals
                >> then_adaptive_composition(
                    output_measure=output_measure, d_in=d_marginals, d_mids=[d_select, d_measure]
                )
                >> _new_pure_function(function)
            )

    @dataclass(kw_only=True, frozen=True)
    class SafeAIM(AIM):
        """OpenDP's AIM with each round's budget from :func:`aim_round`, and its real cost checked before it is
        asked."""

        def make_marginals(self, input_domain, input_metric, output_measure, d_in, d_out, *, marginals, model):
            if not isinstance(model, MarkovRandomField):
                raise ValueError("model must be a MarkovRandomField")
            queries = _expand_queries(self.queries, input_domain.columns)
            algorithm = replace(self, queries=queries)
            t_marginals = make_stable_marginals(
                input_domain, input_metric, get_associated_metric(output_measure), [q.by for q in queries]
            )
            d_marginals = t_marginals.map(d_in)
            rounds = algorithm.rounds or (16 * len(input_domain.columns))
            compose = composer(dp, output_measure)

            def function(qbl):
                current_model, current_marginals = model, marginals.copy()
                d_step, d_spent = d_out / rounds, 0.0
                while d_step:
                    d_step = aim_round(d_step, d_spent, d_out, compose, algorithm.measure_split)
                    if not d_step:
                        break
                    m_step = _make_aim_marginal(
                        *t_marginals.output_space,
                        output_measure,
                        d_marginals,
                        d_step,
                        marginals=current_marginals,
                        model=current_model,
                        max_size=algorithm.max_size * (d_spent + d_step) / d_out,
                        algorithm=algorithm,
                    )
                    if not m_step or compose([d_spent, m_step.map(d_marginals)]) > d_out:
                        break  # the second never happens (aim_cost is OpenDP's split); stopping spends less
                    current_marginals, current_model, is_significant = qbl(m_step)
                    if not is_significant:
                        d_step *= 4
                    d_spent = qbl.privacy_loss(d_marginals)
                    d_step = min(d_step, max(prior(d_out - d_spent), 0))
                return current_marginals, current_model

            return (
                t_marginals
                >> make_privacy_filter(
                    make_fully_adaptive_composition(*t_marginals.output_space, output_measure),
                    d_in=d_marginals,
                    d_out=d_out,
                )
                >> _new_pure_function(function)
            )

    return Generators(SafeMST, SafeAIM)


def algorithm(dp: Any, generator: str, **kwargs: Any) -> Any:
    """OpenDP's ``MST`` or ``AIM`` with the splits above (``dp``: ``opendp.prelude`` with contrib enabled), fitted
    with :func:`dpcore.synth.fit.mirror_descent` unless ``estimator`` says otherwise."""
    g = _generators(dp)
    kwargs.setdefault("estimator", mirror_descent)
    return (g.mst if generator == "mst" else g.aim)(**kwargs)
