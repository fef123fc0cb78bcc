"""Privacy–utility sweeps: train one model per (ε, seed) plus the non-private baseline, attack each one.

A sweep is a group of background jobs (:mod:`dpcore.jobs.store`), one per point, each running
:func:`run_point`: train with :func:`dpcore.training.loop.train`, run the membership-inference attacks of
:mod:`dpcore.mia` on members (training rows) and as many held-out non-members, and — for DP points — the
empirical ε audit of :mod:`dpcore.audit`. The sweep's own record (config, job ids, and once finished
the points) lives in ``$DP_EXPLORER_HOME/sweeps/<id>.json``, written atomically, so a finished sweep
can be reopened and compared after the job store is gone.

The default demo (``python -m dpcore sweep``, the page's Start button) tells the true story on the full
digits training set (1,438 images): an MLP with 256 hidden units, 20 epochs, batch 256, non-private test accuracy
about 0.96; DP-SGD keeps a median of about 0.90 at ε = 1 and 0.95 at ε = 8 (3 seeds per ε; bench/sweep.py prints
the figures and the wall time, about a minute on 2 busy cores).

Risk where it lives: ordinary records leak little from a model that generalises, so the audit plants
:data:`DEFAULT_CANARIES` *canaries* — training images given a wrong label, the kind of unusual record a model
memorises — each included in training with probability ½ (drawn per run from a secret source). The model's
confidence in each canary's label is its score; the scores feed the one-run audit of Steinke, Nasr &
Jagielski (2023), whose 95% lower bound on ε holds for any (ε, δ)-DP training. The non-private model is caught
(it memorises the canaries it saw); under DP the bound stays below the claimed ε. The loss/threshold/LiRA
attacks still run on ordinary records (members = training rows, non-members = test rows).

A control for the training-set size (:data:`DEFAULT_SIZE_FRACTIONS` of the rows, at ε = ``size_epsilon``, with
their own baselines) shows that the same ε costs less accuracy with more data.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import secrets
import time
from dataclasses import asdict, dataclass, replace

import numpy as np

from . import audit, mia, storage
from .errors import DPError
from .jobs.registry import SWEEP_POINT
from .serialize import dumps
from .training.config import REPRODUCIBLE_LABEL
from .validation import check_delta, check_epsilon, check_positive_int

DEFAULT_EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
DEFAULT_CANARIES = 300
DEFAULT_SIZE_FRACTIONS = (0.25, 0.5)
MAX_CANARIES = 1000
CANARY_ATTACK = "canary"
#: Attack names as shown: the ordinary-record attacks of :mod:`dpcore.mia` and the canary audit's score.
ATTACK_LABELS = {**mia.ATTACK_LABELS, CANARY_ATTACK: "canaries (confidence in the planted label)"}
SWEEP_ATTACKS = ("threshold", "loss", "lira")
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
REPORTED_METRICS = ("auc", "advantage", "tpr_at_1pct_fpr", "tpr_at_0.1pct_fpr")


@dataclass(frozen=True)
class SweepConfig:
    """What to sweep. Training settings are shared by every point; only ε and the seed change.

    The defaults are the page's demo (see the module docstring for why its baseline leaks).
    """

    dataset: str = "digits"
    model: str = "mlp"
    target: str | None = None
    epsilons: tuple = DEFAULT_EPSILONS
    seeds: int = 3
    attacks: tuple = ("threshold", "loss")
    shadows: int = 8
    delta: float = 1e-5
    epochs: int = 20
    batch_size: int = 256
    lr: float = 0.02
    clip: float = 1.0
    train_size: int | None = None
    test_size: float | None = None  # fraction of rows held out (training's default 0.2 if None)
    hidden: int | None = 256
    optimizer: str = "adam"
    shadow_trainer: str = "same"  # LiRA shadows: "same" (training.train, like the target) or "sklearn" (stand-in)
    accountant: str = "prv"
    baseline: bool = True
    device: str = "auto"  # training device: auto / cpu / cuda (issue 17)
    #: Mislabelled training images, each included with probability 1/2, audited with the one-run method
    #: (at most a quarter of the training rows: fewer on small data).
    canaries: int = DEFAULT_CANARIES
    #: Training-set size control: these fractions of the rows, at size_epsilon, each with its own baseline
    #: (a fraction leaving fewer rows than one batch, or than 20, is left out).
    size_fractions: tuple = DEFAULT_SIZE_FRACTIONS
    size_epsilon: float = 1.0
    #: True: sampling, noise and canary inclusion drawn from the seeds (tests, teaching): NOT a DP release.
    reproducible_noise: bool = False

    def validate(self) -> "SweepConfig":
        if not self.epsilons:
            raise DPError("choose at least one ε for the sweep (e.g. 0.5, 1, 2, 4)")
        eps = tuple(sorted({check_epsilon(e, "each ε in the sweep") for e in self.epsilons}))
        if len(eps) > 12:
            raise DPError(f"at most 12 ε values per sweep, got {len(eps)}; drop some")
        seeds = check_positive_int(self.seeds, "seeds (models per ε)")
        if seeds > 10:
            raise DPError(f"at most 10 seeds per ε, got {seeds}; 3 already give error bars")
        attacks = tuple(a.strip() for a in self.attacks if a and a.strip())
        bad = [a for a in attacks if a not in SWEEP_ATTACKS]
        if bad or not attacks:
            raise DPError(f"unknown attack(s) {bad or attacks}; choose from {', '.join(SWEEP_ATTACKS)}")
        shadows = check_positive_int(self.shadows, "shadows (LiRA shadow models)")
        if "lira" in attacks and not 2 <= shadows <= 64:
            raise DPError(f"LiRA needs 2–64 shadow models, got {shadows}; 8–16 is a good start")
        check_delta(self.delta)
        for name in ("epochs", "batch_size"):
            check_positive_int(getattr(self, name), name)
        for name in ("train_size", "hidden"):
            if getattr(self, name) is not None:
                check_positive_int(getattr(self, name), name)
        if self.test_size is not None and not 0 < float(self.test_size) < 1:
            raise DPError(f"test_size is the held-out fraction of rows, in (0, 1); got {self.test_size}")
        if self.shadow_trainer not in ("sklearn", "same"):
            raise DPError("shadow_trainer must be 'sklearn' (fast stand-in) or 'same' (train like the target)")
        if isinstance(self.canaries, bool) or not isinstance(self.canaries, (int, np.integer)) \
                or not 0 <= self.canaries <= MAX_CANARIES:
            raise DPError(f"canaries must be a whole number from 0 to {MAX_CANARIES}, got {self.canaries!r}; "
                          "200 give a sharp audit")
        fracs = tuple(sorted({float(f) for f in (self.size_fractions or ())}))
        if any(not 0 < f < 1 for f in fracs) or len(fracs) > 4:
            raise DPError(f"size_fractions are up to 4 fractions of the training rows in (0, 1), e.g. 0.25,0.5; "
                          f"got {self.size_fractions!r}")
        size_eps = check_epsilon(self.size_epsilon, "size_epsilon") if fracs else float(self.size_epsilon)
        if not isinstance(self.reproducible_noise, (bool, np.bool_)):
            raise DPError(f"reproducible_noise must be true or false, got {self.reproducible_noise!r}")
        out = replace(self, epsilons=eps, seeds=seeds, attacks=attacks, shadows=shadows, size_fractions=fracs,
                      size_epsilon=size_eps, canaries=int(self.canaries))
        from .training.config import TrainConfig, check_batch_size  # valid before any job is queued

        tc = TrainConfig.from_dict(out.train_dict(eps[0], 0))
        n = out.n_rows()
        check_batch_size(tc.batch_size, n)
        # Small data (a custom train_size): at most a quarter of the rows become canaries, and size fractions
        # too small to fill one batch are left out of the control; the sweep record shows what ran.
        canaries = min(out.canaries, n // 4)
        if out.canaries and canaries < 2:
            canaries = 0
        kept = tuple(f for f in fracs if int(n * f) >= max(tc.batch_size, 20))
        if canaries != out.canaries or kept != fracs:
            out = replace(out, canaries=canaries, size_fractions=kept)
        return out

    def n_rows(self) -> int:
        """Training rows of one point (before canaries), from the data itself."""
        from .training.config import TrainConfig
        from .training.data import load_split

        return load_split(TrainConfig.from_dict(self.train_dict(None, 0))).n_train

    def to_dict(self) -> dict:
        d = asdict(self)
        d["epsilons"] = list(self.epsilons)
        d["attacks"] = list(self.attacks)
        d["size_fractions"] = list(self.size_fractions)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "SweepConfig":
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(d) - known)
        if unknown:
            raise DPError(f"unknown sweep setting(s) {unknown}; known: {sorted(known)}")
        d = dict(d)
        for k in ("epsilons", "attacks", "size_fractions"):
            if k in d and d[k] is not None:
                d[k] = tuple(d[k])
        return cls(**d).validate()

    def train_dict(self, epsilon: float | None, seed: int) -> dict:
        """The dpcore.training.config.TrainConfig fields for one point (None epsilon = the non-private baseline)."""
        d = {"dataset": self.dataset, "model": self.model, "epsilon": epsilon, "delta": self.delta,
             "epochs": self.epochs, "batch_size": self.batch_size, "lr": self.lr, "clip": self.clip,
             "accountant": self.accountant, "seed": seed, "device": self.device,
             "reproducible_noise": bool(self.reproducible_noise)}
        for k in ("target", "train_size", "test_size", "hidden", "optimizer"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        return d

    def point_params(self) -> list[dict]:
        """One job's params per point: baselines first (fast feedback), then ε from high to low, then the
        training-set size control (its own baselines and DP models at ``size_epsilon``)."""
        out = []
        for s in range(self.seeds):
            if self.baseline:
                out.append(self._params(None, s))
        for e in sorted(self.epsilons, reverse=True):
            for s in range(self.seeds):
                out.append(self._params(e, s))
        if self.size_fractions:
            n = self.n_rows()
            for f in self.size_fractions:
                for e in (None, self.size_epsilon):
                    for s in range(self.seeds):
                        p = self._params(e, s, canaries=0)
                        p["train"]["train_size"] = int(n * f)
                        p["train_fraction"] = f
                        out.append(p)
        return out

    def _params(self, epsilon, seed, canaries=None) -> dict:
        return {"train": self.train_dict(epsilon, seed), "attacks": list(self.attacks),
                "shadows": self.shadows, "shadow_trainer": self.shadow_trainer, "seed": seed,
                "canaries": self.canaries if canaries is None else canaries, "train_fraction": 1.0}


# --- one point -------------------------------------------------------------------------------------------


def _shadow_fit(params: dict, cfg, split, should_stop=None):
    """How LiRA's shadow models are trained.

    "same" (default): :func:`dpcore.training.loop.train` with the target's own config (model, epochs, lr, and
    DP-SGD at the same ε if the target is DP) on each random half of the pool — faithful, one training per
    shadow. "sklearn": a scikit-learn stand-in of the same architecture and epochs, trained non-privately;
    its confidences are distributed differently from the target's, which hurts online LiRA (measured on the
    demo baseline: online AUC 0.51 with sklearn shadows vs 0.83 with "same"), so it is only a fallback.
    """
    if params.get("shadow_trainer", "sklearn") == "same":
        import dataclasses

        from .training.loop import train

        def fit(X, y, seed):
            sub = dataclasses.replace(split, X_train=np.ascontiguousarray(X, np.float32),
                                      y_train=np.asarray(y, np.int64), X_test=split.X_test[:8],
                                      y_test=split.y_test[:8])
            c = dataclasses.replace(cfg, seed=int(seed) % (2**31), train_size=None,
                                    batch_size=min(cfg.batch_size, len(y)))
            res = train(c, should_stop=should_stop, split=sub)
            return res.predict_proba

        return fit
    return mia.default_shadow_fit(cfg.model, int(cfg.hidden), int(cfg.epochs), 1e-3)


@dataclass
class Canaries:
    """Audit records: ``X`` with wrong labels ``y``; ``included[i]``: canary i was in the training set."""

    X: np.ndarray
    y: np.ndarray
    included: np.ndarray

    def add_to(self, split):
        """The split with the included canaries appended to its training rows."""
        import dataclasses

        k = self.included
        return dataclasses.replace(split, X_train=np.ascontiguousarray(np.concatenate([split.X_train, self.X[k]])),
                                   y_train=np.concatenate([split.y_train, self.y[k]]))


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
    """The one-run audit of Steinke, Nasr & Jagielski (2023) on the canaries (see :mod:`dpcore.audit`),
    and the most it could prove with these canaries (every guess right)."""
    scores, included = np.asarray(scores, float), np.asarray(included, bool)
    out = dict(audit.one_run_lower_bound(scores, included, delta=delta, confidence=0.95))
    best = audit.one_run_lower_bound(included.astype(float), included, delta=delta, confidence=0.95)
    out["max_certifiable"] = float(best["lower_bound"])
    out["attack"] = CANARY_ATTACK
    out["method"] = ("one-run audit (Steinke, Nasr & Jagielski 2023) on "
                     f"{included.size} canaries, {int(included.sum())} included")
    return out


def run_point(params: dict, ctx=None) -> dict:
    """Job target: train one model (with canaries), attack it, audit it. Returns the point dict (JSON-able)."""
    from .training.config import TrainConfig, noise_fields
    from .training.data import load_split
    from .training.job import train_in_job

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
    res = train_in_job(cfg, ctx, split=canaries.add_to(split) if canaries is not None else split, progress=report)
    t_train = time.perf_counter() - t0
    if ctx is not None:
        ctx.progress(phase="attack")
    attacks = tuple(params.get("attacks") or ("threshold", "loss"))
    # ordinary records: members = the clean training rows, non-members = test rows
    results = mia.run_attacks(res.predict_proba, split.X_train, split.y_train, split.X_test, split.y_test,
                              attacks=attacks, shadows=int(params.get("shadows", 8)),
                              shadow_fit=_shadow_fit(params, cfg, split, stop),
                              seed=np.random.default_rng([seed, 7]),
                              should_stop=stop)
    results.pop("_roc")
    scores = results.pop("_scores")
    canary_audit = None
    if canaries is not None:
        c_scores = canary_scores(res.predict_proba, canaries)
        k = canaries.included
        results[CANARY_ATTACK] = {**mia.attack_metrics(mia.roc(c_scores[k], c_scores[~k])),
                                  "records": "canaries (mislabelled training images)"}
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
        "canaries": None if canaries is None else {"n": int(len(canaries.y)),
                                                   "included": int(canaries.included.sum())},
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
        # the worst-case ROC from the same privacy-loss distribution as the tight ε (issue 11.9)
        from .training import accounting

        point["epsilon_pld"] = accounting.pld_epsilon(sigma, q, steps, delta)
        point["tradeoff"] = {**accounting.dpsgd_tradeoff(sigma, q, steps), "noise_multiplier": sigma,
                             "sample_rate": q, "steps": steps, "delta": delta,
                             "source": "dp_accounting PLD, Poisson-subsampled Gaussian, add/remove one"}
    _attach_audit(point, canary_audit)
    point["seconds"] = round(time.perf_counter() - t0, 3)
    return point


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


# --- running a sweep ----------------------------------------------------------------------------------


def _assemble(cfg: SweepConfig, points: list[dict]) -> dict:
    full = [p for p in points if p.get("train_fraction", 1.0) >= 1.0]
    control = sorted((p for p in points if p.get("train_fraction", 1.0) < 1.0),
                     key=lambda p: (p["train_fraction"], p["epsilon"] is not None, p["epsilon"] or 0, p["seed"]))
    base = sorted((p for p in full if p.get("epsilon") is None), key=lambda p: p["seed"])
    dp = sorted((p for p in full if p.get("epsilon") is not None), key=lambda p: (p["epsilon"], p["seed"]))
    out = {"config": cfg.to_dict(), "baseline": base[0] if base else None, "points": dp}
    if len(base) > 1:
        out["baselines"] = base
    if control:
        out["size_control"] = control
    if cfg.reproducible_noise:
        out["reproducible_noise"] = True
        out["release_label"] = REPRODUCIBLE_LABEL
    return out


def run_sweep_inline(cfg: SweepConfig | dict | None = None, progress=None, *, store: bool = True,
                     name: str = "") -> dict:
    """Run every point one after another in this process (CLI, tests). Returns {id, config, baseline, points};
    with ``store`` the finished sweep is recorded so the page can reopen it."""
    cfg = _config(cfg)
    params = cfg.point_params()
    points = []
    for i, p in enumerate(params):
        if progress is not None:
            progress(i, len(params), p["train"]["epsilon"], p["seed"])
        points.append(run_point(p))
    result = _assemble(cfg, points)
    if store:
        sweep_id = _new_id()
        _write({"id": sweep_id, "name": name or _default_name(cfg) + " (inline)", "created": time.time(),
                "status": "done", "config": cfg.to_dict(), "jobs": [], "result": result, "failed": [],
                "finished": time.time(), "executor": {"name": "inline"}, **_noise_record(cfg)})
        result = {"id": sweep_id, "executor": {"name": "inline"}, **result}
    return result


def _new_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def _default_name(cfg: SweepConfig) -> str:
    name = f"{cfg.dataset} {cfg.model}, {len(cfg.epsilons)} ε × {cfg.seeds} seed(s)"
    return name + (f" [{REPRODUCIBLE_LABEL}]" if cfg.reproducible_noise else "")


def _noise_record(cfg: SweepConfig) -> dict:
    return {"reproducible_noise": bool(cfg.reproducible_noise),
            **({"release_label": REPRODUCIBLE_LABEL} if cfg.reproducible_noise else {})}


def _config(cfg) -> SweepConfig:
    if cfg is None:
        return SweepConfig().validate()
    if isinstance(cfg, dict):
        return SweepConfig.from_dict(cfg)
    return cfg.validate()


def sweeps_dir():
    return storage.subdir("sweeps")


def _path(sweep_id: str):
    if not isinstance(sweep_id, str) or not _ID_RE.match(sweep_id):
        raise DPError(f"not a sweep id: {sweep_id!r}")
    return sweeps_dir() / f"{sweep_id}.json"


def _write(record: dict) -> None:
    storage.atomic_write_bytes(_path(record["id"]), dumps(record, indent=1).encode())


def load(sweep_id: str) -> dict:
    path = _path(sweep_id)
    if not path.exists():
        raise DPError(f"no stored sweep {sweep_id!r}; pick one from the list of stored sweeps")
    return json.loads(path.read_text())


def list_sweeps(refresh: bool = True) -> list[dict]:
    """Stored sweeps, newest first: {id, name, created, status, config}. With ``refresh``, sweeps still
    marked running are looked up in the job store first (and recorded as finished if they are)."""
    if refresh:
        for p in sweeps_dir().glob("*.json"):
            try:
                if json.loads(p.read_text()).get("status") == "running":
                    state(p.stem)
            except (OSError, ValueError):
                continue
    out = []
    for p in sweeps_dir().glob("*.json"):
        try:
            r = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        out.append({k: r.get(k) for k in ("id", "name", "created", "status", "config", "reproducible_noise")})
    return sorted(out, key=lambda r: r.get("created") or 0, reverse=True)


def sweep_title(rec: dict) -> str:
    """A sweep named by what it is: dataset, model, ε range and date (never by its id)."""
    cfg = rec.get("config") or {}
    eps = [float(e) for e in cfg.get("epsilons") or []]
    rng = f"ε {min(eps):g}–{max(eps):g}" if len(eps) > 1 else (f"ε {eps[0]:g}" if eps else "ε ?")
    when = rec.get("created")
    date = datetime.datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M") if isinstance(when, (int, float)) else ""
    model = cfg.get("model") or "?"
    return ", ".join(x for x in (str(cfg.get("dataset") or "?"), f"{model} model", rng, date) if x)


def start_sweep(cfg: SweepConfig | dict | None = None, *, name: str = "", workers: int = 2,
                executor=None) -> str:
    """Submit one background job per point, record the sweep, start workers. Returns the sweep id.

    ``executor`` (dpcore.jobs.executors): where the points run; default local worker processes."""
    from .jobs import executors

    cfg = _config(cfg)
    # --- engineer H (issue 17): points go through an Executor (local processes or Ray tasks) ---
    ex = executor or executors.LocalExecutor(max(1, int(workers or 1)))
    device = cfg.device
    sweep_id = _new_id()
    group = f"sweep-{sweep_id}"
    entries = []
    for p in cfg.point_params():
        eps = p["train"]["epsilon"]
        label = f"sweep {sweep_id}: " + ("baseline" if eps is None else f"ε={eps:g}") + f" seed {p['seed']}"
        jid = ex.submit(SWEEP_POINT, p, group=group, label=label, device=device)
        entries.append({"job_id": jid, "epsilon": eps, "seed": p["seed"]})
    name = name or _default_name(cfg)
    _write({"id": sweep_id, "name": name, "created": time.time(), "status": "running", "group": group,
            "config": cfg.to_dict(), "jobs": entries, "executor": ex.describe(), **_noise_record(cfg)})
    if workers:
        ex.start(len(entries))
    return sweep_id


def state(sweep_id: str) -> dict:
    """Where a sweep stands: fraction done, finished points so far, failures. Stores it once finished.

    Returns {id, name, status, fraction, done, total, failed: [..], result: {config, baseline, points}}.
    """
    from .jobs import display, store as job_store

    rec = load(sweep_id)
    cfg = SweepConfig.from_dict(rec["config"])
    if rec.get("status") in ("done", "failed", "cancelled") and "result" in rec:
        n = len(rec["jobs"]) or (len(rec["result"]["points"]) + len(rec["result"].get("baselines") or
                                                                   [rec["result"]["baseline"]]))
        return {**_summary(rec), "fraction": 1.0, "done": n - len(rec.get("failed", [])), "total": n,
                "failed": rec.get("failed", []), "result": rec["result"], "running": []}
    points, failed, running = [], [], []
    fraction = 0.0
    for e in rec["jobs"]:
        try:
            job = job_store.get(e["job_id"], history=False)
        except DPError:
            failed.append({**e, "error": "job record missing"})
            fraction += 1
            continue
        st = job["status"]
        if st == "done" and job["result"]:
            points.append(job["result"])
            fraction += 1
        elif st in ("failed", "cancelled"):
            failed.append({**e, "error": job.get("error") or st, "status": st})
            fraction += 1
        else:
            v = display.view(job)
            f = v["fraction"] or 0.0
            if (job.get("progress") or {}).get("phase") == "attack":
                f = 1.0
            fraction += 0.9 * f
            if st == "running":
                running.append({**e, "text": v["text"]})
    total = len(rec["jobs"])
    result = _assemble(cfg, points)
    finished = len(points) + len(failed) == total
    status = rec.get("status", "running")
    if finished and status == "running":
        status = "done" if points else "failed"
        if failed and all(f.get("status") == "cancelled" for f in failed) and len(points) < total:
            status = "cancelled"
        rec.update(status=status, result=result, failed=failed, finished=time.time())
        _write(rec)
    return {**_summary(rec), "status": status, "fraction": fraction / max(total, 1), "done": len(points),
            "total": total, "failed": failed, "running": running, "result": result}


def _summary(rec: dict) -> dict:
    return {k: rec.get(k) for k in ("id", "name", "created", "status", "config", "executor", "reproducible_noise",
                                    "release_label")}


def cancel(sweep_id: str) -> None:
    from .jobs import store as job_store

    rec = load(sweep_id)
    for e in rec["jobs"]:
        try:
            job_store.cancel(e["job_id"])
        except DPError:
            pass


def run_sweep_parallel(cfg: SweepConfig | dict | None = None, *, workers: int = 2, timeout: float = 3600,
                       progress=None, executor=None) -> dict:
    """Start the sweep as background jobs on ``workers`` processes (or ``executor``) and wait for it."""
    sweep_id = start_sweep(cfg, workers=workers, executor=executor)
    deadline = time.monotonic() + timeout
    while True:
        s = state(sweep_id)
        if progress is not None:
            progress(s)
        if s["done"] + len(s["failed"]) >= s["total"]:
            break
        if time.monotonic() > deadline:
            cancel(sweep_id)
            raise DPError(f"sweep {sweep_id} did not finish in {timeout:g} s; it was cancelled")
        time.sleep(0.3)
    if s["failed"]:
        first = s["failed"][0]
        raise DPError(f"{len(s['failed'])} sweep point(s) failed, e.g. ε={first['epsilon']} seed "
                      f"{first['seed']}: {first['error']}")
    return {"id": sweep_id, "executor": s.get("executor"), **s["result"]}


# --- summaries for charts, JSON and the plain-language reading ---------------------------------------------


def _slim(p):
    """One point as documented: ``epsilon`` is the ε achieved (the accountant's bound for the steps run;
    None for a baseline), ``target_epsilon`` the grid value it was calibrated for."""
    if p is None:
        return None
    achieved = p.get("epsilon_spent") if p.get("epsilon") is not None else None
    out = {"epsilon": achieved if achieved is not None else p["epsilon"], "target_epsilon": p["epsilon"],
           "seed": p["seed"], "test_accuracy": p["test_accuracy"],
           "mia": {a: {k: v.get(k) for k in REPORTED_METRICS} for a, v in p["mia"].items()}}
    for k in ("epsilon_pld", "delta", "train_accuracy", "noise_multiplier", "sample_rate", "steps", "train_fraction",
              "n_train", "canaries", "seconds", "tradeoff", "gdp_mu"):
        if p.get(k) is not None:
            out[k] = p[k]
    out["reproducible_noise"] = bool(p.get("reproducible_noise", False))
    if p.get("release_label"):
        out["release_label"] = p["release_label"]
    e = p.get("empirical_epsilon") or p.get("empirical_epsilon_no_dp")
    if e:
        out["empirical_epsilon"] = {k: e.get(k) for k in ("lower_bound", "confidence", "max_certifiable", "attack",
                                                          "method", "claimed", "within_claim", "guesses",
                                                          "correct", "n_canaries", "candidates", "tried",
                                                          "delta", "members", "nonmembers",
                                                          "tp", "fp") if e.get(k) is not None}
        if e.get("records"):
            out["empirical_epsilon"]["records"] = {k: e["records"].get(k) for k in (
                "lower_bound", "confidence", "attack", "max_certifiable", "delta", "members", "nonmembers", "tp", "fp")}
    return out


def cli_json(result: dict) -> dict:
    """The documented JSON: ``baseline`` and ``points`` with test_accuracy, epsilon (achieved), seed,
    mia.<attack>.{auc, tpr_at_1pct_fpr, advantage, ...}, empirical_epsilon.lower_bound (and ``tradeoff`` for DP
    points where the accountant provides it); ``size_control`` for the training-set-size control."""
    out = {"config": result["config"], "baseline": _slim(result.get("baseline")),
           "points": [_slim(p) for p in result["points"]]}
    if result.get("baselines"):
        out["baselines"] = [_slim(p) for p in result["baselines"]]
    if result.get("size_control"):
        out["size_control"] = [_slim(p) for p in result["size_control"]]
    out["reproducible_noise"] = bool(result.get("reproducible_noise", False))
    if result.get("release_label"):
        out["release_label"] = result["release_label"]
    if "id" in result:
        out["id"] = result["id"]
    if result.get("executor"):
        out["executor"] = result["executor"]
    return out


def _mean_sd(values):
    v = np.asarray([x for x in values if x is not None], float)
    if v.size == 0:
        return None, None
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


#: Confidence of every "proved ε" a sweep summary shows: over all the seeds it combines, not per seed.
AUDIT_CONFIDENCE = 0.95


def _proved(audits) -> dict:
    """The seeds' audits of one ε (or of the baselines) combined at :data:`AUDIT_CONFIDENCE` overall
    (:func:`dpcore.audit.combine_bounds`: the largest seed's bound with a Bonferroni correction, and the median
    seed's with its own) — never the largest of several 95% bounds. The mean ± SD of the seeds' own bounds is
    only a description of their spread. Audits stored without their counts are left out (and counted)."""
    audits = [a for a in audits if a]
    usable = []
    for a in audits:
        try:
            audit.stored_bound(a, AUDIT_CONFIDENCE)
            usable.append(a)
        except DPError:
            continue
    out = {"empirical_epsilon": None, "empirical_epsilon_median": None, "empirical_epsilon_k": len(usable),
           "empirical_epsilon_confidence": AUDIT_CONFIDENCE, "max_certifiable": None}
    out["empirical_epsilon_mean"], out["empirical_epsilon_sd"] = _mean_sd(a.get("lower_bound") for a in audits)
    if usable:
        c = audit.combine_bounds(usable, AUDIT_CONFIDENCE)
        out.update(empirical_epsilon=c["lower_bound"], empirical_epsilon_median=c["median_lower_bound"],
                   max_certifiable=c["max_certifiable"])
    return out


def _audits(ps, kind: str = "main"):
    """Each point's stored audit: the main one (canaries when there are any), or the ``records`` one."""
    out = []
    for p in ps:
        e = p.get("empirical_epsilon") or p.get("empirical_epsilon_no_dp") or {}
        out.append(e.get("records") if kind == "records" else e)
    return [a for a in out if a]


def _add_proved(row: dict, ps) -> None:
    row.update(_proved(_audits(ps)))
    rec = _audits(ps, "records")
    if rec:
        r = _proved(rec)
        row["records_epsilon"], row["records_epsilon_median"] = r["empirical_epsilon"], r["empirical_epsilon_median"]


def by_epsilon(result: dict) -> list[dict]:
    """Points aggregated over seeds, per ε (ascending): accuracy and attack metrics as mean ± SD; the proved ε
    as ``empirical_epsilon`` (the seeds' audits combined, 95% overall), ``empirical_epsilon_median`` (the
    median seed's, 95% too: a separate statement, never to be maxed with the first) and ``max_certifiable``
    (the most the combined audit could prove); ``empirical_epsilon_mean``/``_sd`` only describe the spread of the
    seeds' own bounds. ``records_epsilon``: the same combination for the audit on ordinary records."""
    groups: dict = {}
    for p in result.get("points", []):
        groups.setdefault(p["epsilon"], []).append(p)
    rows = []
    for eps in sorted(groups):
        ps = groups[eps]
        row = {"epsilon": eps, "n": len(ps)}
        row["accuracy"], row["accuracy_sd"] = _mean_sd(p["test_accuracy"] for p in ps)
        row["epsilon_spent"] = max((p.get("epsilon_spent") or eps) for p in ps)
        _add_proved(row, ps)
        row["accuracy_median"] = float(np.median([p["test_accuracy"] for p in ps]))
        for a in ps[0]["mia"]:
            for k in REPORTED_METRICS:
                row[f"{a}.{k}"], row[f"{a}.{k}_sd"] = _mean_sd(p["mia"].get(a, {}).get(k) for p in ps)
        rows.append(row)
    return rows


def summary_row(result: dict, epsilon) -> dict | None:
    """The :func:`by_epsilon` row of ``epsilon`` (None: :func:`baseline_summary`); None if not finished."""
    if epsilon is None:
        return baseline_summary(result)
    return next((r for r in by_epsilon(result) if r["epsilon"] == epsilon), None)


def size_control(result: dict) -> list[dict]:
    """The training-set-size control: per fraction of the rows, the baseline's and the DP model's mean
    accuracy (over seeds) and the accuracy DP costs. The full-size row comes from the main grid."""
    cfg = result.get("config") or {}
    eps = cfg.get("size_epsilon")
    pts = list(result.get("size_control") or [])
    if not pts or eps is None:
        return []
    full = [p for p in result.get("points", []) if p["epsilon"] == eps] + \
        (result.get("baselines") or ([result["baseline"]] if result.get("baseline") else []))
    groups: dict = {}
    for p in pts + [dict(q, train_fraction=1.0) for q in full]:
        groups.setdefault(float(p.get("train_fraction", 1.0)), []).append(p)
    rows = []
    for f in sorted(groups):
        ps = groups[f]
        base = [p["test_accuracy"] for p in ps if p["epsilon"] is None]
        dp = [p["test_accuracy"] for p in ps if p["epsilon"] is not None]
        if not base or not dp:
            continue
        b, bsd = _mean_sd(base)
        d, dsd = _mean_sd(dp)
        rows.append({"fraction": f, "n_train": max(int(p.get("n_train") or 0) for p in ps), "epsilon": eps,
                     "baseline_accuracy": b, "baseline_accuracy_sd": bsd, "dp_accuracy": d, "dp_accuracy_sd": dsd,
                     "cost": b - d, "n": len(dp)})
    return rows


def baseline_summary(result: dict) -> dict | None:
    base = result.get("baselines") or ([result["baseline"]] if result.get("baseline") else [])
    if not base:
        return None
    row = {"n": len(base)}
    row["accuracy"], row["accuracy_sd"] = _mean_sd(p["test_accuracy"] for p in base)
    _add_proved(row, base)
    for a in base[0]["mia"]:
        for k in REPORTED_METRICS:
            row[f"{a}.{k}"], _ = _mean_sd(p["mia"].get(a, {}).get(k) for p in base)
    return row


def best_attack(row: dict, attacks) -> tuple[str, float]:
    vals = {a: row.get(f"{a}.advantage") for a in attacks if row.get(f"{a}.advantage") is not None}
    if not vals:
        return "", 0.0
    a = max(vals, key=vals.get)
    return a, float(vals[a])


def reading(result: dict, epsilon: float) -> str:
    """A plain-language sentence about one ε of a finished (or partial) sweep."""
    rows = {r["epsilon"]: r for r in by_epsilon(result)}
    if epsilon not in rows:
        return f"No finished model at ε = {epsilon:g} yet."
    r = rows[epsilon]
    base = baseline_summary(result)
    attacks = list(result["points"][0]["mia"]) if result.get("points") else []
    a, adv = best_attack(r, attacks)
    label = ATTACK_LABELS.get(a, a)
    text = (f"At ε = {epsilon:g} (δ = {result['config']['delta']:g}, add/remove one record) the model reaches "
            f"{accuracy_text(r['accuracy'])} test accuracy")
    if base and base.get("accuracy"):
        keep = r["accuracy"] / base["accuracy"]
        ba, badv = best_attack(base, attacks)
        text += (f", {keep:.0%} of the non-private baseline's {accuracy_text(base['accuracy'])}; the best attack's advantage "
                 f"(TPR − FPR) fell from {badv:.2f} without privacy to {adv:.2f} ({label}).")
    else:
        text += f"; the best attack's advantage (TPR − FPR) is {adv:.2f} ({label})."
    if base and base.get("empirical_epsilon"):
        text += (f" Without DP the audit *proves* a leak: ε ≥ {base['empirical_epsilon']:.2f} for the baseline "
                 f"({_over(base['empirical_epsilon_k'])}).")
    if r.get("empirical_epsilon") is not None:
        k, med = r["empirical_epsilon_k"], r.get("empirical_epsilon_median") or 0.0
        also = f"; the median seed's bound, a separate 95% statement: ε ≥ {med:.2f}" if k > 1 and med > 0 else ""
        if r["empirical_epsilon"] > 0:
            where = "below" if r["empirical_epsilon"] <= r["epsilon_spent"] + 1e-9 else "ABOVE (a bug to report)"
            text += (f" The attacks prove ε ≥ {r['empirical_epsilon']:.2f} empirically ({_over(k)}), "
                     f"{where} the claimed {r['epsilon_spent']:.2f}{also}")
        elif also:
            text += f" The attacks prove no leak ({_over(k)}) at the claimed ε = {r['epsilon_spent']:.2f}{also}"
        else:
            text += f" The attacks prove no leak at all at the claimed ε = {r['epsilon_spent']:.2f}"
        text += f"; with this audit no attack could prove more than ε ≈ {r['max_certifiable']:.1f}."
    if result.get("reproducible_noise") or (result.get("config") or {}).get("reproducible_noise"):
        text += f" ({REPRODUCIBLE_LABEL}: sampling and noise were drawn from the public seed.)"
    return text


def _over(k: int) -> str:
    return "95% confidence" if k == 1 else f"over {k} seeds, at 95% confidence overall"


def accuracy_text(value) -> str:
    """Accuracy as every page shows it: a percentage with one decimal ("88.4%"), "—" when unknown."""
    return "—" if value is None else f"{float(value):.1%}"


def violations(result: dict) -> list[dict]:
    """DP points whose empirical lower bound exceeds the claimed ε (should never happen: a bug to find).

    Every stored audit of every DP point (canaries and ordinary records) is re-bounded at 1 − 0.05/N for the N
    audits checked, so the list is empty with 95% confidence overall when every claim holds (a point audited
    without stored counts is checked at its own bound). Each entry: {epsilon, seed, lower_bound, confidence,
    audit}."""
    checks = []
    for p in result.get("points", []):
        e = p.get("empirical_epsilon")
        for kind, a in (("main", e), ("records", (e or {}).get("records"))):
            if a:
                checks.append((p, kind, a))
    out = []
    conf = 1.0 - (1.0 - AUDIT_CONFIDENCE) / max(len(checks), 1)
    for p, kind, a in checks:
        try:
            lb, c = audit.stored_bound(a, conf)[0], conf
        except DPError:
            lb, c = float(a.get("lower_bound") or 0.0), a.get("confidence")
        if lb > (p.get("epsilon_spent") or p["epsilon"]) + 1e-9:
            out.append({"epsilon": p["epsilon"], "seed": p["seed"], "lower_bound": lb, "confidence": c,
                        "audit": a.get("attack") if kind == "main" else "records"})
    return out
