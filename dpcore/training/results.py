"""What a run produces: :class:`TrainMetrics` (typed, stored as JSON by jobs) and :class:`TrainResult`
(metrics + fitted model + split, with ``predict_proba`` and the weights as bytes)."""

from __future__ import annotations

import dataclasses
import io
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import claims, limits
from ..attacks.audit import clopper_pearson
from ..storage.jsonio import dumps
from .config import N_PUBLIC_NOTE, TrainConfig
from .data import Split

SHORTCUT_NOTE = "seed notebook's q/σ·sqrt(2T ln(1/δ)): NOT a privacy guarantee, shown for comparison"
#: Fields computed on private rows (test and training): diagnostics, not covered by ε (labelled by
#: ``train_metrics_note`` and listed under ``not_covered_by_epsilon`` in every stored result). None of them is in
#: a run's release (dpcore.statements.release) — except what the statement keeps of the run's audit: its canary
#: bounds, computed from the released model and the canaries alone (public inputs, secret coins), which ε covers.
#: The accounting check's observations are functions of the secret sampling and noise: diagnostics too.
DIAGNOSTIC_FIELDS = (
    "test_accuracy",
    "test_loss",
    "train_accuracy",
    "train_loss",
    "history",
    "classes_seen",
    "diverged",
    "per_class",
    "per_group",
    "audit",
    "accounting_check",
)


@dataclass(frozen=True)
class TrainMetrics:
    """What one run measured and spent — one set of fields for both paths (Opacus/fused and diffprivlib).

    ``epsilon`` is the accountant's upper bound for the steps actually taken (None: not private), with
    ``delta`` and the add/remove-one-record relation (n and the classes public); :data:`DIAGNOSTIC_FIELDS` (test
    and training accuracy and loss, the history's curves) are computed on private rows: not covered by ε,
    rounded to what a chart needs.
    Stored as JSON by jobs: :meth:`to_dict` / :meth:`from_dict` (which also reads results written by older
    versions: missing fields take their defaults, unknown keys are ignored).
    """

    dataset: str
    model: str
    private: bool
    target: str | None = None
    seed: int = 0
    device: str = "cpu"
    # privacy: the bound, its δ, and how it was computed
    epsilon: float | None = None
    delta: float | None = None
    target_epsilon: float | None = None
    accountant: str | None = None
    noise_multiplier: float | None = None
    sample_rate: float | None = None
    steps: int | None = None
    epsilon_prv: float | None = None
    epsilon_rdp: float | None = None
    shortcut_epsilon: float | None = None
    shortcut_note: str | None = None
    # where sampling and noise came from (see config.noise_fields)
    reproducible_noise: bool = False
    dp_release: bool = False
    noise_source: str | None = None
    release_label: str | None = None
    # settings
    epochs: int | None = None
    batch_size: int | None = None
    lr: float | None = None
    lr_schedule: str = "constant"
    clip: float | None = None
    optimizer: str | None = None
    grad_sample_mode: str | None = None
    # utility (train_* on the private rows: not DP)
    test_accuracy: float | None = None
    test_loss: float | None = None
    train_accuracy: float | None = None
    train_loss: float | None = None
    train_metrics_note: str | None = None
    diverged: str | None = None
    history: tuple = ()
    classes_seen: tuple | None = None
    # data
    n_train: int | None = None
    n_test: int | None = None
    n_features: int | None = None
    n_classes: int | None = None
    bounds_note: str | None = None
    leaks: tuple = ()
    warnings: tuple = ()
    #: accuracy per class on the test rows, each with its count and a 95% interval (who pays for privacy)
    per_class: tuple = ()
    #: accuracy per category of each categorical feature column (sex, a declared upload column): who pays, by group
    per_group: tuple = ()
    # the run's own audit (dpcore.training.self_audit): canaries, one-run (ε, δ) and f-DP bounds, the scores audit,
    # the heuristic, every figure with its kind and the verdict; and what the loop did against what the accountant
    # was told (dpcore.training.accounting_check)
    canaries: dict | None = None
    audit: dict | None = None
    accounting_check: dict | None = None
    # time
    train_seconds: float | None = None
    loop_seconds: float | None = None
    calibration_seconds: float | None = None
    audit_seconds: float | None = None

    def to_dict(self) -> dict:
        """JSON-able fields (lists for sequences); ``release_label`` only when there is one."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name in ("history", "per_class", "per_group"):
                v = [dict(h) for h in v]
            elif isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
        if out["release_label"] is None:
            del out["release_label"]
        out["not_covered_by_epsilon"] = list(DIAGNOSTIC_FIELDS)  # the label, in the JSON itself
        if self.private:  # n is released exactly (it fixes q and the steps): said where the run is
            out["public_n_note"] = N_PUBLIC_NOTE
        return out

    @classmethod
    def from_dict(cls, data: dict) -> TrainMetrics:
        """Metrics from a stored result (any version): unknown keys ignored, missing ones take defaults."""
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in dict(data or {}).items() if k in names}
        kw.setdefault("dataset", "")
        kw.setdefault("model", "")
        kw.setdefault("private", kw.get("epsilon") is not None)
        for k in ("history", "leaks", "warnings", "per_class", "per_group"):
            kw[k] = tuple(kw.get(k) or ())
        if kw.get("classes_seen") is not None:
            kw["classes_seen"] = tuple(kw["classes_seen"])
        return cls(**kw)

    @classmethod
    def from_job(cls, job: Mapping[str, Any] | None) -> TrainMetrics | None:
        """The metrics of a training job's stored result; None while it has none (queued, running, failed)."""
        result = (job or {}).get("result")
        return cls.from_dict(result) if result else None


