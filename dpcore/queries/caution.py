"""Large ε, flagged where it is spent: what to say before an answer that protects almost nobody.

Two signs, both computed from the query alone (its mechanism, ε, δ and public bounds — never the data):

* **Nearly exact**: the 95% noise interval of a released number is narrower than what one person can change it by
  (±1 for a count or a histogram bin; ±max(|L|, |U|) for a SUM; each part of a MEAN). Such an answer shows
  whether a given person is in the data.
* **Above "weak"**: ε beyond the "weak" level of the privacy words (:func:`dpcore.noise.interpret.level_edges`,
  ε > ln 99 ≈ 4.6): an attacker 50% sure that a person is in the data may end more than 99% sure.

The page asks for a confirmation when either holds; a dataset's per-query ε cap refuses above it
(:mod:`dpcore.budgets.spend`).
"""

from __future__ import annotations

from .. import claims
from ..noise import mechanisms
from ..noise.interpret import level_edges, posterior_bound
from .model import Query


def weak_limit() -> float:
    """The largest ε still called "weak" (above it: "very weak")."""
    return next(hi for _lo, hi, word in level_edges() if word == "weak")


def _parts(q: Query) -> list[tuple[str, float, float, float, bool]]:
    """(what, ε, δ, one person's effect, integer) of each number the answer releases."""
    if q.kind in ("count", "histogram"):
        return [("count" if q.kind == "count" else "bin", q.epsilon, q.delta, 1.0, True)]
    lo, hi = q.clamp
    if q.kind == "sum":
        return [("sum", q.epsilon, q.delta, max(abs(lo), abs(hi)), False)]
    if q.public_n:
        return []  # never charged (replace-one); the noise page teaches it
    return [
        ("noisy sum of the mean", q.epsilon / 2, q.delta / 2, (hi - lo) / 2, False),
        ("noisy count of the mean", q.epsilon / 2, q.delta / 2, 1.0, True),
    ]


def cautions(q: Query) -> list[str]:
    """Sentences saying why this answer would protect almost nobody; empty when none applies."""
    out = []
    for what, eps, dl, effect, integer in _parts(q):
        m = mechanisms.for_release(q.mechanism, epsilon=eps, delta=dl, sensitivity=effect, integer=integer)
        hw = m.halfwidth(0.95)
        if hw < effect:
            one = "±1" if integer and effect == 1 else f"±{effect:g}"
            out.append(
                f"At ε = {q.epsilon:g} the {what}'s 95% noise interval is ±{hw:.3g}, narrower than what one "
                f"person changes it by ({one}): the answer is nearly exact, so it would show whether a "
                "particular person is in the data"
            )
            break
    if q.epsilon > weak_limit():
        post = float(posterior_bound(0.5, q.epsilon))
        out.append(
            f'ε = {q.epsilon:g} is above the "weak" privacy level (ε ≤ {claims.down(weak_limit())}): someone '
            f"50% sure that a person is in the data could end up to {claims.percent(post, up=True)} sure"
        )
    return out
