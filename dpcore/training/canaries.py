"""Canaries: the records a run plants so that it audits itself in the same training run (the one-run design of
Steinke, Nasr & Jagielski 2023) — the one home of canaries for training runs and sweep points.

m canaries, each put in training by its own fair coin (from :mod:`secrets`; from the seed only in reproducible-noise
mode, labelled "not a DP release"); after training each is scored by the model's confidence in its label, and the
scores feed the one-run audits (:mod:`dpcore.training.self_audit`).

A canary's input is drawn from the *public* feature space alone — every number uniform on its public range ([-1, 1]
after scaling), one category of each categorical column, pixels uniform on [0, 1] — with a label drawn at random;
which inputs and labels: public, from the seed. No canary is a copy of a private row, so nobody's record is in
training twice (canaries copied from training rows with a wrong label made the copied person's guarantee 2ε, group
privacy). They are also the records a model memorises most: on the default demo's non-private MLP, 300 of them gave a
one-run bound of ε ≥ 2.8 (copied, mislabelled rows: 1.8) and cost no measurable accuracy (0.981 against 0.978; one run, seed 0).

The sample rate and the number of steps are fixed from the real training rows before any canary is added
(:func:`dpcore.training.loop.plan`), and so is the expected batch size: nothing the run reports depends on the coins.
Canaries train with the model: the accuracy of a model that carried them is that model's, and
:meth:`Canaries.summary` says how many there were and what share of the training rows they made.
"""

from __future__ import annotations

import dataclasses
import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..attacks import mia, one_run
from ..errors import DPError
from .data import Split

#: A DP run's canaries when none are asked for: a tenth of its training rows, at most :data:`AUTO_MAX` — about a
#: twentieth of the rows in training (half the coins), so an epoch costs at most ~5% more, and the audit can still
#: prove ε of about 2–3 with every guess right (fewer than :data:`AUTO_MIN`: no audit, said so).
AUTO_SHARE = 0.1
AUTO_MAX = 100
AUTO_MIN = 10
#: The attack name of the canaries' scores (the sweep's table and the statement name it so).
ATTACK = "canary"
SOURCE = "inputs from the public feature ranges, labels at random (from the seed): no private row"


@dataclass(frozen=True)
class Canaries:
    """Audit records: inputs ``X`` with labels ``y``; ``included[i]``: canary i was put in training by its coin."""

    X: np.ndarray
    y: np.ndarray
    included: np.ndarray

    @property
    def n(self) -> int:
        return int(len(self.y))

    @property
    def n_included(self) -> int:
        return int(self.included.sum())

    def add_to(self, split: Split) -> Split:
        """The split with the included canaries appended to its training rows (row numbers -1: no source row)."""
        k = self.included
        rows = split.train_rows
        return dataclasses.replace(
            split,
            X_train=np.ascontiguousarray(np.concatenate([split.X_train, self.X[k]])),
            y_train=np.concatenate([split.y_train, self.y[k]]),
            train_rows=None if rows is None else np.concatenate([rows, np.full(int(k.sum()), -1, np.int64)]),
        )

    def summary(self, n_train: int) -> dict[str, Any]:
        """What the run's result says about its canaries: how many, how many its coins put in, their share of the
        training rows, where they came from, and what they do to the reported accuracy."""
        share = self.n_included / max(int(n_train) + self.n_included, 1)
        return {
            "n": self.n,
            "included": self.n_included,
            "share_of_training_rows": round(share, 4),
            "source": SOURCE,
            "utility_note": (
                f"test accuracy is this model's, trained with its {self.n_included} included canaries "
                f"({share:.1%} of its training rows: public inputs, labels at random), which may lower it a little"
            ),
        }


def auto_count(n_train: int) -> int:
    """How many canaries a DP run plants when it is not told: see :data:`AUTO_SHARE`."""
    n = min(AUTO_MAX, int(int(n_train) * AUTO_SHARE))
    return n if n >= AUTO_MIN else 0


def _public_inputs(split: Split, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` inputs from the public feature space: pixels U[0, 1]; numbers U[-1, 1] (their public range after
    scaling); one category of each categorical column, at random."""
    d = split.n_features
    if split.image_shape is not None:
        return rng.random((n, d), dtype=np.float32)
    X = rng.uniform(-1.0, 1.0, (n, d)).astype(np.float32)
    for col in split.layout or ():
        idx = col.get("indices")
        if col.get("kind") == "categories" and idx:
            X[:, idx] = 0.0
            X[np.arange(n), np.asarray(idx)[rng.integers(0, len(idx), n)]] = 1.0
    return X


def make(split: Split, n: int, seed: int, *, reproducible: bool = False) -> Canaries:
    """``n`` canaries for this split. Inputs and labels: public, from ``seed``. Whether each is in training: a fair
    coin per canary per run, from :mod:`secrets` unless ``reproducible``."""
    if n <= 0:
        raise DPError("the canary audit needs at least one canary")
    if split.n_classes < 2:
        raise DPError("canaries need at least two classes to label")
    rng = np.random.default_rng([int(seed), 0xCA])
    X = np.ascontiguousarray(_public_inputs(split, n, rng))
    y = rng.integers(0, split.n_classes, n).astype(np.int64)
    coin = np.random.default_rng([int(seed), 0xC0]) if reproducible else np.random.default_rng(secrets.randbits(128))
    return Canaries(X, y, coin.random(n) < 0.5)


def scores(predict_proba: Any, canaries: Canaries) -> np.ndarray:
    """Higher = "more likely included": the logit of the model's confidence in the canary's label."""
    out: np.ndarray = mia.logit_confidence(predict_proba(canaries.X), canaries.y)
    return out


def one_run_bound(scores: Any, included: Any, delta: float, confidence: float = 0.95) -> dict[str, Any]:
    """The one-run (ε, δ) audit of Steinke, Nasr & Jagielski (2023) on the canaries
    (:func:`dpcore.attacks.one_run.one_run_lower_bound`), the most these guesses could prove (every one right), and
    the attack's name and method."""
    s, inc = np.asarray(scores, float), np.asarray(included, bool)
    out = dict(one_run.one_run_lower_bound(s, inc, delta=delta, confidence=confidence))
    # the most these guesses prove with every one right: it depends on the counts alone (cached by bound_at)
    every_right = tuple((int(g), int(g)) for g, _ in out["tried"])
    out["max_certifiable"] = one_run.bound_at(int(inc.size), every_right, float(delta), 1.0 - confidence)[1]
    out["n_included"] = int(inc.sum())
    out["attack"] = ATTACK
    out["method"] = f"one-run audit (Steinke, Nasr & Jagielski 2023) on {inc.size} canaries, {int(inc.sum())} included"
    return out
