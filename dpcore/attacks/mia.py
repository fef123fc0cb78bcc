"""Membership inference: does a trained model give away who was in its training set?

Members are training rows, non-members are held-out rows from the same distribution, in equal numbers
(:func:`membership_sample`). Every attack turns a row into a *score* (higher = "more likely a member");
:func:`roc` sweeps a threshold over the scores and :func:`attack_metrics` summarises the curve.

Attacks
-------
- ``threshold``: the seed notebook's rule — "member if the model's confidence in the true class is above
  the median confidence". One fixed decision, so its ROC is the single point (FPR, TPR) joined to
  (0, 0) and (1, 1); AUC = (1 + TPR − FPR) / 2.
- ``loss``: Yeom et al. (2018) — members have lower loss. Score = −cross-entropy of the true class,
  every threshold swept (the attacker may pick any; Yeom's own pick is the mean training loss).
- ``lira_offline`` / ``lira_online``: Carlini et al. (2022) "Membership Inference Attacks From First
  Principles". Shadow models are trained on random halves of a data pool (here: the members and
  non-members themselves, as in the paper's evaluation). For each row the logit-scaled confidence
  φ = log(p / (1 − p)) of the true class is modelled as Gaussian over shadows that did not train on it
  (offline: score = (φ − μ_out) / σ_out) and, online, also over shadows that did (score = likelihood
  ratio N(φ; μ_in, σ_in) / N(φ; μ_out, σ_out)). With few shadows the variance is pooled over rows
  ("fixed variance", as the paper recommends below 64 shadows).
- ``rmia``: Zarifzadeh, Liu, Shokri & Zhang (ICML 2024), offline, from the same shadow (reference) models as
  LiRA: the target's probability of the true class over the reference models' OUT average, compared with a
  population (:mod:`dpcore.attacks.rmia`, where its ``a`` is documented).

Shadow models are fitted by a caller-supplied ``fit(X, y, seed) -> predict_proba``; the sweep passes
:func:`dpcore.training.train` with the target's own configuration (see ``dpcore.sweep.point._shadow_fit``);
:func:`default_shadow_fit` is a scikit-learn stand-in for callers without the training stack.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import Cancelled, DPError
from . import rmia

ATTACKS = ("threshold", "loss", "lira_offline", "lira_online", "rmia")
LIRA = ("lira_offline", "lira_online")
ATTACK_LABELS = {
    "threshold": "confidence > median (simplest)",
    "loss": "loss threshold (Yeom)",
    "lira_offline": "LiRA offline",
    "lira_online": "LiRA online",
    "rmia": "RMIA offline (Zarifzadeh et al.)",
}
_EPS = 1e-12


def _rng(seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


# --- metrics --------------------------------------------------------------------------------------------


@dataclass
class Roc:
    """ROC of a membership score: members are positives, non-members negatives.

    ``tp[i]``/``fp[i]`` count members/non-members flagged at the i-th threshold (score >= threshold);
    index 0 is "flag nobody" (0, 0) and the last is "flag everybody".
    """

    fpr: np.ndarray
    tpr: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    n_pos: int
    n_neg: int
    thresholds: np.ndarray

    @property
    def auc(self) -> float:
        return float(np.trapezoid(self.tpr, self.fpr))

    @property
    def advantage(self) -> float:
        """Attacker advantage max(TPR − FPR) (Yeom et al.): 0 = guessing, 1 = perfect."""
        return float(max(0.0, np.max(self.tpr - self.fpr)))

    def tpr_at_fpr(self, max_fpr: float) -> float:
        """Highest TPR among thresholds whose FPR is at most ``max_fpr`` (no interpolation)."""
        ok = self.fpr <= max_fpr + 1e-15
        return float(np.max(self.tpr[ok])) if ok.any() else 0.0

    def downsample(self, max_points: int = 200) -> dict:
        """A JSON-able curve with at most ``max_points`` points, keeping both ends (for charts)."""
        n = len(self.fpr)
        idx = np.arange(n) if n <= max_points else np.unique(np.linspace(0, n - 1, max_points).round().astype(int))
        return {"fpr": self.fpr[idx].round(6).tolist(), "tpr": self.tpr[idx].round(6).tolist()}


def _check_scores(member_scores, nonmember_scores):
    pos = np.asarray(member_scores, dtype=float).ravel()
    neg = np.asarray(nonmember_scores, dtype=float).ravel()
    if pos.size == 0 or neg.size == 0:
        raise DPError("membership inference needs at least one member and one non-member row")
    if not (np.isfinite(pos).all() and np.isfinite(neg).all()):
        raise DPError("attack scores contain NaN or infinity; check the model's probabilities")
    return pos, neg


def roc(member_scores, nonmember_scores) -> Roc:
    """Exact ROC over every distinct threshold (ties share a point, so AUC counts ties as 1/2)."""
    pos, neg = _check_scores(member_scores, nonmember_scores)
    scores = np.concatenate([pos, neg])
    labels = np.concatenate([np.ones(pos.size, bool), np.zeros(neg.size, bool)])
    order = np.argsort(-scores, kind="mergesort")
    s, lab = scores[order], labels[order]
    last_of_tie = np.r_[np.nonzero(np.diff(s))[0], s.size - 1]
    tp = np.cumsum(lab)[last_of_tie]
    fp = np.cumsum(~lab)[last_of_tie]
    tp = np.r_[0, tp].astype(np.int64)
    fp = np.r_[0, fp].astype(np.int64)
    thr = np.r_[np.inf, s[last_of_tie]]
    return Roc(fp / neg.size, tp / pos.size, tp, fp, int(pos.size), int(neg.size), thr)


def single_point_roc(member_flags, nonmember_flags) -> Roc:
    """ROC of a hard yes/no attack: (0,0) – (FPR, TPR) – (1,1)."""
    pos = np.asarray(member_flags, bool).ravel()
    neg = np.asarray(nonmember_flags, bool).ravel()
    if pos.size == 0 or neg.size == 0:
        raise DPError("membership inference needs at least one member and one non-member row")
    tp = np.array([0, int(pos.sum()), pos.size])
    fp = np.array([0, int(neg.sum()), neg.size])
    return Roc(fp / neg.size, tp / pos.size, tp, fp, int(pos.size), int(neg.size), np.array([np.inf, 0.5, -np.inf]))


def attack_metrics(r: Roc, *, curve_points: int = 200) -> dict:
    return {
        "auc": r.auc,
        "advantage": r.advantage,
        "tpr_at_1pct_fpr": r.tpr_at_fpr(0.01),
        "tpr_at_0.1pct_fpr": r.tpr_at_fpr(0.001),
        "n_members": r.n_pos,
        "n_nonmembers": r.n_neg,
        "roc": r.downsample(curve_points),
    }


# --- scores from a model's probabilities ----------------------------------------------------------------


def true_class_confidence(proba, y) -> np.ndarray:
    proba = np.asarray(proba, dtype=float)
    y = np.asarray(y).astype(int).ravel()
    if proba.ndim != 2 or proba.shape[0] != y.size:
        raise DPError(f"probabilities must be (rows, classes) matching {y.size} labels, got {proba.shape}")
    if y.min(initial=0) < 0 or y.max(initial=0) >= proba.shape[1]:
        raise DPError("labels fall outside the model's classes")
    return proba[np.arange(y.size), y]


def loss_scores(proba, y) -> np.ndarray:
    """−cross-entropy of the true class: higher = lower loss = more member-like (Yeom et al.)."""
    return np.log(np.clip(true_class_confidence(proba, y), _EPS, 1.0))


def logit_confidence(proba, y) -> np.ndarray:
    """φ = log p_y − log(1 − p_y), LiRA's nearly Gaussian statistic."""
    p = np.clip(true_class_confidence(proba, y), 1e-7, 1 - 1e-7)
    return np.log(p) - np.log1p(-p)


