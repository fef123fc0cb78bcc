"""Privacy accounting for DP-SGD: epsilon of a (noise multiplier, sample rate, steps) run, and noise
calibration for a target epsilon.

Two accountants, both from Opacus:

* ``"prv"`` — numerical composition of privacy loss random variables (Gopi et al. 2021), Opacus's
  :class:`~opacus.accountants.PRVAccountant`. Tight; the default.
* ``"rdp"`` — Rényi DP (Mironov 2017/2019), Opacus's :class:`~opacus.accountants.RDPAccountant`.
  Looser than the exact PLD (:func:`pld_epsilon`): measured over σ 0.5–5, q 0.004–0.5, 10–1000 steps,
  δ 1e-5/1e-9, RDP/PLD is 1.03–1.2× for typical training (median 1.12) and up to 18× when ε is tiny
  (few steps at small q, ε ≈ 0.01), where RDP's conversion term dominates.

Both return *upper bounds* on epsilon. Speed: Opacus's PRV accountant spends most of its time sizing
its discretisation domain with an RDP bound over fractional orders (hundreds of ms per call). We use
the same algorithm (:class:`FastPRVAccountant`) but size the domain with a vectorised RDP bound over
integer orders, a subset of Opacus's orders, so the domain is never smaller than Opacus's (safe) and
the value agrees with Opacus to within its own ``eps_error`` (tested). Calibration bisects on the
fast RDP bound (about a millisecond per evaluation) and then refines with a secant on the real
accountant, so the returned epsilon is always the accountant's value for the returned sigma, never
above the target and within 2% of it (up to ε 50 and beyond, for both accountants).

The seed notebook's "shortcut" ``q/σ·sqrt(2T ln(1/δ))`` is *not* an upper bound (it ignores the
per-step privacy loss); :func:`shortcut_epsilon` computes it only to show how far off it is.

A little over 400 lines, one idea: ε of a DP-SGD run and its inverse (calibration). The exact PLD, the privacy
profile and the trade-off curve read the same (σ, q, T) and are checked against each other in its tests.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import claims, limits
from ..attacks.audit import roc_from_privacy_profile
from ..errors import DPError
from ..validation import check_delta, check_epsilon, check_noise_multiplier, check_positive_int

ACCOUNTANTS = ("prv", "rdp")
#: PRV accuracy: the returned value is estimate + PRV_EPS_ERROR (an upper bound). Opacus's default.
PRV_EPS_ERROR = 0.01
#: Integer Rényi orders 2..63: a subset of Opacus's default orders, so our RDP bound is >= Opacus's.
INT_ORDERS = np.arange(2, 64, dtype=np.float64)
SIGMA_MIN = 0.2
SIGMA_MAX = 1e4
#: Calibration stops once the accountant's epsilon is within this fraction below the target.
CALIBRATION_TOLERANCE = 0.02
#: Most evaluations of the real accountant while tightening a calibration (usually 2–4 are used).
CALIBRATION_MAX_EVALS = 12


class AccountantTooCostly(DPError):
    """The PRV accountant's grid for these settings is larger than :data:`dpcore.limits.PRV_MAX_POINTS`: σ = 0.05 at
    q = 1/6 over 180 steps asked numpy for 64 GiB, σ = 0.15 took 13 s and 2.9 GB, both for an ε in the hundreds or
    more. Raised before anything that large is allocated; the message says what the RDP bound is."""


def _check_run(noise_multiplier: Any, sample_rate: Any, steps: Any, delta: Any) -> tuple[float, float, int, float]:
    sigma = check_noise_multiplier(noise_multiplier)
    try:
        q = float(sample_rate)
    except (TypeError, ValueError):
        raise DPError(f"sample rate must be a number, got {sample_rate!r}") from None
    if not (0 < q <= 1):
        raise DPError(f"sample rate must be in (0, 1], got {sample_rate!r}; it is batch size / rows")
    if steps == 0:
        return sigma, q, 0, check_delta(delta)
    t = check_positive_int(steps, "steps")
    return sigma, q, t, check_delta(delta)


# --- RDP ------------------------------------------------------------------------------------------


def _log_comb(n: float, k: np.ndarray) -> np.ndarray:
    # lazy: scipy takes ~0.4 s to import
    from scipy.special import gammaln

    out: np.ndarray = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
    return out


def rdp_integer_orders(
    noise_multiplier: float, sample_rate: float, steps: int, orders: np.ndarray = INT_ORDERS
) -> np.ndarray:
    """RDP of ``steps`` Poisson-subsampled Gaussian steps at integer orders (Mironov et al. 2019, the
    formula Opacus uses for integer alpha), vectorised over orders."""
    sigma, q = float(noise_multiplier), float(sample_rate)
    if q >= 1.0:
        return steps * orders / (2 * sigma**2)
    out = np.empty(len(orders))
    for j, a in enumerate(orders):
        k = np.arange(int(a) + 1, dtype=np.float64)
        terms = _log_comb(float(a), k) + k * math.log(q) + (a - k) * math.log1p(-q) + (k * k - k) / (2 * sigma**2)
        m = terms.max()
        out[j] = (m + math.log(np.exp(terms - m).sum())) / (a - 1)
    return steps * out


def _rdp_to_eps(orders: np.ndarray, rdp: np.ndarray, delta: float) -> float:
    # lazy: Opacus imports torch (~2 s)
    from opacus.accountants.analysis.rdp import get_privacy_spent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "optimal order is the largest alpha": still a valid bound
        eps, _ = get_privacy_spent(orders=orders, rdp=rdp, delta=delta)
    return float(eps)


@lru_cache(maxsize=65536)  # the same (σ, q, steps) recur every epoch of every run of a setting, and in calibration
def fast_rdp_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """An RDP upper bound over integer orders 2..63 (>= Opacus's RDP value; microseconds). Used for
    calibration search and the live per-epoch epsilon."""
    if steps == 0:
        return 0.0
    return _rdp_to_eps(INT_ORDERS, rdp_integer_orders(noise_multiplier, sample_rate, steps), delta)


@lru_cache(maxsize=4096)
def _rdp_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    # lazy: Opacus imports torch (~2 s)
    from opacus.accountants import RDPAccountant

    acc = RDPAccountant()
    acc.history = [(sigma, q, steps)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(acc.get_epsilon(delta))


# --- PRV ------------------------------------------------------------------------------------------


def _fast_prv_class() -> Any:
    # lazy: Opacus imports torch (~2 s)
    from opacus.accountants import PRVAccountant
    from opacus.accountants.analysis.prv import Domain

    class FastPRVAccountant(PRVAccountant):  # type: ignore[misc]  # Opacus has no type information
        """Opacus's PRV accountant with a faster, never-smaller domain bound (see module doc)."""

        def _get_domain(self, prvs: Any, num_self_compositions: list[int], eps_error: float, delta_error: float) -> Any:
            total = sum(num_self_compositions)
            rdp: np.ndarray = sum(
                (rdp_integer_orders(p.noise_multiplier, p.sample_rate, n) for p, n in zip(prvs, num_self_compositions)),
                np.zeros(len(INT_ORDERS)),
            )
            L_max = _rdp_to_eps(INT_ORDERS, rdp, delta_error / 4)
            for p in prvs:
                one = rdp_integer_orders(p.noise_multiplier, p.sample_rate, 1)
                L_max = max(L_max, _rdp_to_eps(INT_ORDERS, one, delta_error / (8 * total)))
            mesh_size = eps_error / np.sqrt(total * np.log(12 / delta_error) / 2)
            if L_max > 30:  # integer orders are loose for small sigma: use Opacus's own (smaller, still safe) bound
                # lazy: Opacus imports torch (~2 s)
                from opacus.accountants.analysis.prv import compute_safe_domain_size

                L = compute_safe_domain_size(prvs, num_self_compositions, eps_error, delta_error)
            else:
                L = max(L_max, eps_error) + 3
            points = 2 * L / mesh_size  # Domain.create_aligned's size, give or take two: checked before it exists
            if not points <= limits.PRV_MAX_POINTS:
                raise AccountantTooCostly(
                    f"its grid would need {points / 1e6:,.0f} million points (at most {limits.PRV_MAX_POINTS / 1e6:g} "
                    "million here)"
                )
            return Domain.create_aligned(-L, L, mesh_size)

    return FastPRVAccountant


_FAST_PRV: Any = None


@lru_cache(maxsize=4096)
def _prv_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    global _FAST_PRV
    if _FAST_PRV is None:
        _FAST_PRV = _fast_prv_class()
    acc = _FAST_PRV()
    acc.history = [(sigma, q, steps)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(acc.get_epsilon(delta, eps_error=PRV_EPS_ERROR))


def epsilon(
    noise_multiplier: float, sample_rate: float, steps: int, delta: float = 1e-5, accountant: str = "prv"
) -> float:
    """Epsilon (an upper bound) after ``steps`` DP-SGD steps with Poisson sampling rate ``sample_rate``
    and noise multiplier ``noise_multiplier``, at ``delta``. ``steps == 0`` gives 0."""
    sigma, q, t, d = _check_run(noise_multiplier, sample_rate, steps, delta)
    acc = check_accountant(accountant)
    if t == 0:
        return 0.0
    if acc == "rdp":
        return _rdp_epsilon(sigma, q, t, d)
    try:
        return _prv_epsilon(sigma, q, t, d)
    except AccountantTooCostly as exc:
        raise AccountantTooCostly(
            f"ε of σ = {sigma:g} at sample rate {q:g} over {t:,} steps is too large for the PRV accountant here: "
            f"{exc}. Its RDP bound is ε ≤ {claims.up(_rdp_epsilon(sigma, q, t, d))} at δ = {d:g}; choose the RDP "
            "accountant, or more noise"
        ) from None


def epsilon_from_history(history: Iterable[tuple[Any, Any, Any]], delta: float, accountant: str = "prv") -> float:
    """Epsilon for an Opacus accountant history ``[(noise_multiplier, sample_rate, steps), ...]``."""
    runs = [(float(s), float(q), int(t)) for s, q, t in history if int(t) > 0]
    if not runs:
        return 0.0
    if len(runs) == 1:
        s, q, t = runs[0]
        return epsilon(s, q, t, delta=delta, accountant=accountant)
    # lazy: Opacus imports torch (~2 s)
    from opacus.accountants import RDPAccountant

    acc = _fast_prv_class()() if check_accountant(accountant) == "prv" else RDPAccountant()
    acc.history = runs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if accountant == "prv":
            return float(acc.get_epsilon(delta, eps_error=PRV_EPS_ERROR))
        return float(acc.get_epsilon(delta))


def both(noise_multiplier: float, sample_rate: float, steps: int, delta: float = 1e-5) -> dict[str, float]:
    """PRV and RDP epsilon for the same run."""
    return {
        "epsilon_prv": epsilon(noise_multiplier, sample_rate, steps, delta, "prv"),
        "epsilon_rdp": epsilon(noise_multiplier, sample_rate, steps, delta, "rdp"),
    }


# --- exact privacy-loss distributions (Google dp_accounting) ----------------------------------------------

#: PLD discretisation: a coarse pass first (fast at any ε), refined where ε is small enough for it to matter.
#: Both are pessimistic (connect-the-dots), so either value is an upper bound; we report the smaller.
PLD_COARSE = 1e-3
PLD_FINE = 1e-4
#: Log-spaced FPR grid of the trade-off curves (1e-6 … 1).
TRADEOFF_FPR = tuple(float(x) for x in np.geomspace(1e-6, 1.0, 121))
#: Most ε points of a privacy profile used for a trade-off curve (a subset of a valid profile stays valid).
TRADEOFF_PROFILE_POINTS = 6000


@lru_cache(maxsize=64)
def _pld(sigma: float, q: float, steps: int, discretization: float) -> Any:
    """Privacy-loss distribution of ``steps`` Poisson-subsampled Gaussian steps (sensitivity 1, add/remove
    one person), pessimistic connect-the-dots discretisation."""
    # lazy: dp_accounting takes ~1 s to import
    from dp_accounting.pld import privacy_loss_distribution as pldm

    one = pldm.from_gaussian_mechanism(
        sigma, sensitivity=1.0, sampling_prob=q, value_discretization_interval=discretization
    )
    return one.self_compose(steps) if steps > 1 else one


def _pld_for(sigma: float, q: float, steps: int) -> Any:
    """The PLD behind :func:`pld_epsilon` and :func:`dpsgd_tradeoff`: the fine grid unless ε is large."""
    coarse = _pld(sigma, q, steps, PLD_COARSE)
    return _pld(sigma, q, steps, PLD_FINE) if coarse.get_epsilon_for_delta(1e-5) < 20 else coarse


def pld_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float = 1e-5) -> float:
    """Tight ε of DP-SGD (Poisson sampling rate q, ``steps`` Gaussian steps with noise multiplier σ) at δ,
    under add/remove one person, from Google dp_accounting's privacy-loss distribution (pessimistic: an
    upper bound). Agrees with the PRV accountant to about its 0.01 error and is 3–50% below RDP."""
    sigma, q, t, d = _check_run(noise_multiplier, sample_rate, steps, delta)
    if t == 0:
        return 0.0
    eps = _pld(sigma, q, t, PLD_COARSE).get_epsilon_for_delta(d)
    if eps < 20:  # where a finer grid changes the answer noticeably (many small steps)
        eps = min(eps, _pld(sigma, q, t, PLD_FINE).get_epsilon_for_delta(d))
    return float(eps)


def _hockey_stick(pmf: Any, eps: np.ndarray) -> np.ndarray:
    """δ(ε) of one dense dp_accounting PMF at many ε at once (the library's own loop is per point):
    δ(ε) = inf_mass + Σ_{l > ε} p_l (1 − e^{ε − l}), by suffix sums."""
    pmf = pmf.to_dense_pmf()
    losses = (np.arange(pmf.size) + pmf._lower_loss) * pmf._discretization
    # --- no overflow: Σ_{l > ε} p_l e^{ε − l} in log space. e^{−l} and e^{ε} overflow for very
    # small noise multipliers (losses and ε beyond ±709: NaN and RuntimeWarnings); ε + log Σ p_l e^{−l} ≤ 0 here.
    # The FFT's tiny negative probabilities count as 0 (each term p_l(1 − e^{ε−l}) ≥ 0 then: δ only grows).
    p = np.maximum(np.asarray(pmf._probs, dtype=float), 0.0)
    s1 = np.r_[np.cumsum(p[::-1])[::-1], 0.0]
    with np.errstate(divide="ignore"):
        log_terms = np.log(p) - losses
    log_s2 = np.r_[np.logaddexp.accumulate(log_terms[::-1])[::-1], -np.inf]
    idx = np.searchsorted(losses, eps, side="right")
    out: np.ndarray = np.clip(pmf._infinity_mass + s1[idx] - np.exp(np.minimum(eps + log_s2[idx], 0.0)), 0.0, 1.0)
    return out


def privacy_profile(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    max_points: int = TRADEOFF_PROFILE_POINTS,
    *,
    coarse: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """(ε, δ(ε)) of DP-SGD on a grid of ε ≥ 0 from the PLD, δ = max over the add and the remove direction.
    ``coarse``: the coarse grid only (pessimistic too, so still an upper bound; fast enough to search on —
    dpcore.advisor.dpsgd searches the noise multiplier with it)."""
    sigma, q, t, _ = _check_run(noise_multiplier, sample_rate, max(int(steps), 1), 1e-5)
    pld = _pld(sigma, q, t, PLD_COARSE) if coarse else _pld_for(sigma, q, t)
    pmfs = [pld._pmf_remove, pld._pmf_add]
    top = max(
        float((pm.to_dense_pmf()._lower_loss + pm.to_dense_pmf().size) * pm.to_dense_pmf()._discretization)
        for pm in pmfs
    )
    eps = np.linspace(0.0, max(top, 1e-3), max_points)
    delta = np.max([_hockey_stick(pm, eps) for pm in pmfs], axis=0)
    return eps, delta


def dpsgd_tradeoff(
    noise_multiplier: float, sample_rate: float, steps: int, fpr: ArrayLike | None = None
) -> dict[str, list[float]]:
    """Worst-case ROC of a membership attacker against DP-SGD, from the SAME privacy-loss distribution
    as :func:`pld_epsilon`: {"fpr": [...], "tpr": [...]} on a log-spaced FPR grid (1e-6 … 1) unless
    ``fpr`` is given. An upper envelope: no attack's (FPR, TPR) lies above it (the pessimistic PLD
    over-states every δ(ε), and a subset of the profile only loosens the curve)."""
    grid = np.asarray(TRADEOFF_FPR if fpr is None else fpr, dtype=float)
    if grid.ndim != 1 or grid.size == 0 or np.any(~np.isfinite(grid)) or np.any((grid < 0) | (grid > 1)):
        raise DPError("FPR values must be numbers in [0, 1]")
    if int(steps) == 0:
        return {"fpr": grid.tolist(), "tpr": grid.tolist()}
    eps, delta = privacy_profile(noise_multiplier, sample_rate, steps)
    return {"fpr": grid.tolist(), "tpr": roc_from_privacy_profile(eps, delta, grid).tolist()}


def shortcut_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float = 1e-5) -> float:
    """The seed notebook's shortcut ``q/σ · sqrt(2 T ln(1/δ))``. NOT a privacy guarantee: shown only to
    compare with a real accountant."""
    sigma, q, t, d = _check_run(noise_multiplier, sample_rate, steps, delta)
    return float(q / sigma * math.sqrt(2 * t * math.log(1 / d)))


def check_accountant(accountant: Any) -> str:
    acc = str(accountant).lower()
    if acc not in ACCOUNTANTS:
        raise DPError(f"accountant must be one of {', '.join(ACCOUNTANTS)}, got {accountant!r}")
    return acc


# --- calibration ----------------------------------------------------------------------------------


def _warm_up() -> None:
    """Import the accountants' modules (a one-off cost of ~1 s, not part of calibration)."""
    global _FAST_PRV
    if _FAST_PRV is None:
        _FAST_PRV = _fast_prv_class()
    # lazy: importing them is the point (~1 s once, paid before the first calibration is timed)
    import scipy.special  # noqa: F401
    from opacus.accountants import RDPAccountant  # noqa: F401


def _bisect_sigma(
    f: Callable[[float], float], target: float, lo: float = SIGMA_MIN, hi: float = SIGMA_MAX, iters: int = 60
) -> float:
    """Smallest sigma (to ~1e-4 relative) with f(sigma) <= target; f decreasing in sigma."""
    if f(lo) <= target:
        return lo
    if f(hi) > target:
        raise DPError(
            "target epsilon is too small for this many steps even with huge noise; "
            "raise epsilon or train fewer epochs / smaller batches"
        )
    llo, lhi = math.log(lo), math.log(hi)
    for _ in range(iters):
        mid = 0.5 * (llo + lhi)
        if f(math.exp(mid)) <= target:
            lhi = mid
        else:
            llo = mid
        if lhi - llo < 1e-4:
            break
    return math.exp(lhi)


def calibrate_noise(
    target_epsilon: float, delta: float, sample_rate: float, steps: int, accountant: str = "prv"
) -> tuple[float, float]:
    """Noise multiplier for a target epsilon after ``steps`` steps at ``sample_rate``.

    Returns ``(sigma, eps)`` where ``eps = epsilon(sigma, sample_rate, steps, delta, accountant)`` is
    the accountant's own value for that sigma, ``eps <= target_epsilon`` and, wherever sigma is above
    :data:`SIGMA_MIN`, ``eps >= (1 - CALIBRATION_TOLERANCE) * target_epsilon`` unless
    :data:`CALIBRATION_MAX_EVALS` real evaluations did not get there (never seen over ε 0.1–50).

    Where the target lies past the PRV accountant's grid (:data:`dpcore.limits.PRV_MAX_POINTS`: ε in the hundreds
    at typical settings, less over very many steps), the σ returned is the least noise whose ε it can bound, so ε
    falls short of the target (the training plan says so in the run's warnings).

    1. Bisection on the fast integer-order RDP bound gives a safe start (its ε is >= the accountant's).
       At high ε (σ < 1) that bound is loose — the best Rényi orders lie between 1 and 2 — so its σ can
       be far too large (2.5x too conservative at ε 50).
    2. A safeguarded secant on the real accountant in log σ / log ε (smooth, nearly linear) then moves to
       just below the target: usually 2–4 evaluations. Deterministic (no time budget), so the result does
       not depend on how busy the machine is; speed is measured in ``bench/accounting.py``.
    """
    target = check_epsilon(target_epsilon, "target epsilon")
    _, q, t, d = _check_run(1.0, sample_rate, steps, delta)
    acc = check_accountant(accountant)
    if t == 0:
        raise DPError("steps must be > 0 to calibrate noise")
    return _calibrate(target, q, t, d, acc)


@lru_cache(maxsize=1024)
def _calibrate(target: float, q: float, t: int, d: float, acc: str) -> tuple[float, float]:
    """:func:`calibrate_noise` on checked arguments, kept per process: a deterministic function of them, and a
    sweep asks it again for each LiRA shadow and seed of a setting (216 calibrations, 16 distinct, in the
    default demo: a fifth of its CPU)."""
    _warm_up()

    def real(s: float) -> float:
        try:
            return epsilon(s, q, t, d, acc)
        except AccountantTooCostly:  # an ε too large for PRV's grid: above any target, so more noise is needed
            return math.inf

    def fast(s: float) -> float:
        return fast_rdp_epsilon(s, q, t, d)

    # 1. fast RDP bound (>= Opacus RDP >= PRV in practice): a safe starting sigma.
    lo: tuple[float, float] | None = None  # (sigma, eps) with eps > target: less noise than allowed
    try:
        s_hi = _bisect_sigma(fast, target)
        e_hi = real(s_hi)
    except DPError:
        # Integer orders up to 63 have a floor (about log(1/δ)/62) that a small target can lie below;
        # Opacus's RDP has the same floor, the PRV accountant has none. Double σ on PRV until it fits,
        # starting where the fast bound is already near its floor (so ε is small there and each PRV
        # evaluation cheap: never evaluate PRV at a σ far below the answer, its grid grows with ε).
        hint = "; the PRV accountant certifies smaller ε than RDP" if acc == "rdp" else ""
        too_small = DPError(
            "target epsilon is too small for this many steps even with huge noise; "
            f"raise epsilon or train fewer epochs / smaller batches{hint}"
        )
        if acc != "prv" or real(SIGMA_MAX) > target:
            raise too_small from None
        s_hi = _bisect_sigma(fast, 1.5 * fast(SIGMA_MAX))
        e_hi = real(s_hi)
        while e_hi > target:
            lo = (s_hi, e_hi)
            if s_hi >= SIGMA_MAX:
                raise too_small from None
            s_hi = min(2 * s_hi, SIGMA_MAX)
            e_hi = real(s_hi)
    while e_hi > target:  # past PRV's grid (ε = inf), or should not happen; stay honest either way
        lo = (s_hi, e_hi)
        s_hi *= 1.02
        if s_hi > SIGMA_MAX:
            raise AccountantTooCostly(
                f"the PRV accountant's grid cannot bound ε for {t:,} steps at sample rate {q:.3g} with any σ up to "
                f"{SIGMA_MAX:g} here; choose the RDP accountant"
            )
        e_hi = real(s_hi)
    good = target * (1 - CALIBRATION_TOLERANCE)
    aim = math.log(target * (1 - CALIBRATION_TOLERANCE / 4))
    other: tuple[float, float] | None = None  # a second point below the target, for the slope before a bracket exists
    for _ in range(CALIBRATION_MAX_EVALS):
        if e_hi >= good or s_hi <= SIGMA_MIN:
            break
        ref = lo or other
        if ref is None:  # one point only: the fast bound's shape, scaled to the real value
            ratio = e_hi / max(fast(s_hi), 1e-300)
            try:
                s = _bisect_sigma(fast, math.exp(aim) / ratio, hi=s_hi)
            except DPError:
                s = s_hi
            s = min(max(s, s_hi * math.exp(-0.5)), s_hi * 0.98)
        elif not math.isfinite(ref[1]):  # the other end is past PRV's grid (no slope): bisect in log σ
            s = math.sqrt(ref[0] * s_hi)
        else:  # secant through two real points in log-log
            x0, y0 = math.log(ref[0]), math.log(ref[1])
            x1, y1 = math.log(s_hi), math.log(e_hi)
            slope = (y1 - y0) / (x1 - x0) if x1 != x0 else -1.0
            slope = min(slope, -0.1)  # ε falls with σ; keep the step finite
            x = x1 + (aim - y1) / slope
            if lo is not None:  # stay strictly inside the bracket (secant steps can stall at one end)
                w = x1 - math.log(lo[0])
                x = min(max(x, math.log(lo[0]) + 0.05 * w), x1 - 0.05 * w)
            else:
                x = min(max(x, x1 - 0.5), x1 - 0.01)  # small steps: PRV costs grow with ε
            s = math.exp(x)
        s = max(s, SIGMA_MIN)
        e = real(s)
        if e <= target:
            other, (s_hi, e_hi) = (s_hi, e_hi), (s, e)
        else:
            lo = (s, e)
    return s_hi, e_hi


def sample_rate_for(n_rows: int, batch_size: int) -> float:
    """Opacus's Poisson sample rate for an expected batch size: ``1 / ceil(n / batch)``."""
    n = check_positive_int(n_rows, "rows")
    b = check_positive_int(batch_size, "batch size")
    return 1.0 / math.ceil(n / b)


def steps_per_epoch(sample_rate: float) -> int:
    """Batches per epoch of Opacus's DPDataLoader (``int(1 / sample_rate)``)."""
    return int(1 / sample_rate)
