"""The shared parts of an advice, whatever its mechanism: the question a risk limit is about, the privacy-loss tail
entry and the ε range with its feasibility. :mod:`~dpcore.advisor.solve` and :mod:`~dpcore.advisor.dpsgd` both
fill an advice with them."""

from __future__ import annotations

from .. import claims


def question(relation: str) -> str:
    """What the risk limit is about, for the neighbour relation it is stated under."""
    if str(relation).startswith("replace"):
        return (
            "which of two values one person's record holds, for a person known to be in the data (replace one "
            "record; n public)"
        )
    return "whether one person's record is in the data (add or remove one record)"


def loss_tail_entry(epsilon: float, delta: float, probability: float, *, at_most: bool = False) -> dict:
    """P[privacy loss > ε] at the stated ε and δ (``at_most``: an upper bound on it): where the posterior reading
    of ε fails. It is not δ."""
    return {
        "epsilon": float(epsilon),
        "delta": float(delta),
        "probability": float(probability),
        "times_delta": float(probability / delta) if delta else None,
        "upper_bound": bool(at_most),
        "text": f"the privacy loss exceeds ε = {claims.up(epsilon)} with probability "
        f"{'at most ' if at_most else ''}{claims.up(probability, 2)}"
        + (f" ({probability / delta:,.0f} × δ)" if delta else "")
        + ": on those outputs the posterior reading of ε fails (δ is not this probability)",
    }


def set_range(out: dict, lo, hi) -> dict:
    out["epsilon_range"] = [lo, hi]
    out["feasible"] = lo is None or lo <= hi * (1 + 1e-12)
    return out