def membership_sample(n_train: int, n_test: int, seed=0, max_per_side: int | None = None):
    """Indices of members (into the training rows) and non-members (into held-out rows), equal numbers."""
    m = min(n_train, n_test)
    if max_per_side is not None:
        m = min(m, int(max_per_side))
    if m < 1:
        raise DPError("membership inference needs training and held-out rows; increase the test size")
    rng = _rng(seed)
    return np.sort(rng.choice(n_train, m, replace=False)), np.sort(rng.choice(n_test, m, replace=False))


def threshold_attack(member_conf, nonmember_conf) -> tuple[Roc, dict]:
    """The notebook's rule: member iff confidence in the true class > median of all confidences."""
    pos, neg = _check_scores(member_conf, nonmember_conf)
    med = float(np.median(np.concatenate([pos, neg])))
    r = single_point_roc(pos > med, neg > med)
    return r, {"threshold": med, "tpr": float(r.tpr[1]), "fpr": float(r.fpr[1])}


def loss_attack(member_proba, member_y, nonmember_proba, nonmember_y, mean_train_loss=None) -> tuple[Roc, dict]:
    """Loss-threshold attack over every threshold; plus Yeom's operating point (loss < mean training loss)."""
    pos = loss_scores(member_proba, member_y)
    neg = loss_scores(nonmember_proba, nonmember_y)
    r = roc(pos, neg)
    tau = float(-np.mean(pos)) if mean_train_loss is None else float(mean_train_loss)
    tpr, fpr = float(np.mean(-pos <= tau)), float(np.mean(-neg <= tau))
    return r, {"threshold_loss": tau, "tpr": tpr, "fpr": fpr}


