"""What a sweep runs: :class:`SweepConfig` (validated where it is built into a job list), its limits, and the
attack names a sweep shows."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from .. import limits
from ..attacks import mia
from ..errors import DPError
from ..training.config import LR_SCHEDULES, TrainConfig, check_batch_size
from ..validation import check_delta, check_epsilon, check_positive_int

DEFAULT_EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
DEFAULT_CANARIES = 300
DEFAULT_SIZE_FRACTIONS = (0.25, 0.5)
MAX_CANARIES = limits.RUN_CANARIES_MAX
CANARY_ATTACK = "canary"
#: Attack names as shown: the ordinary-record attacks of :mod:`dpcore.attacks.mia` and the canary audit's score.
ATTACK_LABELS = {**mia.ATTACK_LABELS, CANARY_ATTACK: "canaries (confidence in the planted label)"}
SWEEP_ATTACKS = ("threshold", "loss", "lira", "rmia")


#: A first sweep on an uploaded table (:func:`for_upload`): a small MLP that can memorise (so the audit has a leak to
#: catch without DP), five ε from 0.5 to 8 × 2 seeds, 2 baselines, LiRA and RMIA sharing 4 shadow models, 200
#: canaries (public inputs with random labels; fewer on small data: :func:`canaries_for`), no size control: 12 models.
#: bench/upload_sweep.py times it on a 5,000 × 20 table (README: "Privacy–utility curve").
TABLE_DEFAULTS: dict[str, Any] = dict(
    model="mlp",
    hidden=128,
    epsilons=(0.5, 1.0, 2.0, 4.0, 8.0),
    seeds=2,
    epochs=15,
    batch_size=128,
    lr=0.02,
    attacks=("threshold", "loss", "lira", "rmia"),
    shadows=4,
    canaries=200,
    size_fractions=(),
)


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
    attacks: tuple = ("threshold", "loss", "lira")  # LiRA for ordinary records, canaries for unusual ones
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
    #: How the non-private baselines train (the DP points keep ``epochs``, a constant ``lr`` and their
    #: accounting): ``baseline_scale`` times the epochs, starting from ``baseline_scale`` times the lr, decaying
    #: linearly to ~0. With the DP points' recipe the demo's baseline ended at 92.8–98.6% test accuracy
    #: depending on seed and the secret canary coins (11 of 82 runs below 95%); with 1.5 and "linear" at least
    #: 95.8% (median 97.5%) over 56 runs, and it memorises its canaries more (median canary TPR at 1% FPR
    #: 0.46–0.55 vs 0.22–0.28), for ~0.1 s more training per baseline.
    baseline_lr_schedule: str = "linear"
    baseline_scale: float = 1.5
    device: str = "auto"  # training device: auto / cpu / cuda
    #: Canaries (:mod:`dpcore.training.canaries`: public inputs, random labels), each included with probability 1/2,
    #: audited with the one-run method (at most a quarter of the training rows: :func:`canaries_for`).
    canaries: int = DEFAULT_CANARIES
    #: Training-set size control: these fractions of the rows, at size_epsilon, each with its own baseline
    #: (a fraction leaving fewer rows than one batch, or than 20, is left out).
    size_fractions: tuple = DEFAULT_SIZE_FRACTIONS
    size_epsilon: float = 1.0
    #: True: sampling, noise and canary inclusion drawn from the seeds (tests, teaching): NOT a DP release.
    reproducible_noise: bool = False
    #: An uploaded CSV's public bounds and its owner's file name (as in TrainConfig): see :func:`for_upload`.
    bounds: dict | None = None
    upload_name: str | None = None

    def validate(self) -> SweepConfig:
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
        if {"lira", "rmia"} & set(attacks) and not 2 <= shadows <= 64:
            raise DPError(f"LiRA and RMIA need 2–64 shadow (reference) models, got {shadows}; 4–16 is a good start")
        check_delta(self.delta)
        for name in ("epochs", "batch_size"):
            check_positive_int(getattr(self, name), name)
        for name in ("train_size", "hidden"):
            if getattr(self, name) is not None:
                check_positive_int(getattr(self, name), name)
        if self.test_size is not None and not 0 < float(self.test_size) < 1:
            raise DPError(f"test_size is the held-out fraction of rows, in (0, 1); got {self.test_size}")
        if self.baseline_lr_schedule not in LR_SCHEDULES:
            raise DPError(
                f"baseline_lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {self.baseline_lr_schedule!r}"
            )
        if (
            isinstance(self.baseline_scale, bool)
            or not isinstance(self.baseline_scale, (int, float))
            or not 0.1 <= float(self.baseline_scale) <= 10
        ):
            raise DPError(
                f"baseline_scale (the baselines' epochs and lr relative to the DP points') must be a "
                f"number from 0.1 to 10, got {self.baseline_scale!r}; 1 trains them alike"
            )
        if self.shadow_trainer not in ("sklearn", "same"):
            raise DPError("shadow_trainer must be 'sklearn' (fast stand-in) or 'same' (train like the target)")
        if (
            isinstance(self.canaries, bool)
            or not isinstance(self.canaries, (int, np.integer))
            or not 0 <= self.canaries <= MAX_CANARIES
        ):
            raise DPError(
                f"canaries must be a whole number from 0 to {MAX_CANARIES}, got {self.canaries!r}; "
                "200 give a sharp audit"
            )
        fracs = tuple(sorted({float(f) for f in (self.size_fractions or ())}))
        if any(not 0 < f < 1 for f in fracs) or len(fracs) > 4:
            raise DPError(
                f"size_fractions are up to 4 fractions of the training rows in (0, 1), e.g. 0.25,0.5; "
                f"got {self.size_fractions!r}"
            )
        size_eps = check_epsilon(self.size_epsilon, "size_epsilon") if fracs else float(self.size_epsilon)
        if not isinstance(self.reproducible_noise, (bool, np.bool_)):
            raise DPError(f"reproducible_noise must be true or false, got {self.reproducible_noise!r}")
        out = replace(
            self,
            epsilons=eps,
            seeds=seeds,
            attacks=attacks,
            shadows=shadows,
            size_fractions=fracs,
            size_epsilon=size_eps,
            canaries=int(self.canaries),
        )

        tc = TrainConfig.from_dict(out.train_dict(eps[0], 0))
        n = out.n_rows()
        check_batch_size(tc.batch_size, n)
        # Small data (a custom train_size): at most a quarter of the rows become canaries, and size fractions
        # too small to fill one batch are left out of the control; the sweep record shows what ran.
        canaries = canaries_for(out.canaries, n)
        kept = tuple(f for f in fracs if int(n * f) >= max(tc.batch_size, 20))
        if canaries != out.canaries or kept != fracs:
            out = replace(out, canaries=canaries, size_fractions=kept)
        return out

    def n_rows(self) -> int:
        """Training rows of one point (before canaries), from the data itself."""
        from ..training.data import load_split  # lazy: pandas (~0.5 s); Home imports sweep.runs, which imports this

        return load_split(TrainConfig.from_dict(self.train_dict(None, 0))).n_train

    def to_dict(self) -> dict:
        d = asdict(self)
        d["epsilons"] = list(self.epsilons)
        d["attacks"] = list(self.attacks)
        d["size_fractions"] = list(self.size_fractions)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> SweepConfig:
        return cls.from_stored(d).validate()

    @classmethod
    def from_stored(cls, d: dict) -> SweepConfig:
        """A sweep's config as its record stores it, *not* checked again: it was validated when the sweep started,
        and an uploaded CSV it read is deleted once its jobs are done (validating would read the data)."""
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(d) - known)
        if unknown:
            raise DPError(f"unknown sweep setting(s) {unknown}; known: {sorted(known)}")
        d = dict(d)
        for k in ("epsilons", "attacks", "size_fractions"):
            if k in d and d[k] is not None:
                d[k] = tuple(d[k])
        return cls(**d)

    def train_dict(self, epsilon: float | None, seed: int) -> dict:
        """The dpcore.training.config.TrainConfig fields for one point (None epsilon = the non-private baseline)."""
        d = {
            "dataset": self.dataset,
            "model": self.model,
            "epsilon": epsilon,
            "delta": self.delta,
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "lr": self.lr,
            "clip": self.clip,
            "accountant": self.accountant,
            "seed": seed,
            "device": self.device,
            "reproducible_noise": bool(self.reproducible_noise),
        }
        for k in ("target", "train_size", "test_size", "hidden", "optimizer", "bounds", "upload_name"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        if epsilon is None:  # the baselines only: DP points train exactly as configured
            # (capped at the epoch limit: a sweep allowed for its DP points never fails on its baselines)
            epochs = min(limits.TRAINING_EPOCHS_MAX, max(1, round(self.epochs * self.baseline_scale)))
            d.update(epochs=epochs, lr=self.lr * self.baseline_scale, lr_schedule=self.baseline_lr_schedule)
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
        return {
            "train": self.train_dict(epsilon, seed),
            "attacks": list(self.attacks),
            "shadows": self.shadows,
            "shadow_trainer": self.shadow_trainer,
            "seed": seed,
            "canaries": self.canaries if canaries is None else canaries,
            "train_fraction": 1.0,
        }


def canaries_for(asked: int, n_train: int) -> int:
    """The canaries each point plants when ``asked`` for on ``n_train`` training rows: at most a quarter of the rows,
    none when that leaves fewer than 2 (:meth:`SweepConfig.validate` keeps this count; the page's form states it)."""
    used = min(int(asked), int(n_train) // 4)
    return used if used >= 2 else 0


def upload_train_rows(data: bytes, *, train_size: int | None = None, test_size: float | None = None) -> int:
    """Training rows of one point of a sweep on the CSV ``data`` before it is stored: its rows less the held-out
    share, split as :func:`dpcore.training.data.load_split` splits them (tested against it), or ``train_size``."""
    from ..data import datasets  # lazy: pandas (~0.5 s)
    from ..training.data import held_out_rows  # lazy: the training data code imports scikit-learn's loaders

    if train_size:
        return int(train_size)
    n = len(datasets.read_csv(data))
    return n - held_out_rows(n, TrainConfig.test_size if test_size is None else test_size)


def for_upload(
    path: str, target: str, *, bounds: dict | None = None, upload_name: str | None = None, **settings
) -> SweepConfig:
    """The sweep of an uploaded CSV: ``path`` a file, or the ``upload:<ref>`` a page stored it under
    (:func:`dpcore.training.data.save_upload`); :data:`TABLE_DEFAULTS` with ``settings`` over them, its public
    ``bounds`` (:mod:`dpcore.training.bounds`) and its owner's file name; validated (reads the data)."""
    dataset = path if str(path).startswith("upload:") else f"csv:{path}"  # a page's stored upload, or a file
    return SweepConfig(
        **{
            **TABLE_DEFAULTS,
            **settings,
            "dataset": dataset,
            "target": target,
            "bounds": bounds,
            "upload_name": upload_name,
        }
    ).validate()
