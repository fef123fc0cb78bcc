"""One sweep point, the job target ``"sweep.point"``: train one model (with canaries), attack it, audit it.

Risk where it lives: the canaries (:func:`make_canaries`) are training images given a wrong label, each in
training with probability ½ from a secret coin; their scores feed the one-run audit (:func:`_one_run_bound`).
The loss/threshold/LiRA attacks run on ordinary records (members = training rows, non-members = test rows).
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from dataclasses import dataclass

import numpy as np

from .. import limits
from ..attacks import audit, exposure, mia, one_run
from ..errors import DPError
from ..training import accounting
from ..training.bounds import preprocessing
from ..training.config import TrainConfig, noise_fields
from ..training.data import load_split, record_view
from ..training.job import train_in_job
from ..training.loop import train
from .config import CANARY_ATTACK


def _shadow_fit(params: dict, cfg, split, should_stop=None):
    """How LiRA's shadow models are trained.

    "same" (default): :func:`dpcore.training.loop.train` with the target's own config (model, epochs, lr, and
    DP-SGD at the same ε if the target is DP) on each random half of the pool — faithful, one training per
    shadow. "sklearn": a scikit-learn stand-in of the same architecture and epochs, trained non-privately;
    its confidences are distributed differently from the target's, which hurts online LiRA (measured on the
    demo baseline: online AUC 0.51 with sklearn shadows vs 0.83 with "same"), so it is only a fallback.
    """
    if params.get("shadow_trainer", "sklearn") == "same":

        def fit(X, y, seed):
            sub = dataclasses.replace(
                split,
                X_train=np.ascontiguousarray(X, np.float32),
                y_train=np.asarray(y, np.int64),
                X_test=split.X_test[:8],
                y_test=split.y_test[:8],
            )
            c = dataclasses.replace(
                cfg, seed=int(seed) % (2**31), train_size=None, batch_size=min(cfg.batch_size, len(y))
            )
            # a shadow is the attacker's model: its diagnostics and a second accountant's ε are never read
            res = train(c, should_stop=should_stop, split=sub, diagnostics=False, compare_accountants=False)
            return res.predict_proba

        return fit
    return mia.default_shadow_fit(cfg.model, int(cfg.hidden), int(cfg.epochs), 1e-3)


def _shadow_task(params: dict, cfg, split, X_pool, X, y, seed) -> dict:
    """One LiRA shadow as a nested Ray task: train it on (X, y) exactly as :func:`_shadow_fit` does locally
    and return its probabilities on the pool (an array, not a model or closure) and the task's name."""
    # lazy: Ray is optional (requirements-ray.txt)
    import ray

    proba = np.asarray(_shadow_fit(params, cfg, split)(X, y, seed)(X_pool))
    return {"proba": proba, "task": ray.get_runtime_context().get_task_name()}


def _shadow_fit_many(params: dict, cfg, split, ctx):
    """On Ray (``ctx.executor == "ray"``): every LiRA shadow its own nested task (one CPU each), so a point's
    shadows spread over the cluster. Elsewhere None: the shadows are trained one by one in this process."""
    if getattr(ctx, "executor", "local") != "ray":
        return None

    def fit_many(jobs, X_pool):
        def done(k, n):
            ctx.progress(phase="attack", shadow=k, shadows=n)

        outs = ctx.map_tasks(
            _shadow_task,
            jobs,
            shared=(params, cfg, split, np.asarray(X_pool)),
            name="lira-shadow",
            num_cpus=1.0,
            on_done=done,
        )
        ctx.progress(shadow_tasks=[o["task"] for o in outs])
        ctx.flush()
        return [o["proba"] for o in outs]

    return fit_many


@dataclass
class Canaries:
    """Audit records: ``X`` with wrong labels ``y``; ``included[i]``: canary i was in the training set."""

    X: np.ndarray
    y: np.ndarray
    included: np.ndarray

    def add_to(self, split):
        """The split with the included canaries appended to its training rows."""
        k = self.included
        return dataclasses.replace(
            split,
            X_train=np.ascontiguousarray(np.concatenate([split.X_train, self.X[k]])),
            y_train=np.concatenate([split.y_train, self.y[k]]),
        )


