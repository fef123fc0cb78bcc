"""The advisor's two sides, typed and checked: a :class:`RiskLimit` (what an attacker may do against one person's
record) and a :class:`UtilityTarget` (how accurate the answer or the model must be). Built by the page, the CLI and
links; :meth:`checked` turns any input into a valid one or a DPError that says what to do next."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import limits
from ..errors import DPError
from ..queries.model import parse_bounds
from ..validation import check_bounds, check_sensitivity

MECHANISMS = ("gaussian", "laplace", "dpsgd")
MECHANISM_LABELS = {
    "gaussian": "Gaussian noise (analytic calibration)",
    "laplace": "Laplace / any pure ε-DP mechanism (geometric for counts)",
    "dpsgd": "DP-SGD (Poisson-subsampled Gaussian, PLD accounting)",
}
RISKS = ("tpr", "posterior", "advantage")
UTILITIES = ("count", "sum", "mean", "accuracy")
DEFAULT_DELTA = 1e-5


def _prob(value, name: str, hint: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise DPError(f"{name} must be a number in (0, 1), got {value!r}; {hint}") from None
    if not (0 < x < 1):
        raise DPError(f"{name} must be in (0, 1), got {value!r}; {hint}")
    return x


# --- the two sides ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RiskLimit:
    """``kind`` "tpr" (value T at FPR ``at`` = α), "posterior" (value P from prior ``at`` = p) or
    "advantage" (value A)."""

    kind: str
    value: float
    at: float | None = None

    def checked(self) -> RiskLimit:
        kind = str(self.kind).strip().lower()
        if kind == "tpr":
            a = _prob(self.at, "FPR α (--at-fpr)", "e.g. 0.01 (1% of non-members wrongly flagged)")
            t = _prob(self.value, "TPR limit T (--max-tpr)", "e.g. 0.05")
            if t <= a:
                raise DPError(
                    f"a TPR limit of {t:g} at FPR {a:g} is impossible: even a coin flip reaches TPR = FPR; "
                    f"choose T above α (e.g. T = {min(0.99, 5 * a):g})"
                )
            return RiskLimit("tpr", t, a)
        if kind == "posterior":
            p = _prob(self.at, "prior p (--prior)", "the attacker's belief before seeing the release, e.g. 0.01")
            big = _prob(self.value, "posterior limit P (--max-posterior)", "e.g. 0.1")
            if big <= p:
                raise DPError(
                    f"a posterior limit of {big:g} is not above the prior {p:g}: no release can promise "
                    "that; choose P above p"
                )
            return RiskLimit("posterior", big, p)
        if kind == "advantage":
            return RiskLimit(
                "advantage",
                _prob(self.value, "advantage limit A (--max-advantage)", "TPR − FPR of the best attack, e.g. 0.1"),
                None,
            )
        raise DPError(f"unknown risk limit {self.kind!r}; choose one of {', '.join(RISKS)}")

    @property
    def level(self) -> float:
        """``at`` of a tpr or posterior limit, FPR α or prior p (a checked limit of those kinds has one)."""
        if self.at is None:
            raise DPError(f"a {self.kind} risk limit needs its FPR α or prior p")
        return float(self.at)

    def text(self) -> str:
        if self.kind == "tpr":
            return f"attacker TPR ≤ {self.value:g} at FPR {self.at:g}"
        if self.kind == "posterior":
            return f"posterior ≤ {self.value:g} from prior {self.at:g}"
        return f"attacker advantage (TPR − FPR) ≤ {self.value:g}"


@dataclass(frozen=True)
class UtilityTarget:
    """``kind`` count/sum/mean (``within`` = ±k at ``confidence``; Δ given, or ``bounds`` (and ``n`` for a
    mean)) or "accuracy" (``accuracy`` ≥ X on the stored sweep ``sweep``, read for ``caller``: a
    :class:`dpcore.jobs.owners.Caller`, default the command line's — someone else's sweep is refused)."""

    kind: str
    within: float | None = None
    confidence: float = 0.95
    sensitivity: float | None = None
    bounds: tuple | None = None
    n: int | None = None
    accuracy: float | None = None
    sweep: str | None = None
    caller: object = None

    def checked(self) -> UtilityTarget:
        kind = str(self.kind).strip().lower()
        if kind not in UTILITIES:
            raise DPError(f"unknown utility target {self.kind!r}; choose one of {', '.join(UTILITIES)}")
        if kind == "accuracy":
            acc = _prob(self.accuracy, "accuracy target (--min-accuracy)", "e.g. 0.85")
            if not self.sweep:
                raise DPError(
                    "an accuracy target is read from a stored sweep: give its id (--sweep ID; "
                    "`python -m dpcore sweep` makes one)"
                )
            return UtilityTarget("accuracy", accuracy=acc, sweep=str(self.sweep), caller=self.caller)
        try:
            k = float(self.within if self.within is not None else "")
        except (TypeError, ValueError):
            raise DPError(f"the tolerance ±k (--within) must be a number > 0, got {self.within!r}") from None
        if not (math.isfinite(k) and k > 0):
            raise DPError(f"the tolerance ±k (--within) must be a finite number > 0, got {self.within!r}")
        conf = float(self.confidence) if self.confidence is not None else 0.95
        if not (0.5 <= conf < 1):
            raise DPError(f"confidence must be in [0.5, 1), got {self.confidence!r}; 0.95 is usual")
        bounds, n = self.bounds, self.n
        if bounds is not None:
            bounds = parse_bounds(bounds) if isinstance(bounds, str) else check_bounds(*bounds)
            if max(abs(bounds[0]), abs(bounds[1])) > limits.RELEASE_MAGNITUDE_MAX:
                raise DPError(
                    f"public bounds must lie within ±{limits.RELEASE_MAGNITUDE_MAX:g}, got [{bounds[0]:g}, "
                    f"{bounds[1]:g}]; give the range the column's values can really take (e.g. 18 to 90 "
                    "for an age)"
                )
        if n is not None:
            n = limits.check_int_range(n, 1, limits.ADVISOR_MAX_ROWS, "rows n (--n)")
        if self.sensitivity is not None:
            sens = check_sensitivity(self.sensitivity)
            if sens > limits.RELEASE_MAGNITUDE_MAX:
                raise DPError(
                    f"sensitivity Δ must be at most {limits.RELEASE_MAGNITUDE_MAX:g}, got {sens:g}; it is "
                    "how far one record can move the answer"
                )
            if sens == 0:
                raise DPError("sensitivity Δ is 0: that answer needs no noise; give the query's real Δ")
        elif kind == "count":
            sens = 1.0
        elif bounds is None:
            raise DPError(
                f"a {kind.upper()} target needs its sensitivity Δ (--sensitivity) or public bounds "
                "(--bounds LO:HI" + (" and --n" if kind == "mean" else "") + ")"
            )
        elif kind == "sum":
            sens = max(abs(bounds[0]), abs(bounds[1]))
        else:
            if n is None:
                raise DPError("a MEAN target with bounds needs the public number of rows (--n)")
            sens = (bounds[1] - bounds[0]) / n
        if sens == 0:
            raise DPError("bounds [0, 0] give sensitivity 0; give bounds that contain the data")
        return UtilityTarget(kind, within=k, confidence=conf, sensitivity=float(sens), bounds=bounds, n=n)

    @property
    def query_sensitivity(self) -> float:
        """Δ of a checked count, sum or mean target (:meth:`checked` always sets it)."""
        if self.sensitivity is None:
            raise DPError(f"a {self.kind} target needs its sensitivity Δ or public bounds")
        return float(self.sensitivity)

    def neighbour_relation(self) -> str:
        if self.kind == "mean" and self.sensitivity is not None and self.n is not None and self.bounds is not None:
            return "replace one record (n public)"
        return "add/remove one record"

    def text(self) -> str:
        if self.kind == "accuracy":
            return f"test accuracy ≥ {self.accuracy:g} (sweep {self.sweep})"
        return f"{self.kind.upper()} within ±{self.within:g} with probability {self.confidence:g}"