# --- LiRA ----------------------------------------------------------------------------------------------


def lira_scores(target_phi, shadow_phi, shadow_in, *, online: bool, fixed_variance: bool = True) -> np.ndarray:
    """LiRA scores from statistics already computed (pure maths, no training).

    target_phi: (n,) the target model's φ per row; shadow_phi: (k, n) shadows' φ; shadow_in: (k, n) bool,
    True where the shadow trained on the row. Rows without any OUT (or, online, IN) shadow get the pooled
    mean of the other rows.
    """
    t = np.asarray(target_phi, float)
    S = np.asarray(shadow_phi, float)
    IN = np.asarray(shadow_in, bool)
    if S.ndim != 2 or S.shape != IN.shape or S.shape[1] != t.size:
        raise DPError("shadow statistics must be (shadows, rows) and match the target's rows")
    OUT = ~IN

    def stats(mask):
        cnt = mask.sum(0)
        mu = np.where(cnt > 0, (S * mask).sum(0) / np.maximum(cnt, 1), np.nan)
        glob = np.nanmean(mu) if np.isfinite(mu).any() else 0.0
        mu = np.where(np.isfinite(mu), mu, glob)
        resid = (S - mu) * mask
        if fixed_variance or cnt.min() < 2:
            var = np.full(t.size, (resid**2).sum() / max(mask.sum() - 1, 1))
        else:
            var = (resid**2).sum(0) / np.maximum(cnt - 1, 1)
        return mu, np.sqrt(np.maximum(var, 1e-6))

    mu_out, sd_out = stats(OUT)
    if not online:
        return (t - mu_out) / sd_out
    mu_in, sd_in = stats(IN)

    def logpdf(x, mu, sd):
        return -0.5 * ((x - mu) / sd) ** 2 - np.log(sd)

    return logpdf(t, mu_in, sd_in) - logpdf(t, mu_out, sd_out)


