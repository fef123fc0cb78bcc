"""What one release costs: a frozen :class:`Charge` (ε, δ, ρ where it applies, and the neighbour relation).

The one home of "a privacy cost", in the spirit of Google dp_accounting's ``DpEvent``: a typed value instead
of ad-hoc ``{epsilon, delta, rho}`` dicts. The ledger charges one; composition adds them up; a released answer
stores one (``Charge.to_dict``) beside its numbers.

* ``epsilon``, ``delta``: the (ε, δ)-DP guarantee of the release — what the ledger spends.
* ``rho``: its zCDP cost (Bun & Steinke 2016) where it applies — Δ²/(2σ²) for a Gaussian release with the exact
  analytic σ (:func:`dpcore.noise.calibration.gaussian_analytic_sigma`, the app's one σ solver), ε²/2 for a pure
  ε-DP release (δ = 0). ``None`` for an (ε, δ) guarantee with no known ρ: zCDP accounting then refuses it.
* ``neighbour``: the relation the guarantee is about. Only charges of the same relation compose; the ledger
  accepts :attr:`Neighbour.ADD_REMOVE` alone (add or remove one person's record).
* ``kind``: which kind of release it is (:class:`ReleaseKind`: a console answer, a DP training run, a sweep, a DP
  synthetic table, a planned release) — what the ledger's history names. Each kind has its constructor here, so
  every release is priced in one place: :meth:`Charge.of_release` (an answer), :meth:`Charge.dpsgd` (the
  accountant's ε of a DP-SGD run at its δ), :meth:`Charge.synthetic` (OpenDP's privacy map of a synthetic
  release), :meth:`Charge.composed` (a sweep: the basic composition of its points), :meth:`Charge.planned`.

Composition here is *basic* (ε and δ add up, ρ adds up): always a valid bound. Tighter (ε, δ) totals from the
same charges come from :func:`dpcore.noise.composition.ledger_costs`. Below the mechanisms and the release path in
the one-way order of :mod:`dpcore.noise` (maths and calibration → charge → mechanisms → release): it imports only
the calibration, and only when a Gaussian charge is built (the ledger, which Home imports, loads no scipy). :meth:`Charge.of_release` is what a query is charged *before* its noise is drawn: for the
Gaussian the ρ of the exact continuous σ, an upper bound on the ρ = K²/(2σ²) of the discrete Gaussian that really
releases it (its σ in grid units is at least K times that σ, :mod:`dpcore.noise.discrete`).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import DPError
from ..validation import check_epsilon, check_nonnegative


def gaussian_rho(sigma: float, sensitivity: float = 1.0) -> float:
    """ρ of one Gaussian release with noise σ at L2 sensitivity Δ (Bun & Steinke 2016): Δ²/(2σ²)."""
    if not (sigma > 0) or not math.isfinite(sigma):
        raise DPError(f"σ must be a finite number > 0, got {sigma!r}")
    if sensitivity < 0:
        raise DPError(f"sensitivity must be >= 0, got {sensitivity!r}")
    return sensitivity**2 / (2 * sigma**2)


def pure_rho(epsilon: float) -> float:
    """ρ of a pure ε-DP release (Bun & Steinke 2016, Prop. 1.4): ε²/2."""
    return check_epsilon(epsilon) ** 2 / 2


class ReleaseKind(enum.Enum):
    """What a release is: the ledger charges every kind against the same cap and names the kind in its history."""

    ANSWER = "answer"  # a query console answer (dpcore.queries)
    TRAINING = "training"  # one DP-SGD (or diffprivlib) model
    SWEEP = "sweep"  # a privacy–utility sweep: its DP points composed
    SYNTHETIC = "synthetic"  # a DP synthetic table (OpenDP's MST or AIM)
    PLANNED = "planned"  # a release the planner lays out (issue 35)

    @property
    def label(self) -> str:
        return RELEASE_LABELS[self]


RELEASE_LABELS = {
    ReleaseKind.ANSWER: "a console answer",
    ReleaseKind.TRAINING: "a DP training run",
    ReleaseKind.SWEEP: "a privacy–utility sweep",
    ReleaseKind.SYNTHETIC: "a DP synthetic table",
    ReleaseKind.PLANNED: "a planned release",
}


class Neighbour(enum.Enum):
    """Which datasets count as neighbours: the guarantee bounds what changes between them."""

    ADD_REMOVE = "add_remove"  # unbounded DP: one person's record added or removed (the ledger's only relation)
    REPLACE_ONE = "replace_one"  # bounded DP: one record replaced by another, the number of records public

    @property
    def label(self) -> str:
        return NEIGHBOUR_LABELS[self]


NEIGHBOUR_LABELS = {
    Neighbour.ADD_REMOVE: "add or remove one patient's record",
    Neighbour.REPLACE_ONE: "replace one patient's record (the number of records public)",
}


@dataclass(frozen=True)
class Charge:
    """The privacy cost of one release (or of several, composed). Immutable; compose with ``+``."""

    epsilon: float
    delta: float = 0.0
    rho: float | None = None
    neighbour: Neighbour = Neighbour.ADD_REMOVE
    kind: ReleaseKind = ReleaseKind.ANSWER

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_nonnegative(self.epsilon, "ε of a charge"))
        object.__setattr__(self, "delta", check_nonnegative(self.delta, "δ of a charge", upper=1.0))
        if self.rho is not None:
            object.__setattr__(self, "rho", check_nonnegative(self.rho, "ρ of a charge"))
        elif self.delta == 0:  # pure ε-DP is ε²/2-zCDP
            object.__setattr__(self, "rho", pure_rho(self.epsilon) if self.epsilon > 0 else 0.0)
        if not isinstance(self.neighbour, Neighbour):
            try:
                object.__setattr__(self, "neighbour", Neighbour(self.neighbour))
            except ValueError:
                raise DPError(
                    f"unknown neighbour relation {self.neighbour!r}; use one of {', '.join(n.value for n in Neighbour)}"
                ) from None
        if not isinstance(self.kind, ReleaseKind):
            try:
                object.__setattr__(self, "kind", ReleaseKind(self.kind))
            except ValueError:
                raise DPError(
                    f"unknown release kind {self.kind!r}; use one of {', '.join(k.value for k in ReleaseKind)}"
                ) from None

    # --- one release ---------------------------------------------------------------------------------

    @classmethod
    def pure(cls, epsilon: float, *, neighbour: Neighbour = Neighbour.ADD_REMOVE) -> Charge:
        """A pure ε-DP release (Laplace, geometric): δ = 0, ρ = ε²/2."""
        return cls(epsilon, 0.0, pure_rho(epsilon), neighbour)

    @classmethod
    def gaussian(
        cls, epsilon: float, delta: float, sensitivity: float = 1.0, *, neighbour: Neighbour = Neighbour.ADD_REMOVE
    ) -> Charge:
        """An analytic-Gaussian release calibrated to (ε, δ) at L2 sensitivity Δ: ρ = Δ²/(2σ²) with the exact σ
        (σ scales with Δ, so ρ depends on ε and δ alone; Δ = 0 releases nothing and costs ρ = 0)."""
        if sensitivity == 0:
            return cls(epsilon, delta, 0.0, neighbour)
        from .calibration import gaussian_analytic_sigma  # below us; imported here: the ledger loads no scipy

        sigma = gaussian_analytic_sigma(epsilon, delta, sensitivity)
        return cls(epsilon, delta, gaussian_rho(sigma, sensitivity), neighbour)

    @classmethod
    def of_release(
        cls,
        mechanism: str,
        epsilon: float,
        delta: float = 0.0,
        sensitivity: float = 1.0,
        *,
        neighbour: Neighbour = Neighbour.ADD_REMOVE,
    ) -> Charge:
        """The charge of one release by ``mechanism``: "laplace" (whole numbers: discrete Laplace) is pure ε-DP,
        "gaussian" (whole numbers: discrete Gaussian) costs (ε, δ) with ρ from the exact σ (:meth:`gaussian`)."""
        if mechanism == "laplace":
            return cls.pure(epsilon, neighbour=neighbour)
        if mechanism == "gaussian":
            return cls.gaussian(epsilon, delta, sensitivity, neighbour=neighbour)
        raise DPError(f"unknown mechanism {mechanism!r}; choose laplace or gaussian")

    @classmethod
    def dpsgd(cls, epsilon: float, delta: float) -> Charge:
        """A DP-SGD run: the accountant's ε at the run's δ (Opacus PRV or RDP: an upper bound for the planned
        steps; a run that stops early spends less). No ρ: the subsampled Gaussian has no closed-form zCDP cost."""
        return cls(epsilon, delta, None, Neighbour.ADD_REMOVE, ReleaseKind.TRAINING)

    @classmethod
    def synthetic(cls, epsilon: float, delta: float, rho: float | None = None) -> Charge:
        """A DP synthetic table: OpenDP's privacy map of the whole measurement at one record added or removed
        (ρ: the zCDP budget it ran under, when δ > 0; pure ε-DP: ε²/2)."""
        return cls(epsilon, delta, rho, Neighbour.ADD_REMOVE, ReleaseKind.SYNTHETIC)

    @classmethod
    def planned(cls, epsilon: float, delta: float, rho: float | None = None) -> Charge:
        """A release laid out by the planner: its own accountant's (ε, δ)."""
        return cls(epsilon, delta, rho, Neighbour.ADD_REMOVE, ReleaseKind.PLANNED)

    @classmethod
    def composed(cls, parts: Iterable[Charge | dict[str, Any]], kind: ReleaseKind = ReleaseKind.SWEEP) -> Charge:
        """Several releases charged as one (a sweep's DP points): their basic composition, named ``kind``."""
        total = compose(parts)
        return cls(total.epsilon, total.delta, total.rho, total.neighbour, ReleaseKind(kind))

    # --- composition ---------------------------------------------------------------------------------

    def __add__(self, other: Charge) -> Charge:
        """Basic composition: ε and δ add up (δ capped at 1), ρ adds up (unknown if either is unknown).
        Charges under different neighbour relations do not compose: refused. The sum is of the first non-empty
        operand's kind (:meth:`composed` names a composite)."""
        if not isinstance(other, Charge):
            return NotImplemented
        if other.neighbour is not self.neighbour:
            raise DPError(
                f"cannot compose a charge under '{self.neighbour.label}' with one under "
                f"'{other.neighbour.label}': their guarantees are about different neighbours; account "
                "for them separately"
            )
        rho = None if self.rho is None or other.rho is None else self.rho + other.rho
        kind = other.kind if self.epsilon == 0 and self.delta == 0 else self.kind  # name a mix with composed()
        return Charge(self.epsilon + other.epsilon, min(self.delta + other.delta, 1.0), rho, self.neighbour, kind)

    # --- storage -------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The stored form; ``kind`` only for releases other than an answer (an answer's form is as it always was)."""
        out: dict[str, Any] = {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "rho": self.rho,
            "neighbour": self.neighbour.value,
        }
        if self.kind is not ReleaseKind.ANSWER:
            out["kind"] = self.kind.value
        return out

    @classmethod
    def from_dict(cls, d: Any) -> Charge:
        """A charge from its stored form (also the older ``{epsilon, delta, rho}`` dicts: add/remove, an answer)."""
        if isinstance(d, Charge):
            return d
        try:
            return cls(
                d["epsilon"],
                d.get("delta") or 0.0,
                d.get("rho"),
                d.get("neighbour") or Neighbour.ADD_REMOVE,
                d.get("kind") or ReleaseKind.ANSWER,
            )
        except (KeyError, AttributeError, TypeError):
            raise DPError(f"not a charge: {d!r}; it needs at least an epsilon") from None

    def describe(self) -> str:
        rho = "" if self.rho is None else f", ρ = {self.rho:.4g}"
        what = "" if self.kind is ReleaseKind.ANSWER else f"{self.kind.label}: "
        return f"{what}ε = {self.epsilon:g}, δ = {self.delta:g}{rho} (neighbours: {self.neighbour.label})"


