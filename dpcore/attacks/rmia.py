"""RMIA, the relative membership-inference attack of Zarifzadeh, Liu, Shokri & Zhang (ICML 2024, "Low-Cost
High-Power Membership Inference Attacks"), offline: pure maths on statistics the reference models already gave.

For a record x with label y, the target model θ gives Pr(x|θ) = its probability of the true class. The reference
(shadow) models that did *not* train on x give Pr_OUT(x), their mean probability of the true class. Offline, no
reference model trained on x, so Pr(x) — the probability averaged over models that did and did not train on x —
is approximated from the OUT models alone with the paper's linear interpolation

    Pr(x) ≈ ((1 + a)/2) · Pr_OUT(x) + (1 − a)/2,        0 ≤ a ≤ 1,

``a`` saying how far an IN model's probability sits above an OUT model's: a = 1 uses Pr_OUT as it is (IN and OUT
alike, the right value for a strongly private model), a = 0 puts Pr(x) halfway between Pr_OUT and 1 (IN models
sure of every training record, an overfit model). The paper tunes ``a`` per data set by attacking one reference
model with the others; :data:`DEFAULT_A` = 0.3 is ML Privacy Meter's default, kept fixed here (tuning it on the
audited rows would spoil the audit's confidence).

The likelihood ratio of x against a population record z is LR(x, z) = [Pr(x|θ)/Pr(x)] / [Pr(z|θ)/Pr(z)], and the
score is the share of population records z with LR(x, z) > γ. The population here is every scored row (the
attacker needs no labels; each z's Pr(z) comes from the reference models that did not train on z). The score is
a non-decreasing function of x's own ratio Pr(x|θ)/Pr(x), so the ROC depends on the population only through its
resolution; γ = 1 (:data:`DEFAULT_GAMMA`).
"""

from __future__ import annotations

import numpy as np

from ..errors import DPError

DEFAULT_A = 0.3
DEFAULT_GAMMA = 1.0


def rmia_scores(target_p, shadow_p, shadow_in, *, a: float = DEFAULT_A, gamma: float = DEFAULT_GAMMA) -> np.ndarray:
    """Offline RMIA scores in [0, 1] (higher = "more likely a member").

    target_p: (n,) the target's probability of each row's true class; shadow_p: (k, n) the reference models';
    shadow_in: (k, n) bool, True where a reference model trained on the row (those are left out of Pr_OUT). A row
    with no OUT model takes the mean Pr_OUT of the others.
    """
    t = np.asarray(target_p, float)
    S = np.asarray(shadow_p, float)
    IN = np.asarray(shadow_in, bool)
    if S.ndim != 2 or S.shape != IN.shape or S.shape[1] != t.size:
        raise DPError("reference-model probabilities must be (models, rows) and match the target's rows")
    if not 0.0 <= float(a) <= 1.0:
        raise DPError(f"RMIA's a must be in [0, 1], got {a!r}; 0.3 is the usual start")
    if not float(gamma) >= 1.0:
        raise DPError(f"RMIA's γ must be >= 1, got {gamma!r}; 1 is the usual value")
    OUT = ~IN
    cnt = OUT.sum(0)
    p_out = np.where(cnt > 0, (S * OUT).sum(0) / np.maximum(cnt, 1), np.nan)
    p_out = np.where(np.isfinite(p_out), p_out, np.nanmean(p_out) if np.isfinite(p_out).any() else 0.5)
    p_x = (1 + a) / 2 * p_out + (1 - a) / 2
    ratio = np.clip(t, 1e-12, 1.0) / np.maximum(p_x, 1e-12)
    # share of population z (every row) with ratio_x / ratio_z > γ, i.e. ratio_z < ratio_x / γ
    z = np.sort(ratio)
    return np.searchsorted(z, ratio / float(gamma), side="left") / z.size