def make_canaries(split, n: int, seed: int, *, reproducible: bool = False) -> Canaries:
    """``n`` training images with a label changed to a different class (a labelling error: the unusual kind
    of record a model memorises). Which images and labels: public, from ``seed``. Whether each canary is
    in the training set: a fair coin per canary per run, from :mod:`secrets` unless ``reproducible``."""
    if n <= 0:
        raise DPError("the canary audit needs at least one canary")
    if split.n_classes < 2 or n > split.n_train:
        raise DPError(f"cannot draw {n} canaries from {split.n_train} training rows")
    rng = np.random.default_rng([int(seed), 0xCA])
    idx = rng.choice(split.n_train, n, replace=False)
    y = (split.y_train[idx] + rng.integers(1, split.n_classes, n)) % split.n_classes  # never the true label
    coin = np.random.default_rng([int(seed), 0xC0]) if reproducible else np.random.default_rng(secrets.randbits(128))
    return Canaries(np.ascontiguousarray(split.X_train[idx]), y.astype(np.int64), coin.random(n) < 0.5)


def canary_scores(predict_proba, canaries: Canaries) -> np.ndarray:
    """Higher = "more likely included": the logit of the model's confidence in the canary's (wrong) label."""
    return mia.logit_confidence(predict_proba(canaries.X), canaries.y)


def _one_run_bound(scores, included, delta: float) -> dict:
    """The one-run audit of Steinke, Nasr & Jagielski (2023) on the canaries (see :mod:`dpcore.attacks.audit`),
    and the most it could prove with these canaries (every guess right)."""
    scores, included = np.asarray(scores, float), np.asarray(included, bool)
    out = dict(one_run.one_run_lower_bound(scores, included, delta=delta, confidence=0.95))
    tried = tuple(tuple(t) for t in out["tried"])  # the most these very guesses prove with every one right
    out["max_certifiable"] = one_run.bound_at(int(included.size), tried, float(delta), 0.05)[1]
    out["attack"] = CANARY_ATTACK
    out["method"] = (
        f"one-run audit (Steinke, Nasr & Jagielski 2023) on {included.size} canaries, {int(included.sum())} included"
    )
    return out


def run_point(params: dict, ctx=None) -> dict:
    """Job target: train one model (with canaries), attack it, audit it. Returns the point dict (JSON-able)."""
    t0 = time.perf_counter()
    cfg = TrainConfig.from_dict(params["train"])
    seed = int(params.get("seed", 0))
    split = load_split(cfg)
    n_canaries = int(params.get("canaries", 0) or 0)
    canaries = make_canaries(split, n_canaries, seed, reproducible=cfg.reproducible_noise) if n_canaries else None

    def report(**fields):
        if ctx is not None:
            keep = {k: v for k, v in fields.items() if isinstance(v, (int, float, str, bool)) or v is None}
            ctx.progress(**{**keep, "phase": "train"})

    stop = (lambda: ctx.cancelled()) if ctx is not None else None
    res = train_in_job(  # a point reports its own accountant's ε only (the RDP beside it is never shown)
        cfg,
        ctx,
        split=canaries.add_to(split) if canaries is not None else split,
        progress=report,
        compare_accountants=False,
    )
    t_train = time.perf_counter() - t0
    if ctx is not None:
        ctx.progress(phase="attack")
    attacks = tuple(params.get("attacks") or ("threshold", "loss"))
    # ordinary records: members = the clean training rows, non-members = test rows
    results = mia.run_attacks(
        res.predict_proba,
        split.X_train,
        split.y_train,
        split.X_test,
        split.y_test,
        attacks=attacks,
        shadows=int(params.get("shadows", 8)),
        shadow_fit=_shadow_fit(params, cfg, split, stop),
        seed=np.random.default_rng([seed, 7]),
        max_per_side=limits.SWEEP_AUDIT_MAX_PER_SIDE,
        should_stop=stop,
        shadow_fit_many=_shadow_fit_many(params, cfg, split, ctx),
    )
    results.pop("_roc")
    members = results.pop("_members")
    scores = results.pop("_scores")
    canary_audit = None
    if canaries is not None:
        c_scores = canary_scores(res.predict_proba, canaries)
        k = canaries.included
        results[CANARY_ATTACK] = {
            **mia.attack_metrics(mia.roc(c_scores[k], c_scores[~k])),
            "records": "canaries (mislabelled training images)",
        }
    m = res.metrics.to_dict()
    eps_spent = m.get("epsilon")
    point = {
        "epsilon": params["train"].get("epsilon"),
        "epsilon_spent": eps_spent,
        "delta": m.get("delta", params["train"].get("delta")),
        "seed": seed,
        "train_fraction": float(params.get("train_fraction", 1.0)),
        "n_train": int(m.get("n_train") or split.n_train),  # rows trained on, included canaries too
        "n_classes": int(split.n_classes),
        "chance_accuracy": float(np.bincount(split.y_test).max() / max(len(split.y_test), 1)),
        "test_accuracy": m.get("test_accuracy"),
        "train_accuracy": m.get("train_accuracy"),
        "noise_multiplier": m.get("noise_multiplier"),
        "sample_rate": m.get("sample_rate"),
        "steps": m.get("steps"),
        "accountant": m.get("accountant"),
        "device": m.get("device"),
        "mia": results,
        "canaries": None if canaries is None else {"n": int(len(canaries.y)), "included": int(canaries.included.sum())},
        "preprocessing": preprocessing(cfg.bounds, split.bounds_note, split.leaks),
        "train_seconds": round(t_train, 3),
        "seconds": None,
        **noise_fields(cfg),
    }
    delta = float(point["delta"] or params["train"]["delta"])
    if canaries is not None:
        canary_audit = _one_run_bound(c_scores, canaries.included, delta)
    # attack, threshold and direction chosen on half the rows, bounded on the other half (a real 95%)
    a = audit.audit_scores(scores, delta, split_seed=seed)
    if point["epsilon"] is not None:
        claimed = eps_spent if eps_spent is not None else point["epsilon"]
        a["claimed"] = claimed
        a["within_claim"] = bool(a["lower_bound"] <= claimed + 1e-9)
        point["empirical_epsilon"] = a
    else:  # no claim to check: how much leakage the attacks *prove* for the non-private model
        a["claimed"] = None
        point["empirical_epsilon_no_dp"] = a
    if point["epsilon"] is not None and point["noise_multiplier"] and point["sample_rate"] and point["steps"]:
        sigma, q, steps = float(point["noise_multiplier"]), float(point["sample_rate"]), int(point["steps"])
        point["gdp_mu"] = audit.gdp_mu(sigma, q, steps)
        # the worst-case ROC from the same privacy-loss distribution as the tight ε

        point["epsilon_pld"] = accounting.pld_epsilon(sigma, q, steps, delta)
        point["tradeoff"] = {
            **accounting.dpsgd_tradeoff(sigma, q, steps),
            "noise_multiplier": sigma,
            "sample_rate": q,
            "steps": steps,
            "delta": delta,
            "source": "dp_accounting PLD, Poisson-subsampled Gaussian, add/remove one",
        }
    _attach_audit(point, canary_audit)
    _attach_exposure(point, split, scores, members[0], delta)
    point["seconds"] = round(time.perf_counter() - t0, 3)
    return point