def default_shadow_fit(model: str = "mlp", hidden: int = 64, epochs: int = 100, lr: float = 1e-3):
    """A fast scikit-learn stand-in for the target's architecture, trained non-privately.

    'logreg' → LogisticRegression; 'mlp'/'cnn' → MLPClassifier with one hidden layer of ``hidden`` units,
    Adam, ``epochs`` passes, no weight decay (like the target, which is trained without regularisation).
    Features are standardised inside the shadow (the attacker's own preprocessing).
    """
    # lazy: scikit-learn takes ~1 s to import
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    def fit(X, y, seed):
        if model == "logreg":
            clf = LogisticRegression(C=1e4, max_iter=max(epochs, 100))
        else:
            clf = MLPClassifier(
                hidden_layer_sizes=(hidden,),
                alpha=1e-6,
                learning_rate_init=max(lr, 1e-3),
                max_iter=epochs,
                batch_size=min(64, len(y)),
                random_state=int(seed),
                n_iter_no_change=epochs + 1,
                tol=0.0,
            )
        pipe = make_pipeline(StandardScaler(), clf)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            pipe.fit(X, y)
        classes = pipe.classes_

        def predict_proba(Xq):
            p = pipe.predict_proba(Xq)
            full = np.full((len(Xq), int(max(classes.max() + 1, np.max(y) + 1))), 1e-7)
            full[:, classes.astype(int)] = p
            return full

        return predict_proba

    return fit


