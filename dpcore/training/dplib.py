"""The diffprivlib path: LogisticRegression / GaussianNB with pure ε (or scikit-learn's non-private model)."""

from __future__ import annotations

import time
import warnings

import numpy as np

from .. import claims
from ..errors import DPError
from .config import NOT_DP_NOTE, TrainConfig, noise_fields
from .data import Split
from .results import TrainMetrics, TrainResult


def train_diffprivlib(cfg: TrainConfig, split: Split, progress) -> TrainResult:
    """diffprivlib LogisticRegression / GaussianNB on the [-1, 1]-scaled features with explicit
    bounds / data_norm (no PrivacyLeakWarning). epsilon=None: scikit-learn's non-private model."""
    if split.image_shape is not None and cfg.dataset_kind == "mnist":
        raise DPError("diffprivlib models are for tabular data")
    progress = progress or (lambda **_: None)
    t0 = time.perf_counter()
    X, y = split.X_train.astype(np.float64), split.y_train
    d = X.shape[1]
    # public bounds: tabular features are scaled to [-1, 1] (one-hot to {0, 1}); pixels to [0, 1]
    lo = np.zeros(d) if split.image_shape is not None else np.full(d, -1.0)
    hi = np.ones(d)
    Xc = np.clip(X, lo, hi)
    classes = np.arange(split.n_classes)
    # None: diffprivlib's mechanisms draw from secrets.SystemRandom; a seed only in reproducible-noise mode
    dp_random_state = cfg.seed if cfg.reproducible_noise else None
    with warnings.catch_warnings():
        warnings.simplefilter("error", category=_privacy_leak_warning())
        if cfg.model == "diffprivlib_logreg":
            data_norm = float(np.sqrt(np.sum(np.maximum(lo**2, hi**2))))
            if cfg.epsilon is None:
                # lazy: scikit-learn takes ~1 s to import
                from sklearn.linear_model import LogisticRegression

                est = LogisticRegression(max_iter=cfg.epochs * 10, C=1.0)
            else:
                # lazy: diffprivlib imports scikit-learn (~1 s)
                from diffprivlib import BudgetAccountant

                est = _dp_logistic_regression_class()(
                    epsilon=cfg.epsilon,
                    data_norm=data_norm,
                    max_iter=max(100, cfg.epochs * 10),
                    random_state=dp_random_state,
                    C=1.0,
                    accountant=BudgetAccountant(),
                )
            est.fit(Xc, y)
        else:
            if cfg.epsilon is None:
                # lazy: scikit-learn takes ~1 s to import
                from sklearn.naive_bayes import GaussianNB

                est = GaussianNB()
            else:
                # lazy: diffprivlib imports scikit-learn (~1 s)
                from diffprivlib import BudgetAccountant
                from diffprivlib.models import GaussianNB

                est = GaussianNB(
                    epsilon=cfg.epsilon,
                    bounds=(lo, hi),
                    priors=None,
                    random_state=dp_random_state,
                    accountant=BudgetAccountant(),
                )
            est.fit(Xc, y)
    proba_classes = list(getattr(est, "classes_", classes))

    def acc(Xa, ya):
        p = np.asarray(est.predict(np.clip(Xa.astype(np.float64), lo, hi)))
        return float(np.mean(p == ya))

    test_acc, train_acc = acc(split.X_test, split.y_test), acc(split.X_train, split.y_train)
    private = cfg.epsilon is not None
    metrics = TrainMetrics(
        dataset=cfg.dataset,
        target=cfg.target,
        model=cfg.model,
        private=private,
        seed=cfg.seed,
        device="cpu",  # diffprivlib is numpy-only
        epsilon=cfg.epsilon,
        delta=0.0 if private else None,
        target_epsilon=cfg.epsilon,
        accountant="pure ε (diffprivlib)" if private else None,
        **noise_fields(cfg),
        test_accuracy=claims.diagnostic(test_acc),
        train_accuracy=claims.diagnostic(train_acc),
        train_metrics_note=NOT_DP_NOTE,
        classes_seen=tuple(int(c) for c in proba_classes),
        n_train=split.n_train,
        n_test=int(len(split.y_test)),
        n_features=d,
        n_classes=split.n_classes,
        bounds_note=split.bounds_note
        + "; features clipped to [-1, 1]"
        + (", data_norm = sqrt(d)" if cfg.model == "diffprivlib_logreg" else ""),
        leaks=tuple(split.leaks),
        train_seconds=time.perf_counter() - t0,
    )
    progress(phase="done", epoch=1, step=1, total_steps=1, accuracy=claims.diagnostic(test_acc), epsilon=cfg.epsilon)
    return TrainResult(cfg, metrics, est, split)


def _dp_logistic_regression_class():
    """diffprivlib 0.6.6's LogisticRegression passes ``multi_class`` to scikit-learn, which 1.8 removed;
    the same model without that argument (diffprivlib already fixes OvR + lbfgs + l2)."""
    # lazy: diffprivlib imports scikit-learn (~1 s)
    import sklearn.linear_model as lm
    from diffprivlib import BudgetAccountant
    from diffprivlib.models import LogisticRegression

    class DPLogisticRegression(LogisticRegression):
        def __init__(
            self,
            *,
            epsilon=1.0,
            data_norm=None,
            tol=1e-4,
            C=1.0,
            fit_intercept=True,
            max_iter=100,
            verbose=0,
            warm_start=False,
            n_jobs=None,
            random_state=None,
            accountant=None,
        ):
            lm.LogisticRegression.__init__(
                self,
                dual=False,
                tol=tol,
                C=C,
                fit_intercept=fit_intercept,
                intercept_scaling=1.0,
                class_weight=None,
                random_state=random_state,
                solver="lbfgs",
                max_iter=max_iter,
                verbose=verbose,
                warm_start=warm_start,
                n_jobs=n_jobs,
            )
            self.epsilon = epsilon
            self.data_norm = data_norm
            self.classes_ = None
            self.accountant = BudgetAccountant.load_default(accountant)

    return DPLogisticRegression


def _privacy_leak_warning():
    # lazy: diffprivlib imports scikit-learn (~1 s)
    from diffprivlib.utils import PrivacyLeakWarning

    return PrivacyLeakWarning