def _attach_exposure(point: dict, split, scores: dict, members, delta: float) -> None:
    """Who is most exposed (:mod:`dpcore.attacks.exposure`): every audited record's score and proved ε under
    ``exposure``, the most exposed under ``vulnerable`` with the record as the model saw it (``record``: a private
    row, for its owner; left out of the CLI's JSON)."""
    name = exposure.ranking_attack(scores)
    if name is None:
        return
    rows = split.train_rows[members] if split.train_rows is not None else np.asarray(members)
    claimed = None if point["epsilon"] is None else (point.get("epsilon_spent") or point["epsilon"])
    ex = exposure.summarise(rows, scores[name][0], scores[name][1], attack=name, delta=delta, claimed=claimed)
    where = {int(r): int(m) for r, m in zip(rows, members)}
    vulnerable = ex.pop("vulnerable")
    for v in vulnerable:
        v["record"] = record_view(split, where[v["index"]])
    point["exposure"] = ex
    point["vulnerable"] = vulnerable


def _attach_audit(point: dict, canary_audit: dict | None) -> None:
    """``empirical_epsilon`` of every point (baseline included): the canary one-run bound when there are
    canaries, else the audit on ordinary records; the audit on ordinary records stays beside it as
    ``records``. The two are reported, never maximised over (that would spoil the 95%)."""
    records = point.pop("empirical_epsilon", None) or point.pop("empirical_epsilon_no_dp", None)
    main = dict(canary_audit) if canary_audit is not None else dict(records or {})
    if not main:
        return
    claimed = None if point["epsilon"] is None else (point.get("epsilon_spent") or point["epsilon"])
    main["claimed"] = claimed
    main["within_claim"] = None if claimed is None else bool(main["lower_bound"] <= claimed + 1e-9)
    if canary_audit is not None and records:
        main["records"] = {k: v for k, v in records.items() if k not in ("claimed", "within_claim")}
    point["empirical_epsilon"] = main
