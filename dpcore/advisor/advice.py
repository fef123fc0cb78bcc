"""What an advice is: the parts every advice shares, whatever its mechanism (the question a risk limit is about,
the privacy-loss tail entry, the ε range with its feasibility: :mod:`~dpcore.advisor.solve` and
:mod:`~dpcore.advisor.dpsgd` both fill an advice with them), and :class:`Advice`, an advice as typed fields for a
page, read from and written as the JSON ``python -m dpcore advise`` prints."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from .. import claims


def question(relation: str) -> str:
    """What the risk limit is about, for the neighbour relation it is stated under."""
    if str(relation).startswith("replace"):
        return (
            "which of two values one person's record holds, for a person known to be in the data (replace one "
            "record; n public)"
        )
    return "whether one person's record is in the data (add or remove one record)"


def loss_tail_entry(epsilon: float, delta: float, probability: float, *, at_most: bool = False) -> dict[str, Any]:
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


def set_range(out: dict[str, Any], lo: float | None, hi: float) -> dict[str, Any]:
    out["epsilon_range"] = [lo, hi]
    out["feasible"] = lo is None or lo <= hi * (1 + 1e-12)
    return out


# --- the advice as the advisor page reads it ---------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    """Where an advice is applied: a page (``page``, a ``pages/x.py`` path) opened at the advised setting, either by
    ``params`` in its link or by ``state`` set before switching (the training page), with the risk recomputed at
    that page's own setting."""

    page: str
    label: str
    params: dict[str, Any]
    state: dict[str, Any]
    risk: float
    keeps_risk: bool
    meets_utility: bool
    notes: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Link:
        return cls(
            page=str(d["page"]),
            label=str(d["label"]),
            params=dict(d.get("params") or {}),
            state=dict(d.get("state") or {}),
            risk=float(d["risk"]),
            keeps_risk=bool(d["keeps_risk"]),
            meets_utility=bool(d["meets_utility"]),
            notes=tuple(d.get("notes") or ()),
        )

    @property
    def url(self) -> str:
        """The page's address with the link's settings: ``./noise?noise_mech=…``."""
        query = "&".join(f"{k}={v}" for k, v in self.params.items())
        return f"./{self.page.removeprefix('pages/').removesuffix('.py')}?{query}"


@dataclass(frozen=True)
class Advice:
    """One advice (:func:`dpcore.advisor.solve.advise`, with its links) as typed fields. It reads the JSON the CLI
    prints and writes it back unchanged (:meth:`to_dict`); figures, the decision record and the downloads take that
    JSON."""

    mechanism: str
    delta: float
    epsilon: float
    epsilon_range: tuple[float | None, float]
    feasible: bool
    neighbour_relation: str
    question: str
    notes: tuple[str, ...]
    sensitivity: float | None
    sigma: float | None
    scale_b: float | None
    noise_multiplier: float | None
    sample_rate: float | None
    steps: int | None
    conflict_text: str | None
    reconcile: tuple[str, ...]
    loss_tail_text: str | None
    link: Link | None
    console_link: Link | None
    data: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Advice:
        lo, hi = d["epsilon_range"]
        conflict = d.get("conflict") or {}
        tail = d.get("privacy_loss_tail") or {}

        def num(key: str) -> float | None:
            return None if d.get(key) is None else float(d[key])

        return cls(
            mechanism=str(d["mechanism"]),
            delta=float(d["delta"]),
            epsilon=float(d["epsilon"]),
            epsilon_range=(None if lo is None else float(lo), float(hi)),
            feasible=bool(d["feasible"]),
            neighbour_relation=str(d.get("neighbour_relation") or ""),
            question=str(d.get("question") or "one person"),
            notes=tuple(d.get("notes") or ()),
            sensitivity=num("sensitivity"),
            sigma=num("sigma"),
            scale_b=num("scale_b"),
            noise_multiplier=num("noise_multiplier"),
            sample_rate=num("sample_rate"),
            steps=None if d.get("steps") is None else int(d["steps"]),
            conflict_text=conflict.get("text"),
            reconcile=tuple(str(o["text"]) for o in conflict.get("reconcile") or ()),
            loss_tail_text=tail.get("text"),
            link=Link.from_dict(d["link"]) if d.get("link") else None,
            console_link=Link.from_dict(d["console_link"]) if d.get("console_link") else None,
            data=copy.deepcopy(d),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON this advice was read from (a copy)."""
        return copy.deepcopy(self.data)

    def noise_setting(self) -> tuple[str, str, str]:
        """(name, value, help) of the noise the advice sets: σ, the Laplace scale b or DP-SGD's noise multiplier."""
        if self.mechanism == "gaussian":
            return "Noise σ", f"{self.sigma:.4g}", f"sensitivity Δ = {self.sensitivity:g}"
        if self.mechanism == "laplace":
            return "Laplace scale b", f"{self.scale_b:.4g}", ""
        return "Noise multiplier", f"{self.noise_multiplier:.4g}", f"q = {self.sample_rate:g}, T = {self.steps} steps"

    def summary(self) -> str:
        """The sentence under a feasible advice: the ε range both sides allow, at δ and under which relation."""
        lo, hi = self.epsilon_range
        at = f"δ = {claims.delta(self.delta)}, {self.neighbour_relation}"
        if lo:
            return (
                f"Both are met for ε in [{claims.up(lo)}, {claims.down(hi)}] ({at}). Recommended: the most private "
                "setting that meets the utility target."
            )
        return f"The risk limit holds for every ε ≤ {claims.down(hi)} ({at})."