def lira_attack(
    target_proba_pool,
    X_pool,
    y_pool,
    is_member,
    fit,
    n_shadows: int = 8,
    seed=0,
    should_stop=None,
    progress=None,
    fit_many=None,
    which=LIRA,
) -> dict[str, tuple[Roc, dict]]:
    """Train ``n_shadows`` shadows on random halves of the pool and run LiRA offline and online (``which``: the
    attacks to score with them, any of ``lira_offline``, ``lira_online`` and ``rmia``, which uses the same shadows
    as its reference models).

    target_proba_pool: the target model's probabilities on the pool rows; is_member: bool per pool row
    (ground truth, used only to score the attack). Each row is IN for exactly half of the shadows
    (balanced halves, as in the paper), so online LiRA has IN and OUT statistics for every row.
    ``fit_many(list of (X, y, seed), X_pool) -> list of probability arrays on X_pool`` trains all shadows
    at once (e.g. one Ray task each); without it they are trained one by one with ``fit``. The halves and
    seeds are the same either way, so the results are too.
    """
    if n_shadows < 2:
        raise DPError("LiRA needs at least 2 shadow models (try 8–16)")
    X_pool = np.asarray(X_pool)
    y_pool = np.asarray(y_pool).astype(int)
    is_member = np.asarray(is_member, bool)
    n = y_pool.size
    rng = _rng(seed)
    # Balanced halves: for each row, a random half of the shadows train on it.
    keep = np.argsort(rng.random((n_shadows, n)), axis=0) < (n_shadows // 2)
    phis = np.empty((n_shadows, n))
    jobs = []
    for k in range(n_shadows):
        if should_stop is not None and should_stop():
            raise Cancelled("cancelled while training shadow models")
        idx = np.nonzero(keep[k])[0]
        if np.unique(y_pool[idx]).size < 2:
            idx = np.r_[idx, np.nonzero(~keep[k])[0][:2]]
        if fit_many is not None:
            jobs.append((X_pool[idx], y_pool[idx], int(rng.integers(2**31))))
            continue
        predict = fit(X_pool[idx], y_pool[idx], int(rng.integers(2**31)))
        phis[k] = logit_confidence(predict(X_pool), y_pool)
        if progress is not None:
            progress(shadow=k + 1, shadows=n_shadows)
    if fit_many is not None:
        probas = list(fit_many(jobs, X_pool))
        if len(probas) != n_shadows:
            raise DPError(f"fit_many returned {len(probas)} shadows, {n_shadows} were asked for")
        for k, proba in enumerate(probas):
            phis[k] = logit_confidence(proba, y_pool)
    target_phi = logit_confidence(target_proba_pool, y_pool)
    out = {}
    for name, online in (("lira_offline", False), ("lira_online", True)):
        if name in which:
            s = lira_scores(target_phi, phis, keep, online=online)
            out[name] = (
                roc(s[is_member], s[~is_member]),
                {"shadows": n_shadows, "_scores": (s[is_member], s[~is_member])},
            )
    if "rmia" in which:
        # the reference models' probabilities of the true class, back from φ (the logit of that probability)
        s = rmia.rmia_scores(true_class_confidence(target_proba_pool, y_pool), 1.0 / (1.0 + np.exp(-phis)), keep)
        out["rmia"] = (
            roc(s[is_member], s[~is_member]),
            {
                "shadows": n_shadows,
                "a": rmia.DEFAULT_A,
                "gamma": rmia.DEFAULT_GAMMA,
                "_scores": (s[is_member], s[~is_member]),
            },
        )
    return out


def run_attacks(
    predict_proba,
    X_train,
    y_train,
    X_test,
    y_test,
    *,
    attacks=("threshold", "loss"),
    shadows: int = 8,
    shadow_fit=None,
    seed=0,
    max_per_side: int | None = None,
    should_stop=None,
    progress=None,
    shadow_fit_many=None,
) -> dict:
    """Run the chosen attacks on a trained model. Returns {attack: metrics dict} plus the raw Roc objects
    under ``"_roc"``, each attack's (member_scores, nonmember_scores) under ``"_scores"`` (for
    :func:`dpcore.attacks.audit.audit_scores`) and the scored rows under ``"_members"`` (indices into the training
    and the held-out rows); drop the three before serialising. Every attack scores the same rows in
    the same order."""
    unknown = [a for a in attacks if a not in ("threshold", "loss", "lira", *ATTACKS)]
    if unknown:
        raise DPError(f"unknown attack(s) {unknown}; choose from threshold, loss, lira, rmia")
    rng = _rng(seed)
    mi, ni = membership_sample(len(y_train), len(y_test), rng, max_per_side)
    Xm, ym, Xn, yn = X_train[mi], np.asarray(y_train)[mi], X_test[ni], np.asarray(y_test)[ni]
    pm, pn = predict_proba(Xm), predict_proba(Xn)
    results: dict = {}
    rocs: dict = {}
    scores: dict = {}
    if "threshold" in attacks:
        cm, cn = true_class_confidence(pm, ym), true_class_confidence(pn, yn)
        r, extra = threshold_attack(cm, cn)
        rocs["threshold"] = r
        scores["threshold"] = (cm, cn)
        results["threshold"] = {**attack_metrics(r), "operating_point": extra}
    if "loss" in attacks:
        # Yeom's threshold: the mean loss over *all* training rows (what the paper's attacker knows).
        full_train_loss = float(-np.mean(loss_scores(predict_proba(X_train), y_train)))
        r, extra = loss_attack(pm, ym, pn, yn, mean_train_loss=full_train_loss)
        rocs["loss"] = r
        scores["loss"] = (loss_scores(pm, ym), loss_scores(pn, yn))
        results["loss"] = {**attack_metrics(r), "operating_point": extra}
    which = [n for n in LIRA if "lira" in attacks or n in attacks] + (["rmia"] if "rmia" in attacks else [])
    if which:
        if shadow_fit is None:
            shadow_fit = default_shadow_fit()
        X_pool = np.concatenate([Xm, Xn])
        y_pool = np.concatenate([ym, yn])
        member = np.r_[np.ones(len(ym), bool), np.zeros(len(yn), bool)]
        lira = lira_attack(
            np.concatenate([pm, pn]),
            X_pool,
            y_pool,
            member,
            shadow_fit,
            shadows,
            rng,
            should_stop=should_stop,
            progress=progress,
            fit_many=shadow_fit_many,
            which=which,
        )
        for name, (r, extra) in lira.items():
            rocs[name] = r
            scores[name] = extra.pop("_scores")
            results[name] = {**attack_metrics(r), **extra}
    results["_roc"] = rocs
    results["_scores"] = scores
    results["_members"] = (mi, ni)
    return results