ZERO = Charge(0.0, 0.0, 0.0)


def compose(charges: Iterable[Charge | dict[str, Any]], *, neighbour: Neighbour = Neighbour.ADD_REMOVE) -> Charge:
    """Basic composition of several charges (all under one neighbour relation); no charges cost nothing."""
    total = Charge(0.0, 0.0, 0.0, neighbour)
    for c in charges:
        total = total + Charge.from_dict(c)
    return total


def compose_by_relation(charges: Iterable[Charge | dict[str, Any]]) -> list[Charge]:
    """Basic composition per neighbour relation, in the order each relation first appears: charges under different
    relations add up to no one guarantee, so each relation keeps its own total."""
    totals: dict[Neighbour, Charge] = {}
    for c in charges:
        c = Charge.from_dict(c)
        totals[c.neighbour] = totals.get(c.neighbour, Charge(0.0, 0.0, 0.0, c.neighbour)) + c
    return list(totals.values())


def require_ledger_relation(charge: Charge) -> Charge:
    """The ledger charges add/remove-one guarantees only: anything else is refused (nothing spent)."""
    if not isinstance(charge, Charge):
        raise DPError(f"the ledger charges a Charge, got {type(charge).__name__}")
    if charge.neighbour is not Neighbour.ADD_REMOVE:
        raise DPError(
            f"the ledger charges every answer under one relation, {Neighbour.ADD_REMOVE.label}; this "
            f"release protects only against '{charge.neighbour.label}', so it cannot be charged; "
            "nothing was spent"
        )
    return charge
