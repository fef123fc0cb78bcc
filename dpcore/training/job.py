"""Training as a background job: checks before a job is queued (:func:`preflight`), what a run costs and the
gate it passes (:func:`price`, :func:`admit`), the job target ``"train"`` (:func:`run_job`), and
:func:`train_in_job`, the one wrapper around :func:`~dpcore.training.loop.train` inside a job (threads, warnings,
cancel, upload clean-up) that ``run_job`` and a sweep point share."""

from __future__ import annotations

import warnings

from ..budgets import gate
from ..budgets.identities import Identity
from ..data import datasets
from ..errors import DPError
from ..noise.charge import Charge, ReleaseKind
from . import accounting
from .config import REPRODUCIBLE_LABEL, TrainConfig, check_batch_size, delta_warnings
from .data import Split, is_upload, load_split, release_uploads, upload_file
from .loop import plan, train
from .models import check_model_size, n_parameters
from .results import TrainResult


def preflight(cfg: TrainConfig | dict) -> dict:
    """Check a run before it is queued (load the data, batch size vs rows, model size); raise DPError with a
    clear message. Returns a short summary (rows, features, classes, warnings)."""
    cfg = cfg if isinstance(cfg, TrainConfig) else TrainConfig.from_dict(cfg)
    split = load_split(cfg)
    check_model_size(cfg, split)
    n = split.n_train
    check_batch_size(cfg.batch_size, n)
    if cfg.private and cfg.epsilon is None:  # a given σ: what the accountants can bound, before the job is queued
        plan(cfg, n)
    return {
        "n_train": n,
        "n_test": int(len(split.y_test)),
        "n_features": split.n_features,
        "n_classes": split.n_classes,
        "n_parameters": n_parameters(cfg, split),
        "warnings": delta_warnings(cfg, n),
        "leaks": split.leaks,
    }


def price(cfg: TrainConfig, split: Split | None = None) -> Charge:
    """What a run costs a registered dataset, before it runs: the accountant's ε at the run's δ for the planned
    steps (:func:`dpcore.training.loop.plan`, the same calibration the run makes; a run that stops early spends
    less). A run that is no DP release of the rows is refused: a non-private model (ε = ∞), reproducible noise
    (anyone with the seed replays it) and diffprivlib's models (its floating-point noise is not safe against
    low-bit attacks: its ε is no guarantee a cap can be charged with)."""
    if not cfg.private:
        raise DPError(
            "a non-private model of a registered dataset's rows releases them with ε = ∞, which no cap allows; "
            "train with a target ε (or σ); nothing was spent and nothing was run"
        )
    if cfg.reproducible_noise:
        raise DPError(
            f"a run with reproducible noise is {REPRODUCIBLE_LABEL}: on a registered dataset's rows anyone with the "
            "seed could replay it; drop --reproducible-noise; nothing was spent and nothing was run"
        )
    if cfg.model.startswith("diffprivlib"):
        raise DPError(
            "diffprivlib's noise is not floating-point safe (its issue #94), so its ε cannot be charged to a "
            "registered dataset's cap; use logreg, mlp or cnn (Opacus DP-SGD); nothing was spent and nothing was run"
        )
    split = split if split is not None else load_split(cfg)
    pl = plan(cfg, split.n_train)
    if cfg.epsilon is not None:
        eps = float(pl["planned_epsilon"])
    else:
        eps = accounting.epsilon(pl["noise_multiplier"], pl["sample_rate"], pl["steps"], cfg.delta, cfg.accountant)
    return Charge.dpsgd(eps, cfg.delta)


def rows_of(dataset: str):
    """The rows a run's data code reads when they arrive as a file (``csv:PATH``, ``upload:<ref>``), else None:
    the built-in data (synthetic or public) is no registered dataset's."""
    if dataset.startswith("upload:"):
        return datasets.read_csv(upload_file(dataset[len("upload:") :]))
    if dataset.startswith("csv:"):
        return datasets.read_csv(dataset[len("csv:") :])
    return None


def admit(who: Identity, cfg: TrainConfig | dict, *, label: str = "") -> gate.Admission:
    """The gate for one training run (:func:`dpcore.budgets.gate.admit`): charged to every registered dataset its
    file's rows are (or nearly are), before it is queued; the uploader's own rows are charged nothing."""
    cfg = cfg if isinstance(cfg, TrainConfig) else TrainConfig.from_dict(cfg)
    df = rows_of(cfg.dataset)
    if df is None:
        return gate.Admission(None, (), (), {})
    return gate.admit(
        who,
        df,
        lambda: (price(cfg), None),
        kind=ReleaseKind.TRAINING,
        description=label or f"DP training run ({cfg.model})",
    )


def require_charged(cfg: TrainConfig, ctx) -> None:
    """In a job: a registered dataset's rows are read only once the gate charged this job for them
    (:func:`dpcore.budgets.gate.for_job`); the built-in data and the uploader's own rows pass."""
    df = rows_of(cfg.dataset) if ctx is not None and getattr(ctx, "job_id", None) else None
    if df is not None:
        gate.for_job(ctx.job_id, df)


def baseline_params(params: dict) -> dict:
    """Job params of the non-private baseline for a run: same model, data split, epochs and optimiser."""
    return TrainConfig.from_dict(params).baseline().to_dict()


# --- inside a job ---------------------------------------------------------------------------------


def _release_after_job(job_id) -> None:
    """This job no longer needs its upload: delete uploads no *other* queued or running job reads."""
    try:
        release_uploads(finished_job=job_id)
    except Exception:
        pass


def train_in_job(
    cfg: TrainConfig, ctx=None, split: Split | None = None, progress=None, *, compare_accountants: bool = True
) -> TrainResult:
    """:func:`~dpcore.training.loop.train` inside a job (``ctx``: the job's context, or None): one torch thread,
    Opacus's per-step notices silenced, the job's cancel flag checked every step (a cancel raises
    :class:`~dpcore.errors.Cancelled`), and a stored upload released once no other job reads it.
    ``progress`` defaults to ``ctx.progress``; ``compare_accountants`` as in ``train``."""
    try:
        # lazy: torch takes ~2 s to import
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover
        pass
    if progress is None and ctx is not None:
        progress = ctx.progress
    stop = ctx.cancelled if ctx is not None else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # Opacus's per-step hook notices flood the log
            return train(cfg, progress=progress, should_stop=stop, split=split, compare_accountants=compare_accountants)
    finally:
        if is_upload(cfg):
            _release_after_job(getattr(ctx, "job_id", None))


def run_job(params: dict, ctx) -> dict:
    """Job target ``"train"`` (:mod:`dpcore.jobs.registry`): train, report progress, save weights + metrics.
    Returns :meth:`TrainMetrics.to_dict` plus ``weights_file`` and ``config``."""
    cfg = TrainConfig.from_dict(params)
    require_charged(cfg, ctx)
    result = train_in_job(cfg, ctx)
    ctx.save_bytes(result.weights_filename, result.state_dict_bytes())
    ctx.save_bytes("metrics.json", result.metrics_json())
    return {**result.metrics.to_dict(), "weights_file": result.weights_filename, "config": cfg.to_dict()}
