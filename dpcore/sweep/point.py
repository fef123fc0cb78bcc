"""One sweep point, the job target ``"sweep.point"``: train one model (with canaries), attack it, audit it.

Risk where it lives: the run plants its canaries itself (:mod:`dpcore.training.canaries`, the one home: inputs from
the public feature space with labels at random, each in training with probability ½ from a secret coin) and audits itself
(:mod:`dpcore.training.self_audit`: the one-run (ε, δ) and f-DP bounds on the canaries). The loss/threshold/LiRA
attacks run on ordinary records (members = training rows, non-members = test rows); their scores feed the split audit
and the Gaussian-DP audit of the point.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from .. import limits
from ..attacks import audit, exposure, gdp, mia
from ..training import accounting, self_audit
from ..training import canaries as canary_mod
from ..training.bounds import preprocessing
from ..training.config import TrainConfig, noise_fields
from ..training.data import load_split, record_view
from ..training.job import require_charged, train_in_job
from ..training.loop import train
from . import who_pays
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
                cfg, seed=int(seed) % (2**31), train_size=None, batch_size=min(cfg.batch_size, len(y)), canaries=0
            )
            # a shadow is the attacker's model, no run of its own: its diagnostics, a second accountant's ε and a
            # self-audit are never read
            res = train(
                c, should_stop=should_stop, split=sub, audit=False, diagnostics=False, compare_accountants=False
            )
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


def run_point(params: dict, ctx=None) -> dict:
    """Job target: train one model (with canaries), attack it, audit it. Returns the point dict (JSON-able)."""
    t0 = time.perf_counter()
    cfg = TrainConfig.from_dict(params["train"])
    if cfg.private:  # a DP point of a registered dataset's rows runs only once the gate charged it (a baseline is a
        require_charged(cfg, ctx)  # diagnostic, labelled not covered by ε, and holds no charge)
    seed = int(params.get("seed", 0))
    split = load_split(cfg)
    n_canaries = int(params.get("canaries", 0) or 0)
    cfg = dataclasses.replace(cfg, canaries=n_canaries)  # the run plants them and audits itself (0: size control)

    def report(**fields):
        if ctx is not None:
            keep = {k: v for k, v in fields.items() if isinstance(v, (int, float, str, bool)) or v is None}
            ctx.progress(**{**keep, "phase": "train"})

    stop = (lambda: ctx.cancelled()) if ctx is not None else None
    # a point reports its own accountant's ε only (the RDP beside it is never shown)
    res = train_in_job(cfg, ctx, split=split, progress=report, compare_accountants=False)
    canaries = res.canaries
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
        c_scores = canary_mod.scores(res.predict_proba, canaries)
        k = canaries.included
        results[CANARY_ATTACK] = {
            **mia.attack_metrics(mia.roc(c_scores[k], c_scores[~k])),
            "records": f"canaries ({canaries.summary(split.n_train)['source']})",
        }
    m = res.metrics.to_dict()
    eps_spent = m.get("epsilon")
    point = {
        "epsilon": params["train"].get("epsilon"),
        "epsilon_spent": eps_spent,
        "delta": m.get("delta", params["train"].get("delta")),
        "seed": seed,
        "train_fraction": float(params.get("train_fraction", 1.0)),
        "n_train": int(m.get("n_train") or split.n_train),  # the real rows: canaries are under "canaries"
        "n_classes": int(split.n_classes),
        "chance_accuracy": float(np.bincount(split.y_test).max() / max(len(split.y_test), 1)),
        "test_accuracy": m.get("test_accuracy"),
        "per_class": list(m.get("per_class") or []),  # who pays (dpcore.sweep.who_pays): each class's accuracy
        "per_group": list(m.get("per_group") or []),  # and each subgroup's (a categorical column's categories)
        "train_accuracy": m.get("train_accuracy"),
        "noise_multiplier": m.get("noise_multiplier"),
        "sample_rate": m.get("sample_rate"),
        "steps": m.get("steps"),
        "accountant": m.get("accountant"),
        "device": m.get("device"),
        "mia": results,
        "canaries": None if canaries is None else canaries.summary(split.n_train),
        "preprocessing": preprocessing(cfg.bounds, split.bounds_note, split.leaks),
        "train_seconds": round(t_train, 3),
        "seconds": None,
        **noise_fields(cfg),
    }
    delta = float(point["delta"] or params["train"]["delta"])
    own = dict(m.get("audit") or {})
    if canaries is not None:
        canary_audit = own.get("one_run")
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
    _attach_self_audit(point, own, scores, delta, seed, cfg.accountant)
    _attach_exposure(point, split, scores, members[0], delta)
    point["seconds"] = round(time.perf_counter() - t0, 3)
    return point


def _attach_self_audit(point: dict, own: dict, scores: dict, delta: float, seed: int, accountant: str) -> None:
    """The point's own audit as the training run stored it (canaries: one-run (ε, δ) and f-DP bounds; the heuristic),
    with its Gaussian-DP audit from the scores of every attack the point ran (stronger than the run's loss and
    confidence scores), and the verdict read again."""
    if not own:
        return
    try:
        own["gdp"] = gdp.gdp_audit(scores, delta, split_seed=seed).to_dict()
    except ValueError:  # too few rows for a selection and an audit half: the run's own stays
        pass
    claimed = point.get("epsilon_spent") if point["epsilon"] is not None else None
    own.update(self_audit.verdict(claimed, delta, accountant, own))
    point["audit"] = own


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
    # who pays: the members' proved ε by their class
    ex["per_class"] = who_pays.class_exposure(split.y_train[members], ex["proved"], claimed, split.class_names)
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