@dataclass
class TrainResult:
    """A finished run: its config, metrics, fitted model and data (without canaries); ``canaries``: the canaries it
    carried (:class:`dpcore.training.canaries.Canaries`; never stored: their coins stay in this process)."""

    config: TrainConfig
    metrics: TrainMetrics
    model: Any
    split: Split
    canaries: Any = None

    def predict_proba(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float32)
        if self.config.model.startswith("diffprivlib"):
            return np.asarray(self.model.predict_proba(X), dtype=np.float64)
        # lazy: torch takes ~2 s to import
        import torch

        self.model.eval()
        dev = next(self.model.parameters()).device
        with torch.no_grad():
            x = torch.from_numpy(np.ascontiguousarray(X)).to(dev)
            return torch.softmax(self.model(x), dim=1).double().cpu().numpy()

    def predict(self, X) -> np.ndarray:
        return self.predict_proba(X).argmax(axis=1)

    @property
    def weights_filename(self) -> str:
        return "model.json" if self.config.model.startswith("diffprivlib") else "model.pt"

    def state_dict_bytes(self) -> bytes:
        """Model weights: a torch ``state_dict`` (torch.save), or the fitted arrays of a diffprivlib
        estimator as JSON (coef_/intercept_ or theta_/var_/class_prior_)."""
        if self.config.model.startswith("diffprivlib"):
            attrs = ("classes_", "coef_", "intercept_", "theta_", "var_", "class_prior_", "class_count_")
            arrays = {
                a: np.asarray(getattr(self.model, a)).tolist()
                for a in attrs
                if getattr(self.model, a, None) is not None
            }
            return json.dumps({"estimator": type(self.model).__name__, **arrays}).encode()
        # lazy: torch takes ~2 s to import
        import torch

        buf = io.BytesIO()
        torch.save(self.model.state_dict(), buf)
        return buf.getvalue()

    def metrics_json(self) -> bytes:
        return dumps(self.metrics.to_dict()).encode()


def divergence(history, n_classes: int = 2) -> str | None:
    """A plain sentence if the run's training loss diverged — not finite, or ending far above the loss of a
    uniform guess, ln(classes) — else None. The loss is not DP: a diagnosis for the person who trains."""
    losses = [float(h["loss"]) for h in (history or []) if isinstance(h, dict) and h.get("loss") is not None]
    if not losses:
        return None
    if not all(math.isfinite(v) for v in losses):
        return (
            "the training loss diverged (it became infinite or not a number): the model is useless. "
            "Lower the learning rate (e.g. 10× smaller) or the clip C and train again"
        )
    guess = math.log(max(int(n_classes), 2))
    if losses[-1] > 3 * guess:
        return (
            f"the training loss diverged: it ends at {losses[-1]:.3g} nats, far above the {guess:.2f} of a "
            "uniform guess. Lower the learning rate (e.g. 10× smaller) and train again"
        )
    return None


def _accuracy(k: int, n: int) -> dict:
    """``k`` right of ``n`` test rows: the accuracy (None without rows) and its 95% Clopper–Pearson interval,
    rounded outwards."""
    lo, hi = clopper_pearson(k, n, 0.05) if n else (0.0, 1.0)
    return {
        "n_test": int(n),
        "accuracy": None if n == 0 else claims.diagnostic(k / n),
        "interval": [claims.rounded(float(lo), 3, up=False), claims.rounded(float(hi), 3, up=True)],
    }


def accuracy_interval(accuracy: float | None, n_test: int | None) -> list[float] | None:
    """The 95% Clopper–Pearson interval (rounded outwards) of an accuracy measured on ``n_test`` rows, from the
    stored diagnostic (3 digits): the right answers are every k whose k/n rounds to it (one k up to ~1,000 rows, a
    few past that), and the interval runs from the lowest k's lower end to the highest k's upper end, so it holds
    the true k's (recovering one k by rounding shifted two models' intervals apart on 1,222 rows). None without
    either."""
    if accuracy is None or not n_test:
        return None
    n, acc = int(n_test), float(accuracy)
    k0 = min(n, max(0, round(acc * n)))
    ks = [k for k in range(max(0, k0 - 10), min(n, k0 + 10) + 1) if claims.diagnostic(k / n) == acc] or [k0]
    lo, _ = clopper_pearson(min(ks), n, 0.05)
    _, hi = clopper_pearson(max(ks), n, 0.05)
    return [claims.rounded(float(lo), 3, up=False), claims.rounded(float(hi), 3, up=True)]


def compare_accuracy(a: float | None, a_n: int | None, b: float | None, b_n: int | None) -> int | None:
    """-1 when accuracy ``a``'s 95% interval lies wholly below ``b``'s, +1 wholly above, 0 when they overlap (no
    difference these test rows can show), None when either is unknown: the one rule for claiming that a model
    scores differently (the headline of a run and of a sweep, who pays)."""
    ia, ib = accuracy_interval(a, a_n), accuracy_interval(b, b_n)
    return None if ia is None or ib is None else _separated(ia, ib)


def _separated(ia, ib) -> int:
    return -1 if ia[1] < ib[0] else 1 if ia[0] > ib[1] else 0


def majority_share(per_class) -> tuple[str, float] | None:
    """(name, share) of the most common true class on the test rows, from a run's ``per_class``: the accuracy of
    always guessing it, the line any model must beat. A diagnostic on private rows: not covered by ε."""
    rows = [r for r in per_class or () if r.get("n_test")]
    total = sum(int(r["n_test"]) for r in rows)
    if not total:
        return None
    top = max(rows, key=lambda r: int(r["n_test"]))
    return str(top.get("name", top.get("class"))), claims.diagnostic(int(top["n_test"]) / total)


def pays_more(entry: Mapping[str, Any] | None, baseline: Mapping[str, Any] | None) -> bool | None:
    """Whether a class or subgroup pays more for privacy than without it: only when its accuracy's 95% interval
    lies wholly below the non-private model's (a difference claimed only where the intervals support it). None
    when either has no accuracy."""
    if not entry or not baseline or entry.get("accuracy") is None or baseline.get("accuracy") is None:
        return None
    return _separated(entry["interval"], baseline["interval"]) < 0


def pays_more_text(flag: bool | None) -> str:
    """:func:`pays_more` as a table says it: "yes", "not shown" (the intervals overlap) or "—" (nothing to compare)."""
    return "—" if flag is None else ("yes" if flag else "not shown")


def per_class_accuracy(y_true, y_pred, class_names, n_classes: int) -> list[dict]:
    """Accuracy per true class on the test rows, each with its count and a 95% Clopper–Pearson interval (rounded
    outwards). A diagnostic on private rows: not covered by ε."""
    yt, yp = np.asarray(y_true).ravel(), np.asarray(y_pred).ravel()
    out = []
    for c in range(int(n_classes)):
        sel = yt == c
        out.append(
            {
                "class": c,
                "name": str(class_names[c]) if c < len(class_names) else str(c),
                **_accuracy(int((yp[sel] == c).sum()), int(sel.sum())),
            }
        )
    return out


#: The group of a test row whose categorical column holds none of its declared categories (a missing value).
NO_CATEGORY = "(none of its categories)"


def per_group_accuracy(X, y_true, y_pred, layout) -> list[dict]:
    """Accuracy per subgroup on the test rows: for each categorical feature column of ``layout`` (its one-hot
    block in ``X``; the public or declared categories of a built-in table or an upload), each category's test rows,
    right answers and 95% Clopper–Pearson interval, and the rows with none of them when there are any. At most
    :data:`~dpcore.limits.SUBGROUP_MAX_COLUMNS` columns of at most :data:`~dpcore.limits.SUBGROUP_MAX_GROUPS`
    categories (the first in the table's order). A diagnostic on private rows: not covered by ε."""
    X = np.asarray(X)
    right = np.asarray(y_true).ravel() == np.asarray(y_pred).ravel()
    cols = [
        e
        for e in layout or ()
        if e.get("kind") == "categories" and 0 < len(e.get("categories") or ()) <= limits.SUBGROUP_MAX_GROUPS
    ][: limits.SUBGROUP_MAX_COLUMNS]
    out = []
    for e in cols:
        block = X[:, list(e["indices"])]
        has = block.max(axis=1) > 0.5
        which = np.where(has, block.argmax(axis=1), -1)
        groups = [(str(c), which == j) for j, c in enumerate(e["categories"])]
        if not has.all():
            groups.append((NO_CATEGORY, ~has))
        for name, sel in groups:
            out.append({"column": str(e["name"]), "group": name, **_accuracy(int(right[sel].sum()), int(sel.sum()))})
    return out
